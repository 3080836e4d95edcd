"""`mcoder rollout`: sample G completions per problem with the hf or vLLM engine."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated

import typer

from mcoder.cli.common import (
    INPUT,
    IO_PANEL,
    HelpFlag,
    ModelPath,
    OutPath,
    Overwrite,
    ProblemsPath,
    Quiet,
    apply_quiet,
    command_options,
    guarded,
)
from mcoder.cli.options import config_options, given, with_options
from mcoder.console import emit


def register(app: typer.Typer) -> None:
    app.command(
        **command_options(
            "rollout",
            help="Sample G completions per problem (token ids, log-probs, finish reasons).",
            example="mcoder rollout -p problems.jsonl -m MODEL -o rollouts.jsonl --n 8 --max-tokens 1024",
        )
    )(with_options(rollout, _params()))  # fmt: skip


# The command's own options: inputs, outputs and switches; every sampling and engine setting is
# generated from RolloutConfig's fields (mcoder.cli.options), under the field's name.
HAND = ("problems", "model", "out", "adapter", "limit", "overwrite", "quiet")
# the loop's alone: the guard reads judged probes, stages are steps of training
LOOP_ONLY = ("pass_guard", "temperature_stage_steps")
NAMES = {
    "n": ("--n", "-n"),
    "temperature": ("--temperature", "-t"),
    "tensor_parallel_size": ("--tensor-parallel-size", "--tp"),
    "data_parallel_size": ("--data-parallel-size", "--dp"),
}


def _params() -> list[inspect.Parameter]:
    """The options written below, and one per setting of RolloutConfig."""
    from mcoder.rollout.config import RolloutConfig

    written = [
        p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
        for p in inspect.signature(rollout, eval_str=True).parameters.values()
        if p.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    return [*written, *config_options(RolloutConfig, skip={*HAND, *LOOP_ONLY}, names=NAMES)]


@guarded
def rollout(
    problems: ProblemsPath,
    model: ModelPath,
    out: OutPath,
    adapter: Annotated[
        Path | None,
        typer.Option(
            "--adapter", rich_help_panel=IO_PANEL, help="PEFT LoRA adapter folder applied to the model."
        ),
        INPUT,
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", rich_help_panel=IO_PANEL, help="Use only the first N problems.")
    ] = None,
    overwrite: Overwrite = False,
    quiet: Quiet = False,
    help_: HelpFlag = False,
    **settings,
) -> None:
    from mcoder.rollout.stage import run_rollout

    apply_quiet(quiet)
    cfg = make_config({**locals(), **settings})
    summary = run_rollout(cfg)
    if str(out) != "-":
        emit(summary.out)


def make_config(params: dict):
    """The RolloutConfig of the parsed options (also how a data-parallel replica's flags are read back)."""
    from mcoder.rollout.config import RolloutConfig

    hand = {k: params[k] for k in HAND if params.get(k) is not None}
    return RolloutConfig(**hand, **given(RolloutConfig, {k: v for k, v in params.items() if k not in HAND}))
