"""``mcoder bench``: pass@k tables of verdicts, and figures of training runs."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any

import typer

from mcoder.cli.common import (
    INPUT,
    IO_PANEL,
    OUTPUT_DIR,
    OUTPUT_FILE,
    HelpFlag,
    ProblemsPath,
    Quiet,
    RolloutsPath,
    apply_quiet,
    command_options,
    guarded,
)
from mcoder.cli.options import config_options, given, with_options

TABLES = "pass@k tables"
PLOTS = "Training figures"
GATES = "CI gates (exit 5 when one fails)"


def register(app: typer.Typer) -> None:
    from mcoder.bench.config import BenchConfig
    from mcoder.bench.gates import Gates

    written = [
        p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
        for p in inspect.signature(bench, eval_str=True).parameters.values()
        if p.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    settings = [
        *config_options(BenchConfig, only={"ks", "rating_bounds"}, names={"ks": ("--k",)}, panel=TABLES),
        *config_options(BenchConfig, only={"plots"}, panel=PLOTS),
        *config_options(Gates, panel=GATES),
    ]
    app.command(
        **command_options(
            "bench",
            help="pass@k by platform x difficulty with failure shares; --run-dir RUN --plots: training figures.",
            example="mcoder bench -p bench.jsonl --verdicts verdicts.jsonl --k 1,4,8 "
            "(or: mcoder bench --run-dir runs/a --run-dir runs/b --plots)",
        )
    )(with_options(bench, [*written, *settings]))  # fmt: skip


@guarded
def bench(
    problems: ProblemsPath = None,  # type: ignore[assignment]  (optional: --plots alone needs none)
    verdicts: Annotated[
        Path | None,
        typer.Option(
            "--verdicts",
            rich_help_panel=IO_PANEL,
            help="Verdicts JSONL ('-' for stdin), or a LiveCodeBench results file (*_eval_all.json).",
        ),
        INPUT,
    ] = None,
    rollouts: RolloutsPath = None,  # type: ignore[assignment]  (only --lcb-out reads them)
    baseline: Annotated[
        Path | None,
        typer.Option(
            "--baseline",
            rich_help_panel=TABLES,
            help="Verdicts of another model, or a LiveCodeBench results file: adds deltas to every table.",
        ),
        INPUT,
    ] = None,
    markdown: Annotated[
        Path | None,
        typer.Option("--markdown", rich_help_panel=IO_PANEL, help="Write the tables as markdown here."),
        OUTPUT_FILE,
    ] = None,
    json_out: Annotated[
        Path | None,
        typer.Option("--json", rich_help_panel=IO_PANEL, help="Write every number as JSON here."),
        OUTPUT_FILE,
    ] = None,
    lcb_out: Annotated[
        Path | None,
        typer.Option(
            "--lcb-out",
            rich_help_panel=IO_PANEL,
            help="Write LiveCodeBench's results file (Scenario.codegeneration_N_T_eval_all.json); needs --rollouts.",
        ),
        OUTPUT_FILE,
    ] = None,
    junit: Annotated[
        Path | None,
        typer.Option(
            "--junit",
            rich_help_panel=IO_PANEL,
            help="Write JUnit XML here: a test case per problem, failures with the verdict's status and first failure.",
        ),
        OUTPUT_FILE,
    ] = None,
    run_dir: Annotated[
        list[Path] | None,
        typer.Option(
            "--run-dir",
            rich_help_panel=PLOTS,
            help="A training run folder with metrics.jsonl; repeat to compare runs.",
        ),
        INPUT,
    ] = None,
    out_dir: Annotated[
        Path | None,
        typer.Option(
            "--out-dir",
            rich_help_panel=PLOTS,
            help="Folder for the figures (default RUN/plots for one run).",
        ),
        OUTPUT_DIR,
    ] = None,
    quiet: Quiet = False,
    help_: HelpFlag = False,
    **settings: Any,
) -> None:
    """pass@k by platform x difficulty with failure shares; --run-dir RUN --plots: training figures."""
    from mcoder.bench.config import BenchConfig
    from mcoder.bench.gates import Gates
    from mcoder.bench.stage import run

    apply_quiet(quiet)
    cfg = BenchConfig(
        problems=problems,
        verdicts=verdicts,
        rollouts=rollouts,
        baseline=baseline,
        markdown=markdown,
        json_out=json_out,
        lcb_out=lcb_out,
        junit=junit,
        gates=Gates(**given(Gates, settings)),
        run_dirs=list(run_dir or []),
        out_dir=out_dir,
        **given(BenchConfig, settings),
    )
    run(cfg)
