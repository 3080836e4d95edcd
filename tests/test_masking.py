"""Conditional truncation masking on hand-made rollouts: which outputs were cut off before their
program finished, which readings of "not incorrect" mask them, and how each mask mode changes the
loss's token count."""

from __future__ import annotations

import random

import pytest
import torch

from mcoder.records import Rollout, Verdict
from mcoder.train.batching import prepare
from mcoder.train.config import resolve
from mcoder.train.masking import cut_off, is_non_incorrect, truncation_decision

OPEN_BLOCK = "Read a and b.\n```python\na, b = map(int, input().split())\nprint(max(a, b) - min(a,"
CLOSED_BLOCK = "```python\na, b = map(int, input().split())\nprint(a + b)\n```\nThis adds the two numbers and"
PROSE_ONLY = "We need to read two integers. First we think about the edge cases, namely when a and"
BARE_PROGRAM = "a, b = map(int, input().split())\nprint(a * b)"
BARE_BROKEN = "a, b = map(int, input().split())\nprint(a * (b"
THINKING = "<think>\nThe answer is max of a and b, but first let me check whether"
CLOSED_THEN_OPEN = CLOSED_BLOCK + " now a faster one:\n```python\nimport sys\nprint(sum(map(int,"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (OPEN_BLOCK, True),  # the code block is still open at the limit
        (PROSE_ONLY, True),  # no code reached
        (THINKING, True),  # still reasoning: no answer yet
        (BARE_BROKEN, True),  # no fence and does not parse: the judge finds no code
        (CLOSED_THEN_OPEN, True),  # the program the judge runs is the open one
        (CLOSED_BLOCK, False),  # the program was finished; only the prose after it was cut
        (BARE_PROGRAM, False),  # a whole program that parses counts as finished
    ],
)
def test_cut_off_before_the_program_finished(text, expected):
    assert cut_off(text, "length") is expected
    assert cut_off(text, "stop") is False  # an output that stopped by itself finished
    assert cut_off(text, None) is False


def test_readings_of_not_incorrect():
    assert all(
        is_non_incorrect("accepted", False, r)
        for r in ("accepted", "accepted_or_no_code", "accepted_or_cut_off")
    )
    assert is_non_incorrect("compile_error", True, "accepted_or_cut_off")
    assert not is_non_incorrect(
        "wrong_answer", False, "accepted_or_cut_off"
    )  # a finished program that failed
    assert not is_non_incorrect("compile_error", True, "accepted")
    assert not is_non_incorrect("compile_error", True, "accepted_or_no_code")
    assert is_non_incorrect("no_code", True, "accepted_or_no_code")


def decide(status: str, is_cut_off: bool, non_incorrect: str = "accepted_or_cut_off"):
    return truncation_decision(
        truncated=True,
        status=status,
        tokens=list(range(40)),
        mode="conditional",
        rng=random.Random(0),
        rho=1.0,
        m=8,
        non_incorrect=non_incorrect,
        is_cut_off=is_cut_off,
    )


def test_a_cut_off_program_that_failed_is_masked_by_default_only():
    assert decide("compile_error", True).reason == "masked"
    assert decide("wrong_answer", True).reason == "masked"  # the partial program ran and answered wrongly
    assert decide("wrong_answer", False).reason == "incorrect"
    assert decide("compile_error", True, "accepted").reason == "incorrect"
    assert decide("compile_error", True, "accepted_or_no_code").reason == "incorrect"


# ---------------------------------------------------------------- in a batch, from rollout records


def pair(i: str, text: str, finish: str, status: str, reward: float, n_tokens: int):
    r = Rollout(
        id=i,
        problem_id="p",
        completion=text,
        prompt_token_ids=[5, 6, 7],
        completion_token_ids=[20 + (k * 7 + len(i)) % 50 for k in range(n_tokens)],
        finish_reason=finish,
        sampling_logprobs=[-1.0] * n_tokens,
        temperature=1.0,
    )
    v = Verdict(
        rollout_id=i,
        problem_id="p",
        reward=reward,
        passed=reward > 0,
        status=status,
        tests_passed=int(reward),
        tests_total=1,
    )
    return r, v


def batch_pairs():
    """One group: accepted, open block cut off, prose cut off, a finished program cut in its prose."""
    return [
        pair("acc", BARE_PROGRAM, "stop", "accepted", 1.0, 4),
        pair("open", OPEN_BLOCK, "length", "compile_error", 0.0, 6),
        pair("prose", PROSE_ONLY, "length", "no_code", 0.0, 6),
        pair("closed", CLOSED_BLOCK, "length", "wrong_answer", 0.0, 6),
    ]


def test_prepare_records_the_reason_for_each_sample():
    cfg = resolve("microcoder-grpo", {"mask_rho": 1.0, "mask_repeat_m": 2})
    rows = {s.rollout.id: s.to_row() for s in prepare(batch_pairs(), cfg, L_max=6)}
    assert {k: r["mask_reason"] for k, r in rows.items()} == {
        "acc": "not_truncated",
        "open": "masked",
        "prose": "masked",
        "closed": "incorrect",
    }
    assert [r["cut_off"] for r in rows.values()] == [False, True, True, False]
    assert not any(r["dropped"] for r in rows.values())  # the preset's paper form zeroes advantages
    strict = resolve(
        "microcoder-grpo", {"mask_rho": 1.0, "mask_repeat_m": 2, "mask_non_incorrect": "accepted"}
    )
    assert not any(s.masked for s in prepare(batch_pairs(), strict, L_max=6))


def test_presets_record_their_mask_mode():
    assert resolve("microcoder-grpo").mask_mode == "zero_advantage"
    assert resolve("microcoder-grpo").mask_non_incorrect == "accepted_or_cut_off"
    assert resolve("dapo").mask_mode == "drop"
    assert '"mask_mode": "zero_advantage"' in resolve("microcoder-grpo").to_json()  # saved with the run


def test_the_two_mask_modes_divide_the_loss_by_different_token_counts(tiny_model):
    """The same batch, the same model: zero_advantage keeps the two masked outputs' 12 tokens in the
    count (4 + 6 + 6 + 6 = 22), drop removes them (10). The masked outputs add 0 to the sum either
    way, so the two losses and gradients differ exactly by the ratio of the counts."""
    from mcoder.train.trainer import Trainer

    out = {}
    for mode in ("zero_advantage", "drop"):
        cfg = resolve(
            "microcoder-grpo",
            {"mask_rho": 1.0, "mask_repeat_m": 2, "mask_mode": mode, "max_tokens": 6, "shuffle": False},
        )
        trainer = Trainer(str(tiny_model), cfg)
        rollouts, verdicts = zip(*batch_pairs(), strict=True)
        prep = trainer.prepare_samples(list(rollouts), {v.rollout_id: v for v in verdicts})
        assert sum(s.masked for s in prep.samples) == 2
        sums = trainer.accumulate_gradients(prep.samples, prep.T, prep.L_max)
        grads = torch.cat([p.grad.flatten() for p in trainer.params if p.grad is not None])
        out[mode] = (sums["tokens"], sums["loss"], grads)
    assert out["zero_advantage"][0] == 22 and out["drop"][0] == 10
    assert out["drop"][1] != 0.0
    assert out["zero_advantage"][1] == pytest.approx(out["drop"][1] * 10 / 22, rel=1e-5)
    torch.testing.assert_close(out["zero_advantage"][2], out["drop"][2] * 10 / 22, atol=1e-7, rtol=1e-4)
