"""``mcoder dataset build``: source rows in, one clean problems.jsonl out.

The pipeline is a chain of generator stages over rows, each counting what it drops:

    collect (find files, read rows, pick each file's format)
      -> process (row -> Problem; unique ids)
      -> filter (--min-tests, --after; dedup and decontamination slot in here)
      -> [verify: reference solutions against the tests, a later stage]
      -> RecordWriter (resumable, in input order, so the same inputs give the same bytes)
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from mcoder.console import info, progress
from mcoder.dataset.adapters import ADAPTERS, FORMATS, Adapter, detect
from mcoder.dataset.config import BuildConfig
from mcoder.dataset.fields import Skip
from mcoder.dataset.sources import RowRef, Source, expand
from mcoder.dataset.statement import is_interactive
from mcoder.dataset.summary import FileCount, Tally, render
from mcoder.errors import UsageError
from mcoder.jsonl import RecordWriter
from mcoder.records import Problem


@dataclass(slots=True)
class Row:
    ref: RowRef
    data: dict[str, Any]
    adapter: Adapter
    file: FileCount


def build(config: BuildConfig) -> Tally:
    """Run the stages and write ``config.out``; returns the counts (also shown as tables)."""
    tally = Tally()
    sources = _sources(config, tally)
    if config.filter is not None:  # filter, verify and report: mcoder.dataset.full_build
        from mcoder.dataset.full_build import build_refined

        return build_refined(config, sources, tally)
    with RecordWriter(config.out, Problem.KEY, resume=not config.overwrite) as writer, progress() as bar:
        for row, problem in filter_stage(process(collect(sources, config.format, tally, bar)), config, tally):
            writer.write(problem)
            tally.convert(row.file, problem)
    if writer.resumed:
        info(f"resumed: {writer.resumed} problems were already in {config.out}, {writer.written} added")
    render(tally)
    return tally


def _sources(config: BuildConfig, tally: Tally) -> list[Source]:
    if not config.sources:  # only --format humaneval gets here (see BuildConfig)
        from mcoder.dataset.adapters.humaneval import package_file

        return [Source(str(package_file()), "jsonl")]
    sources, tally.ignored = expand(config.sources)
    for path, why in tally.ignored:
        info(f"[yellow]not read:[/] {path}: {why}")
    if not sources:
        raise UsageError(
            "no data files among the SOURCE paths", hint="give .jsonl, .json or .parquet files or folders"
        )
    return sources


# ------------------------------------------------------------------ stages


def collect(sources: list[Source], fmt: str, tally: Tally, bar: Any = None) -> Iterator[Row]:
    """Every row of every source, with the adapter chosen for its file."""
    for src in sources:
        rows = src.rows()
        first = next(rows, None)
        if first is None:
            tally.add_file(src.path, "-")
            info(f"{src.path}: no rows")
            continue
        adapter = _choose(fmt, *first)
        if fmt == "auto":
            info(f"{src.path}: format [bold]{adapter.name}[/] (detected)")
        file = tally.add_file(src.path, adapter.name)
        task = bar.add_task(src.name, total=src.count()) if bar is not None else None
        for ref, data in itertools.chain([first], rows):
            file.rows += 1
            yield Row(ref, data, adapter, file)
            if task is not None:
                bar.advance(task)


def _choose(fmt: str, ref: RowRef, row: dict[str, Any]) -> Adapter:
    if fmt != "auto":
        return ADAPTERS[fmt]
    adapter = detect(row)
    if adapter is None:
        fields = ", ".join(list(row)[:12])
        raise ref.error(
            f"cannot tell the format from the first row's fields ({fields})",
            hint=f"pass --format, one of: {', '.join(f for f in FORMATS if f != 'auto')}",
        )
    return adapter


def process(rows: Iterator[Row]) -> Iterator[tuple[Row, Problem | str]]:
    """Each row as a Problem, or as the reason it gives none. The first row with an id keeps it."""
    seen: set[str] = set()
    for row in rows:
        try:
            problem = row.adapter.convert(row.data, row.ref)
        except Skip as s:
            yield row, s.reason
            continue
        if problem.test_kinds == {"stdin"} and is_interactive(problem.question, problem.meta.get("tags")):
            yield row, "interactive (judged by an interactor, not by stdin tests)"
            continue
        if problem.id in seen:
            yield row, "duplicate id"
            continue
        seen.add(problem.id)
        yield row, problem


def filter_stage(
    items: Iterator[tuple[Row, Problem | str]], config: BuildConfig, tally: Tally
) -> Iterator[tuple[Row, Problem]]:
    """Drop (and count) skipped rows and the problems the filters reject."""
    for row, problem in items:
        reason = problem if isinstance(problem, str) else _rejected(problem, config)
        if reason:
            tally.skip(row.file, reason)
            continue
        yield row, problem


def _rejected(problem: Problem, config: BuildConfig) -> str | None:
    if len(problem.tests) < config.min_tests:
        return f"fewer than {config.min_tests} tests (--min-tests)"
    if config.after:
        if problem.date is None:
            return "no date (--after)"
        if problem.date < config.after:
            return f"dated before {config.after} (--after)"
    if not problem.tests:
        return "no tests"
    return None
