"""The terms of the loss, by name: each a function of one micro-batch that returns its per-token
loss (its weight applied; None when it adds nothing) and its metrics.

    loss per token = Σ over TERMS of term(x, cfg)[0]     (in the table's order)

A term reads its settings from the ``TrainConfig``. A new term's weight is a field of
``TermWeights`` below, which ``TrainConfig`` extends: the options, recipes, run config and model
card read it as one of TrainConfig's (``beta``, the KL's, is a field of TrainConfig itself, where it
always was). This module is imported with the config, which the command line reads before any model
is loaded, so it imports torch inside the functions that compute. Its metrics are sums over the
micro-batch's loss tokens, named as ``metrics.jsonl`` names them; the trainer adds them over
micro-batches and processes and reports each divided by the tokens (the per-token mean).
``Term.metrics`` names them before any batch is seen (a step whose every sample was masked still
reports each one, 0). The loss is *minimised*: a term returns -J's part.
``mcoder.train.grpo.policy_loss`` sums the terms and aggregates the sum.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcoder.config import ranges

if TYPE_CHECKING:
    import torch


@ranges()  # a weight's range, e.g. ``entropy_coef=">= 0"``
@dataclass
class TermWeights:
    """The weights of the terms after the first two: ``TrainConfig`` extends this class. A weight's
    default turns its term off (0.0), so a preset that leaves it out computes what it did before."""

    # --- loss terms


@dataclass
class LossInputs:
    """One micro-batch as the terms see it: B sequences, T completion positions."""

    logp: torch.Tensor  # (B, T) log π_θ^T, with the gradient
    old_logp: torch.Tensor  # (B, T) log π_old^T
    ref_logp: torch.Tensor | None  # (B, T) log π_ref^T when there is a reference model
    adv: torch.Tensor  # (B, 1) the advantage A of each sequence, in logp's dtype
    mask: torch.Tensor  # (B, T) 1 on each loss token, in logp's dtype
    ratio: torch.Tensor  # (B, T) r = π_θ / π_old
    is_weights: torch.Tensor | None  # (B, T) truncated importance weights min(π_old / π_sampler, C)


@dataclass(frozen=True)
class Term:
    fn: Callable[[LossInputs, Any], tuple[torch.Tensor | None, dict[str, float]]]
    metrics: tuple[str, ...]  # the names of the sums ``fn`` returns, in its order


def k3_kl(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """Schulman's k3 estimator of KL(π_θ || π_ref) per token: exp(d) - d - 1, d = log π_ref - log π_θ."""
    import torch

    d = ref_logp - logp  # (B, T)
    return torch.exp(d) - d - 1  # (B, T)


def clipped_surrogate(x: LossInputs, cfg: Any) -> tuple[torch.Tensor, dict[str, float]]:
    """-min(r A, clip(r, 1-eps_low, 1+eps_high) A), each token weighted by its importance weight
    when there are any (the sampler's distribution differs from the trainer's, e.g. vLLM in bf16).
    Metrics: how often the clip binds below (r < 1-eps_low, A < 0) and above (r > 1+eps_high,
    A > 0), and the ratio."""
    import torch

    clipped = torch.clamp(x.ratio, 1 - cfg.eps_low, 1 + cfg.eps_high)  # (B, T)
    per_token = -torch.min(x.ratio * x.adv, clipped * x.adv)  # (B, T)
    if x.is_weights is not None:
        per_token = per_token * x.is_weights.to(x.logp.dtype)  # (B, T)
    with torch.no_grad():
        low = ((x.ratio < 1 - cfg.eps_low) & (x.adv < 0)).to(x.mask.dtype)  # (B, T)
        high = ((x.ratio > 1 + cfg.eps_high) & (x.adv > 0)).to(x.mask.dtype)  # (B, T)
        metrics = {
            "clip/low": float((low * x.mask).sum()),
            "clip/high": float((high * x.mask).sum()),
            "ratio/mean": float((x.ratio * x.mask).sum()),
        }
    return per_token, metrics


def kl_penalty(x: LossInputs, cfg: Any) -> tuple[torch.Tensor | None, dict[str, float]]:
    """beta · k3 KL to the reference model (times r with ``kl_ratio_weighted``: DeepSeek-V3.2's
    unbiased KL gradient, TRL's use_bias_correction_kl); nothing when beta is 0. Metric: the k3
    KL to π_ref, or to π_old when there is no reference model."""
    import torch

    per_token = None
    if cfg.beta != 0.0:
        if x.ref_logp is None:
            raise ValueError("beta > 0 needs the reference model's log-probs")
        kl_term = k3_kl(x.logp, x.ref_logp)  # (B, T)
        if cfg.kl_ratio_weighted:
            kl_term = kl_term * x.ratio  # (B, T)
        per_token = cfg.beta * kl_term  # (B, T)
    with torch.no_grad():
        kl = k3_kl(x.logp, x.ref_logp if x.ref_logp is not None else x.old_logp)  # (B, T)
        metrics = {"kl": float((kl * x.mask).sum())}
    return per_token, metrics


TERMS: dict[str, Term] = {
    "surrogate": Term(clipped_surrogate, ("clip/low", "clip/high", "ratio/mean")),
    "kl": Term(kl_penalty, ("kl",)),
}


def metric_names() -> tuple[str, ...]:
    """Every term's metrics, in the order metrics.jsonl has them."""
    return tuple(name for term in TERMS.values() for name in term.metrics)
