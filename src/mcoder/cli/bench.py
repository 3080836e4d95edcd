"""``mcoder bench``: pass@k tables of verdicts, and figures of training runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mcoder.cli.common import (
    FLAG,
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

TABLES = "pass@k tables"
PLOTS = "Training figures"
GATES = "CI gates (exit 5 when one fails)"


def register(app: typer.Typer) -> None:
    @app.command(
        **command_options(
            "bench",
            help="pass@k by platform x difficulty with failure shares; --run-dir RUN --plots: training figures.",
            example="mcoder bench -p bench.jsonl --verdicts verdicts.jsonl --k 1,4,8 "
            "(or: mcoder bench --run-dir runs/a --run-dir runs/b --plots)",
        )
    )  # fmt: skip
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
        k: Annotated[
            str,
            typer.Option(
                "--k", rich_help_panel=TABLES, help="The k of pass@k, comma-separated; 1 is always reported."
            ),
        ] = "1",
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
        fail_under: Annotated[
            str | None,
            typer.Option(
                "--fail-under",
                metavar="RATE",
                rich_help_panel=GATES,
                help="Exit 5 when pass@1 over all problems is below RATE (0.6 or 60%).",
            ),
        ] = None,
        fail_on_regression: Annotated[
            bool,
            typer.Option(
                "--fail-on-regression",
                metavar=FLAG,
                rich_help_panel=GATES,
                help="Exit 5 when any problem's pass@1 is lower than in --baseline.",
            ),
        ] = False,
        max_drop: Annotated[
            float | None,
            typer.Option(
                "--max-drop",
                metavar="POINTS",
                rich_help_panel=GATES,
                help="Exit 5 when pass@1 over all fell more than POINTS percentage points below --baseline's.",
            ),
        ] = None,
        rating_bounds: Annotated[
            str,
            typer.Option(
                "--rating-bounds",
                rich_help_panel=TABLES,
                help="Ratings below LO are easy, below HI medium, else hard: LO,HI.",
            ),
        ] = "1400,2000",
        run_dir: Annotated[
            list[Path] | None,
            typer.Option(
                "--run-dir",
                rich_help_panel=PLOTS,
                help="A training run folder with metrics.jsonl; repeat to compare runs.",
            ),
            INPUT,
        ] = None,
        plots: Annotated[
            bool,
            typer.Option(
                "--plots",
                metavar=FLAG,
                rich_help_panel=PLOTS,
                help="Draw the training-dynamics figures (PNG).",
            ),
        ] = False,
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
    ) -> None:
        """pass@k by platform x difficulty with failure shares; --run-dir RUN --plots: training figures."""
        from mcoder.bench.config import BenchConfig, parse_ks, parse_rating_bounds
        from mcoder.bench.gates import Gates, parse_rate
        from mcoder.bench.stage import run

        apply_quiet(quiet)
        cfg = BenchConfig(
            problems=problems,
            verdicts=verdicts,
            rollouts=rollouts,
            ks=parse_ks(k),
            baseline=baseline,
            markdown=markdown,
            json_out=json_out,
            lcb_out=lcb_out,
            junit=junit,
            gates=Gates(
                fail_under=parse_rate(fail_under) if fail_under is not None else None,
                fail_on_regression=fail_on_regression,
                max_drop=max_drop,
            ),
            rating_bounds=parse_rating_bounds(rating_bounds),
            run_dirs=list(run_dir or []),
            plots=plots,
            out_dir=out_dir,
        )
        run(cfg)
