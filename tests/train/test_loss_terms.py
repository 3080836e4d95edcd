"""The loss as a table of terms (mcoder.train.terms.TERMS): the loss is the sum of the terms'
per-token losses and the metrics are theirs, and a new term, with its weight field and a recipe,
reaches the loss and metrics.jsonl without an edit to the trainer (ARCHITECTURE.md, "How to add":
the example here is a k3 KL to π_old, weighted by a field the test's config adds)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch

from mcoder.train import grpo
from mcoder.train.config import TrainConfig, resolve
from mcoder.train.terms import TERMS, LossInputs, Term, k3_kl, metric_names


def micro_batch(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    logp = (torch.randn(3, 5, generator=g) * 0.3 - 2).requires_grad_(True)
    old = logp.detach() + torch.randn(3, 5, generator=g) * 0.2
    ref = logp.detach() + torch.randn(3, 5, generator=g) * 0.2
    mask = (torch.rand(3, 5, generator=g) > 0.2).float()
    return logp, old, ref, torch.randn(3, generator=g), mask


@pytest.mark.parametrize("algo", ["grpo", "dapo"])
def test_the_loss_is_the_sum_of_the_terms_and_the_metrics_are_theirs(algo):
    cfg = resolve(algo)
    logp, old, ref, adv, mask = micro_batch()
    parts = grpo.policy_loss(logp, old, adv, mask, cfg, ref_logp=ref, num_tokens=11.0, num_seqs=3, L_max=5)
    x = LossInputs(logp=logp, old_logp=old, ref_logp=ref, adv=adv.unsqueeze(1), mask=mask,
                   ratio=torch.exp(logp - old), is_weights=None)  # fmt: skip
    per_token = [p for p, _ in (term.fn(x, cfg) for term in TERMS.values()) if p is not None]
    assert len(per_token) == (2 if cfg.beta else 1)  # the KL adds nothing at beta 0
    expected = grpo.aggregate(sum(per_token[1:], per_token[0]), mask, cfg.loss_agg, num_tokens=11.0, num_seqs=3, L_max=5)
    assert torch.equal(parts.loss, expected)
    assert tuple(parts.metrics) == metric_names()
    assert metric_names()[:4] == ("clip/low", "clip/high", "ratio/mean", "kl")  # the first two terms
    assert parts.metrics["kl"] == pytest.approx(float((k3_kl(logp, ref).detach() * mask).sum()))


# ---------------------------------------------------------------- a new term, as ARCHITECTURE.md adds one


@dataclass
class WithOldKL(TrainConfig):
    """TrainConfig with the new term's weight field (in the package: a field of
    terms.TermWeights, which TrainConfig extends)."""

    old_kl_coef: float = 0.0
    """Weight of the k3 KL to π_old (the policy that sampled)."""


def old_kl(x: LossInputs, cfg) -> tuple[torch.Tensor | None, dict[str, float]]:
    """old_kl_coef · k3 KL(π_θ || π_old); its metric, that KL, whatever the weight."""
    kl = k3_kl(x.logp, x.old_logp)  # (B, T)
    with torch.no_grad():
        metrics = {"kl/old": float((kl * x.mask).sum())}
    return (cfg.old_kl_coef * kl if cfg.old_kl_coef else None), metrics


def test_a_new_term_adds_its_weighted_loss_and_its_metric(monkeypatch):
    logp, old, _, adv, mask = micro_batch(1)
    kw = {"num_tokens": float(mask.sum()), "num_seqs": 3}
    before = grpo.policy_loss(logp, old, adv, mask, resolve("dapo"), **kw)  # the table as shipped
    monkeypatch.setitem(TERMS, "old_kl", Term(old_kl, ("kl/old",)))
    off = grpo.policy_loss(logp, old, adv, mask, WithOldKL(**vars(resolve("dapo"))), **kw)
    on = grpo.policy_loss(logp, old, adv, mask, WithOldKL(**vars(resolve("dapo")), old_kl_coef=0.5), **kw)
    kl = float((k3_kl(logp, old).detach() * mask).sum())
    assert on.loss.item() == pytest.approx(off.loss.item() + 0.5 * kl / float(mask.sum()), rel=1e-5)
    assert list(on.metrics) == [*before.metrics, "kl/old"] and on.metrics["kl/old"] == pytest.approx(kl)
    assert torch.equal(off.loss, before.loss), "at weight 0 the loss is what it was"


def test_a_new_term_s_metric_reaches_the_trainer_s_metrics(monkeypatch, tiny_model):
    from mcoder.train.trainer import Trainer
    from train_records import sample_rollouts, verdicts_for

    shipped_last = metric_names()[-1]  # the last metric of the terms the package ships
    monkeypatch.setitem(TERMS, "old_kl", Term(old_kl, ("kl/old",)))
    cfg = WithOldKL(**vars(resolve("dapo", {"lr": 1e-3, "logprob_temperature": 1.0, "truncation": "none"})),
                    old_kl_coef=0.1)  # fmt: skip
    trainer = Trainer(str(tiny_model), cfg)
    rollouts = sample_rollouts(trainer.model, trainer.tokenizer, {"a": "sum"}, n=2, max_tokens=6, temperature=1.0)
    metrics = trainer.train_on_batch(rollouts, verdicts_for(rollouts, lambda r: r.sample_index))
    names = list(metrics)
    assert names.index(shipped_last) + 1 == names.index("kl/old") == names.index("entropy") - 1
    assert metrics["updates"] == 1 and metrics["kl/old"] >= 0.0
