"""One step's batch of the loop: sampled and judged on every rank, the whole of it on every rank.

Under torchrun the problem groups of a sampling round are dealt round robin to the ranks (group
i to rank i mod N). Each rank samples its groups with its own engine, judges them with its own
share of the judge's workers (the node's cores split between the ranks), and every rank then
receives the whole round, in batch order. A group's samples depend only on (seed, step,
problem): the problem's seed is derived from the step's seed and the problem id
(``problem_seed``), each sample's from that and its index (the engines), never from the rank or
the position in a batch. So the split changes nothing that is written: one process and N write
the same step files.

Judging overlaps sampling: the engine hands over each group as it finishes (``Engine.stream``)
and the finished groups go to a judging thread, a chunk at a time (all that finished while the
previous chunk was judged), while the engine samples the rest. The judge's workers are
processes, so their CPU time runs beside the engine's; only the last chunk's judging is left
once sampling ends. ``time/judge_hidden`` is how much of the judging ran while the engine was
still sampling.
"""

from __future__ import annotations

import queue
import random
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mcoder.records import Problem, Rollout, Verdict


@dataclass
class Round:
    """What one rank sampled and judged in one round, and when."""

    rollouts: list[Rollout] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    sample_s: float = 0.0  # the engine's wall time
    judge_s: float = 0.0  # the judge's busy time (its chunks' wall times, summed)
    hidden_s: float = 0.0  # the part of judge_s that ran while the engine still sampled
    tokens: int = 0
    groups: int = 0

    def add(self, other: Round) -> None:
        self.rollouts += other.rollouts
        self.verdicts += other.verdicts
        for name in ("sample_s", "judge_s", "hidden_s", "tokens", "groups"):
            setattr(self, name, getattr(self, name) + getattr(other, name))


def sample_and_judge(
    cfg, step: int, problems: list[Problem], sampler, judge, trainer, T: float, version: int, group=None
):
    """This step's batch on every rank: ``train_batch_size`` problems (G samples each), judged,
    topped up by dynamic sampling, from the engine's policy (``version``: its number of updates).
    Every rank calls this with the same arguments (``group``: the process group to gather over);
    returns the batch's rollouts and verdicts (in batch order) and the step's timing metrics."""
    from mcoder.train.distributed import world_size

    rng = random.Random(cfg.train.seed * 1_000_003 + step)  # the same draws on every rank
    batch = rng.sample(problems, min(cfg.train_batch_size, len(problems)))

    def round_of(problems: list[Problem], seed: int):
        return _round(cfg, problems, sampler.engine, judge, trainer.tokenizer, T, seed, version, group)

    parts = [round_of(batch, cfg.train.seed + step)]
    rounds = 0
    while (more := _top_up(cfg, rng, problems, parts, rounds)) is not None:
        rounds += 1
        parts.append(round_of(more, cfg.train.seed + step + 7919 * rounds))
    rollouts = [r for p in parts for r in p[0]]
    verdicts = [v for p in parts for v in p[1]]
    # the step waits for its slowest rank: its times are the step's
    ranks = [Round() for _ in range(world_size())]
    for _, _, per_rank in parts:
        for total, r in zip(ranks, per_rank, strict=True):
            total.add(r)
    slow = max(ranks, key=lambda r: r.sample_s + r.judge_s - r.hidden_s)
    timing = {
        "time/rollout": slow.sample_s,
        "time/judge": slow.judge_s,
        "time/judge_hidden": slow.hidden_s,
        "rollout_tokens_per_s": sum(r.tokens for r in ranks) / max(slow.sample_s, 1e-9),
        "resample_rounds": rounds,
        **{f"rollout/rank{i}_groups": r.groups for i, r in enumerate(ranks)},
    }
    return rollouts, verdicts, timing


def _top_up(cfg, rng, problems, parts, rounds: int) -> list[Problem] | None:
    """DAPO's dynamic sampling: while fewer than train_batch_size groups carry signal (two
    different rewards), more problems not yet in this step; None when the batch is full."""
    if not cfg.train.dynamic_sampling or rounds >= cfg.max_resample_rounds:
        return None
    from mcoder.train.batching import is_truncated
    from mcoder.train.masking import scored_reward

    rewards: dict[str, set[float]] = {}
    for rollouts, verdicts, _ in parts:  # the rewards the update will see
        for r, v in zip(rollouts, verdicts, strict=True):
            truncated = is_truncated(r, cfg.sampling.max_tokens)
            reward = scored_reward(v.reward, truncated, cfg.train.truncated_reward)
            rewards.setdefault(v.problem_id, set()).add(reward)
    useful = sum(len(r) > 1 for r in rewards.values())
    unused = [p for p in problems if p.id not in rewards]
    if useful >= cfg.train_batch_size or not unused:
        return None
    return rng.sample(unused, min(cfg.train_batch_size - useful, len(unused)))


def _round(cfg, batch: list[Problem], engine, judge, tokenizer, T: float, seed: int, version: int, group):
    """One sampling round over ``batch``: this rank's groups sampled and judged, every rank's
    gathered. Returns (rollouts, verdicts) in batch order and each rank's ``Round``."""
    from mcoder.train.distributed import gather_results, rank, world_size

    mine = batch[rank() :: world_size()]
    per_rank: list[Round] = gather_results(
        lambda: sample_and_judge_part(cfg, mine, engine, judge, tokenizer, T, seed, version), group
    )
    order = {p.id: i for i, p in enumerate(batch)}
    rollouts = sorted(
        (r for x in per_rank for r in x.rollouts), key=lambda r: (order[r.problem_id], r.sample_index)
    )
    verdict_of = {v.rollout_id: v for x in per_rank for v in x.verdicts}
    verdicts = [verdict_of[r.id] for r in rollouts]
    light = [
        Round(sample_s=x.sample_s, judge_s=x.judge_s, hidden_s=x.hidden_s, tokens=x.tokens, groups=x.groups)
        for x in per_rank
    ]
    return rollouts, verdicts, light


def sample_and_judge_part(
    cfg, problems: list[Problem], engine, judge, tokenizer, T: float, seed: int, version: int
) -> Round:
    """Sample ``problems`` (G each) with ``engine`` and judge each group once it is sampled, the
    judging in a thread beside the engine. The rollouts come in ``problems`` order."""
    from mcoder.prompts import render_prompt
    from mcoder.rollout.sample import problem_seed

    out = Round(groups=len(problems))
    if not problems:
        return out
    prompts = [render_prompt(p, tokenizer) for p in problems]
    seeds = [problem_seed(seed, p.id, version) for p in problems]
    by_id = {p.id: p for p in problems}
    groups: dict[int, list[Rollout]] = {}
    judging = _JudgeThread(judge, by_id)
    t0 = time.perf_counter()
    try:
        stream = engine.stream(
            [ids for _, ids in prompts],
            n=cfg.sampling.n,
            max_tokens=cfg.sampling.max_tokens,
            temperature=T,
            seed=seeds,
        )
        for i, group in stream:
            groups[i] = _records(cfg, problems[i], prompts[i], group, tokenizer, T, seed, version)
            judging.add(groups[i])
        sampled = time.perf_counter()
        verdicts = judging.finish()
    finally:
        judging.close()
    out.rollouts = [r for i in range(len(problems)) for r in groups[i]]
    out.verdicts = [verdicts[r.id] for r in out.rollouts]
    out.sample_s = sampled - t0
    out.judge_s, out.hidden_s = judging.busy(until=sampled)
    out.tokens = sum(len(r.completion_token_ids or ()) for r in out.rollouts)
    return out


def _records(
    cfg, problem: Problem, prompt, group, tokenizer, T: float, seed: int, version: int
) -> list[Rollout]:
    """One sampled group as Rollout records, built by ``make_rollouts`` (the one place that
    knows a rollout's fields) from the group the engine already returned."""
    from mcoder.rollout.sample import make_rollouts

    return make_rollouts(
        [problem],
        _Sampled(group),
        tokenizer,
        n=cfg.sampling.n,
        max_tokens=cfg.sampling.max_tokens,
        temperature=T,
        seed=seed,
        model_name=cfg.model,
        policy_version=version,
        prompts=[prompt],
    )


class _Sampled:
    """An engine that returns one group already sampled."""

    name = "sampled"

    def __init__(self, group):
        self.group = group

    def generate(self, prompt_ids: Sequence[Sequence[int]], **_: Any):
        return [self.group]


class _JudgeThread:
    """Judges groups in a thread of its own, a chunk at a time: a chunk is every group added
    while the previous chunk was judged, so the judge's pool gets work as soon as there is some
    and one ``Judge.judge`` call runs at a time."""

    def __init__(self, judge, problems_by_id: dict[str, Problem]):
        self.judge, self.by_id = judge, problems_by_id
        self.queue: queue.Queue[list[Rollout] | None] = queue.Queue()
        self.verdicts: dict[str, Verdict] = {}
        self.spans: list[tuple[float, float]] = []  # each chunk's (start, end)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._work, name="judge", daemon=True)
        self.thread.start()

    def add(self, rollouts: list[Rollout]) -> None:
        self.queue.put(rollouts)

    def _work(self) -> None:
        last = False
        while not last:
            chunk: list[Rollout] = []
            item = self.queue.get()  # wait for the first group
            while item is not None:
                chunk += item
                try:
                    item = self.queue.get_nowait()  # and take every group that is waiting
                except queue.Empty:
                    break
            last = item is None
            if chunk and self.error is None:
                t0 = time.perf_counter()
                try:
                    for v in self.judge.judge(self.by_id, chunk):
                        self.verdicts[v.rollout_id] = v
                except BaseException as e:  # noqa: BLE001 - raised in the loop's thread by finish()
                    self.error = e
                self.spans.append((t0, time.perf_counter()))

    def finish(self) -> dict[str, Verdict]:
        """Every verdict, once the last chunk is judged."""
        self.close()
        if self.error is not None:
            raise self.error
        return self.verdicts

    def close(self) -> None:
        if self.thread.is_alive():
            self.queue.put(None)
            self.thread.join()

    def busy(self, until: float) -> tuple[float, float]:
        """(seconds judged, of which before ``until``)."""
        total = sum(b - a for a, b in self.spans)
        hidden = sum(max(0.0, min(b, until) - a) for a, b in self.spans)
        return total, hidden
