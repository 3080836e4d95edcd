"""``mcoder show``: a rollout batch, a step of a run, or one rollout, read by a person."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any

import typer

from mcoder.cli.common import (
    INPUT,
    IO_PANEL,
    OUTPUT_FILE,
    HelpFlag,
    Quiet,
    apply_quiet,
    command_options,
    guarded,
)
from mcoder.cli.options import config_options, given, with_options

FILTERS = "Filters"
VIEW = "View"


FILTER = "filter_"  # parameter names of the Filters fields


def register(app: typer.Typer) -> None:
    from mcoder.show.collect import Filters
    from mcoder.show.stage import ShowConfig

    written = [
        p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
        for p in inspect.signature(show, eval_str=True).parameters.values()
        if p.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    settings = [
        *config_options(
            Filters,
            prefix=FILTER,
            names={"statuses": ("--status",), "problem_ids": ("--problem",), "rollout_id": ("--id",)},
            panel=FILTERS,
        ),
        *config_options(ShowConfig, only={"step"}, panel=FILTERS),
        *config_options(
            ShowConfig, only={"full", "limit", "prompt", "ks", "rating_bounds"},
            names={"full": ("--full", "-f"), "ks": ("--k",)},
            panel=VIEW,
        ),
    ]  # fmt: skip
    app.command(
        **command_options(
            "show",
            help="Read a rollout batch: a line per group, or each sample in full; --html writes a report page.",
            example="mcoder show runs/a/step_0003 --status wrong_answer --full "
            "(or: mcoder show runs/a runs/b --html report.html)",
        )
    )(with_options(show, [*written, *settings]))  # fmt: skip


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
    html: Annotated[
        Path | None,
        typer.Option(
            "--html",
            rich_help_panel=VIEW,
            help="Write a self-contained HTML report (pass@k table, training plots, every sample) here.",
        ),
        OUTPUT_FILE,
    ] = None,
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
    **settings: Any,
) -> None:
    """Read a rollout batch: a line per group, or each sample in full; --html writes a report page."""
    from mcoder.show.collect import Filters
    from mcoder.show.stage import ShowConfig, run

    apply_quiet(quiet)
    cfg = ShowConfig(
        targets=list(target),
        verdicts=verdicts,
        problems=problems,
        html=html,
        filters=Filters(**given(Filters, settings, prefix=FILTER)),
        **given(ShowConfig, settings),
    )
    run(cfg)
