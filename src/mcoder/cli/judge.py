"""``mcoder judge``: run each rollout's program in the sandbox against its problem's tests."""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mcoder.cli.common import (
    FLAG,
    INPUT,
    IO_PANEL,
    OUTPUT_FILE,
    HelpFlag,
    Overwrite,
    Quiet,
    apply_quiet,
    command_options,
    guarded,
)
from mcoder.cli.options import config_options, given, with_options

if TYPE_CHECKING:
    from mcoder.judge.config import JudgeConfig

MERGE = "Shards"
EXPLAIN = "Explain"


# The judge's settings as options, generated from JudgeConfig's fields: `mcoder judge`, `mcoder
# judge serve` and the loop take them under the same names (a field x_y is --x-y; allow_packages is
# the repeatable --allow-package; a setting on by default is turned off by --no-x-y).
PREFIX = "judge_"  # parameter names only (a command may hold another config's field of the same name)
NAMES = {"allow_packages": ("--allow-package",)}
SHORT = {"workers": ("--workers", "-w")}
ALIASES = {"timeout_s": ("--timeout",)}  # the earlier spelling: accepted, not shown


def judge_params(
    panel: str | None = None, *, short: bool = False, skip: Iterable[str] = (), old_spellings: bool = False
) -> list[inspect.Parameter]:
    """JudgeConfig's options, one per field, for a typer command (``mcoder.cli.options``).

    ``panel``: one help panel for them all (None: a panel per section of JudgeConfig);
    ``short``: ``-w`` for --workers as well (where no other option has it); ``skip``: fields left
    out; ``old_spellings``: also accept the judge's earlier flags, hidden (``ALIASES``)."""
    from mcoder.judge.config import JudgeConfig

    return config_options(
        JudgeConfig,
        prefix=PREFIX,
        names={**NAMES, **(SHORT if short else {})},
        panel=panel,
        skip=skip,
        aliases=ALIASES if old_spellings else None,
    )


def judge_config(kw: dict[str, Any]) -> JudgeConfig:
    """The JudgeConfig of the options ``judge_params`` declared, as parsed (unset ones: defaults)."""
    from mcoder.judge.config import JudgeConfig

    return JudgeConfig(**given(JudgeConfig, kw, prefix=PREFIX))


def register(app: typer.Typer) -> None:
    written = [
        p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
        for p in inspect.signature(judge, eval_str=True).parameters.values()
        if p.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    app.command(
        **command_options(
            "judge",
            help="Judge ROLLOUTS against PROBLEMS into OUT (verdicts JSONL): one verdict per rollout.",
            example="mcoder judge -p problems.jsonl -r rollouts.jsonl -o verdicts.jsonl --workers 8",
        )
    )(with_options(judge, [*written, *judge_params(short=True, old_spellings=True)]))  # fmt: skip


@guarded
def judge(
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", rich_help_panel=IO_PANEL, help="Output JSONL ('-' for stdout)."),
        OUTPUT_FILE,
    ] = None,
    problems: Annotated[
        Path | None,
        typer.Option(
            "--problems", "-p", rich_help_panel=IO_PANEL, help="Problems JSONL ('-' for stdin)."
        ),
        INPUT,
    ] = None,
    rollouts: Annotated[
        Path | None,
        typer.Option(
            "--rollouts",
            "-r",
            rich_help_panel=IO_PANEL,
            help="Rollouts JSONL ('-' for stdin), or a LiveCodeBench results file (*_eval_all.json) to re-judge; with --merge, the check list.",
        ),
        INPUT,
    ] = None,
    merge: Annotated[
        bool,
        typer.Option(
            "--merge",
            metavar=FLAG,
            rich_help_panel=MERGE,
            help="Join the verdict files PARTS of --shard runs into OUT, checking that no rollout "
            "is judged twice (and, with --rollouts, that every one is judged).",
        ),
    ] = False,
    parts: Annotated[
        list[Path] | None,
        typer.Argument(metavar="PARTS", help="With --merge: the shards' verdict files."),
        INPUT,
    ] = None,
    shard: Annotated[
        str | None,
        typer.Option(
            "--shard", rich_help_panel=MERGE, help="Judge only shard i of n (i/n, by rollout id)."
        ),
    ] = None,
    explain: Annotated[
        str | None,
        typer.Option(
            "--explain",
            metavar="ROLLOUT_ID",
            rich_help_panel=EXPLAIN,
            help="Judge this one rollout of --rollouts again, every test run and none cached, and print "
            "each test: input, expected, actual, the rule that compared them, time and memory (no --out).",
        ),
    ] = None,
    overwrite: Overwrite = False,
    quiet: Quiet = False,
    help_: HelpFlag = False,
    **settings: Any,
) -> None:
    """Judge ROLLOUTS against PROBLEMS into OUT (verdicts JSONL): one verdict per rollout.

    With --merge, join the verdict files of shards instead: mcoder judge --merge v.*.jsonl -o v.jsonl
    With --explain ID, judge one rollout again and print every test: mcoder judge -p P -r R --explain ID
    """
    from mcoder.console import emit
    from mcoder.errors import UsageError
    from mcoder.judge.stage import Shard, judge_files

    apply_quiet(quiet)
    if explain is not None:
        from mcoder.judge.explain import explain_files

        if merge or parts or shard is not None or out is not None:
            raise UsageError("--explain prints one rollout's tests: it takes no --out, --merge or --shard")
        if problems is None or rollouts is None:
            raise UsageError("--explain needs --problems and --rollouts", hint="the files the rollout is in")
        explain_files(judge_config(settings), problems, rollouts, explain)
        return
    if out is None:
        raise UsageError("judging needs --out", hint="-o verdicts.jsonl ('-' for stdout)")
    if merge or parts:
        from mcoder.judge.merge import merge_verdicts

        if not merge:
            raise UsageError("verdict files given without --merge", hint="add --merge to join them")
        if problems is not None or shard is not None:
            raise UsageError("--merge joins verdict files; it takes no --problems or --shard")
        merge_verdicts(parts or [], out, rollouts, overwrite=overwrite)
        if str(out) != "-":
            emit(str(out))
        return
    if problems is None or rollouts is None:
        raise UsageError(
            "judging needs --problems and --rollouts", hint="or --merge PARTS... to join shards"
        )
    if str(problems) == "-" and str(rollouts) == "-":
        raise UsageError(
            "--problems - and --rollouts - both read stdin", hint="pass one of them as a file"
        )
    cfg = judge_config(settings)
    judge_files(cfg, problems, rollouts, out, Shard.parse(shard), overwrite=overwrite)
    if str(out) != "-":
        emit(str(out))
