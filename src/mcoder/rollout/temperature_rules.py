"""Diversity-determined temperature (MicroCoder's second idea) and staged temperature schedules.

``temperature_from_diversity`` samples a probe set of problems at each candidate temperature and measures
the mean group diversity D(T) (the table), then ``apply_temperature_rule`` picks from that table. The
paper asks for a T that avoids both "excessively low temperatures, causing continuous diversity
decline" and "excessively high ones, leading to drastic fluctuations"; it gives no number. The
loop's default is the ``spread`` rule below, which reads the judged outcomes; the text rules read
the model's own D(T) curve, and ``knee`` (rollout's default, which has no judge) takes its knee: with T and D scaled to [0, 1] over
the grid, a curve that stays flat and then takes off (the take-off is sampling noise: the warm
start of examples/learn/ went from D 0.08 at T 1.2 to 0.66 at 1.8, where every sample failed)
gets the hottest T before the take-off; one that rises and then saturates gets the coolest T near
the top. A curve that rises evenly has no knee and gets the smallest T whose D has risen a
fraction ``rise`` (one half) of the way from D at the coolest candidate to the highest measured
(the ``rise`` rule, also selectable). A model that is already diverse at low T has a flat curve
and keeps a low T; a peaky one (e.g. after RL has sharpened it) is given a higher one; and neither
rule depends on how many tokens of boilerplate a family's answers share (which moves every D up
or down but not the shape).
Diversity alone cannot tell useful variety from noise that breaks programs: on one warm start of
examples/learn/ (seed 0) the knee (T 1.2) sat where the probe's pass rate had already fallen
(0.34 against 0.44), and RL there learnt +8.0 held-out points against +31.4 at T 1.0. So where the
probe's samples can be judged (the loop has a judge), each candidate's pass rate is measured and
recorded too, and an optional pass-rate guard (``guard``, ``--pass-guard``) caps the choice: no
hotter than the hottest candidate, going up from the best one, whose probe pass rate stays at
least ``guard`` of the best candidate's. It is off by default because over three seeds it did
worse than the knee alone: at 0.9 it fixed seed 0 (T 1.0, +31.4) but on seeds 1 and 2 a pass rate
that fell by noise-sized steps sent it to T 0.6, where RL learnt +13.1 and -6.4 against the knee's
+50.2 and +1.4 (examples/learn/README.md). A model that passes nothing at any T is never guarded.
The ``spread`` rule reads the outcomes instead of the text: GRPO learns only from a group whose
rewards differ (a group that all pass or all fail has zero advantage everywhere), and how much it
learns from one grows with the spread of its rewards, so ``spread`` takes the candidate whose
judged probe groups have the largest mean within-group standard deviation of the reward (for
pass/fail rewards sqrt(p (1 - p)) per group); of candidates within ``SPREAD_TIE`` of the largest
it takes the hottest, because RL sharpens the policy as it learns and a T chosen for a stage should
not start at the cool end of what works (on one warm start 0.8 and 1.0 tied at 0.322, and T 0.8
learnt 20 points less than 1.0 from it). Too cool a T leaves groups
that all pass or all fail the same way ("continuous diversity decline"); too hot a T breaks most
programs and the groups all fail again: the outcome's diversity peaks in between. It needs a
judge (the loop has one) and more probe problems than the text rules (a per-problem statistic:
32 by default). On fifteen warm starts of examples/learn/ (two machines) it chose 1.0 eleven
times and 1.2 four times, and 150 RL steps from its choice ended at 71.9 % held-out pass@1 on
average, against 71.2 % at a fixed T 1.0 and 68.8 % at 1.2 (the best fixed T tried is 1.0); the
knee, one grid step hotter than 1.0 on every seed, ended 8 points under T 1.0 over five
(examples/learn/README.md). A probe in which no group ever has a reward spread
(a model that passes nothing, or everything) falls back to the knee, and says so.
An absolute ``target`` (the smallest T whose D reaches it) stays available. A choice at either end
of the grid is reported (``at_edge``) and warned about: the right T may lie outside it.
Temperature changes only in stages (``TemperatureSchedule``), never continuously, so that the
sampling distribution the trainer's ratios refer to stays fixed within a stage.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from statistics import fmean
from typing import Any, Literal, Self

from mcoder.console import warn
from mcoder.errors import UsageError
from mcoder.records import Problem
from mcoder.rollout.diversity import MEASURES, group_texts

# 0.6 to 1.8 in steps of 0.2 (rounded so that 0.6 + 3 * 0.2 prints as 1.2).
DEFAULT_CANDIDATES: tuple[float, ...] = tuple(round(0.6 + 0.2 * i, 2) for i in range(7))

# The relative rule's fraction: the chosen T is where D(T) has covered this share of its rise over
# the grid, halfway between the coolest candidate's diversity and the highest measured.
DEFAULT_RISE = 0.5

# The pass-rate guard: the chosen T keeps at least this share of the best candidate's probe pass
# rate (0: off, the default; 0.9 was measured, see above).
DEFAULT_GUARD = 0.0

# A curve whose D rises less than this over the whole grid is flat: no T buys diversity.
FLAT_RISE = 0.01

# A curve whose scaled points all lie within this of the diagonal has no knee (it rises evenly).
KNEE_MIN_BEND = 0.1

# Probe problems the spread rule reads by default (the text rules: 8 in the loop): its statistic is
# one number per problem, so a few problems more or less moved its choice on a flat curve.
SPREAD_PROBE_PROBLEMS = 32

# Spreads this close to the largest count as a tie (about 3 % of the spreads measured on
# examples/learn/, below what 32 problems resolve); the hottest of the tied is taken.
SPREAD_TIE = 0.01

TemperatureRule = Literal["knee", "rise", "spread"]


@dataclass(frozen=True)
class TemperatureChoice:
    """A choice from a D(T) table and why: the rule, the diversity the chosen T had to reach, and
    whether the choice is the coolest or hottest candidate (then ``note`` says what that means)."""

    temperature: float
    rule: str  # "knee" or "rise" (relative to the curve), "spread" (outcomes), or "target" (absolute)
    threshold: float  # the D the chosen T had to reach (knee: its own D)
    at_edge: bool
    note: str = ""
    by_diversity: float | None = None  # what diversity alone chose, when the pass-rate guard lowered it
    pass_rates: list[float] | None = None  # the probe's pass rate at each candidate, when judged
    spreads: list[float] | None = None  # the probe's mean within-group reward std at each, when judged

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def apply_temperature_rule(
    table: Sequence[tuple[float, float]],
    *,
    rule: TemperatureRule = "knee",
    target: float | None = None,
    rise: float = DEFAULT_RISE,
    pass_rates: Sequence[float] | None = None,
    guard: float = DEFAULT_GUARD,
    spreads: Sequence[float] | None = None,
) -> TemperatureChoice:
    """Pick from [(T, D(T))], sorted by T. A ``target`` means the absolute rule (the smallest T
    with D(T) >= target), whatever ``rule`` says. Otherwise ``knee`` (the default) or ``rise``
    (the smallest T with D(T) >= D(T_min) + rise x (max D - D(T_min))); a curve without a knee
    (it rises evenly) falls back to ``rise``. With ``pass_rates`` (the judged probe's, one per
    row) and ``guard`` > 0, the choice is then capped by ``pass_guard_cap``. ``spread`` needs
    ``spreads`` (the judged probe's mean within-group reward std, one per row): see ``by_spread``."""
    if spreads is not None and len(spreads) != len(table):
        raise ValueError(f"{len(spreads)} reward spreads for {len(table)} temperatures")
    if rule == "spread" and target is None:
        if spreads is None:
            raise UsageError(
                "--temperature-rule spread reads the judged probe's rewards, and nothing judges it here",
                hint="it is the loop's rule (mcoder loop); use --temperature-rule knee or rise",
            )
        by_diversity = by_spread(table, spreads)
    else:
        by_diversity = _by_diversity(table, rule=rule, target=target, rise=rise)
    if spreads is not None:
        by_diversity = replace(by_diversity, spreads=[float(x) for x in spreads])
    if pass_rates is None:
        return by_diversity
    rates = [float(r) for r in pass_rates]
    if len(rates) != len(table):
        raise ValueError(f"{len(rates)} pass rates for {len(table)} temperatures")
    temps = [t for t, _ in table]
    cap = pass_guard_cap(temps, rates, guard)
    if cap is None or by_diversity.temperature <= cap:
        return replace(by_diversity, pass_rates=rates)
    lowered = _at_edge(temps, cap, by_diversity.rule, dict(table)[cap])
    note = (
        f"diversity alone chose {by_diversity.temperature:g}; the probe's pass rate there "
        f"({rates[temps.index(by_diversity.temperature)]:.2f}) is under {guard:g} x the best "
        f"({max(rates):.2f}), so T is {cap:g}, the hottest that keeps it"
    )
    return replace(
        lowered,
        rule=f"{by_diversity.rule}+guard",
        note="; ".join(x for x in (note, lowered.note) if x),
        by_diversity=by_diversity.temperature,
        pass_rates=rates,
        spreads=by_diversity.spreads,
    )


def by_spread(table: Sequence[tuple[float, float]], spreads: Sequence[float]) -> TemperatureChoice:
    """The ``spread`` rule: the candidate whose judged probe groups have the largest mean
    within-group reward std (the hottest within ``SPREAD_TIE`` of the largest); the knee of ``table`` when no group
    has a spread at any candidate (every probe group all-pass or all-fail everywhere)."""
    if not table:
        raise UsageError("no candidate temperatures", hint="pass e.g. --temperature-candidates 0.6,0.8,1.0")
    best = max(spreads)
    if best <= 0:
        knee = _by_diversity(table, rule="knee", target=None, rise=DEFAULT_RISE)
        note = "no probe group has a reward spread at any candidate: the knee of D(T) is used"
        return replace(knee, rule=f"spread->{knee.rule}", note="; ".join(x for x in (note, knee.note) if x))
    temps = [t for t, _ in table]
    chosen = max(t for t, x in zip(temps, spreads) if x >= best - SPREAD_TIE)
    return _at_edge(temps, chosen, "spread", dict(table)[chosen])


def reward_spread(rewards_by_group: Sequence[Sequence[float]]) -> float:
    """Mean over groups of the population std of the group's rewards (0 for a group of one)."""
    from statistics import pstdev

    groups = [g for g in rewards_by_group if len(g) >= 2]
    return fmean(pstdev(g) for g in groups) if groups else 0.0


def pass_guard_cap(temps: Sequence[float], rates: Sequence[float], guard: float) -> float | None:
    """The hottest temperature the pass-rate guard allows, or None when it allows every one
    (``guard`` 0, or no candidate passes anything). From the best candidate (the coolest of the
    best, on a tie) the guard walks hotter while the pass rate stays >= guard x the best rate;
    a hotter candidate that recovers after a fall is not trusted (noise, or luck)."""
    best = max(rates) if rates else 0.0
    if guard <= 0 or best <= 0:
        return None
    i = rates.index(best)
    while i + 1 < len(rates) and rates[i + 1] >= guard * best:
        i += 1
    return None if i == len(rates) - 1 else temps[i]


def _by_diversity(
    table: Sequence[tuple[float, float]], *, rule: str, target: float | None, rise: float
) -> TemperatureChoice:
    if not table:
        raise UsageError("no candidate temperatures", hint="pass e.g. --temperature-candidates 0.6,0.8,1.0")
    temps = [t for t, _ in table]
    if target is not None:
        threshold, rule = target, "target"
    else:
        d0, top = table[0][1], max(d for _, d in table)
        if top - d0 < FLAT_RISE:
            note = f"D(T) is flat over the grid (it rises {top - d0:.3f}): the coolest candidate is kept"
            return TemperatureChoice(temps[0], rule, d0, True, note)
        knee = _knee(table) if rule == "knee" else None
        if knee is not None:
            return _at_edge(temps, temps[knee], rule, table[knee][1])
        threshold, rule = d0 + rise * (top - d0), "rise"
    chosen = next((t for t, d in table if d >= threshold), None)
    if chosen is None:
        note = f"no candidate reaches diversity {threshold:.3f}: the hottest is used; try higher candidates"
        return TemperatureChoice(temps[-1], rule, threshold, True, note)
    return _at_edge(temps, chosen, rule, threshold)


def _at_edge(temps: list[float], chosen: float, rule: str, threshold: float) -> TemperatureChoice:
    note = ""
    if len(temps) > 1 and chosen == temps[0]:
        note = "the coolest candidate is chosen: a cooler T may do too; try lower candidates"
    elif len(temps) > 1 and chosen == temps[-1]:
        note = "the hottest candidate is chosen: try higher candidates"
    return TemperatureChoice(chosen, rule, threshold, bool(note), note)


def _knee(table: Sequence[tuple[float, float]]) -> int | None:
    """Index of the knee of a rising D(T) curve, or None when it has none (it rises evenly).

    T and D are scaled to [0, 1] over the grid (D by its rise above D(T_min)), and each point's
    height above the diagonal is y - x. A curve that bends up (D flat, then taking off: the
    take-off is noise, the "drastic fluctuations" of too high a T) lies below the diagonal and its
    knee is the lowest point: the hottest T before the take-off. One that bends down (rising, then
    saturating) lies above it and its knee is the highest point: the coolest T that has most of the
    diversity there is. The first such point wins a tie."""
    t0, tn = table[0][0], table[-1][0]
    d0, top = table[0][1], max(d for _, d in table)
    if tn <= t0 or top <= d0:
        return None
    gaps = [(d - d0) / (top - d0) - (t - t0) / (tn - t0) for t, d in table]  # y - x per point
    if max(abs(g) for g in gaps) < KNEE_MIN_BEND:
        return None
    sign = 1 if sum(gaps) >= 0 else -1
    return max(range(len(gaps)), key=lambda i: sign * gaps[i])


def measure_diversity(rollouts: Sequence[Any], measure: str = "lexical") -> float:
    """Mean diversity over the groups of ``rollouts`` (0 when no group has two samples)."""
    fn = MEASURES[measure]
    groups = [g for g in group_texts(rollouts).values() if len(g) >= 2]
    return fmean(fn(g) for g in groups) if groups else 0.0


def diversity_table(engine: Any, tokenizer: Any, problems: Sequence[Problem], **options: Any):
    """[(T, D(T))] for every candidate, coolest first: ``probe_temperatures`` without a judge
    (the same keyword options)."""
    return probe_temperatures(engine, tokenizer, problems, **options)[0]


def probe_temperatures(
    engine: Any,
    tokenizer: Any,
    problems: Sequence[Problem],
    *,
    candidates: Sequence[float] = DEFAULT_CANDIDATES,
    n: int,
    max_tokens: int,
    seed: int,
    measure: str = "lexical",
    judge: Any = None,
    spread: Spread | None = None,
) -> tuple[list[tuple[float, float]], list[float] | None, list[float] | None]:
    """([(T, D(T))], pass rates, reward spreads): the probe problems sampled n times at each
    candidate, coolest first, every candidate from the same seed (so neighbouring temperatures
    differ by temperature, not by luck); with a ``judge`` (mcoder.judge.core.Judge, problems with
    tests) each candidate's samples are also judged, and its pass rate and mean within-group
    reward std (``reward_spread``) returned (both None without a judge). ``spread`` deals the
    problems out (the loop's ranks each sample and judge theirs: a problem's samples depend on the
    seed and the problem alone) and returns every part's result; by default one part, here."""
    from mcoder.rollout.sample import make_rollouts

    if measure not in MEASURES:
        raise UsageError(f"unknown diversity measure {measure!r}", hint=f"use one of {', '.join(MEASURES)}")
    if not candidates:
        raise UsageError("no candidate temperatures", hint="pass e.g. --temperature-candidates 0.6,0.8,1.0")
    if n < 2:
        raise UsageError("diversity needs at least 2 samples per problem", hint="pass --n 2 or more")
    spread = spread or _here
    rows, rates, spreads = [], [], []
    by_id = {p.id: p for p in problems}
    order = {p.id: i for i, p in enumerate(problems)}
    for t in sorted(candidates):

        def probe(part: list[Problem], t: float = t) -> tuple[list, list]:
            rollouts = make_rollouts(
                part, engine, tokenizer, n=n, max_tokens=max_tokens, temperature=t, seed=seed, model_name="probe"
            )
            return rollouts, (judge.judge(by_id, rollouts) if judge is not None and rollouts else [])

        parts = spread(probe, list(problems))
        rollouts = sorted((r for part, _ in parts for r in part), key=lambda r: (order[r.problem_id], r.sample_index))
        rows.append((t, measure_diversity(rollouts, measure)))
        if judge is not None:
            verdict_of = {v.rollout_id: v for _, part in parts for v in part}
            verdicts = [verdict_of[r.id] for r in rollouts]
            rates.append(sum(v.passed for v in verdicts) / max(len(verdicts), 1))
            groups: dict[str, list[float]] = {}
            for v in verdicts:
                groups.setdefault(v.problem_id, []).append(float(v.reward))
            spreads.append(reward_spread(list(groups.values())))
    if judge is None:
        return rows, None, None
    return rows, rates, spreads


# How a probe's problems are dealt out: spread(fn, problems) -> [fn(part) for each part], every
# part's result (the loop's: each rank its round-robin share, gathered on every rank).
Spread = Callable[[Callable[[list[Problem]], Any], list[Problem]], list[Any]]


def _here(fn: Callable[[list[Problem]], Any], problems: list[Problem]) -> list[Any]:
    return [fn(problems)]


def temperature_from_diversity(
    engine: Any,
    tokenizer: Any,
    problems: Sequence[Problem],
    *,
    candidates: Sequence[float] = DEFAULT_CANDIDATES,
    target: float | None = None,
    rule: TemperatureRule = "knee",
    rise: float = DEFAULT_RISE,
    n: int,
    max_tokens: int,
    seed: int,
    measure: str = "lexical",
) -> tuple[float, list[tuple[float, float]]]:
    """(chosen temperature, [(T, D(T)) for each candidate]): ``diversity_table`` then
    ``apply_temperature_rule`` (``rule``, unless ``target`` is given). A choice at an end of the
    grid is warned about. Every candidate is measured, so the whole table can be printed and recorded.
    """
    table = diversity_table(
        engine,
        tokenizer,
        problems,
        candidates=candidates,
        n=n,
        max_tokens=max_tokens,
        seed=seed,
        measure=measure,
    )
    choice = apply_temperature_rule(table, rule=rule, target=target, rise=rise)
    if choice.at_edge:
        warn(f"temperature {choice.temperature:g} is at the edge of the candidates: {choice.note}")
    return choice.temperature, table


def parse_candidates(text: str) -> tuple[float, ...]:
    """'0.6:1.8:0.2' (start:stop:step, inclusive) or '0.6,0.8,1.0'."""
    try:
        if ":" in text:
            start, stop, step = (float(x) for x in text.split(":"))
            count = round((stop - start) / step) + 1
            values = tuple(round(start + step * i, 4) for i in range(count))
        else:
            values = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise UsageError(
            f"bad temperature candidates {text!r}", hint="use START:STOP:STEP or a,b,c"
        ) from None
    if not values or not all(math.isfinite(v) and v > 0 for v in values):
        raise UsageError(
            f"--temperature-candidates {text!r}: every temperature must be a finite number > 0",
            hint="use START:STOP:STEP or a,b,c, e.g. 0.6:1.8:0.2",
        )
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


class TemperatureSpec(str):
    """A sampling temperature, parsed once where it enters (the command line, a config, JSON): a
    number (``fixed``), ``auto`` (chosen by measured diversity) or a staged schedule ``T@STEP,...``
    (``schedule``). Exactly one of ``fixed``/``schedule`` is set unless it is auto.

    The value is also its text (a ``str``), as given: a config holding it saves, fingerprints and
    compares exactly as the text did, so RUN/config.json and the outputs' settings read back the
    same. ``TemperatureSpec(x)`` of a spec is that spec; of anything else it parses ``str(x)``."""

    fixed: float | None
    schedule: TemperatureSchedule | None

    def __new__(cls, value: str | float) -> Self:
        if isinstance(value, TemperatureSpec):
            return value
        text = str(value).strip()
        fixed, schedule = None, None
        if "@" in text:
            schedule = TemperatureSchedule.parse(text)
        elif text != "auto":
            try:
                fixed = float(text)
            except ValueError:
                raise UsageError(
                    f"bad --temperature {text!r}: not a number, auto or a schedule",
                    hint="a number, 'auto', or a schedule 'T@STEP,...'",
                ) from None
            if not math.isfinite(fixed) or fixed < 0:
                raise UsageError(
                    f"--temperature {text}: not a finite number >= 0", hint="0 is greedy; sampling uses > 0"
                )
        spec = super().__new__(cls, text)
        object.__setattr__(spec, "fixed", fixed)
        object.__setattr__(spec, "schedule", schedule)
        return spec

    @classmethod
    def parse(cls, value: str | float) -> TemperatureSpec:
        return cls(value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a TemperatureSpec is immutable ({name})")

    def __reduce__(self):  # copies and pickles parse the text again
        return (TemperatureSpec, (str(self),))

    @property
    def auto(self) -> bool:
        return self.fixed is None and self.schedule is None

    @property
    def text(self) -> str:
        return str.__str__(self)

    def __str__(self) -> str:
        return str.__str__(self)

    def __repr__(self) -> str:
        return f"TemperatureSpec({str.__str__(self)!r})"


def temperature_spec(value: str | float | None) -> TemperatureSpec | None:
    """A temperature option's value as a spec (None stays None: not given)."""
    return None if value is None else TemperatureSpec(value)
