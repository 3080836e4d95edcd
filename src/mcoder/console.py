"""The one rich Console (on stderr), progress bars and tables.

Results and paths go to stdout (``emit``); progress, tables and messages go to stderr. Progress
bars are off when stderr is not a terminal or when ``--quiet`` was given.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

console = Console(stderr=True, highlight=False)
_quiet = False


def set_quiet(quiet: bool) -> None:
    global _quiet
    _quiet = quiet


def is_quiet() -> bool:
    return _quiet


def info(message: str) -> None:
    """A line of news on stderr (suppressed by --quiet)."""
    if not _quiet:
        console.print(message, soft_wrap=True)


def warn(message: str) -> None:
    # soft_wrap: a long file:line message stays one line that grep and tests can match
    console.print(f"[yellow]warning:[/] {message}", soft_wrap=True)


def emit(line: str) -> None:
    """A result on stdout: a path, a number, a table meant for a pipe."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def progress(*extra_columns: Any) -> Progress:
    """A progress bar on stderr; extra columns (e.g. verdict counts) go after the bar."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TaskProgressColumn(),
        *extra_columns,
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        disable=_quiet or not console.is_terminal,
        transient=False,
    )


def table(title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> Table:
    t = Table(title=title, title_justify="left")
    for i, c in enumerate(columns):
        t.add_column(c, justify="left" if i == 0 else "right")
    for r in rows:
        t.add_row(*(str(x) for x in r))
    return t


def show(renderable: Any) -> None:
    if not _quiet:
        console.print(renderable)
