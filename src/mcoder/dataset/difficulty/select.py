"""``mcoder dataset difficulty select``: keep problems by their calibrated (predicted) pass rate.

Each scored problem's weighted score goes through the calibration to a predicted pass rate, and a
class: ``easy`` above ``--easy-above``, ``hard`` below ``--hard-below``, ``medium`` between. Then:

- ``--keep-predicted LO,HI`` keeps the problems whose predicted pass rate is in the band;
- ``--easy-share S`` then drops easy problems, the easiest first (highest predicted pass rate,
  ties by id), until easy ones are at most S of what is kept. The paper took the easy share from
  40 % to 20 % this way and kept about 70 % of its problems.

Problems without a score (malformed answers, a prompt too long, not rated) are dropped, or kept
with ``--unscored keep`` (then they count in no class). Kept problems are written in input order
with ``meta`` ``difficulty_score``, ``predicted_pass_rate`` and ``difficulty_class``; the output is
claimed and resumed like every stage's.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from mcoder import console
from mcoder.config import output_settings
from mcoder.dataset.config import SelectConfig, parse_pair
from mcoder.dataset.difficulty.calibrate import Calibration

CLASSES = ("easy", "medium", "hard")


def difficulty_class(rate: float, easy_above: float, hard_below: float) -> str:
    return "easy" if rate > easy_above else "hard" if rate < hard_below else "medium"


@dataclass
class SelectSummary:
    out: str
    problems: int = 0
    kept: int = 0
    unscored: int = 0
    before: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CLASSES, 0))
    after: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CLASSES, 0))
    outside_band: int = 0
    easy_dropped: int = 0

    def share(self, counts: dict[str, int], cls: str) -> float | None:
        total = sum(counts.values())
        return counts[cls] / total if total else None


def choose(rates: dict[str, float], cfg: SelectConfig, summary: SelectSummary) -> set[str]:
    """The ids to keep among the scored problems (id -> predicted pass rate)."""
    classes = {pid: difficulty_class(r, cfg.easy_above, cfg.hard_below) for pid, r in rates.items()}
    for c in classes.values():
        summary.before[c] += 1
    kept = set(rates)
    if cfg.keep_predicted is not None:
        lo, hi = parse_pair(cfg.keep_predicted, "--keep-predicted")
        kept = {pid for pid in kept if lo <= rates[pid] <= hi}
        summary.outside_band = len(rates) - len(kept)
    if cfg.easy_share is not None:
        easy = sorted((pid for pid in kept if classes[pid] == "easy"), key=lambda p: (-rates[p], p))
        others = len(kept) - len(easy)
        # largest e with e <= share * (others + e): e <= share * others / (1 - share)
        s = cfg.easy_share
        allowed = len(easy) if s >= 1 else math.floor(s * others / (1 - s) + 1e-9)
        drop = easy[: max(0, len(easy) - allowed)]
        summary.easy_dropped = len(drop)
        kept -= set(drop)
    for pid in kept:
        summary.after[classes[pid]] += 1
    return kept


def select(cfg: SelectConfig) -> SelectSummary:
    from mcoder.outputs import Job, execute

    cfg.validate()
    settings = output_settings(cfg)
    inputs = {"problems": cfg.problems, "scores": cfg.scores, "calibration": cfg.calibration}
    job = Job(out=cfg.out, inputs=inputs, settings=settings, overwrite=cfg.overwrite)
    summary, made = execute(SelectStage(cfg, SelectSummary(out=cfg.out)), job)
    if made:
        show_summary(summary)
    return summary


@dataclass
class SelectStage:
    """``mcoder dataset difficulty select`` as a stage (``mcoder.outputs.Stage``): the summary,
    and whether this run made the output."""

    cfg: SelectConfig
    summary: SelectSummary
    name = "dataset difficulty select"
    kind = "jsonl"
    expect = ("id", "source", "question", "tests")

    def finished(self, job, claim) -> tuple[SelectSummary, bool]:
        console.info(claim.finished_message)
        return self.summary, False

    def run(self, job, claim) -> tuple[SelectSummary, bool]:
        from mcoder.dataset.difficulty.predict import read_scores
        from mcoder.jsonl import RecordWriter, read_records
        from mcoder.records import Problem
        from mcoder.rollout.problems import iter_problems

        cfg, summary = self.cfg, self.summary
        calibration = Calibration.read(cfg.calibration)
        scores = read_scores(cfg.scores)
        rates, score_of = {}, {}
        ids = []
        for _, p in iter_problems(cfg.problems, None):  # first pass: ids only (tests dropped)
            ids.append(p.id)
            s = scores.get(p.id)
            if s is None:
                summary.unscored += 1
                continue
            score_of[p.id] = s
            rates[p.id] = calibration.predict(s)
        summary.problems = len(ids)
        kept = choose(rates, cfg, summary)
        if cfg.unscored == "keep":
            kept |= {pid for pid in ids if pid not in rates}
        summary.kept = len(kept)
        with RecordWriter(cfg.out, Problem.KEY, resume=claim.resume) as writer:
            for p in read_records(cfg.problems, Problem):
                if p.id not in kept:
                    continue
                extra = {}
                if p.id in rates:
                    r = rates[p.id]
                    extra = {
                        "difficulty_score": score_of[p.id], "predicted_pass_rate": r,
                        "difficulty_class": difficulty_class(r, cfg.easy_above, cfg.hard_below),
                    }  # fmt: skip
                writer.write(dataclasses.replace(p, meta={**p.meta, **extra}))
        return summary, True


def show_summary(s: SelectSummary) -> None:
    def pct(v: float | None) -> str:
        return "-" if v is None else f"{100 * v:.1f} %"

    rows = [
        (c, s.before[c], pct(s.share(s.before, c)), s.after[c], pct(s.share(s.after, c))) for c in CLASSES
    ]
    rows.append(("unscored", s.unscored, "", s.unscored if s.kept > sum(s.after.values()) else 0, ""))
    rows.append(("all", s.problems, "", s.kept, pct(s.kept / s.problems if s.problems else None) + " kept"))
    console.show(
        console.table(f"difficulty select -> {s.out}", ["class", "before", "share", "after", "share"], rows)
    )
    if s.outside_band or s.easy_dropped:
        console.info(
            f"dropped: {s.outside_band} outside --keep-predicted, {s.easy_dropped} easy for --easy-share"
        )
