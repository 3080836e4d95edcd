"""What every subcommand shares: the error boundary and option aliases written once."""

from __future__ import annotations

import errno
import functools
import os
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from mcoder.console import console, labelled, set_quiet
from mcoder.errors import EXIT_ENVIRONMENT, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_USAGE, McoderError


def report(e: McoderError) -> None:
    console.print(labelled("error", "bold red", e.message), soft_wrap=True)
    if e.hint:
        console.print(labelled("hint", "bold", e.hint), soft_wrap=True)


def guarded(fn):
    """The CLI's one error boundary, around each subcommand.

    McoderError -> ``error:``/``hint:`` on stderr and its exit code; Ctrl-C -> 130; anything
    else is a bug: one line and exit 1, with the traceback only when MCODER_DEBUG=1.
    """

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except McoderError as e:
            report(e)
            raise typer.Exit(e.exit_code) from None
        except KeyboardInterrupt:
            console.print("[bold red]interrupted[/] (rerun the same command to continue)")
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except BrokenPipeError:
            # stdout was closed by the reader (e.g. `| head`): not an error of ours.
            sys.stderr.close()
            raise typer.Exit(0) from None
        except OSError as e:
            known = environment_error(e)
            if known is None:
                _internal(e)
            report(known)
            raise typer.Exit(known.exit_code) from None
        except Exception as e:  # noqa: BLE001 - a bug: reported as an internal error, exit code EXIT_INTERNAL
            _internal(e)

    return wrapper


def _internal(e: BaseException):
    if os.environ.get("MCODER_DEBUG") == "1":
        traceback.print_exception(e)
    console.print(labelled("error", "bold red", f"internal error: {type(e).__name__}: {e}"), soft_wrap=True)
    console.print(
        labelled("hint", "bold", "this is a bug in mcoder; rerun with MCODER_DEBUG=1 for the traceback"),
        soft_wrap=True,
    )
    raise typer.Exit(EXIT_INTERNAL) from None


# OSErrors the machine or the paths given cause, not mcoder: errno -> (exit code, hint)
ENVIRONMENT_ERRORS = {
    errno.EACCES: (EXIT_ENVIRONMENT, "choose a place you can write, or fix its permissions"),
    errno.EPERM: (EXIT_ENVIRONMENT, "choose a place you can write, or fix its permissions"),
    errno.EROFS: (EXIT_ENVIRONMENT, "the file system is read-only: choose a writable place"),
    errno.ENOSPC: (EXIT_ENVIRONMENT, "the disk is full: free space, or choose another place"),
    errno.EDQUOT: (EXIT_ENVIRONMENT, "the disk quota is used up: free space, or choose another place"),
    errno.ENOTDIR: (EXIT_USAGE, "a part of the path is a file, not a folder: check the path"),
    errno.EISDIR: (EXIT_USAGE, "the path is a folder where a file was expected: check the path"),
    errno.ENAMETOOLONG: (EXIT_USAGE, "shorten the path"),
    errno.ELOOP: (EXIT_USAGE, "the path goes through too many (or looping) symbolic links"),
}


def environment_error(e: OSError) -> McoderError | None:
    """The user's error (exit 2 or 4, with a hint) an OSError stands for; None for a bug."""
    known = ENVIRONMENT_ERRORS.get(e.errno)
    if known is None:
        return None
    where = f"{e.filename}: " if e.filename else ""
    return McoderError(f"{where}{e.strerror or e}", hint=known[1], exit_code=known[0])


def apply_quiet(quiet: bool) -> None:
    """--quiet: mcoder's bars and tables off, and transformers', huggingface_hub's and vLLM's
    progress bars, logs and warnings too (``console.quiet_third_party``)."""
    set_quiet(quiet)


@dataclass(frozen=True)
class PathRole:
    """What a path-valued option is to mcoder, attached where the option is declared
    (``Annotated[Path, typer.Option(...), OUTPUT_FILE]``): read (``INPUT``) or written (an
    ``OUTPUT_FILE`` or ``OUTPUT_DIR``). Every written path goes through ``mcoder.outputs``; the
    guard's test enumerates the options from the CLI by these marks, so an unmarked path option,
    or an output that skips the guard, fails it."""

    role: str
    kind: str = "file"


INPUT = PathRole("input")
OUTPUT_FILE = PathRole("output", "file")
OUTPUT_DIR = PathRole("output", "dir")

# Help panels, shared so that every subcommand groups its options the same way.
IO_PANEL = "Inputs and outputs"
OTHER_PANEL = "Other"

# A flag takes no value: an empty metavar keeps typer from showing it as <bool>.
FLAG = ""


def _show_help(ctx: typer.Context, value: bool) -> None:
    if value:
        typer.echo(ctx.get_help(), nl=False)
        raise typer.Exit()


def command_options(name: str, *, help: str, example: str) -> dict:
    """The keywords of ``app.command`` for a subcommand: its help, an example as the help's
    epilog, and no built-in --help (``HelpFlag`` replaces it, shown as a flag)."""
    return {"name": name, "help": help, "epilog": f"Example: {example}", "add_help_option": False}


# Option aliases: each flag's help is written once.
HelpFlag = Annotated[
    bool,
    typer.Option(
        "--help", "-h", is_eager=True, callback=_show_help, metavar=FLAG,
        help="Show this message and exit.", rich_help_panel=OTHER_PANEL,
    ),
]  # fmt: skip
Quiet = Annotated[
    bool,
    typer.Option(
        "--quiet", "-q", metavar=FLAG, rich_help_panel=OTHER_PANEL,
        help="No progress bars, tables or news on stderr, from mcoder or the libraries it drives.",
    ),
]  # fmt: skip
Overwrite = Annotated[
    bool,
    typer.Option(
        "--overwrite", metavar=FLAG, rich_help_panel=IO_PANEL,
        help="Start over: discard an earlier output of this command (made with other settings, or "
        "unfinished) instead of refusing it or resuming it.",
    ),
]  # fmt: skip
ProblemsPath = Annotated[
    Path, typer.Option("--problems", "-p", rich_help_panel=IO_PANEL, help="Problems JSONL ('-' for stdin)."), INPUT
]
RolloutsPath = Annotated[
    Path, typer.Option("--rollouts", "-r", rich_help_panel=IO_PANEL, help="Rollouts JSONL ('-' for stdin)."), INPUT
]
OutPath = Annotated[
    Path, typer.Option("--out", "-o", rich_help_panel=IO_PANEL, help="Output JSONL ('-' for stdout)."), OUTPUT_FILE
]
ModelPath = Annotated[
    str, typer.Option("--model", "-m", rich_help_panel=IO_PANEL, help="Model folder (transformers format)."), INPUT
]
Seed = Annotated[int, typer.Option("--seed", help="Random seed.")]
