"""``mcoder show`` as one call: read the target, filter, then print or write the HTML report."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mcoder import console
from mcoder.bench.config import DEFAULT_KS, DEFAULT_RATING_BOUNDS, parse_ks, parse_rating_bounds
from mcoder.config import TEXT, ranges
from mcoder.errors import DataError, UsageError
from mcoder.show import collect, terminal

DEFAULT_FULL_LIMIT = 20


@ranges(limit=">= 0", ks=">= 1", rating_bounds="> 0")
@dataclass(slots=True)
class ShowConfig:
    targets: list[Path]
    """Rollouts files, step folders, run folders or LiveCodeBench results files; several only with
    html (the report compares them, the first being the reference)."""
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
    prompt: bool = False
    """In full: the exact prompt the model was given (its chat template applied), as the rollout recorded it."""
    html: Path | None = None
    """Write a self-contained HTML report here."""
    ks: tuple[int, ...] = field(default=DEFAULT_KS, metadata=TEXT)
    """The k of the report's pass@k, comma-separated."""
    rating_bounds: tuple[float, float] = field(default=DEFAULT_RATING_BOUNDS, metadata=TEXT)
    """The report's difficulty of a rated problem: below LO easy, below HI medium, else hard (LO,HI)."""

    def __post_init__(self) -> None:
        if isinstance(self.ks, str):  # the command line's '1,4,8'
            self.ks = parse_ks(self.ks)
        if isinstance(self.rating_bounds, str):
            self.rating_bounds = parse_rating_bounds(self.rating_bounds)
        if self.limit < 0:
            raise UsageError(f"--limit {self.limit} is negative", hint="0 shows every sample")


def run(cfg: ShowConfig) -> list[collect.Shown]:
    from mcoder.outputs import check_document

    inputs = {**{f"target {i}": t for i, t in enumerate(cfg.targets)},
              "verdicts": cfg.verdicts, "problems": cfg.problems}  # fmt: skip
    if cfg.html is not None:  # refused before the work (outputs.py: inputs, files not mcoder's, devices)
        check_document(cfg.html, stage="show", flag="--html", inputs=inputs)
    if len(cfg.targets) > 1 and cfg.html is None:
        raise UsageError(
            f"{len(cfg.targets)} targets: several are compared in the HTML report only",
            hint="add --html report.html, or show one target at a time",
        )
    if len(cfg.targets) > 1 and cfg.verdicts is not None:
        raise UsageError(
            "--verdicts names the verdicts of one target; with several, each is read from beside its rollouts",
            hint="put each target's verdicts.jsonl beside its rollouts.jsonl (a step folder), or drop --verdicts",
        )
    if cfg.html is not None:
        return _report(cfg, inputs)
    batch, chosen = _select(cfg, cfg.targets[0])
    if not chosen:
        console.info(f"no sample of {len(batch.samples)} matches the filters")
        return chosen
    con = terminal.stdout_console()
    if cfg.full or cfg.filters.rollout_id is not None:
        shown = chosen if cfg.limit == 0 else chosen[: cfg.limit]
        for s in shown:
            terminal.print_sample(s, con, prompt=cfg.prompt)
        if len(shown) < len(chosen):
            console.info(
                f"{len(chosen) - len(shown)} more samples not shown (--limit {cfg.limit}; 0 for all)"
            )
    else:
        terminal.print_summary(batch, chosen, con)
    return chosen


def _select(cfg: ShowConfig, target: Path) -> tuple[collect.Batch, list[collect.Shown]]:
    """Read one target and keep the samples the filters want."""
    batch = collect.load(target, verdicts=cfg.verdicts, problems=cfg.problems, step=cfg.step)
    for note in batch.notes:
        console.warn(note if len(cfg.targets) == 1 else f"{target}: {note}")
    if not batch.samples:  # an empty file is bad input, not "no match"
        raise DataError(
            "no rollouts to show", path=str(target),
            hint="give the rollouts file of `mcoder rollout`, a step folder or a run folder",
        )  # fmt: skip
    chosen = [s for s in batch.samples if cfg.filters.keep(s)]
    if cfg.filters.rollout_id is not None and not chosen and len(cfg.targets) == 1:
        raise UsageError(
            f"no rollout {cfg.filters.rollout_id!r} in {target}"
            + ("" if cfg.step == "all" else f" (step {cfg.step})"),
            hint="check the id, or look in every step with --step all",
        )
    return batch, chosen


def _report(cfg: ShowConfig, inputs: dict) -> list[collect.Shown]:
    """The HTML report of every target (the first is the reference of the comparison)."""
    from mcoder.bench.metrics import run_labels
    from mcoder.show import html

    assert cfg.html is not None
    parts = []
    for target, label in zip(cfg.targets, run_labels(cfg.targets), strict=True):
        batch, chosen = _select(cfg, target)
        parts.append(html.Part(label, batch, chosen))
        inputs[f"problems of {label}"] = batch.problems_path
    html.write(cfg.html, html.report(parts, cfg.ks, cfg.rating_bounds), inputs)
    if str(cfg.html) != "-":  # stdout holds the page
        console.emit(str(cfg.html))
    return [s for p in parts for s in p.samples]
