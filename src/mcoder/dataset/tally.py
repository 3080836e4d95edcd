"""What a build did, counted once, and the tables shown at the end (stderr).

Rows are counted per file as they are read. Every row that gives no problem and every problem a
stage removes is one ``report.Removal`` in its stage's ``StageResult`` (the "convert" stage first,
then the filter steps and verify); the per-file "skipped" counts and the skipped table are read
from those. The problems written are counted in ``after`` (``report.Histograms``), which the
report shares.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from mcoder.console import show, table
from mcoder.dataset.report import Histograms, Removal, StageResult
from mcoder.records import Problem


@dataclass
class FileCount:
    path: str
    format: str
    rows: int = 0
    converted: int = 0
    """Problems of this file in the output."""
    skipped: int = 0
    """Rows of this file that gave no problem, and problems a stage removed."""


@dataclass
class Tally:
    files: list[FileCount] = field(default_factory=list)
    ignored: list[tuple[str, str]] = field(default_factory=list)
    stages: list[StageResult] = field(default_factory=list)
    after: Histograms = field(default_factory=Histograms)
    origin: dict[str, FileCount] = field(default_factory=dict)
    """The file of each problem id, and of each row place (``file:line``) that gave no problem."""
    problems: int = 0
    """Records in the output at the end (those an earlier run wrote included)."""

    @property
    def converted(self) -> int:
        return sum(f.converted for f in self.files)

    @property
    def skipped(self) -> int:
        return sum(f.skipped for f in self.files)

    @property
    def skips(self) -> Counter[tuple[str, str]]:
        """(file, reason) -> rows and problems set aside, over every stage."""
        return Counter((self.origin[r.problem_id].path, r.label) for s in self.stages for r in s.removals)

    def add_file(self, path: str, fmt: str) -> FileCount:
        count = FileCount(path, fmt)
        self.files.append(count)
        return count

    def set_aside(self, file: FileCount, removal: Removal) -> None:
        """A row of ``file`` that gave no problem (the convert stage's removals)."""
        file.skipped += 1
        self.origin[removal.problem_id] = file

    def kept(self, problem: Problem) -> None:
        self.origin[problem.id].converted += 1
        self.after.add(problem)

    def close(self, stages: list[StageResult]) -> None:
        """Take the stage results (convert first) and count the later stages' removals per file."""
        self.stages = stages
        for s in stages[1:]:
            for r in s.removals:
                self.origin[r.problem_id].skipped += 1


def render(t: Tally) -> None:
    """The summary tables: files, problems by source, platform, difficulty and test kind, stages."""
    rows = [(f.path, f.format, f.rows, f.converted, f.skipped) for f in t.files]
    rows.append(("total", "", sum(f.rows for f in t.files), t.converted, t.skipped))
    files = table("dataset build: files", ("file", "format", "rows", "converted", "skipped"), rows)
    files.columns[0].overflow = "fold"
    show(files)
    counts = t.after.to_dict()
    for title in ("source", "platform", "difficulty"):
        show(table(f"problems by {title}", (title, "problems"), counts[title].items()))
    show(table("tests by kind", ("kind", "tests"), counts["test_kind"].items()))
    skips = t.skips
    if skips:
        skipped = table("skipped", ("file", "reason", "rows"), [(f, r, n) for (f, r), n in skips.items()])
        skipped.columns[0].overflow = skipped.columns[1].overflow = "fold"
        skipped.columns[1].justify = "left"
        show(skipped)
    if t.ignored:
        show(table("not read", ("path", "why"), t.ignored))
    show(
        table(
            "dataset build: stages",
            ("stage", "in", "out", "removed", "seconds"),
            [(s.name, s.n_in, s.n_out, len(s.removals), f"{s.seconds:.2f}") for s in t.stages],
        )
    )
