"""From rollout and verdict records to padded tensors, in groups, mini-batches and micro-batches.

A *sample* is one rollout joined with its verdict (on ``rollout_id``), with its reward, its
group-normalised advantage and its truncation-mask decision. A *group* is the samples of one
``problem_id``. Mini-batches are lists of groups (one optimizer step each); micro-batches are
slices of a mini-batch's samples (one forward/backward each).

Tensors: prompts are left-padded and completions right-padded, so every completion starts at
the same column P; ``completion_mask`` is 1 on each sampled token, the end-of-sequence token
included, and 0 on padding. Positions come from the attention mask, so left padding does not
shift them.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch

from mcoder.errors import DataError
from mcoder.jsonl import check_verdict_joins
from mcoder.records import Rollout, Verdict
from mcoder.train import grpo
from mcoder.train.config import TrainConfig
from mcoder.train.masking import ProgramState, cut_off, program_state, scored_reward, truncation_decision


@dataclass
class Sample:
    rollout: Rollout
    verdict: Verdict
    group: int  # index of its problem_id within the batch
    reward: float = 0.0  # verdict reward (or 0: cut off under truncated_reward zero) + overlong penalty
    advantage: float = 0.0  # after masking: 0 for a masked sample
    masked: bool = False  # truncation mask: the sample's advantage is 0
    dropped: bool = False  # masked and (mask_mode drop) left out of the loss and its token count
    mask_reason: str = "off"
    truncated: bool = False
    cut_off: bool = False  # truncated before its program finished (masking.cut_off)
    program: ProgramState | None = None  # truncated outputs: what the judge ran (masking.program_state)
    old_logprobs: list[float] | None = None  # log π_old^T per completion token
    ref_logprobs: list[float] | None = None  # log π_ref^T per completion token (beta > 0)
    is_weights: list[float] | None = None  # truncated importance weights min(π_old / π_sampler, C) per token

    @property
    def num_tokens(self) -> int:
        return len(self.rollout.completion_token_ids or ())

    def to_row(self) -> dict:
        """The per-sample record written beside each update (samples.jsonl)."""
        return {
            "rollout_id": self.rollout.id,
            "problem_id": self.rollout.problem_id,
            "reward": self.reward,
            "advantage": self.advantage,
            "truncated": self.truncated,
            "cut_off": self.cut_off,
            "program": self.program,
            "status": self.verdict.status,
            "masked": self.masked,
            "dropped": self.dropped,
            "mask_reason": self.mask_reason,
        }


def join(
    rollouts: Iterable[Rollout], verdicts: dict[str, Verdict], *, rollouts_name: str, verdicts_name: str
) -> list[tuple[Rollout, Verdict]]:
    """Rollouts paired with their verdicts by id; a rollout without tokens or verdict is a data error."""
    pairs = []
    for i, r in enumerate(rollouts, start=1):
        if not r.prompt_token_ids or not r.completion_token_ids:
            raise DataError(
                f"rollout {r.id!r} has no token ids",
                path=rollouts_name,
                line=i,
                field="completion_token_ids" if r.prompt_token_ids else "prompt_token_ids",
                hint="training needs the token ids the rollout stage writes; regenerate with `mcoder rollout`",
            )
        if r.id not in verdicts:
            raise DataError(
                f"no verdict for rollout {r.id!r}",
                path=verdicts_name,
                hint="judge every rollout of the batch (`mcoder judge`), or pass the matching verdicts file",
            )
        if r.sampling_logprobs is not None and len(r.sampling_logprobs) != len(r.completion_token_ids):
            raise DataError(
                "sampling_logprobs and completion_token_ids differ in length",
                path=rollouts_name,
                line=i,
                field="sampling_logprobs",
            )
        check_verdict_joins(verdicts[r.id].problem_id, r.problem_id, r.id, path=verdicts_name, line=None)
        pairs.append((r, verdicts[r.id]))
    if not pairs:
        raise DataError("no rollouts to train on", path=rollouts_name)
    return pairs


def is_truncated(r: Rollout, L_max: int) -> bool:
    """|o| = L_max: the engine's finish reason says so; a record without one is judged by length."""
    if r.finish_reason is not None:
        return r.finish_reason == "length"
    return len(r.completion_token_ids or ()) >= L_max


def prepare(
    pairs: Sequence[tuple[Rollout, Verdict]], cfg: TrainConfig, L_max: int, *, coin_seed: int | None = None
) -> list[Sample]:
    """Rewards, advantages (over the whole group, before masking), mask decisions, dynamic sampling."""
    group_of: dict[str, int] = {}
    samples = [
        Sample(
            r,
            v,
            group_of.setdefault(r.problem_id, len(group_of)),
            old_logprobs=r.sampling_logprobs,
        )
        for r, v in pairs
    ]
    for s in samples:
        s.truncated = is_truncated(s.rollout, L_max)
        s.reward = scored_reward(float(s.verdict.reward), s.truncated, cfg.truncated_reward)
        # truncated by the engine or (records without a finish reason) by length: either way "length"
        s.cut_off = s.truncated and cut_off(s.rollout.completion, "length")
        s.program = program_state(s.rollout.completion) if s.truncated else None
    lengths = torch.tensor([s.num_tokens for s in samples])
    rewards = torch.tensor([s.reward for s in samples], dtype=torch.float32)
    if cfg.overlong_penalty:
        rewards = rewards + grpo.overlong_penalty(lengths, L_max, cfg.overlong_cache)
    group_ids = torch.tensor([s.group for s in samples])
    adv = grpo.group_advantages(rewards, group_ids, cfg.adv_eps)
    rng = random.Random(cfg.seed if coin_seed is None else coin_seed)  # the masking coins
    for s, R, A in zip(samples, rewards.tolist(), adv.tolist(), strict=True):
        d = truncation_decision(
            truncated=s.truncated,
            status=s.verdict.status,
            tokens=s.rollout.completion_token_ids,
            mode=cfg.truncation,
            rng=rng,
            rho=cfg.mask_rho,
            m=cfg.mask_repeat_m,
            non_incorrect=cfg.mask_non_incorrect,
            is_cut_off=s.cut_off,
            program=s.program,
        )
        s.reward, s.masked, s.mask_reason = R, d.masked, d.reason
        s.advantage = 0.0 if d.masked else A  # the paper's form: A_i times (1 - mask)
        s.dropped = d.masked and cfg.mask_mode == "drop"
    if cfg.dynamic_sampling:
        keep = grpo.group_has_variance(rewards, group_ids).tolist()
        samples = [s for s, k in zip(samples, keep, strict=True) if k]
    return samples


def groups(samples: Sequence[Sample]) -> list[list[Sample]]:
    out: dict[int, list[Sample]] = {}
    for s in samples:
        out.setdefault(s.group, []).append(s)
    return list(out.values())


def minibatches(grouped: list[list[Sample]], size: int, *, shuffle: bool, seed: int) -> list[list[Sample]]:
    """Split prompt groups into mini-batches of ``size`` groups (the last may be smaller)."""
    order = list(range(len(grouped)))
    if shuffle:
        random.Random(seed).shuffle(order)
    chunks = [order[i : i + size] for i in range(0, len(order), size)]
    return [[s for g in chunk for s in grouped[g]] for chunk in chunks]


def microbatches(samples: Sequence[Sample], size: int, token_budget: int = 0) -> list[list[Sample]]:
    """Slices of ``size`` samples; with a ``token_budget`` > 0 instead, the samples sorted by
    length (longest first) and packed so that each micro-batch's padded size (sequences x its
    longest prompt + completion) stays within the budget (a longer sample goes alone): similar
    lengths share a micro-batch, so little is padding, and memory follows tokens, not counts.
    Each loss is divided by the mini-batch's totals, so the gradient does not depend on the cut."""
    if token_budget <= 0:
        return [list(samples[i : i + size]) for i in range(0, len(samples), size)]
    out: list[list[Sample]] = []
    widest = 0
    for s in sorted(samples, key=_length, reverse=True):
        if out and (len(out[-1]) + 1) * max(widest, _length(s)) <= token_budget:
            out[-1].append(s)
        else:
            out.append([s])
            widest = 0
        widest = max(widest, _length(s))
    return out


def _length(s: Sample) -> int:
    return len(s.rollout.prompt_token_ids or ()) + s.num_tokens


@dataclass
class Batch:
    input_ids: torch.Tensor  # (B, P + C)
    attention_mask: torch.Tensor  # (B, P + C)
    position_ids: torch.Tensor  # (B, P + C)
    completion_ids: torch.Tensor  # (B, C)
    completion_mask: torch.Tensor  # (B, C) 1 on sampled tokens (EOS included) of samples in the loss
    token_mask: torch.Tensor  # (B, C) 1 on every sampled token, dropped samples too (for monitors)
    advantages: torch.Tensor  # (B,)
    old_logprobs: torch.Tensor | None  # (B, C) log π_old, when every sample has them
    ref_logprobs: torch.Tensor | None  # (B, C) log π_ref, when every sample has them
    is_weights: torch.Tensor | None = None  # (B, C) truncated importance weights, when every sample has them

    def to(self, device) -> Batch:
        moved = {k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in vars(self).items()}
        return Batch(**moved)


def collate(samples: Sequence[Sample], pad_id: int) -> Batch:
    """Left-pad prompts, right-pad completions; padding is never in any mask."""
    P = max(len(s.rollout.prompt_token_ids) for s in samples)
    C = max(s.num_tokens for s in samples)
    B = len(samples)
    input_ids = torch.full((B, P + C), pad_id, dtype=torch.long)  # (B, P + C)
    attention = torch.zeros((B, P + C), dtype=torch.long)  # (B, P + C)
    old = _pad_floats([s.old_logprobs for s in samples], C)  # (B, C) or None
    ref = _pad_floats([s.ref_logprobs for s in samples], C)  # (B, C) or None
    for i, s in enumerate(samples):
        p, c = s.rollout.prompt_token_ids, s.rollout.completion_token_ids
        input_ids[i, P - len(p) : P] = torch.tensor(p)
        input_ids[i, P : P + len(c)] = torch.tensor(c)
        attention[i, P - len(p) : P + len(c)] = 1
    position_ids = (attention.cumsum(-1) - 1).clamp(min=0)  # (B, P + C)
    token_mask = attention[:, P:].clone()  # (B, C)
    keep = torch.tensor([not s.dropped for s in samples], dtype=torch.long)  # (B,)
    return Batch(
        input_ids=input_ids,
        attention_mask=attention,
        position_ids=position_ids,
        completion_ids=input_ids[:, P:],
        completion_mask=token_mask * keep.unsqueeze(1),
        token_mask=token_mask,
        advantages=torch.tensor([s.advantage for s in samples], dtype=torch.float32),
        old_logprobs=old,
        ref_logprobs=ref,
        is_weights=_pad_floats([s.is_weights for s in samples], C),  # (B, C) or None
    )


def _pad_floats(rows: list[list[float] | None], C: int) -> torch.Tensor | None:
    if any(r is None for r in rows):
        return None
    out = torch.zeros((len(rows), C))  # (B, C)
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.as_tensor(r, dtype=torch.float32)
    return out
