"""Diversity-determined temperature (MicroCoder's second idea) and staged temperature schedules.

``select_temperature`` samples a probe set of problems at each candidate temperature, measures
the mean group diversity D(T), and returns the smallest T whose D reaches the target: the
coolest temperature that still explores enough. A model that is already diverse keeps a low T; a
peaky one (e.g. after RL has sharpened it) is given a higher one. Temperature changes only in
stages (``TemperatureSchedule``), never continuously, so that the sampling distribution the
trainer's ratios refer to stays fixed within a stage.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import Any

from mcoder.errors import UsageError
from mcoder.records import Problem
from mcoder.rollout.diversity import MEASURES, group_texts

# 0.6 to 1.8 in steps of 0.2 (rounded so that 0.6 + 3 * 0.2 prints as 1.2).
DEFAULT_CANDIDATES: tuple[float, ...] = tuple(round(0.6 + 0.2 * i, 2) for i in range(7))

# Default lexical-diversity target, from benchmarks/diversity_target.py on real human-written
# solutions, G = 8: groups that are one program with its names changed and re-printed score a
# median 0.14 (HumanEval) / 0.41 (LeetCode); groups of 8 different programs 0.77 / 0.62. The
# midpoint of those medians is 0.49, so a chosen temperature must make a group at least halfway
# from "one program, renamed" to "eight different programs". The LeetCode numbers also show the
# measure's weak side: renaming alone buys much lexical diversity (--diversity-measure program
# counts distinct normalised programs instead). Override with --diversity-target.
DEFAULT_TARGET = 0.5


def measure_diversity(rollouts: Sequence[Any], measure: str = "lexical") -> float:
    """Mean diversity over the groups of ``rollouts`` (0 when no group has two samples)."""
    fn = MEASURES[measure]
    groups = [g for g in group_texts(rollouts).values() if len(g) >= 2]
    return fmean(fn(g) for g in groups) if groups else 0.0


def select_temperature(
    engine: Any,
    tokenizer: Any,
    problems: Sequence[Problem],
    *,
    candidates: Sequence[float] = DEFAULT_CANDIDATES,
    target: float = DEFAULT_TARGET,
    n: int = 8,
    max_tokens: int = 512,
    seed: int = 0,
    measure: str = "lexical",
) -> tuple[float, list[tuple[float, float]]]:
    """(chosen temperature, [(T, D(T)) for each candidate]).

    Chooses the smallest candidate whose D reaches ``target``; when none does, the largest
    candidate (the most diverse available) — the table shows by how much it falls short.
    Every candidate is measured, so the whole table can be printed and recorded.
    """
    from mcoder.rollout.sample import make_rollouts

    if measure not in MEASURES:
        raise UsageError(f"unknown diversity measure {measure!r}", hint=f"use one of {', '.join(MEASURES)}")
    if not candidates:
        raise UsageError("no candidate temperatures", hint="pass e.g. --temperature-candidates 0.6,0.8,1.0")
    if n < 2:
        raise UsageError("diversity needs at least 2 samples per problem", hint="pass --n 2 or more")
    rows = []
    for t in sorted(candidates):
        rollouts = make_rollouts(
            problems,
            engine,
            tokenizer,
            n=n,
            max_tokens=max_tokens,
            temperature=t,
            seed=seed,
            model_name="probe",
        )
        rows.append((t, measure_diversity(rollouts, measure)))
    chosen = next((t for t, d in rows if d >= target), rows[-1][0])
    return chosen, rows


def parse_candidates(text: str) -> tuple[float, ...]:
    """'0.6:1.8:0.2' (start:stop:step, inclusive) or '0.6,0.8,1.0'."""
    try:
        if ":" in text:
            start, stop, step = (float(x) for x in text.split(":"))
            count = int(round((stop - start) / step)) + 1
            values = tuple(round(start + step * i, 4) for i in range(count))
        else:
            values = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise UsageError(
            f"bad temperature candidates {text!r}", hint="use START:STOP:STEP or a,b,c"
        ) from None
    if not values or any(v <= 0 for v in values):
        raise UsageError(f"bad temperature candidates {text!r}", hint="temperatures must be > 0")
    return values


_STAGE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*@\s*(\d+)\s*$")


@dataclass(frozen=True)
class TemperatureSchedule:
    """Temperatures by stage: ``stages`` are (first step, T), sorted, the first starting at 0."""

    stages: tuple[tuple[int, float], ...]

    @classmethod
    def parse(cls, text: str) -> TemperatureSchedule:
        """'0.6@0,1.2@140': T 0.6 from step 0, 1.2 from step 140 on."""
        stages = []
        for part in text.split(","):
            m = _STAGE.match(part)
            if not m:
                raise UsageError(
                    f"bad temperature schedule stage {part!r} in {text!r}",
                    hint="write TEMPERATURE@FIRST_STEP stages separated by commas, e.g. 0.6@0,1.2@140",
                )
            stages.append((int(m.group(2)), float(m.group(1))))
        stages.sort()
        if stages[0][0] != 0:
            raise UsageError(
                f"temperature schedule {text!r} does not start at step 0", hint="add a stage T@0"
            )
        if len({s for s, _ in stages}) != len(stages):
            raise UsageError(f"temperature schedule {text!r} has two stages at one step")
        return cls(tuple(stages))

    def at(self, step: int) -> float:
        """The temperature in force at ``step``: that of the last stage starting at or before it."""
        if step < 0:
            raise UsageError(f"step {step} is negative")
        return [t for start, t in self.stages if start <= step][-1]

    def is_boundary(self, step: int) -> bool:
        """True at the first step of a stage (where the trainer may re-measure diversity)."""
        return any(start == step for start, _ in self.stages)

    def __str__(self) -> str:
        return ",".join(f"{t:g}@{start}" for start, t in self.stages)


@dataclass(frozen=True)
class TemperatureSpec:
    """A ``--temperature`` as given, parsed once: a number, ``auto`` (chosen by measured diversity),
    or a staged schedule ``T@STEP,...``. Exactly one of ``fixed``/``schedule`` is set unless auto."""

    text: str
    fixed: float | None = None
    schedule: TemperatureSchedule | None = None

    @property
    def auto(self) -> bool:
        return self.fixed is None and self.schedule is None

    @classmethod
    def parse(cls, text: str | float) -> TemperatureSpec:
        text = str(text).strip()
        if text == "auto":
            return cls(text)
        if "@" in text:
            return cls(text, schedule=TemperatureSchedule.parse(text))
        try:
            t = float(text)
        except ValueError:
            raise UsageError(
                f"bad --temperature {text!r}", hint="a number, 'auto', or a schedule 'T@STEP,...'"
            ) from None
        if t < 0:
            raise UsageError(f"--temperature {t:g} is negative", hint="0 is greedy; sampling uses > 0")
        return cls(text, fixed=t)

    def __str__(self) -> str:
        return self.text
