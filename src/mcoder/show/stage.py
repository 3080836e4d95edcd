"""``mcoder show`` as one call: read the target, filter, then print or write the HTML report."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mcoder import console
from mcoder.errors import DataError, UsageError
from mcoder.show import collect, terminal

DEFAULT_FULL_LIMIT = 20


@dataclass(slots=True)
class ShowConfig:
    target: Path
    """A rollouts file, a step folder, a run folder, or a LiveCodeBench results file."""
    verdicts: Path | None = None
    """Verdicts of the rollouts (default: verdicts.jsonl beside them)."""
    problems: Path | None = None
    """Problems file, for statements and the table's platform x difficulty (default: the run's)."""
    step: str = "last"
    """Which step of a run: a number, 'last' or 'all'."""
    filters: collect.Filters = field(default_factory=collect.Filters)
    full: bool = False
    """Each selected sample in full instead of a line per group."""
    limit: int = DEFAULT_FULL_LIMIT
    """At most this many samples in full (0: no limit)."""
    html: Path | None = None
    """Write a self-contained HTML report here."""
    ks: tuple[int, ...] = (1,)
    rating_bounds: tuple[float, float] = (1400.0, 2000.0)


def run(cfg: ShowConfig) -> list[collect.Shown]:
    from mcoder.outputs import check_document

    inputs = {"target": cfg.target, "verdicts": cfg.verdicts, "problems": cfg.problems}
    if cfg.html is not None:  # refused before the work (outputs.py: inputs, files not mcoder's, devices)
        check_document(cfg.html, stage="show", flag="--html", inputs=inputs)
    batch = collect.load(cfg.target, verdicts=cfg.verdicts, problems=cfg.problems, step=cfg.step)
    for note in batch.notes:
        console.warn(note)
    if not batch.samples:  # an empty file is bad input, not "no match"
        raise DataError(
            "no rollouts to show", path=str(cfg.target),
            hint="give the rollouts file of `mcoder rollout`, a step folder or a run folder",
        )  # fmt: skip
    chosen = [s for s in batch.samples if cfg.filters.keep(s)]
    if cfg.filters.rollout_id is not None and not chosen:
        raise UsageError(
            f"no rollout {cfg.filters.rollout_id!r} in {cfg.target}"
            + ("" if cfg.step == "all" else f" (step {cfg.step})"),
            hint="check the id, or look in every step with --step all",
        )
    if cfg.html is not None:
        from mcoder.show import html

        inputs["problems"] = batch.problems_path
        html.write(cfg.html, html.report(batch, chosen, cfg.ks, cfg.rating_bounds), inputs)
        console.emit(str(cfg.html))
        return chosen
    if not chosen:
        console.info(f"no sample of {len(batch.samples)} matches the filters")
        return chosen
    con = terminal.stdout_console()
    if cfg.full or cfg.filters.rollout_id is not None:
        shown = chosen if cfg.limit == 0 else chosen[: cfg.limit]
        for s in shown:
            terminal.print_sample(s, con)
        if len(shown) < len(chosen):
            console.info(
                f"{len(chosen) - len(shown)} more samples not shown (--limit {cfg.limit}; 0 for all)"
            )
    else:
        terminal.print_summary(batch, chosen, con)
    return chosen
