"""The one rich Console (on stderr), progress bars and tables.

Results and paths go to stdout (``emit``); progress, tables and messages go to stderr. Progress
bars are off when stderr is not a terminal or when ``--quiet`` was given. Every message, table
cell and result line passes ``mcoder.printable.printable`` (the door for untrusted text: ids,
paths and values quoted in a message may come from a model, a program or a source row).
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
from rich.text import Text

from mcoder.printable import printable

console = Console(stderr=True, highlight=False)
_quiet = False


def set_quiet(quiet: bool) -> None:
    """--quiet: no progress bars, tables or news from mcoder, nor from the libraries it drives."""
    global _quiet
    _quiet = quiet
    if quiet:
        quiet_third_party()


# Read by the libraries when they are imported (here and in child processes: judge workers,
# rollout replicas), so that setting them costs no import of transformers at --help time.
QUIET_ENV = {
    "TRANSFORMERS_VERBOSITY": "error",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
    "TQDM_DISABLE": "1",
    "VLLM_LOGGING_LEVEL": "ERROR",
    "TOKENIZERS_PARALLELISM": "false",
    "PYTHONWARNINGS": "ignore",
}


def quiet_third_party() -> None:
    """Silence transformers' and huggingface_hub's progress bars ("Loading weights", "Writing
    model shards") and log lines, vLLM's log, and Python warnings (a SyntaxWarning of a
    library): through their environment variables, and directly where already imported."""
    import os
    import warnings

    os.environ.update(QUIET_ENV)
    warnings.filterwarnings("ignore")
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()


def is_quiet() -> bool:
    return _quiet


def info(message: str) -> None:
    """A line of news on stderr (suppressed by --quiet), printed as written: messages quote paths,
    ids and values, whose square brackets rich would otherwise read as markup and drop."""
    if not _quiet:
        console.print(printable(message), soft_wrap=True, markup=False)


def labelled(label: str, style: str, message: str) -> Text:
    """``label:`` in ``style``, then ``message`` as written (no markup read in it, control
    characters escaped)."""
    return Text.assemble((f"{label}:", style), " ", printable(message))


def warn(message: str) -> None:
    # soft_wrap: a long file:line message stays one line that grep and tests can match
    console.print(labelled("warning", "yellow", message), soft_wrap=True)


def emit(line: str) -> None:
    """A result on stdout: a path, a number, a line meant for a pipe (control characters escaped)."""
    sys.stdout.write(printable(line) + "\n")
    sys.stdout.flush()


def document(text: str) -> None:
    """A whole document asked for on stdout (``--json -``, ``--markdown -``): written exactly to a
    pipe or a file, so that it parses as the file would; to a terminal, through ``printable``
    like everything else a person reads there."""
    if sys.stdout.isatty():
        text = printable(text, multiline=True)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
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
        t.add_row(*(Text(printable(x)) for x in r))  # cells as written: ids may hold square brackets
    return t


def show(renderable: Any) -> None:
    if not _quiet:
        console.print(renderable)
