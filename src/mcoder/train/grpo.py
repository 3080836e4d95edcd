"""The GRPO objective as pure tensor functions (no model, no I/O).

    J(θ) = E_q [ Σ_i min( r_i A_i , clip(r_i, 1-eps_low, 1+eps_high) A_i ) - beta D_KL(π_θ || π_ref) ]
           (each part a loss term of mcoder.train.terms, which policy_loss sums)
    r_i  = π_θ^T(o_i|q) / π_old^T(o_i|q)     per token, logits divided by the sampling temperature T
    A_i  = (R_i - mean(R)) / (std(R) + eps)   over the G outputs of one prompt, before any masking

Shapes: B sequences (completions) in a micro-batch, T completion positions (right-padded),
V vocabulary. ``mask`` is 1 on each real completion token, the end-of-sequence token included
(a padded position is 0; padding never reuses the EOS id's mask, so the model learns to stop).
The loss is *minimised*, so it is -J.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from mcoder.train.config import LossAgg, TrainConfig
from mcoder.train.terms import TERMS, LossInputs

# ------------------------------------------------------------------ log-probs


def token_logprobs(logits: torch.Tensor, tokens: torch.Tensor, temperature: float) -> torch.Tensor:
    """log π^T(token) of each position: log-softmax of logits / T, read at the chosen token."""
    scaled = logits.float() / temperature  # (B, T, V)
    picked = scaled.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)  # (B, T)
    return picked - torch.logsumexp(scaled, dim=-1)  # (B, T)


@torch.no_grad()
def token_entropy(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """Entropy of π^T at each position (a monitor only: no gradient)."""
    logp = torch.log_softmax(logits.float() / temperature, dim=-1)  # (B, T, V)
    return -(logp.exp() * logp).sum(-1)  # (B, T)


def logprobs_and_entropy(
    logits: torch.Tensor, tokens: torch.Tensor, temperature: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Both of the above from one log-softmax (the trainer's hot path); entropy carries no gradient."""
    logp_all = torch.log_softmax(logits.float() / temperature, dim=-1)  # (B, T, V)
    logp = logp_all.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)  # (B, T)
    with torch.no_grad():
        lp = logp_all.detach()  # (B, T, V)
        entropy = -(lp.exp() * lp).sum(-1)  # (B, T)
    return logp, entropy


def head_logprobs_and_entropy(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    tokens: torch.Tensor,
    temperature: float,
    chunk: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``logprobs_and_entropy`` of the logits ``hidden @ weight.T + bias`` without ever holding
    them for more than ``chunk`` rows: each chunk's logits are made, read
    and dropped, and made again in the backward (activation checkpointing of the output layer:
    memory for compute). ``chunk`` 0: all rows at once, kept for the backward, nothing recomputed.
    hidden (N, H), tokens (N,) -> log-probs (N,) with gradient, entropy (N,) without."""
    from torch.utils.checkpoint import checkpoint

    n = hidden.shape[0]
    step = chunk if chunk > 0 else max(n, 1)
    logps, entropies = [], []
    recompute = chunk > 0 and torch.is_grad_enabled() and (hidden.requires_grad or weight.requires_grad)
    for i in range(0, n, step):
        h, tok = hidden[i : i + step], tokens[i : i + step]
        if recompute:
            lp, ent = checkpoint(_head_chunk, h, weight, bias, tok, temperature, use_reentrant=False)
        else:
            lp, ent = _head_chunk(h, weight, bias, tok, temperature)
        logps.append(lp)
        entropies.append(ent)
    if not logps:
        empty = hidden.new_zeros(0, dtype=torch.float32)
        return empty, empty
    return torch.cat(logps), torch.cat(entropies)


def _head_chunk(h, weight, bias, tok, temperature: float):
    """One chunk of rows: (log-probs, entropy) of its logits, from one log-softmax."""
    logits = torch.nn.functional.linear(h, weight, bias)  # (n, V)
    lp_all = torch.log_softmax(logits.float() / temperature, dim=-1)  # (n, V)
    logp = lp_all.gather(-1, tok.unsqueeze(-1)).squeeze(-1)  # (n,)
    with torch.no_grad():
        lp = lp_all.detach()
        entropy = -(lp.exp() * lp).sum(-1)  # (n,)
    return logp, entropy


# ------------------------------------------------------------------ advantages


def group_advantages(rewards: torch.Tensor, group_ids: torch.Tensor, eps: float = 1e-4) -> torch.Tensor:
    """A_i = (R_i - mean_g R) / (std_g R + eps), std with Bessel's correction (as TRL).

    ``group_ids`` numbers the prompt of each output (0..num_groups-1); groups may differ in size.
    A group of one output has std 0 and so advantage 0.
    """
    num_groups = int(group_ids.max()) + 1
    R = rewards.double()  # (N,)  double: the group sums must not drift for large groups
    count = torch.zeros(num_groups, dtype=R.dtype).index_add_(0, group_ids, torch.ones_like(R))  # (G_n,)
    mean = torch.zeros(num_groups, dtype=R.dtype).index_add_(0, group_ids, R) / count  # (G_n,)
    dev = R - mean[group_ids]  # (N,)
    sq = torch.zeros(num_groups, dtype=R.dtype).index_add_(0, group_ids, dev * dev)  # (G_n,)
    std = (sq / (count - 1).clamp(min=1)).sqrt()  # (G_n,)
    return (dev / (std[group_ids] + eps)).to(rewards.dtype)  # (N,)


def group_has_variance(rewards: torch.Tensor, group_ids: torch.Tensor) -> torch.Tensor:
    """Per output: does its group hold at least two different rewards? (DAPO's dynamic sampling.)"""
    num_groups = int(group_ids.max()) + 1
    hi = torch.full((num_groups,), -torch.inf, dtype=rewards.dtype).scatter_reduce(
        0, group_ids, rewards, reduce="amax"
    )  # (G_n,)
    lo = torch.full((num_groups,), torch.inf, dtype=rewards.dtype).scatter_reduce(
        0, group_ids, rewards, reduce="amin"
    )  # (G_n,)
    return (hi > lo)[group_ids]  # (N,)


def overlong_penalty(lengths: torch.Tensor, L_max: int, L_cache: int) -> torch.Tensor:
    """DAPO's soft overlong punishment, added to the reward.

    0 up to L_max - L_cache tokens, then falling linearly to -1 at L_max, and -1 beyond.
    """
    start = L_max - L_cache
    ramp = (start - lengths.double()) / L_cache  # (N,)
    return torch.where(lengths <= start, 0.0, ramp.clamp(min=-1.0)).to(torch.float32)  # (N,)


# ------------------------------------------------------------------ the loss


@dataclass
class LossParts:
    """The loss of one micro-batch and the sums its metrics are made of (token-weighted)."""

    loss: torch.Tensor  # scalar, already divided by the mini-batch normaliser
    tokens: float  # tokens in the loss mask
    metrics: dict[str, float]  # each term's sums over those tokens, by name (terms.metric_names())


def aggregate(
    per_token: torch.Tensor,
    mask: torch.Tensor,
    agg: LossAgg,
    *,
    num_tokens: float,
    num_seqs: int,
    L_max: int | None = None,
) -> torch.Tensor:
    """Sum a micro-batch's per-token loss, divided by the normaliser of its whole mini-batch.

    token:    Σ_all tokens / num_tokens (tokens in the mini-batch)          (DAPO)
    sequence: Σ_i (Σ_t / |o_i|) / num_seqs (sequences in the mini-batch)   (GRPO paper)
    constant: Σ_all tokens / (num_seqs · L_max)                              (Dr. GRPO)
    Dividing by mini-batch totals, not micro-batch ones, makes gradient accumulation exact.
    """
    masked = per_token * mask  # (B, T)
    if agg == "token":
        return masked.sum() / max(num_tokens, 1.0)
    if agg == "sequence":
        per_seq = masked.sum(-1) / mask.sum(-1).clamp(min=1)  # (B,)
        return per_seq.sum() / max(num_seqs, 1)
    if agg == "constant":
        if not L_max:
            raise ValueError("loss aggregation 'constant' needs L_max")
        return masked.sum() / (max(num_seqs, 1) * L_max)
    raise ValueError(f"unknown loss aggregation {agg!r}")


def policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    adv: torch.Tensor,
    mask: torch.Tensor,
    cfg: TrainConfig,
    *,
    ref_logp: torch.Tensor | None = None,
    is_weights: torch.Tensor | None = None,
    num_tokens: float,
    num_seqs: int,
    L_max: int | None = None,
) -> LossParts:
    """-J for one micro-batch: the sum of the loss terms (``mcoder.train.terms.TERMS``: the
    clipped surrogate, beta · k3 KL, ...), aggregated by ``cfg.loss_agg``, and the terms' metrics.

    logp (B, T) carries the gradient; old_logp and ref_logp (B, T) and adv (B,) are constants.
    ``is_weights`` (B, T), constants: truncated importance weights min(π_old / π_sampler, C) on
    each token's surrogate. ``cfg``: the settings the terms read (their weights among them).
    """
    mask = mask.to(logp.dtype)  # (B, T)
    x = LossInputs(
        logp=logp,
        old_logp=old_logp,
        ref_logp=ref_logp,
        adv=adv.to(logp.dtype).unsqueeze(1),  # (B, 1)
        mask=mask,
        ratio=torch.exp(logp - old_logp),  # (B, T)
        is_weights=is_weights,
    )
    per_token, metrics = None, {}
    for term in TERMS.values():
        part, sums = term.fn(x, cfg)
        if part is not None:
            per_token = part if per_token is None else per_token + part  # (B, T)
        metrics.update(sums)
    loss = aggregate(per_token, mask, cfg.loss_agg, num_tokens=num_tokens, num_seqs=num_seqs, L_max=L_max)
    return LossParts(loss=loss, tokens=float(mask.sum()), metrics=metrics)
