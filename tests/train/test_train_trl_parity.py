"""Parity with TRL's GRPOTrainer: same model, tokens, rewards and settings; the same advantages,
truncation masks, loss and gradient (within 1e-5).

TRL runs its own code: a GRPOTrainer on the tiny model, fed through its ``rollout_func`` hook with
fixed token ids (so no sampling luck decides which outputs end in EOS), scores them with its reward
function and ``_generate_and_score_completions`` (group advantages, ``mask_truncated_completions``,
reference log-probs), then ``_compute_loss`` (loss type ``dapo``). The π_old and π_ref log-probs are
replaced by the same random values on both sides, so that the clip and the KL term both bind.
"""

from __future__ import annotations

import os

import pytest
import torch

trl = pytest.importorskip("trl")

from mcoder.records import Rollout, Verdict
from mcoder.train import models
from mcoder.train.batching import collate
from mcoder.train.config import resolve
from mcoder.train.trainer import Trainer

L_MAX, T, BETA = 6, 0.7, 0.04
EOS = 2  # <|im_end|> in the tiny tokenizer (checked below)


def fixed_batch():
    """Two groups of four; some outputs end in EOS, the others are cut at L_MAX."""
    prompts = [[1, 40, 41, 42, 10], [1, 50, 51, 52, 10]]
    completions = [
        [100, 101, EOS],
        [102, 103, 104, 105, 106, 107],
        [104, EOS],
        [106, 107, 108, 109, 110, 111],
        [200, 201, 202, 203, 204, 205],
        [201, EOS],
        [202, 203, 204, 205, EOS],
        [205, 206, 207, 208, 209, 210],
    ]
    return prompts, completions


def reward_of(ids: list[int]) -> float:
    return float(ids[0] % 2 == 0)


def run_trl(model_dir, tmp_path, kl_ratio_weighted: bool):
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    tok = AutoTokenizer.from_pretrained(model_dir)
    assert tok.eos_token_id == EOS
    prompts, completions = fixed_batch()

    def rollout_func(batch_prompts, trainer):
        assert len(batch_prompts) == 8
        return {
            "prompt_ids": [prompts[i // 4] for i in range(8)],
            "completion_ids": completions,
            "logprobs": [[0.0] * len(c) for c in completions],
        }

    def reward(completions, completion_ids, **kw):
        return [reward_of(ids) for ids in completion_ids]

    args = GRPOConfig(
        output_dir=str(tmp_path / "trl"),
        per_device_train_batch_size=8,
        num_generations=4,
        max_completion_length=L_MAX,
        temperature=T,
        loss_type="dapo",
        mask_truncated_completions=True,
        epsilon=0.2,
        epsilon_high=0.28,
        beta=BETA,
        report_to="none",
        use_cpu=True,
        seed=0,
        bf16=False,
        use_bias_correction_kl=kl_ratio_weighted,
    )
    ds = Dataset.from_list([{"prompt": "a"}, {"prompt": "b"}])
    trainer = GRPOTrainer(
        model=str(model_dir),
        reward_funcs=reward,
        args=args,
        train_dataset=ds,
        processing_class=tok,
        rollout_func=rollout_func,
    )
    trainer.model.train()
    inputs = trainer._generate_and_score_completions([ds[0]] * 4 + [ds[1]] * 4)

    g = torch.Generator().manual_seed(0)
    noise = lambda: 0.3 * torch.randn(8, L_MAX, generator=g)
    with torch.no_grad():
        pc = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], 1)
        am = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], 1)
        logps, _, _ = trainer._get_per_token_logps_and_entropies(trainer.model, pc, am, L_MAX)
    inputs["old_per_token_logps"] = logps + noise()
    inputs["ref_per_token_logps"] = logps + noise()
    trainer.current_gradient_accumulation_steps = 1
    loss = trainer._compute_loss(trainer.model, inputs)
    inputs["trl_logps"] = logps  # for the log-prob check (TRL ignores the extra key)
    loss.backward()
    grads = {n: p.grad.clone() for n, p in trainer.model.named_parameters() if p.grad is not None}
    return inputs, float(loss.detach()), grads


def run_mcoder(model_dir, inputs, kl_ratio_weighted: bool):
    prompts, completions = fixed_batch()
    rollouts, verdicts = [], {}
    for i, comp in enumerate(completions):
        rid = f"r{i}"
        finish = "stop" if comp[-1] == EOS else "length"
        old = inputs["old_per_token_logps"][i, : len(comp)].tolist()
        rollouts.append(
            Rollout(
                id=rid,
                problem_id=f"p{i // 4}",
                completion="",
                sample_index=i % 4,
                prompt_token_ids=prompts[i // 4],
                completion_token_ids=comp,
                sampling_logprobs=old,
                finish_reason=finish,
                temperature=T,
            )
        )
        R = reward_of(comp)
        verdicts[rid] = Verdict(
            rollout_id=rid,
            problem_id=f"p{i // 4}",
            reward=R,
            passed=R == 1.0,
            status="accepted" if R else "wrong_answer",
            tests_passed=int(R),
            tests_total=1,
        )
    cfg = resolve(
        "dapo",
        {
            "beta": BETA,
            "dynamic_sampling": False,
            "max_tokens": L_MAX,
            "mini_batch_size": 2,
            "micro_batch_size": 3,
            "shuffle": False,
            "kl_ratio_weighted": kl_ratio_weighted,
        },
    )
    trainer = Trainer(str(model_dir), cfg)
    prep = trainer.prepare_samples(rollouts, verdicts)
    for s, ref in zip(prep.samples, inputs["ref_per_token_logps"], strict=True):
        s.ref_logprobs = ref[: s.num_tokens].tolist()
    batch = collate(prep.samples, trainer.tokenizer.pad_token_id)
    logps = models.score(trainer.model, batch, prep.T) * batch.completion_mask  # (8, L_MAX)
    sums = trainer.accumulate_gradients(prep.samples, prep.T, prep.L_max)
    grads = {n: p.grad.clone() for n, p in trainer.model.named_parameters() if p.grad is not None}
    return prep, logps, sums["loss"], grads


@pytest.mark.parametrize(
    "kl_ratio_weighted", [False, pytest.param(True, marks=pytest.mark.slow, id="bias_corrected_kl")]
)
def test_loss_and_gradient_match_trl_grpo_trainer(tiny_model, tmp_path, kl_ratio_weighted):
    inputs, trl_loss, trl_grads = run_trl(tiny_model, tmp_path, kl_ratio_weighted)
    prep, logps, loss, grads = run_mcoder(tiny_model, inputs, kl_ratio_weighted)

    # log π^T of the same tokens at T = 0.7 (TRL's fused head vs mcoder's logits / T)
    torch.testing.assert_close(logps, inputs["trl_logps"] * inputs["completion_mask"], atol=1e-5, rtol=0)

    # the same advantages (group mean/std before masking) and the same truncation mask
    adv = torch.tensor([s.advantage if not s.masked else float("nan") for s in prep.samples])
    keep = ~adv.isnan()
    torch.testing.assert_close(adv[keep], inputs["advantages"][keep], atol=1e-5, rtol=0)
    assert [s.masked for s in prep.samples] == (inputs["completion_mask"].sum(1) == 0).tolist()
    assert 0 < sum(s.masked for s in prep.samples) < 8  # both kinds present: the test means something

    assert loss == pytest.approx(trl_loss, abs=1e-5)
    assert trl_loss != 0.0
    assert set(grads) == set(trl_grads)
    for n, g in trl_grads.items():
        torch.testing.assert_close(grads[n], g, atol=1e-5, rtol=1e-4, msg=n)
