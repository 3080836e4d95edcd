"""The trainer on the real tiny model: direction of an update, every parameter moves, gradient
accumulation is exact, checkpoints resume, and the rollouts' log-probs are the trainer's."""

from __future__ import annotations

import pytest
import torch

from mcoder.errors import DataError
from mcoder.records import Rollout
from mcoder.train import models
from mcoder.train.batching import collate
from mcoder.train.config import resolve
from mcoder.train.trainer import Trainer, read_state
from train_records import sample_rollouts, verdicts_for


def fixed_rollouts(tokenizer, completions: dict[str, str], temperature: float = 1.0) -> list[Rollout]:
    """One group: the same prompt with the given completions, each ended by EOS."""
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": "print one"}], tokenize=False, add_generation_prompt=True
    )
    p_ids = tokenizer(prompt).input_ids
    out = []
    for i, (rid, text) in enumerate(completions.items()):
        c_ids = tokenizer(text).input_ids + [tokenizer.eos_token_id]
        out.append(
            Rollout(
                id=rid,
                problem_id="q",
                completion=text,
                sample_index=i,
                prompt=prompt,
                prompt_token_ids=p_ids,
                completion_token_ids=c_ids,
                finish_reason="stop",
                temperature=temperature,
            )
        )
    return out


def seq_logps(trainer: Trainer, rollouts, T: float = 1.0) -> list[float]:
    prep = trainer.prepare_samples(rollouts, verdicts_for(rollouts, lambda r: 0.0))
    batch = collate(prep.samples, trainer.tokenizer.pad_token_id)
    return (models.score(trainer.model, batch, T) * batch.token_mask).sum(-1).tolist()


def test_update_raises_positive_and_lowers_negative_sample(tiny_model):
    trainer = Trainer(str(tiny_model), resolve("microcoder-grpo", {"lr": 1e-3, "logprob_temperature": 1.0}))
    rollouts = fixed_rollouts(trainer.tokenizer, {"A": "print(1)", "B": "while True:\n    pass"})
    before = seq_logps(trainer, rollouts)
    metrics = trainer.train_on_batch(rollouts, verdicts_for(rollouts, lambda r: r.id == "A"))
    after = seq_logps(trainer, rollouts)
    assert metrics["updates"] == 1
    assert after[0] > before[0], "log p(A) should rise: its advantage is positive"
    assert after[1] < before[1], "log p(B) should fall: its advantage is negative"


def changed(before: dict[str, torch.Tensor], model) -> list[str]:
    return [
        n for n, p in model.named_parameters() if p.requires_grad and not torch.equal(before[n], p.detach())
    ]


@pytest.mark.parametrize("lora_rank", [0, 4])
def test_every_trainable_parameter_changes(tiny_model, lora_rank):
    cfg = resolve("grpo", {"lr": 1e-3, "lora_rank": lora_rank, "mini_batch_size": 1, "beta": 0.04})
    trainer = Trainer(str(tiny_model), cfg)
    rollouts = sample_rollouts(
        trainer.model, trainer.tokenizer, {"a": "sum", "b": "sort"}, n=2, max_tokens=8, temperature=1.0
    )
    trainable = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad}
    if lora_rank:
        assert trainable and all("lora_" in n for n in trainable)
    # two groups, one per mini-batch: two steps (LoRA's A matrices get no gradient while B is still 0)
    metrics = trainer.train_on_batch(rollouts, verdicts_for(rollouts, lambda r: r.sample_index))
    assert metrics["updates"] == 2
    assert metrics["kl"] >= 0.0
    assert set(changed(trainable, trainer.model)) == set(trainable)


def test_micro_batch_1x4_equals_4(tiny_model):
    grads = {}
    for micro in (1, 4):
        trainer = Trainer(str(tiny_model), resolve("microcoder-grpo", {"micro_batch_size": micro}))
        rollouts = sample_rollouts(
            trainer.model, trainer.tokenizer, {"a": "sum"}, n=4, max_tokens=12, temperature=0.8, seed=3
        )
        prep = trainer.prepare_samples(rollouts, verdicts_for(rollouts, lambda r: r.sample_index % 2))
        assert len({s.num_tokens for s in prep.samples}) >= 1
        sums = trainer.accumulate_gradients(prep.samples, prep.T, prep.L_max)
        grads[micro] = ({n: p.grad.clone() for n, p in trainer.model.named_parameters()}, sums["loss"])
    (g1, loss1), (g4, loss4) = grads[1], grads[4]
    assert loss1 == pytest.approx(loss4, rel=1e-5, abs=1e-7)
    for n in g1:
        torch.testing.assert_close(g1[n], g4[n], rtol=1e-4, atol=1e-7, msg=n)


def test_rollout_logprobs_are_the_trainers_at_the_sampling_temperature(tiny_model):
    trainer = Trainer(str(tiny_model), resolve("microcoder-grpo", {"recompute_old_logprobs": True}))
    rollouts = sample_rollouts(
        trainer.model, trainer.tokenizer, {"a": "sum", "b": "x"}, n=3, max_tokens=10, temperature=0.7
    )
    prep = trainer.prepare_samples(rollouts, verdicts_for(rollouts, lambda r: 0.0))
    assert prep.T == 0.7
    for s in prep.samples:
        assert s.old_logprobs == pytest.approx(s.rollout.sampling_logprobs, abs=1e-4)


def test_checkpoint_saves_and_resumes(tiny_model, tmp_path):
    cfg = resolve("dapo", {"lr": 1e-3, "mini_batch_size": 1, "warmup_steps": 10, "truncation": "none"})
    trainer = Trainer(str(tiny_model), cfg)
    rollouts = sample_rollouts(
        trainer.model, trainer.tokenizer, {"a": "sum", "b": "x"}, n=2, max_tokens=8, temperature=1.0
    )
    verdicts = verdicts_for(rollouts, lambda r: r.sample_index)
    trainer.train_on_batch(rollouts, verdicts)
    ckpt = trainer.save(tmp_path / "ckpt")
    assert read_state(ckpt) == {"step": 2, "policy_version": 1, "base_model": str(tiny_model)}
    assert resolve("dapo").loss_agg == type(cfg).load(ckpt / "trainer" / "train_config.json").loss_agg
    trainer.save(tmp_path / "ckpt")  # overwriting is atomic and leaves no temporary folder
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]

    resumed = Trainer(str(ckpt), cfg)
    assert resumed.step == 2 and resumed.policy_version == 1
    assert resumed.scheduler.get_last_lr() == trainer.scheduler.get_last_lr()  # warm-up continues
    for (n, p), q in zip(trainer.model.named_parameters(), resumed.model.parameters(), strict=True):
        assert torch.equal(p, q), n
    s0 = trainer.optimizer.state_dict()["state"][0]["exp_avg"]
    assert torch.equal(s0, resumed.optimizer.state_dict()["state"][0]["exp_avg"])


def test_lora_checkpoint_is_an_adapter_that_resumes(tiny_model, tmp_path):
    cfg = resolve("microcoder-grpo", {"lr": 1e-3, "lora_rank": 2})
    trainer = Trainer(str(tiny_model), cfg)
    rollouts = fixed_rollouts(trainer.tokenizer, {"A": "print(1)", "B": "x"})
    trainer.train_on_batch(rollouts, verdicts_for(rollouts, lambda r: r.id == "A"))
    ckpt = trainer.save(tmp_path / "adapter")
    assert (ckpt / "adapter_config.json").exists() and not (ckpt / "model.safetensors").exists()
    resumed = Trainer(str(ckpt), cfg)
    assert resumed.step == 1
    assert seq_logps(resumed, rollouts) == pytest.approx(seq_logps(trainer, rollouts), abs=1e-5)


def test_missing_verdict_is_a_data_error(tiny_model):
    trainer = Trainer(str(tiny_model), resolve("microcoder-grpo", {"logprob_temperature": 1.0}))
    rollouts = fixed_rollouts(trainer.tokenizer, {"A": "1", "B": "2"})
    verdicts = verdicts_for(rollouts[:1], lambda r: 1.0)
    with pytest.raises(DataError, match="no verdict for rollout 'B'"):
        trainer.train_on_batch(rollouts, verdicts, names=("r.jsonl", "v.jsonl"))


def test_a_kill_between_the_renames_of_save_keeps_the_old_checkpoint(tiny_model, tmp_path):
    trainer = Trainer(str(tiny_model), resolve("microcoder-grpo"))
    trainer.save(tmp_path / "ck", extra_state={"loop_step": 4})
    # the state a kill leaves after `out -> .out.old` and before `tmp -> out`
    (tmp_path / "ck").rename(tmp_path / ".ck.old")
    assert read_state(tmp_path / "ck")["loop_step"] == 4
    assert (tmp_path / "ck" / "model.safetensors").exists()
