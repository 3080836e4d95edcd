"""What the training figures show, decided once for the PNGs (bench/plots.py) and the HTML
report's interactive charts (show/charts.py): groups of panels, one metric a panel, every run a
line in it.

Three rules keep the panels to the ones worth reading:

- **Constant series become text.** A metric with the same value at every step of every run
  (the memory and time limit rates, masking or truncation in a short run: zero throughout;
  a fixed temperature or learning rate) gets no panel; a group lists them in one line
  ("0 at every step: status/memory_limit, truncated_rate"). A metric logged once is not
  constant: it has no steps to compare.
- **Identical series are drawn once.** Under a binary reward ``reward/mean`` and ``pass_rate``
  are the same numbers: one panel titled ``reward/mean = pass_rate``.
- **Smoothing over the raw line.** Each line is drawn raw (faint) with an exponential moving
  average over it, debiased as TensorBoard's smoothing slider is (its default weight 0.6):
  ``s_t = w s_(t-1) + (1 - w) x_t``, divided by ``1 - w^t``, so the first points are not pulled
  towards zero. The weight is written on each figure.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field

from mcoder.bench.metrics import RunMetrics

EMA_WEIGHT = 0.6  # TensorBoard's default smoothing weight
SMOOTHING_NOTE = f"lines: raw (faint) and EMA-smoothed, weight {EMA_WEIGHT} (TensorBoard's default)"

# (file name, title, metric patterns); '*' patterns expand to every matching metric logged.
GROUPS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("reward", "Reward and pass rate", ("reward/mean", "reward/std", "pass_rate")),
    ("status", "Verdict status rates", ("status/*",)),
    ("length", "Response length (tokens)", ("length/mean", "length/max")),
    ("truncation", "Truncated share and masked outputs", ("truncated_rate", "masked_*")),
    ("diversity", "Diversity and sampling temperature", ("diversity/*", "temperature")),
    # is/*: the sampler/trainer mismatch and its truncated importance weights (on with vLLM)
    ("clip", "Clip fractions and importance ratio", ("clip/low", "clip/high", "ratio/mean", "is/*")),
    ("entropy_kl", "Entropy and k3 KL (to the reference; to the old policy if beta = 0)", ("entropy", "kl")),
    ("optim", "Loss, gradient norm and learning rate", ("loss", "grad_norm", "lr")),
    ("throughput", "Throughput and stage times", ("tokens_per_s", "time/*")),
)


@dataclass(slots=True)
class Panel:
    metric: str
    same_as: list[str] = field(default_factory=list)
    """Metrics with the very same series in every run, drawn in this panel."""

    @property
    def title(self) -> str:
        return " = ".join([self.metric, *self.same_as])


@dataclass(slots=True)
class Group:
    name: str
    title: str
    panels: list[Panel]
    constant: dict[str, float]
    """metric -> the one value it has at every step of every run."""

    def constant_line(self) -> str:
        """'0 at every step: a, b; constant: temperature 1, lr 1e-05' (empty when none)."""
        zero = [m for m, v in self.constant.items() if v == 0]
        other = [f"{m} {v:g}" for m, v in self.constant.items() if v != 0]
        parts = []
        if zero:
            parts.append("0 at every step: " + ", ".join(zero))
        if other:
            parts.append("constant: " + ", ".join(other))
        return "; ".join(parts)


def group_metrics(patterns: tuple[str, ...], runs: list[RunMetrics]) -> list[str]:
    """The metrics of a group that at least one run logged, in pattern order."""
    logged = sorted({m for r in runs for m in r.series})
    out: list[str] = []
    for pattern in patterns:
        out += [m for m in fnmatch.filter(logged, pattern) if m not in out]
    return out


def plan(runs: list[RunMetrics]) -> tuple[list[Group], list[str]]:
    """The groups to draw (a group may hold only constants: no panel, its line of text), and notes
    on what was skipped."""
    groups: list[Group] = []
    notes: list[str] = []
    for name, title, patterns in GROUPS:
        metrics = group_metrics(patterns, runs)
        if not metrics:
            notes.append(f"{name}: no run logged {', '.join(patterns)}; figure skipped")
            continue
        for run in runs:
            missing = [m for m in metrics if m not in run.series]
            if missing:
                notes.append(f"{name}: run {run.label} has no {', '.join(missing)}")
        constant = {m: v for m in metrics if (v := constant_value(m, runs)) is not None}
        panels = merge_identical([m for m in metrics if m not in constant], runs)
        groups.append(Group(name, title, panels, constant))
    return groups, notes


def constant_value(metric: str, runs: list[RunMetrics]) -> float | None:
    """The value ``metric`` has at every step of every run that logged it, if it has one value
    and at least two steps (a single point is not constant: there is nothing to compare)."""
    values = [v for r in runs for v in r.series.get(metric, {}).values()]
    if len(values) < 2 or any(v != values[0] for v in values):
        return None
    return values[0]


def merge_identical(metrics: list[str], runs: list[RunMetrics]) -> list[Panel]:
    """A panel per distinct series: a metric equal to an earlier one in every run joins its panel."""
    panels: list[Panel] = []
    for m in metrics:
        twin = next((p for p in panels if all(r.series.get(m) == r.series.get(p.metric) for r in runs)), None)
        if twin is not None:
            twin.same_as.append(m)
        else:
            panels.append(Panel(m))
    return panels


def ema(values: list[float], weight: float = EMA_WEIGHT) -> list[float]:
    """TensorBoard's debiased exponential moving average (see the module docstring)."""
    out, last = [], 0.0
    for i, v in enumerate(values, start=1):
        last = weight * last + (1 - weight) * v
        out.append(last / (1 - weight**i) if weight < 1 else v)
    return out


# The loop's step, in the order it happens: (metric, label, matplotlib colour). Judging overlaps
# sampling: only its part after sampling ended adds to the step (time/judge - time/judge_hidden).
STEP_PARTS = (
    ("time/sync", "sync (weights to the engine)", "C7"),
    ("time/rollout", "sampling", "C0"),
    ("judge_exposed", "judging after sampling", "C1"),
    ("time/update", "update", "C2"),
)
HIDDEN = "time/judge_hidden"  # the judging that ran while the engine still sampled


def has_step_times(run: RunMetrics) -> bool:
    return "time/update" in run.series and "time/rollout" in run.series


def step_parts(run: RunMetrics) -> tuple[list[int], dict[str, list[float]]]:
    """The steps, and each part of STEP_PARTS (plus HIDDEN) in seconds at each step (0 when not logged)."""
    steps = sorted(run.series["time/update"])

    def at(metric: str, step: int) -> float:
        return run.series.get(metric, {}).get(step, 0.0)

    parts = {m: [at(m, s) for s in steps] for m, _, _ in STEP_PARTS if m != "judge_exposed"}
    parts["judge_exposed"] = [max(0.0, at("time/judge", s) - at(HIDDEN, s)) for s in steps]
    parts[HIDDEN] = [at(HIDDEN, s) for s in steps]
    return steps, parts
