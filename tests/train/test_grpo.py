"""The GRPO loss math on numbers worked out by hand."""

from __future__ import annotations

import math
import random

import pytest
import torch

from mcoder.records import Rollout, Verdict
from mcoder.train import grpo
from mcoder.train.batching import collate, prepare
from mcoder.train.config import TrainConfig, resolve
from mcoder.train.masking import repeats, truncation_decision

EPS_LOW, EPS_HIGH = 0.2, 0.28


def one_token_loss(logp: float, adv: float, *, old: float = 0.0, beta: float = 0.0, ref: float | None = None):
    lp = torch.tensor([[logp]], requires_grad=True)
    parts = grpo.policy_loss(
        lp,
        torch.tensor([[old]]),
        torch.tensor([adv]),
        torch.ones(1, 1),
        TrainConfig(eps_low=EPS_LOW, eps_high=EPS_HIGH, beta=beta, loss_agg="token"),
        ref_logp=None if ref is None else torch.tensor([[ref]]),
        num_tokens=1,
        num_seqs=1,
    )
    parts.loss.backward()
    return parts, float(parts.loss.detach()), float(lp.grad)


# ---------------------------------------------------------------- log-probs


def test_logprobs_of_temperature_scaled_logits():
    logits = torch.tensor([[[0.0, math.log(3.0)]]])  # p = 1/4, 3/4 at T = 1
    tok = torch.tensor([[1]])
    assert grpo.token_logprobs(logits, tok, 1.0).item() == pytest.approx(math.log(0.75), abs=1e-6)
    # T = 2: logits halve, p(1) = sqrt(3) / (1 + sqrt(3))
    s3 = math.sqrt(3.0)
    assert grpo.token_logprobs(logits, tok, 2.0).item() == pytest.approx(math.log(s3 / (1 + s3)), abs=1e-6)


def test_entropy_of_uniform_is_log_v():
    ent = grpo.token_entropy(torch.zeros(1, 2, 8), 0.7)
    assert torch.allclose(ent, torch.full((1, 2), math.log(8)))


# ---------------------------------------------------------------- advantages


def test_group_advantages_by_hand_and_zero_variance_group():
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0])
    groups = torch.tensor([0, 0, 0, 0, 1, 1, 1])
    adv = grpo.group_advantages(rewards, groups, eps=1e-4)
    std = math.sqrt(4 * 0.25 / 3)  # Bessel: Σ (R - 0.5)^2 / (4 - 1)
    expect = [0.5 / (std + 1e-4), -0.5 / (std + 1e-4)] * 1
    assert adv[0].item() == pytest.approx(expect[0], rel=1e-6)
    assert adv[1].item() == pytest.approx(expect[1], rel=1e-6)
    assert adv[4:].abs().max().item() == 0.0  # all-equal group: no signal
    assert grpo.group_has_variance(rewards, groups).tolist() == [True] * 4 + [False] * 3


def test_single_output_group_has_zero_advantage():
    adv = grpo.group_advantages(torch.tensor([1.0, 0.0, 3.0]), torch.tensor([0, 0, 1]))
    assert adv[2].item() == 0.0


def test_overlong_penalty_by_hand():
    pen = grpo.overlong_penalty(torch.tensor([6, 7, 8, 10, 12]), L_max=10, L_cache=4)
    assert pen.tolist() == pytest.approx([0.0, -0.25, -0.5, -1.0, -1.0])


# ---------------------------------------------------------------- the clipped surrogate


def test_unclipped_positive_advantage():
    _, loss, grad = one_token_loss(math.log(1.1), 2.0)
    assert loss == pytest.approx(-1.1 * 2.0, rel=1e-6)
    assert grad == pytest.approx(-1.1 * 2.0, rel=1e-6)  # d(-r A)/d logp = -r A


def test_clip_high_binds_for_positive_advantage():
    parts, loss, grad = one_token_loss(math.log(1.5), 1.0)
    assert loss == pytest.approx(-(1 + EPS_HIGH), rel=1e-6)
    assert grad == 0.0
    assert parts.metrics["clip/high"] == 1.0 and parts.metrics["clip/low"] == 0.0


def test_clip_low_binds_for_negative_advantage():
    parts, loss, grad = one_token_loss(math.log(0.5), -1.0)
    assert loss == pytest.approx(1 - EPS_LOW, rel=1e-6)
    assert grad == 0.0
    assert parts.metrics["clip/low"] == 1.0 and parts.metrics["clip/high"] == 0.0


def test_clip_does_not_bind_on_the_pessimistic_side():
    # r = 1.5 with A < 0: min picks the unclipped -1.5, so the gradient flows
    _, loss, grad = one_token_loss(math.log(1.5), -1.0)
    assert loss == pytest.approx(1.5, rel=1e-6)
    assert grad == pytest.approx(1.5, rel=1e-6)
    # r = 0.5 with A > 0: unclipped 0.5 < clipped 0.8
    _, loss, grad = one_token_loss(math.log(0.5), 1.0)
    assert loss == pytest.approx(-0.5, rel=1e-6)
    assert grad == pytest.approx(-0.5, rel=1e-6)


def test_k3_kl_with_beta():
    # d = log 0.5 - 0: exp(d) - d - 1 = 0.5 + ln 2 - 1
    kl = 0.5 + math.log(2) - 1
    parts, loss, grad = one_token_loss(0.0, 0.0, beta=0.1, ref=math.log(0.5))
    assert loss == pytest.approx(0.1 * kl, rel=1e-6)
    assert parts.metrics["kl"] == pytest.approx(kl, rel=1e-6)
    assert grad == pytest.approx(0.1 * (1 - 0.5), rel=1e-6)  # d/dlogp (e^{ref-lp} - ref + lp - 1) = 1 - e^{d}


def test_beta_needs_reference_logprobs():
    with pytest.raises(ValueError, match="reference"):
        one_token_loss(0.0, 1.0, beta=0.1)


# ---------------------------------------------------------------- aggregation


PER_TOKEN = torch.tensor([[1.0, 0.0, 0.0], [2.0, 3.0, 4.0]])
MASK = torch.tensor([[1, 0, 0], [1, 1, 1]])


@pytest.mark.parametrize(
    "agg, expect",
    [
        ("token", (1 + 2 + 3 + 4) / 4),
        ("sequence", (1 / 1 + 9 / 3) / 2),
        ("constant", (1 + 2 + 3 + 4) / (2 * 5)),
    ],
)
def test_aggregation_modes(agg, expect):
    got = grpo.aggregate(PER_TOKEN + 100 * (1 - MASK), MASK, agg, num_tokens=4, num_seqs=2, L_max=5)
    assert got.item() == pytest.approx(expect)


def test_aggregation_divides_by_minibatch_totals():
    # the same micro-batch inside a mini-batch of 8 tokens / 4 sequences
    assert grpo.aggregate(PER_TOKEN, MASK, "token", num_tokens=8, num_seqs=4).item() == pytest.approx(10 / 8)
    assert grpo.aggregate(PER_TOKEN, MASK, "sequence", num_tokens=8, num_seqs=4).item() == pytest.approx(
        4 / 4
    )


# ---------------------------------------------------------------- truncation masking, each condition


def decide(**kw):
    args = {
        "truncated": True,
        "status": "accepted",
        "tokens": list(range(300)),
        "mode": "conditional",
        "rng": random.Random(0),
        "rho": 1.0,
        "m": 128,
        "non_incorrect": "accepted_or_no_code",
        "is_cut_off": False,
    }
    args.update(kw)
    return truncation_decision(**args)


def test_mask_needs_truncation():
    assert decide().masked
    assert decide(truncated=False).reason == "not_truncated"


def test_mask_needs_non_incorrect_verdict():
    assert decide(status="wrong_answer").reason == "incorrect"
    assert decide(status="no_code").masked
    assert decide(status="no_code", non_incorrect="accepted").reason == "incorrect"
    assert decide(status="accepted", non_incorrect="accepted").masked


def test_mask_skips_repeating_outputs():
    loop = list(range(50)) + [7, 8, 9, 10] * 64  # last 128 tokens equal the 128 before them
    assert repeats(loop, 128)
    assert not repeats(list(range(300)), 128)
    assert not repeats([1] * 200, 128)  # shorter than 2m
    assert decide(tokens=loop).reason == "repeat"


def test_mask_coin_is_seeded_and_rho_sized():
    coins = [decide(rng=rng, rho=0.1).masked for rng in [random.Random(1)] for _ in range(2000)]
    assert 0.07 < sum(coins) / len(coins) < 0.13
    again = [decide(rng=rng, rho=0.1).masked for rng in [random.Random(1)] for _ in range(2000)]
    assert coins == again
    assert decide(rho=0.0).reason == "coin"


def test_dapo_masks_every_truncated_output_and_none_masks_nothing():
    assert decide(mode="all", status="wrong_answer").reason == "all_truncated"
    assert not decide(mode="all", truncated=False).masked
    assert decide(mode="none").reason == "off"


# ---------------------------------------------------------------- masking in a batch


def rollout(i: str, pid: str, comp: list[int], finish: str = "stop") -> Rollout:
    return Rollout(
        id=i,
        problem_id=pid,
        completion="x",
        prompt_token_ids=[5, 6],
        completion_token_ids=comp,
        finish_reason=finish,
        sampling_logprobs=[-1.0] * len(comp),
    )


def verdict(i: str, pid: str, reward: float, status: str) -> Verdict:
    return Verdict(
        rollout_id=i,
        problem_id=pid,
        reward=reward,
        passed=reward > 0,
        status=status,
        tests_passed=0,
        tests_total=1,
    )


@pytest.mark.parametrize("mode", ["zero_advantage", "drop"])
def test_masked_sample_contributes_nothing_and_leaves_others_unchanged(mode):
    """Both mask modes give the masked output no gradient; only ``drop`` takes its tokens out of
    the mask (and so out of the token count the loss is divided by)."""
    EOS = 3
    pairs = [
        (rollout("a", "p", [10, 11, EOS]), verdict("a", "p", 1.0, "accepted")),
        (rollout("b", "p", [12, 13, 14, 15], "length"), verdict("b", "p", 1.0, "accepted")),
        (rollout("c", "p", [16, EOS]), verdict("c", "p", 0.0, "wrong_answer")),
    ]
    plain = prepare(pairs, resolve("microcoder-grpo", {"mask_rho": 0.0}), L_max=4)
    cfg = resolve("microcoder-grpo", {"mask_rho": 1.0, "mask_repeat_m": 2, "mask_mode": mode})
    masked = prepare(pairs, cfg, L_max=4)
    assert [s.masked for s in masked] == [False, True, False]
    assert [s.dropped for s in masked] == [False, mode == "drop", False]
    assert masked[1].advantage == 0.0 and plain[1].advantage > 0
    # the others' advantages are the same: mean and std are taken before masking
    assert [masked[0].advantage, masked[2].advantage] == [plain[0].advantage, plain[2].advantage]

    batch = collate(masked, pad_id=0)
    row = [0, 0, 0, 0] if mode == "drop" else [1, 1, 1, 1]
    assert batch.completion_mask.tolist() == [[1, 1, 1, 0], row, [1, 1, 0, 0]]
    # the EOS token is inside the loss mask; padding (id 0) is not
    assert batch.completion_ids[0, 2].item() == EOS and batch.completion_mask[0, 2].item() == 1

    # its tokens carry no gradient
    logp = torch.zeros(3, 4, requires_grad=True)
    parts = grpo.policy_loss(
        logp,
        torch.zeros(3, 4),
        batch.advantages,
        batch.completion_mask,
        TrainConfig(eps_low=0.2, eps_high=0.28, beta=0.0, loss_agg="token"),
        num_tokens=float(batch.completion_mask.sum()),
        num_seqs=3,
    )
    parts.loss.backward()
    assert logp.grad[1].abs().sum().item() == 0.0
    assert logp.grad[0].abs().sum().item() > 0.0
    assert parts.tokens == (5.0 if mode == "drop" else 9.0)


def test_dynamic_sampling_drops_zero_variance_groups():
    pairs = [
        (rollout("a", "p", [1, 3]), verdict("a", "p", 1.0, "accepted")),
        (rollout("b", "p", [2, 3]), verdict("b", "p", 0.0, "wrong_answer")),
        (rollout("c", "q", [1, 3]), verdict("c", "q", 1.0, "accepted")),
        (rollout("d", "q", [2, 3]), verdict("d", "q", 1.0, "accepted")),
    ]
    kept = prepare(pairs, resolve("dapo"), L_max=8)
    assert [s.rollout.id for s in kept] == ["a", "b"]
    assert len(prepare(pairs, resolve("grpo"), L_max=8)) == 4


def test_ratio_weighted_kl_by_hand():
    # r = e^{0.1}, kl = e^{d} - d - 1 with d = -0.1 - 0.1 = -0.2; loss = beta * r * kl (A = 0)
    lp = torch.tensor([[0.1]], requires_grad=True)
    parts = grpo.policy_loss(
        lp,
        torch.zeros(1, 1),
        torch.zeros(1),
        torch.ones(1, 1),
        TrainConfig(eps_low=0.2, eps_high=0.28, beta=0.5, kl_ratio_weighted=True, loss_agg="token"),
        ref_logp=torch.tensor([[-0.1]]),
        num_tokens=1,
        num_seqs=1,
    )
    r, d = math.exp(0.1), -0.2
    kl = math.exp(d) - d - 1
    assert parts.loss.item() == pytest.approx(0.5 * r * kl, rel=1e-6)
    parts.loss.backward()
    # d/dlp [r kl] = r kl + r (1 - e^{d})
    assert lp.grad.item() == pytest.approx(0.5 * (r * kl + r * (1 - math.exp(d))), rel=1e-5)


def test_overlong_penalty_enters_the_reward_before_advantages():
    pairs = [
        (rollout("a", "p", [1] * 4 + [3]), verdict("a", "p", 1.0, "accepted")),
        (rollout("b", "p", [1] * 9 + [3]), verdict("b", "p", 1.0, "accepted")),
    ]
    cfg = resolve("dapo", {"overlong_penalty": True, "overlong_cache": 4, "truncation": "none"})
    a, b = prepare(pairs, cfg, L_max=10)
    assert (a.reward, b.reward) == (1.0, 0.0)  # 10 tokens: the full -1 at L_max
    assert a.advantage > 0 > b.advantage  # the penalty gives an otherwise flat group a signal


def test_truncation_follows_the_finish_reason_not_the_longest_output():
    from mcoder.train.batching import is_truncated

    assert not is_truncated(rollout("a", "p", [1, 2, 3]), L_max=3)  # stopped at EOS exactly at the limit
    assert is_truncated(rollout("b", "p", [1, 2], "length"), L_max=3)
    no_reason = Rollout(id="c", problem_id="p", completion="", completion_token_ids=[1, 2, 3])
    assert is_truncated(no_reason, L_max=3) and not is_truncated(no_reason, L_max=4)


def test_fused_logprobs_and_entropy_equal_the_separate_ones():
    g = torch.Generator().manual_seed(0)
    logits, tok = torch.randn(2, 3, 11, generator=g), torch.randint(0, 11, (2, 3), generator=g)
    logp, ent = grpo.logprobs_and_entropy(logits, tok, 0.7)
    torch.testing.assert_close(logp, grpo.token_logprobs(logits, tok, 0.7))
    torch.testing.assert_close(ent, grpo.token_entropy(logits, 0.7))


def test_masking_coins_are_seeded_per_batch():
    pairs = [
        (rollout(f"r{i}", "p", [i, i + 1, i + 2], "length"), verdict(f"r{i}", "p", float(i % 2), "accepted"))
        for i in range(40)
    ]
    cfg = resolve("microcoder-grpo", {"mask_rho": 0.5, "mask_repeat_m": 2})
    masks = {seed: [s.masked for s in prepare(pairs, cfg, L_max=3, coin_seed=seed)] for seed in (1, 2)}
    assert masks[1] == [s.masked for s in prepare(pairs, cfg, L_max=3, coin_seed=1)]
    assert masks[1] != masks[2]
    assert 5 < sum(masks[1]) < 35
