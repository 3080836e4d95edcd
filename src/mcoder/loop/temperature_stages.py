"""The loop's sampling temperature, step by step: fixed, a staged schedule, or chosen by
measured diversity in stages (MicroCoder's diversity-determined temperature)."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

from mcoder.console import info, warn
from mcoder.records import Problem
from mcoder.rollout.sampling import SamplingConfig


def loop_temperatures(
    sampling: SamplingConfig,
    seed: int,
    record: Path,
    engine,
    tokenizer,
    problems: list[Problem],
    first_step: int,
    judge=None,
) -> Callable[[int], float]:
    """step -> T. A schedule 'T@STEP,...' counts its stages from step 0 = the loop's step 1.
    ``judge`` judges the diversity probe of ``auto`` (pass rates recorded; the pass-rate guard).
    Every rank calls this, and the step -> T function, at the same steps: under torchrun the
    probe's problems are dealt over the ranks (each samples and judges its share with its own
    engine); rank 0 writes the record."""
    from mcoder.train.distributed import is_main

    spec = sampling.spec
    if spec.auto:
        return DiversityStages(sampling, seed, record, engine, tokenizer, problems, first_step, judge)
    if spec.schedule is not None:
        return lambda step: spec.schedule.at(step - 1)
    if is_main():
        record.write_text(json.dumps({"temperature": spec.fixed}))
    return lambda step: spec.fixed


def deal_over_ranks(fn, problems: list[Problem]) -> list:
    """``fn`` on this rank's round-robin share of ``problems``; every rank's result, in rank
    order, on every rank (one process: ``[fn(problems)]``)."""
    from mcoder.train.distributed import gather_results, rank, world_size

    return gather_results(lambda: fn(problems[rank() :: world_size()]))


class DiversityStages:
    """The diversity-determined temperature, changed only in stages.

    A stage starts at step 1 and, when ``temperature_stage_steps`` is K > 0, at steps 1 + K,
    1 + 2K, ...: the probe problems are sampled at every candidate temperature from the policy of
    that moment, judged, and T is chosen (``apply_temperature_rule``: by default the ``spread`` rule,
    the candidate whose probe groups' rewards differ most; ``knee``/``rise`` read the D(T) table;
    with ``--pass-guard`` the pass rates cap T) and holds until the next stage.
    A choice at an end of the candidates is warned about and recorded (``at_edge``, ``note``).
    Between boundaries T never moves. Stages are recorded in RUN/temperature.json (the top-level
    ``temperature``/``table`` are the latest stage's); a resumed run keeps the stages that began at
    or before its first step (their policy was checkpointed) and measures the later ones again.
    """

    def __init__(
        self,
        sampling: SamplingConfig,
        seed: int,
        record: Path,
        engine,
        tokenizer,
        problems,
        first_step: int,
        judge=None,
    ):
        self.sampling, self.seed, self.record = sampling, seed, record
        self.engine, self.tokenizer, self.judge = engine, tokenizer, judge
        self.every = sampling.temperature_stage_steps
        self.probe = random.Random(seed).sample(problems, min(sampling.probe_size, len(problems)))
        self.stages: list[dict] = []
        if record.exists():
            old = json.loads(record.read_text())
            stages = old.get("stages") or (  # a record written before stages existed: one stage
                [{"from_step": 1, "temperature": old["temperature"], "table": old.get("table", [])}]
                if "temperature" in old and "table" in old
                else []
            )
            self.stages = [s for s in stages if s["from_step"] <= first_step]

    def boundary(self, step: int) -> bool:
        return step == 1 or (self.every > 0 and (step - 1) % self.every == 0)

    def __call__(self, step: int) -> float:
        if not any(s["from_step"] == step for s in self.stages) and (
            self.boundary(step) or not any(s["from_step"] <= step for s in self.stages)
        ):
            self._measure(step)
        return max((s for s in self.stages if s["from_step"] <= step), key=lambda s: s["from_step"])[
            "temperature"
        ]

    def _measure(self, step: int) -> None:
        s = self.sampling
        choice, table = s.temperature_from_probe(
            self.engine, self.tokenizer, self.probe, seed=self.seed + step, judge=self.judge, spread=deal_over_ranks
        )
        chosen = choice.temperature
        self.stages = [x for x in self.stages if x["from_step"] < step]
        self.stages.append({"from_step": step, "temperature": chosen, "table": table, **choice.to_json()})
        latest = {
            "temperature": chosen,
            "target": s.diversity_target,
            "rise": s.diversity_rise,
            "rule_asked": s.temperature_rule,
            "pass_guard": s.pass_guard if choice.pass_rates is not None else None,
            "measure": s.diversity_measure,
            "probe_problems": len(self.probe),
            "table": table,
            **choice.to_json(),
        }
        from mcoder.train.distributed import is_main

        if is_main():
            tmp = self.record.with_name(self.record.name + ".part")
            tmp.write_text(json.dumps({**latest, "stage_steps": self.every, "stages": self.stages}, indent=2))
            tmp.replace(self.record)
        rates = choice.pass_rates or [None] * len(table)
        spreads = choice.spreads or [None] * len(table)
        info(
            f"step {step}: temperature {chosen} chosen by diversity ({choice.rule}, D >= {choice.threshold:.3f}): "
            + ", ".join(
                f"T={t:g}: D {d:.3f}"
                + ("" if r is None else f" pass {r:.2f}")
                + ("" if sp is None else f" spread {sp:.3f}")
                for (t, d), r, sp in zip(table, rates, spreads)
            )
        )
        if choice.by_diversity is not None:
            info(f"step {step}: {choice.note}")
        if choice.at_edge:
            warn(f"step {step}: temperature {chosen} is at the edge of the candidates: {choice.note}")
