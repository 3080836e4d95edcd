"""``mcoder show``: a rollout batch, a step of a run, or one rollout, read by a person."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mcoder.cli.common import (
    FLAG,
    INPUT,
    IO_PANEL,
    OUTPUT_FILE,
    HelpFlag,
    Quiet,
    apply_quiet,
    command_options,
    guarded,
)

FILTERS = "Filters"
VIEW = "View"


def register(app: typer.Typer) -> None:
    @app.command(
        **command_options(
            "show",
            help="Read a rollout batch: a line per group, or each sample in full; --html writes a report page.",
            example="mcoder show runs/a/step_0003 --status wrong_answer --full "
            "(or: mcoder show runs/a runs/b --html report.html)",
        )
    )  # fmt: skip
    @guarded
    def show(
        target: Annotated[
            list[Path],
            typer.Argument(
                help="A rollouts file, a step folder (RUN/step_NNNN), a run folder, or a LiveCodeBench *_eval_all.json; "
                "several with --html: compared, the first as the reference.",
                show_default=False,
            ),
            INPUT,
        ],
        rollout_id: Annotated[
            str | None,
            typer.Option("--id", metavar="ID", rich_help_panel=FILTERS, help="One rollout, shown in full."),
        ] = None,
        status: Annotated[
            list[str] | None,
            typer.Option(
                "--status",
                metavar="STATUS",
                rich_help_panel=FILTERS,
                help="Only samples with this verdict status (repeatable).",
            ),
        ] = None,
        masked: Annotated[
            bool,
            typer.Option(
                "--masked",
                metavar=FLAG,
                rich_help_panel=FILTERS,
                help="Only samples the truncation mask zeroed.",
            ),
        ] = False,
        problem: Annotated[
            list[str] | None,
            typer.Option(
                "--problem", metavar="ID", rich_help_panel=FILTERS, help="Only this problem id (repeatable)."
            ),
        ] = None,
        step: Annotated[
            str,
            typer.Option(
                "--step", rich_help_panel=FILTERS, help="Step of a run folder: a number, last or all."
            ),
        ] = "last",
        full: Annotated[
            bool,
            typer.Option(
                "--full",
                "-f",
                metavar=FLAG,
                rich_help_panel=VIEW,
                help="Each sample in full: problem, highlighted program, verdict with the failing test's diff, training decision.",
            ),
        ] = False,
        limit: Annotated[
            int,
            typer.Option("--limit", rich_help_panel=VIEW, help="At most this many samples in full (0: all)."),
        ] = 20,
        html: Annotated[
            Path | None,
            typer.Option(
                "--html",
                rich_help_panel=VIEW,
                help="Write a self-contained HTML report (pass@k table, training plots, every sample) here.",
            ),
            OUTPUT_FILE,
        ] = None,
        k: Annotated[
            str,
            typer.Option("--k", rich_help_panel=VIEW, help="The k of the report's pass@k, comma-separated."),
        ] = "1",
        verdicts: Annotated[
            Path | None,
            typer.Option(
                "--verdicts",
                rich_help_panel=IO_PANEL,
                help="Verdicts of the rollouts (default: verdicts.jsonl beside them).",
            ),
            INPUT,
        ] = None,
        problems: Annotated[
            Path | None,
            typer.Option(
                "--problems",
                "-p",
                rich_help_panel=IO_PANEL,
                help="Problems JSONL, for statements and the table's platforms (default: the run's).",
            ),
            INPUT,
        ] = None,
        quiet: Quiet = False,
        help_: HelpFlag = False,
    ) -> None:
        """Read a rollout batch: a line per group, or each sample in full; --html writes a report page."""
        from mcoder.bench.config import parse_ks
        from mcoder.errors import UsageError
        from mcoder.records import STATUSES
        from mcoder.show.collect import UNJUDGED, Filters
        from mcoder.show.stage import ShowConfig, run

        apply_quiet(quiet)
        if limit < 0:
            raise UsageError(f"--limit {limit} is negative", hint="0 shows every sample")
        known = (*STATUSES, UNJUDGED)
        unknown = [s for s in status or () if s not in known]
        if unknown:
            raise UsageError(
                f"--status {unknown[0]!r} is not a verdict status", hint="one of " + ", ".join(known)
            )
        cfg = ShowConfig(
            targets=list(target),
            verdicts=verdicts,
            problems=problems,
            step=step,
            filters=Filters(tuple(status or ()), masked, tuple(problem or ()), rollout_id),
            full=full,
            limit=limit,
            html=html,
            ks=parse_ks(k),
        )
        run(cfg)
