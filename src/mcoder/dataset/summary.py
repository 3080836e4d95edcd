"""Counts of a build, kept as rows go by, and the tables shown at the end (stderr)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from mcoder.console import show, table
from mcoder.records import Problem


@dataclass
class FileCount:
    path: str
    format: str
    rows: int = 0
    converted: int = 0
    skipped: int = 0


@dataclass
class Tally:
    files: list[FileCount] = field(default_factory=list)
    ignored: list[tuple[str, str]] = field(default_factory=list)
    skips: Counter[tuple[str, str]] = field(default_factory=Counter)  # (file, reason) -> rows
    by_source: Counter[str] = field(default_factory=Counter)
    by_platform: Counter[str] = field(default_factory=Counter)
    by_difficulty: Counter[str] = field(default_factory=Counter)
    problems_by_kind: Counter[str] = field(default_factory=Counter)
    tests_by_kind: Counter[str] = field(default_factory=Counter)

    @property
    def converted(self) -> int:
        return sum(f.converted for f in self.files)

    @property
    def skipped(self) -> int:
        return sum(f.skipped for f in self.files)

    def add_file(self, path: str, fmt: str) -> FileCount:
        count = FileCount(path, fmt)
        self.files.append(count)
        return count

    def skip(self, file: FileCount, reason: str) -> None:
        file.skipped += 1
        self.skips[(file.path, reason)] += 1

    def convert(self, file: FileCount, problem: Problem) -> None:
        file.converted += 1
        self.by_source[problem.source] += 1
        self.by_platform[problem.platform or "-"] += 1
        self.by_difficulty[problem.difficulty or "-"] += 1
        for kind in sorted(problem.test_kinds):
            self.problems_by_kind[kind] += 1
        for test in problem.tests:
            self.tests_by_kind[test.kind] += 1


def render(t: Tally) -> None:
    """The summary tables: files, then problems by source, platform, difficulty and test kind."""
    rows = [(f.path, f.format, f.rows, f.converted, f.skipped) for f in t.files]
    rows.append(("total", "", sum(f.rows for f in t.files), t.converted, t.skipped))
    files = table("dataset build: files", ("file", "format", "rows", "converted", "skipped"), rows)
    files.columns[0].overflow = "fold"
    show(files)
    for title, counter in (
        ("source", t.by_source),
        ("platform", t.by_platform),
        ("difficulty", t.by_difficulty),
    ):
        show(table(f"problems by {title}", (title, "problems"), sorted(counter.items())))
    kinds = sorted(t.tests_by_kind)
    show(
        table(
            "tests by kind",
            ("kind", "problems", "tests"),
            [(k, t.problems_by_kind[k], t.tests_by_kind[k]) for k in kinds],
        )
    )
    if t.skips:
        skipped = table("skipped", ("file", "reason", "rows"), [(f, r, n) for (f, r), n in t.skips.items()])
        skipped.columns[0].overflow = skipped.columns[1].overflow = "fold"
        skipped.columns[1].justify = "left"
        show(skipped)
    if t.ignored:
        show(table("not read", ("path", "why"), t.ignored))
