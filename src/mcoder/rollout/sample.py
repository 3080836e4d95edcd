"""Problems -> Rollout records: render prompts, ask an engine for G samples each, keep everything
the trainer needs later (token ids, the sampler's log-probs, why each sample stopped)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from mcoder.engines.base import derive_seed
from mcoder.prompts import render_prompt
from mcoder.records import Problem, Rollout


def rollout_id(problem_id: str, policy_version: int, sample_index: int) -> str:
    """Stable ids: the same problem, policy version and sample index always give the same id,
    which is what lets a rerun skip the samples already written."""
    return f"{problem_id}/{policy_version}/{sample_index}"


def write_rollouts(writer: Any, rollouts: Iterable[Rollout]) -> int:
    """Write rollouts through a RecordWriter; returns how many were new."""
    return writer.write_all(rollouts)


def problem_seed(seed: int, problem_id: str, policy_version: int = 0) -> int:
    """A problem's sampling seed depends on the run seed and the problem, not on batch order."""
    return derive_seed(seed, problem_id, policy_version)


def make_rollouts(
    problems: Sequence[Problem],
    engine: Any,
    tokenizer: Any,
    *,
    n: int,
    max_tokens: int,
    temperature: float,
    seed: int,
    model_name: str,
    policy_version: int = 0,
    prompts: Sequence[tuple[str, list[int]]] | None = None,
) -> list[Rollout]:
    """``n`` rollouts per problem, grouped by problem in input order. ``prompts``: the problems'
    (text, token ids) when the caller rendered them already (to measure them)."""
    if not problems:
        return []
    if prompts is None:
        prompts = [render_prompt(p, tokenizer) for p in problems]
    seeds = [problem_seed(seed, p.id, policy_version) for p in problems]
    groups = engine.generate(
        [ids for _, ids in prompts], n=n, max_tokens=max_tokens, temperature=temperature, seed=seeds
    )
    out = []
    for problem, (text, ids), group in zip(problems, prompts, groups):
        for j, s in enumerate(group):
            out.append(
                Rollout(
                    id=rollout_id(problem.id, policy_version, j),
                    problem_id=problem.id,
                    sample_index=j,
                    completion=s.text,
                    prompt=text,
                    prompt_token_ids=ids,
                    completion_token_ids=s.completion_token_ids,
                    sampling_logprobs=s.logprobs,
                    finish_reason=s.finish_reason,
                    temperature=temperature,
                    model=model_name,
                    policy_version=policy_version,
                    seed=seed,
                )
            )
    return out
