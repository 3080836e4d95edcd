"""Difficulty from measurement: the target model's pass rate on each problem, kept to a band.

Pass rate = passed samples / judged samples, from verdicts that ``mcoder rollout`` and
``mcoder judge`` wrote. Problems the model always solves (rate 1) or never solves (rate 0) give
GRPO groups with zero advantage, so training spends steps on them for nothing; the band
LO <= rate <= HI keeps the rest. The rate goes into ``meta["pass_rate"]`` (and the sample count
into ``meta["pass_samples"]``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from pathlib import Path

from mcoder.dataset.report import Removal, StageResult
from mcoder.errors import UsageError
from mcoder.records import Problem, Verdict


def parse_band(text: str) -> tuple[float, float]:
    """``"0.1,0.9"`` -> (0.1, 0.9), checked."""
    parts = text.split(",")
    try:
        lo, hi = (float(x) for x in parts)
    except ValueError:
        raise UsageError(
            f"--keep-pass-rate takes LO,HI (two numbers), got {text!r}", hint="e.g. --keep-pass-rate 0.1,0.9"
        ) from None
    if not 0.0 <= lo <= hi <= 1.0:
        raise UsageError(f"--keep-pass-rate needs 0 <= LO <= HI <= 1, got {text!r}", hint="e.g. 0.1,0.9")
    return lo, hi


def pass_counts(verdicts: Iterable[Verdict]) -> dict[str, tuple[int, int]]:
    """problem_id -> (passed, samples)."""
    counts: dict[str, list[int]] = {}
    for v in verdicts:
        c = counts.setdefault(v.problem_id, [0, 0])
        c[0] += bool(v.passed)
        c[1] += 1
    return {k: (p, n) for k, (p, n) in counts.items()}


def read_pass_counts(paths: Sequence[str | Path]) -> dict[str, tuple[int, int]]:
    from mcoder.formats import lcb_results
    from mcoder.jsonl import read_records

    def all_verdicts():
        for path in paths:
            if lcb_results.is_results_file(path):  # a LiveCodeBench submission's grades
                yield from (v for _, v in lcb_results.as_verdicts(path))
            else:
                yield from read_records(path, Verdict)

    return pass_counts(all_verdicts())


def difficulty_band(
    problems: Sequence[Problem], counts: dict[str, tuple[int, int]], lo: float, hi: float
) -> tuple[list[Problem], StageResult]:
    """Keep problems with LO <= pass rate <= HI; a problem with no verdicts is removed."""
    kept, removals = [], []
    for p in problems:
        passed, samples = counts.get(p.id, (0, 0))
        if samples == 0:
            removals.append(Removal(p.id, "difficulty", "no_verdicts"))
            continue
        rate = passed / samples
        if not lo <= rate <= hi:
            reason = "too_easy" if rate > hi else "too_hard"
            removals.append(
                Removal(p.id, "difficulty", reason, {"pass_rate": round(rate, 4), "samples": samples})
            )
            continue
        kept.append(dataclasses.replace(p, meta={**p.meta, "pass_rate": rate, "pass_samples": samples}))
    rates = sorted(round(counts[p.id][0] / counts[p.id][1], 1) for p in kept)
    notes = {"kept_pass_rate_histogram": {f"{r:.1f}": rates.count(r) for r in sorted(set(rates))}}
    return kept, StageResult(
        "difficulty", len(problems), len(kept), removals, notes=notes, params={"band": [lo, hi]}
    )
