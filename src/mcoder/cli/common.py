"""What every subcommand shares: the error boundary and option aliases written once."""

from __future__ import annotations

import functools
import os
import sys
import traceback
from pathlib import Path
from typing import Annotated

import typer

from mcoder.console import console, set_quiet
from mcoder.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, McoderError


def report(e: McoderError) -> None:
    console.print(f"[bold red]error:[/] {e.message}", markup=True, highlight=False, soft_wrap=True)
    if e.hint:
        console.print(f"[bold]hint:[/] {e.hint}", soft_wrap=True)


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
        except Exception as e:  # a bug
            if os.environ.get("MCODER_DEBUG") == "1":
                traceback.print_exc()
            console.print(f"[bold red]error:[/] internal error: {type(e).__name__}: {e}", soft_wrap=True)
            console.print("[bold]hint:[/] this is a bug in mcoder; rerun with MCODER_DEBUG=1 for the traceback")
            raise typer.Exit(EXIT_INTERNAL) from None

    return wrapper


def apply_quiet(quiet: bool) -> None:
    set_quiet(quiet)


# Option aliases: each flag's help is written once.
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars or tables on stderr.")]
Overwrite = Annotated[
    bool, typer.Option("--overwrite", help="Start over instead of resuming an earlier, unfinished output.")
]
ProblemsPath = Annotated[Path, typer.Option("--problems", "-p", help="Problems JSONL ('-' for stdin).")]
RolloutsPath = Annotated[Path, typer.Option("--rollouts", "-r", help="Rollouts JSONL ('-' for stdin).")]
VerdictsPath = Annotated[Path, typer.Option("--verdicts", help="Verdicts JSONL ('-' for stdin).")]
OutPath = Annotated[Path, typer.Option("--out", "-o", help="Output JSONL ('-' for stdout).")]
ModelPath = Annotated[str, typer.Option("--model", "-m", help="Model folder (transformers format).")]
Seed = Annotated[int, typer.Option("--seed", help="Random seed.")]
