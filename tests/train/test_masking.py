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
from mcoder.train.masking import cut_off, is_non_incorrect, program_state, truncation_decision

OPEN_BLOCK = "Read a and b.\n```python\na, b = map(int, input().split())\nprint(max(a, b) - min(a,"
CLOSED_BLOCK = "```python\na, b = map(int, input().split())\nprint(a + b)\n```\nThis adds the two numbers and"
PROSE_ONLY = "We need to read two integers. First we think about the edge cases, namely when a and"
BARE_PROGRAM = "a, b = map(int, input().split())\nprint(a * b)"
BARE_BROKEN = "a, b = map(int, input().split())\nprint(a * (b"
THINKING = "<think>\nThe answer is max of a and b, but first let me check whether"
CLOSED_THEN_OPEN = CLOSED_BLOCK + " now a faster one:\n```python\nimport sys\nprint(sum(map(int,"
# The limit fell on the closing fence: the block is open, but it holds a whole program, which runs.
FENCE_CUT = "```python\na, b = map(int, input().split())\nprint(a + b)\n"


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


def decide(status: str, is_cut_off: bool, non_incorrect: str = "accepted_or_cut_off", program=None):
    return truncation_decision(
        program=program,
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


def test_a_cut_off_program_that_failed_is_masked_by_the_text_reading_only():
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
    assert resolve("microcoder-grpo").mask_non_incorrect == "accepted_or_unfinished"
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


# ---------------------------------------------------------------- "not incorrect" read from the program


@pytest.mark.parametrize(
    ("text", "state"),
    [
        (FENCE_CUT, "complete"),  # an open block holding a whole program: the judge ran it
        (OPEN_BLOCK, "unparsed"),  # stopped mid-statement
        (CLOSED_THEN_OPEN, "unparsed"),  # the program the judge runs is the open one
        (PROSE_ONLY, "none"),
        (THINKING, "none"),
        (BARE_BROKEN, "none"),  # no fence and does not parse: the judge finds no code
        (CLOSED_BLOCK, "complete"),
    ],
)
def test_program_state_says_what_the_judge_had_to_run(text, state):
    assert program_state(text) == state


def test_a_cut_on_the_closing_fence_is_cut_off_by_the_text_and_complete_by_the_program():
    """The case the text reading gets wrong: the extractor runs the open block to the end, the
    program is whole and ran; when it fails it is a complete program that ran and failed."""
    assert cut_off(FENCE_CUT, "length") and program_state(FENCE_CUT) == "complete"
    assert decide("wrong_answer", True, "accepted_or_cut_off", "complete").reason == "masked"
    assert decide("wrong_answer", True, "accepted_or_unfinished", "complete").reason == "incorrect"
    assert decide("runtime_error", True, "accepted_or_unfinished", "complete").reason == "incorrect"
    # unfinished programs and correct ones stay eligible
    assert decide("compile_error", True, "accepted_or_unfinished", "unparsed").reason == "masked"
    assert decide("no_code", True, "accepted_or_unfinished", "none").reason == "masked"
    assert decide("accepted", True, "accepted_or_unfinished", "complete").reason == "masked"
    # a finished block (not cut off) that failed is incorrect under every reading
    assert decide("wrong_answer", False, "accepted_or_unfinished", "complete").reason == "incorrect"
    with pytest.raises(ValueError, match="program"):
        is_non_incorrect("wrong_answer", True, "accepted_or_unfinished")


def test_prepare_records_what_each_cut_off_program_was_and_its_verdict():
    pairs = [*batch_pairs(), pair("fence", FENCE_CUT, "length", "wrong_answer", 0.0, 6)]
    cfg = resolve(
        "microcoder-grpo", {"mask_rho": 1.0, "mask_repeat_m": 2, "mask_non_incorrect": "accepted_or_unfinished"}
    )
    rows = {s.rollout.id: s.to_row() for s in prepare(pairs, cfg, L_max=6)}
    assert {k: (r["program"], r["status"], r["mask_reason"]) for k, r in rows.items()} == {
        "acc": (None, "accepted", "not_truncated"),
        "open": ("unparsed", "compile_error", "masked"),
        "prose": ("none", "no_code", "masked"),
        "closed": ("complete", "wrong_answer", "incorrect"),
        "fence": ("complete", "wrong_answer", "incorrect"),
    }
    text = resolve("microcoder-grpo", {"mask_rho": 1.0, "mask_repeat_m": 2, "mask_non_incorrect": "accepted_or_cut_off"})
    assert {s.rollout.id for s in prepare(pairs, text, L_max=6) if s.masked} == {"open", "prose", "fence"}


# ---------------------------------------------------------------- --truncated-reward


def test_truncated_reward_zero_scores_a_cut_off_output_0_whatever_its_program_did():
    """A cut on the closing fence of a correct program is accepted by the judge; under ``zero`` it
    scores 0 (as where a cut-off never holds a finished answer), the group's advantages follow
    from the zeroed rewards, and its verdict still makes it "not incorrect" (eligible for masking)."""
    pairs = [
        pair("acc", BARE_PROGRAM, "stop", "accepted", 1.0, 4),
        pair("fence", FENCE_CUT, "length", "accepted", 1.0, 6),
        pair("wrong", CLOSED_BLOCK, "stop", "wrong_answer", 0.0, 6),
    ]
    base = {"mask_rho": 1.0, "mask_repeat_m": 2, "mask_non_incorrect": "accepted_or_unfinished"}
    as_judged = {s.rollout.id: s for s in prepare(pairs, resolve("grpo", base), L_max=6)}
    zero = {s.rollout.id: s for s in prepare(pairs, resolve("grpo", {**base, "truncated_reward": "zero"}), L_max=6)}
    assert [as_judged[k].reward for k in ("acc", "fence", "wrong")] == [1.0, 1.0, 0.0]
    assert [zero[k].reward for k in ("acc", "fence", "wrong")] == [1.0, 0.0, 0.0]
    assert as_judged["fence"].advantage > 0 > zero["fence"].advantage
    assert zero["acc"].advantage > as_judged["acc"].advantage
    masked = {s.rollout.id: s for s in prepare(pairs, resolve("microcoder-grpo", {**base, "truncated_reward": "zero"}), L_max=6)}
    assert masked["fence"].masked and masked["fence"].advantage == 0.0 and masked["fence"].reward == 0.0
    assert resolve("microcoder-grpo").truncated_reward == "verdict"  # the judge's reward unless asked
