"""`mcoder rollout`: sample G completions per problem with the hf or vLLM engine."""

from __future__ import annotations

import dataclasses
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
from mcoder.cli.options import config_options, with_options
from mcoder.console import emit

SAMPLING = "Sampling"
AUTO_T = "Temperature from diversity (--temperature auto)"
ENGINE = "Engine"


def register(app: typer.Typer) -> None:
    app.command(
        **command_options(
            "rollout",
            help="Sample G completions per problem (token ids, log-probs, finish reasons).",
            example="mcoder rollout -p problems.jsonl -m MODEL -o rollouts.jsonl --n 8 --max-tokens 1024",
        )
    )(with_options(rollout, _params()))  # fmt: skip


def _params() -> list[inspect.Parameter]:
    """The options written below, and the diversity rule's own from SamplingConfig's fields."""
    from mcoder.rollout.sampling import SamplingConfig

    written = [
        p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
        for p in inspect.signature(rollout, eval_str=True).parameters.values()
        if p.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    return [
        *written,
        *config_options(
            SamplingConfig,
            only={"temperature_rule", "diversity_rise"},
            panel=AUTO_T,
            defaults={"temperature_rule": "knee"},  # rollout does not judge: spread is the loop's
        ),
    ]


@guarded
def rollout(
    problems: ProblemsPath,
    model: ModelPath,
    out: OutPath,
    n: Annotated[
        int,
        typer.Option("--n", "-n", rich_help_panel=SAMPLING, help="Samples per problem (the group size G)."),
    ] = 8,
    max_tokens: Annotated[
        int, typer.Option("--max-tokens", rich_help_panel=SAMPLING, help="Most completion tokens per sample.")
    ] = 1024,
    temperature: Annotated[
        str | None,
        typer.Option(
            "--temperature",
            "-t",
            rich_help_panel=SAMPLING,
            help="A number (default 1.0), or 'auto': choose from measured diversity.",
        ),
    ] = None,
    temperature_schedule: Annotated[
        str | None,
        typer.Option(
            "--temperature-schedule",
            rich_help_panel=SAMPLING,
            help="Staged temperatures 'T@STEP,...', e.g. '0.6@0,1.2@140'.",
        ),
    ] = None,
    step: Annotated[
        int,
        typer.Option("--step", rich_help_panel=SAMPLING, help="Training step whose schedule stage applies."),
    ] = 0,
    diversity_target: Annotated[
        float | None,
        typer.Option(
            "--diversity-target",
            rich_help_panel=AUTO_T,
            help="With --temperature auto: an absolute diversity the chosen T must reach, instead of "
            "--temperature-rule.",
        ),
    ] = None,
    temperature_candidates: Annotated[
        str | None,
        typer.Option(
            "--temperature-candidates",
            rich_help_panel=AUTO_T,
            help="With --temperature auto: START:STOP:STEP or a,b,c.",
        ),
    ] = None,
    probe_problems: Annotated[
        int,
        typer.Option(
            "--probe-problems",
            rich_help_panel=AUTO_T,
            help="With --temperature auto: problems probed per candidate.",
        ),
    ] = 16,
    diversity_measure: Annotated[
        str,
        typer.Option(
            "--diversity-measure", rich_help_panel=AUTO_T, help="With --temperature auto: lexical or program."
        ),
    ] = "lexical",
    engine: Annotated[
        str,
        typer.Option(
            "--engine", rich_help_panel=ENGINE, help="auto (vLLM when installed, else hf), hf or vllm."
        ),
    ] = "auto",
    adapter: Annotated[
        Path | None,
        typer.Option(
            "--adapter", rich_help_panel=IO_PANEL, help="PEFT LoRA adapter folder applied to the model."
        ),
        INPUT,
    ] = None,
    seed: Annotated[
        int,
        typer.Option(
            "--seed",
            rich_help_panel=SAMPLING,
            help="Run seed; each problem's samples are seeded from it and the problem id.",
        ),
    ] = 0,
    batch_size: Annotated[
        int,
        typer.Option("--batch-size", rich_help_panel=ENGINE, help="Rows (problem x sample) per engine call."),
    ] = 32,
    tensor_parallel_size: Annotated[
        int,
        typer.Option(
            "--tensor-parallel-size",
            "--tp",
            rich_help_panel=ENGINE,
            help="vllm: GPUs one model copy is split over.",
        ),
    ] = 1,
    data_parallel_size: Annotated[
        int,
        typer.Option(
            "--data-parallel-size",
            "--dp",
            rich_help_panel=ENGINE,
            help="vllm: engine replicas (processes), each on its own GPUs.",
        ),
    ] = 1,
    top_k: Annotated[
        int, typer.Option("--top-k", rich_help_panel=SAMPLING, help="Top-k filtering (0: off).")
    ] = 0,
    top_p: Annotated[
        float, typer.Option("--top-p", rich_help_panel=SAMPLING, help="Nucleus sampling mass (1.0: off).")
    ] = 1.0,
    policy_version: Annotated[
        int,
        typer.Option(
            "--policy-version",
            rich_help_panel=SAMPLING,
            help="Policy version recorded in each rollout and its id.",
        ),
    ] = 0,
    limit: Annotated[
        int | None, typer.Option("--limit", rich_help_panel=IO_PANEL, help="Use only the first N problems.")
    ] = None,
    long_prompts: Annotated[
        str,
        typer.Option(
            "--long-prompts",
            rich_help_panel=SAMPLING,
            help="A prompt longer than the model's context minus --max-tokens: skip it (counted and "
            "named in the summary) or error (exit 3 before any sampling).",
        ),
    ] = "skip",
    overwrite: Overwrite = False,
    quiet: Quiet = False,
    help_: HelpFlag = False,
    **rule,
) -> None:
    from mcoder.rollout.stage import run_rollout

    apply_quiet(quiet)
    cfg = make_config({**locals(), **rule})
    summary = run_rollout(cfg)
    if str(out) != "-":
        emit(summary.out)


def make_config(params: dict):
    """The RolloutConfig of the parsed options (also how a data-parallel replica's flags are read back)."""
    from mcoder.rollout.config import RolloutConfig
    from mcoder.rollout.temperature import DEFAULT_CANDIDATES, parse_candidates

    p = {k: v for k, v in params.items() if v is not None or k in ("temperature", "diversity_target")}
    cands = p.get("temperature_candidates")
    p["temperature_candidates"] = parse_candidates(cands) if cands else DEFAULT_CANDIDATES
    fields = {f.name for f in dataclasses.fields(RolloutConfig)}
    return RolloutConfig(**{k: v for k, v in p.items() if k in fields})
