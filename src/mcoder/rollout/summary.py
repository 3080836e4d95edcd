"""What a rollout run did: counts, lengths, truncation, diversity, speed; and its tables."""

from __future__ import annotations

from dataclasses import dataclass, field

from mcoder import console
from mcoder.rollout.diversity import MEASURES, group_texts


@dataclass
class RolloutSummary:
    out: str
    engine: str
    temperature: float
    problems: int = 0
    samples: int = 0
    resumed: int = 0
    completion_tokens: int = 0
    truncated: int = 0
    seconds: float = 0.0
    too_long: int = 0
    too_long_ids: list[str] = field(default_factory=list)
    diversity: dict[str, float] = field(default_factory=dict)
    temperature_table: list[tuple[float, float]] | None = None

    @property
    def mean_length(self) -> float:
        return self.completion_tokens / self.samples if self.samples else 0.0

    @property
    def truncated_share(self) -> float:
        return self.truncated / self.samples if self.samples else 0.0

    @property
    def tokens_per_s(self) -> float:
        return self.completion_tokens / self.seconds if self.seconds else 0.0


@dataclass
class DiversityMean:
    """The batch's mean group diversity (``batch_diversity``), added up a call at a time so that
    no completion is kept after it is written."""

    sums: dict[str, float] = field(default_factory=dict)
    groups: int = 0

    def add(self, rollouts: list) -> None:
        groups = [g for g in group_texts(rollouts).values() if len(g) >= 2]
        self.groups += len(groups)
        for name, fn in MEASURES.items():
            self.sums[name] = self.sums.get(name, 0.0) + sum(fn(g) for g in groups)

    def result(self) -> dict[str, float]:
        return {
            f"diversity/{name}": self.sums.get(name, 0.0) / self.groups if self.groups else 0.0
            for name in MEASURES
        }


def account(summary: RolloutSummary, rollouts: list) -> None:
    summary.samples += len(rollouts)
    summary.completion_tokens += sum(len(r.completion_token_ids) for r in rollouts)
    summary.truncated += sum(r.finish_reason == "length" for r in rollouts)


def show_temperature_table(table, choice, measure: str, probe: int) -> None:
    """The D(T) table and the temperature ``choice`` (a ``TemperatureChoice``) read off it."""
    rows = [(f"{t:g}", f"{d:.3f}", "<- chosen" if t == choice.temperature else "") for t, d in table]
    title = f"D(T): {measure} diversity on {probe} probe problems, rule {choice.rule}"
    console.show(console.table(title, ["T", "D", ""], rows))
    if choice.at_edge:
        console.warn(f"temperature {choice.temperature:g} is at the edge of the candidates: {choice.note}")
    console.info(f"temperature {choice.temperature:g} ({choice.rule}: D >= {choice.threshold:.3f})")


def show_summary(s: RolloutSummary) -> None:
    rows = [
        ("engine", s.engine),
        ("temperature", f"{s.temperature:g}"),
        ("problems sampled", s.problems),
        ("samples written", s.samples),
        ("already there (resumed)", s.resumed),
        *(
            (("prompts too long (skipped)", f"{s.too_long}: {', '.join(s.too_long_ids)}"),)
            if s.too_long
            else ()
        ),
        ("mean completion tokens", f"{s.mean_length:.1f}"),
        ("truncated share", f"{s.truncated_share:.3f}"),
        *((k, f"{v:.3f}") for k, v in s.diversity.items()),
        ("tokens/s", f"{s.tokens_per_s:,.0f}"),
    ]
    console.show(console.table("rollout summary", ["", "value"], rows))
