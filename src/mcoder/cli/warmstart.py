"""``python -m mcoder.warmstart``: the supervised warm start's command line (no ``mcoder``
subcommand). Its inputs and output are written here; every setting is an option generated from a
field of ``WarmStartConfig`` (``mcoder.cli.options``), under the field's name."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated

import typer

from mcoder.cli.common import INPUT, IO_PANEL, OUTPUT_DIR, HelpFlag, command_options, guarded
from mcoder.cli.options import config_options, given, with_options

PROG = "python -m mcoder.warmstart"
HAND = ("problems", "out")

app = typer.Typer(
    pretty_exceptions_enable=False, add_completion=False, context_settings={"help_option_names": ["-h", "--help"]}
)


@guarded
def warm_start(
    problems: Annotated[
        Path,
        typer.Option("--problems", rich_help_panel=IO_PANEL, help="problems JSONL with reference_solutions"),
        INPUT,
    ],
    out: Annotated[Path, typer.Option("--out", rich_help_panel=IO_PANEL, help="folder for the warm-started model"), OUTPUT_DIR],
    help_: HelpFlag = False,
    **settings,
) -> None:
    from mcoder.outputs import hold_lock
    from mcoder.warmstart import WarmStartConfig, check_out
    from mcoder.warmstart import warm_start as run

    config = WarmStartConfig(**given(WarmStartConfig, settings))
    # OUT.lock, held as every stage holds it, refuses a second pass on the same --out while this one
    # runs; --out is checked before the lock file is made beside it (as claim_output does), then
    # warm_start checks it again before the pass and before writing
    check_out(out)
    with hold_lock(out):
        done = run(problems, out, config)
    print(done)


def _params() -> list[inspect.Parameter]:
    """The options written above, and one per setting of WarmStartConfig."""
    from mcoder.warmstart import WarmStartConfig

    written = [
        p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
        for p in inspect.signature(warm_start, eval_str=True).parameters.values()
        if p.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    return [*written, *config_options(WarmStartConfig)]


command = with_options(warm_start, _params())
app.command(
    **command_options(
        "warmstart",
        help="The supervised warm start: a tiny model for a problem family, given a short supervised pass.",
        example=f"{PROG} --problems train.jsonl --out WARM_DIR --steps 1500 --target-pass 0.35",
    )
)(command)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Run the command on ``argv`` (default: the process's arguments); its exit code."""
    try:
        app(args=argv, prog_name=PROG)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else 0 if e.code is None else 1
    return 0
