"""The GPU path, proved where a CPU can prove it: collectives reach a backend that serves their
tensors, ranks waiting on rank 0's lone work outlive a short collective timeout, bf16 compute
updates float32 master weights at lr 1e-6, log-probs from the hidden states in chunks equal the
full-logits ones, and activation checkpointing leaves the gradients as they are."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from hypothesis import given
from hypothesis import strategies as st

from helpers.collectives import Recorder, violations
from mcoder.jsonl import RecordWriter
from mcoder.train import distributed as D
from mcoder.train import grpo
from mcoder.train.batching import collate, prepare
from mcoder.train.config import TrainConfig, resolve
from mcoder.train.trainer import Trainer
from train_records import sample_rollouts, verdicts_for

HELPERS = Path(__file__).resolve().parents[1] / "helpers"
PROMPTS = {"a": "sum", "b": "sort", "c": "max"}


def _env() -> dict:
    return {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def torchrun(script: Path, *args, timeout: int = 300) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2", str(script)]
    return subprocess.run([*cmd, *map(str, args)], capture_output=True, text=True, timeout=timeout, env=_env(), check=False)


@pytest.fixture(scope="module")
def rollouts(tiny_model):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    tok = AutoTokenizer.from_pretrained(tiny_model)
    return sample_rollouts(model, tok, PROMPTS, n=4, max_tokens=10, temperature=0.9)


def verdicts(rollouts):
    return verdicts_for(rollouts, lambda r: r.sample_index % 2)


# ------------------------------------------------------------------ 1. process groups


def test_backend_specs_serve_host_scalars_and_the_training_device():
    assert D.backend_spec("cuda") == "cpu:gloo,cuda:nccl"
    assert D.served_devices(D.backend_spec("cuda")) == {"cpu", "cuda"}
    assert D.served_devices("nccl") == {"cuda"}  # the group before: no CPU tensor served
    assert "cpu" in D.served_devices(D.backend_spec("cpu"))


def test_a_group_without_a_cpu_backend_refuses_host_scalars_as_nccl_does():
    """The failure of the first GPU run, made on a CPU: a group whose only backend serves CUDA
    (here gloo registered for cuda alone, standing in for NCCL) gets the trainer's CPU scalars."""
    dist.init_process_group(backend="cuda:gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        with pytest.raises(RuntimeError, match="No backend type associated with device type cpu"):
            dist.all_reduce(torch.tensor([1], device=D.HOST))
    finally:
        dist.destroy_process_group()


def test_in_one_process_the_loops_collectives_leave_a_world_a_library_made_alone():
    """In-process vLLM makes a world of its own (NCCL, with one GPU; here gloo serving cuda alone,
    which refuses host objects as NCCL does). The loop's waits and gathers in one process must
    not run on it: before, they saw ``dist.is_initialized()`` and sent rank 0's objects there."""
    dist.init_process_group(backend="cuda:gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        assert D.broadcast_result(lambda: 3) == 3
        assert D.gather_results(lambda: 4) == [4]
        D.barrier()
        assert D.side_group() is None and D.rank() == 0 and not D.joined()
    finally:
        dist.destroy_process_group()


def test_every_collective_of_a_step_reaches_a_backend_that_serves_it(tiny_model, rollouts, tmp_path):
    """One FSDP2 update, its checkpoint and the loop's waits, every collective recorded: on a GPU
    (the default group ``backend_spec('cuda')``, the others gloo) each would reach a backend
    that serves its tensors; under the NCCL-only group of before, some would not."""
    D.init_groups(D.backend_spec("cuda").replace("nccl", "gloo"), 60, store=dist.HashStore(), rank=0, world_size=1)
    try:
        cfg = resolve("microcoder-grpo", {"lr": 1e-3, "mini_batch_size": 2, "micro_batch_size": 3, "truncation": "none"})
        with Recorder() as rec:
            trainer = D.FSDPTrainer(str(tiny_model), cfg)
            trainer.train_on_batch(rollouts, verdicts(rollouts))
            trainer.save(tmp_path / "ck")
            D.broadcast_result(lambda: 1.0)
            D.gather_results(lambda: 0)
    finally:
        D.leave()
    seen = rec.seen
    assert {(c.op, c.group) for c in seen} >= {
        ("c10d.allreduce_.default", "default"),  # micro-batch counts, metric sums
        ("c10d.broadcast_.default", "gloo"),  # rank 0's result
        ("c10d.allgather_.default", "gloo"),  # every rank's result
        ("c10d.barrier.default", "gloo"),  # after rank 0's checkpoint write
    }
    assert violations(seen, D.backend_spec("cuda")) == []
    assert violations(seen, "nccl"), "the check would not have caught the NCCL-only group"


@pytest.mark.slow
def test_two_ranks_fsdp_collectives_reach_a_backend_that_serves_them(tiny_model, rollouts, tmp_path):
    """The same with two real ranks, where FSDP2 gathers and reduces the policy's shards."""
    with RecordWriter(tmp_path / "r.jsonl", "id") as w:
        w.write_all(rollouts)
    with RecordWriter(tmp_path / "v.jsonl", "rollout_id") as w:
        w.write_all(verdicts(rollouts).values())
    r = torchrun(HELPERS / "collectives_run.py", tiny_model, tmp_path, tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    from helpers.collectives import Collective

    for rank in (0, 1):
        seen = [Collective(**{**c, "devices": tuple(c["devices"])}) for c in json.loads((tmp_path / f"rank{rank}.json").read_text())]
        assert any(c.issuer == "sharding" and c.group == "default" for c in seen)
        assert violations(seen, D.backend_spec("cuda")) == []
        assert violations(seen, "nccl")


def test_ranks_waiting_on_rank_0s_lone_work_outlive_a_short_collective_timeout(tmp_path):
    """A collective timeout of 1 s (NCCL's watchdog, made short) and rank 0 working alone for 2 s:
    the probe, the checkpoint barrier and an uneven gather all pass; a plain collective of the
    default group that rank 0 reaches 2 s late fails on rank 1, so the timeout was in force."""
    r = torchrun(HELPERS / "lone_work_run.py", 1, 2, tmp_path)
    reports = [json.loads((tmp_path / f"rank{i}.json").read_text()) for i in (0, 1)]
    for rep in reports:
        assert rep["passed"] == ["probe", "checkpoint", "gather"], (rep, r.stderr[-2000:])
    assert reports[1]["late_all_reduce"].startswith("failed")


# ------------------------------------------------------------------ 2. mixed precision


def test_bf16_compute_moves_float32_master_weights_at_lr_1e_6(tiny_model, rollouts):
    """10 AdamW steps at lr 1e-6: with bf16 weights 1.9 % of them moved (the update is ~100x
    below half a bf16 ulp); with float32 masters under bf16 compute nearly all do."""
    cfg = resolve("microcoder-grpo", {"lr": 1e-6, "dtype": "bfloat16", "mini_batch_size": 1, "truncation": "none"})
    trainer = Trainer(str(tiny_model), cfg)
    assert all(p.dtype == torch.float32 for p in trainer.params)
    before = [p.detach().clone() for p in trainer.params]
    seen: set[torch.dtype] = set()
    layer = next(m for m in trainer.model.modules() if isinstance(m, torch.nn.Linear))
    hook = layer.register_forward_hook(lambda m, i, o: seen.add(o.dtype))
    steps = 0
    while steps < 10:
        steps += trainer.train_on_batch(rollouts, verdicts(rollouts))["updates"]
    hook.remove()
    assert seen == {torch.bfloat16}, "the forward ran in bf16"
    moved = sum(int((p.detach() != b).sum()) for p, b in zip(trainer.params, before, strict=True))
    total = sum(b.numel() for b in before)
    assert moved / total > 0.9, f"{moved / total:.1%} of the master weights moved"
    state = trainer.optimizer.state_dict()["state"][0]
    assert state["exp_avg"].dtype == state["exp_avg_sq"].dtype == torch.float32


def test_no_gradient_is_held_after_an_update(tiny_model, rollouts):
    """Between updates (while vLLM samples the next batch) the trainer holds its weights and
    AdamW's moments only: the gradients (4 bytes a parameter) were kept until the next
    mini-batch's zero_grad."""
    trainer = Trainer(str(tiny_model), resolve("microcoder-grpo", {"truncation": "none", "mini_batch_size": 2}))
    assert trainer.train_on_batch(rollouts, verdicts(rollouts))["updates"] == 2
    assert [n for n, p in trainer.model.named_parameters() if p.grad is not None] == []
    assert len(trainer.optimizer.state) == len(trainer.params), "the moments are kept"


# ------------------------------------------------------------------ 3. chunked log-probs, checkpointing


def _full_logits_way(model, batch, T):
    """How log-probs and entropy were computed before: the full logits of every position."""
    C = batch.completion_ids.shape[1]
    logits = model(
        input_ids=batch.input_ids, attention_mask=batch.attention_mask, position_ids=batch.position_ids,
        logits_to_keep=C + 1, use_cache=False,
    ).logits[:, :-1]  # fmt: skip
    return grpo.logprobs_and_entropy(logits, batch.completion_ids, T)


class _LogitRows(torch.utils._python_dispatch.TorchDispatchMode):
    """The most rows of any tensor as wide as the vocabulary made while it is on (views, such as
    the output layer's transposed weight, hold no memory of their own; the output layer's
    weight gradient, (hidden, vocab), is the size of the weight whatever the tokens)."""

    def __init__(self, vocab: int, hidden: int):
        super().__init__()
        self.vocab, self.hidden, self.most = vocab, hidden, 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in torch.utils._pytree.tree_leaves(out):
            if not isinstance(t, torch.Tensor) or t.dim() < 1 or t.shape[-1] != self.vocab or t._is_view():
                continue
            if tuple(t.shape) != (self.hidden, self.vocab):
                self.most = max(self.most, t.numel() // self.vocab)
        return out


@pytest.mark.parametrize("chunk", [0, 1, 7])
def test_chunked_logprobs_equal_the_full_logits_ones(tiny_model, rollouts, chunk):
    from mcoder.train.models import completion_logprobs

    trainer = Trainer(str(tiny_model), resolve("microcoder-grpo", {"truncation": "none"}))
    samples = prepare([(r, v) for r, v in zip(rollouts, verdicts(rollouts).values(), strict=True)], trainer.cfg, 10)
    batch = collate(samples[:6], trainer.tokenizer.pad_token_id)
    mask = batch.token_mask.bool()
    weights = torch.randn(batch.completion_ids.shape)
    grads = []
    for way in ("full", "chunked"):
        trainer.model.zero_grad()
        vocab = trainer.model.config.vocab_size
        with _LogitRows(vocab, trainer.model.config.hidden_size) as rows:
            if way == "full":
                logp, ent = _full_logits_way(trainer.model, batch, 0.7)
            else:
                logp, ent = completion_logprobs(trainer.model, batch, 0.7, chunk=chunk)
            ((logp * weights * mask).sum()).backward()
        grads.append({n: p.grad.clone() for n, p in trainer.model.named_parameters()})
        if way == "full":
            ref_logp, ref_ent = logp.detach(), ent
        else:
            torch.testing.assert_close(logp.detach()[mask], ref_logp[mask], atol=1e-5, rtol=0)
            torch.testing.assert_close(ent[mask], ref_ent[mask], atol=1e-5, rtol=0)
            assert rows.most <= (chunk or int(mask.sum())), "never more logit rows at once than the chunk"
    for n in grads[0]:
        torch.testing.assert_close(grads[1][n], grads[0][n], atol=1e-5, rtol=1e-4, msg=n)


def test_activation_checkpointing_recomputes_and_leaves_gradients_equal(tiny_model, rollouts, monkeypatch):
    grads, calls = {}, {}
    for mode in ("off", "on"):
        trainer = Trainer(str(tiny_model), resolve("microcoder-grpo", {"activation_checkpointing": mode, "truncation": "none"}))
        layer_type = type(next(m for m in trainer.model.modules() if type(m).__name__ == "Qwen3DecoderLayer"))
        forward, calls[mode] = layer_type.forward, 0

        def counted(self, *args, mode=mode, forward=forward, **kwargs):
            calls[mode] += 1
            return forward(self, *args, **kwargs)

        monkeypatch.setattr(layer_type, "forward", counted)
        prep = trainer.prepare_samples(rollouts, verdicts(rollouts))
        trainer.accumulate_gradients(prep.samples, prep.T, prep.L_max)
        monkeypatch.undo()
        grads[mode] = {n: p.grad.clone() for n, p in trainer.model.named_parameters()}
    assert calls["off"] > 0 and calls["on"] == 2 * calls["off"], "each layer's forward runs again in the backward"
    for n in grads["off"]:
        torch.testing.assert_close(grads["on"][n], grads["off"][n], atol=1e-6, rtol=1e-5, msg=n)


# ------------------------------------------------------------------ 4. vLLM beside the trainer, importance sampling


def test_lora_with_a_float32_vllm_engine_on_a_gpu_is_refused():
    from mcoder.engines.vllm_engine import _check_lora_dtype
    from mcoder.errors import UsageError

    for dtype in ("float32", torch.float32):
        with pytest.raises(UsageError, match="float16 or bfloat16") as e:
            _check_lora_dtype(dtype)
        assert e.value.exit_code == 2
    for dtype in ("bfloat16", "auto", torch.float16):
        _check_lora_dtype(dtype)


def test_tensor_parallel_engines_under_torchrun_are_refused(monkeypatch, tmp_path):
    from mcoder.errors import UsageError
    from mcoder.loop.config import LoopConfig

    cfg = {"model": tmp_path, "problems": tmp_path / "p.jsonl", "run_dir": tmp_path / "run", "engine": "vllm"}
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(UsageError, match="tensor-parallel-size 2 under torchrun"):
        LoopConfig(**cfg, tensor_parallel_size=2, train=resolve("microcoder-grpo", {"lora_rank": 8})).validate()
    monkeypatch.setenv("WORLD_SIZE", "1")
    LoopConfig(**cfg, tensor_parallel_size=2, train=resolve("microcoder-grpo", {"lora_rank": 8})).validate()


def test_the_weight_stream_casts_float32_masters_to_the_engines_dtype(tiny_model):
    from mcoder.loop.samplers import engine_dtype, policy_weights

    trainer = Trainer(str(tiny_model), resolve("microcoder-grpo", {"dtype": "bfloat16"}))
    assert engine_dtype(trainer.cfg) == ("bfloat16" if torch.cuda.is_available() else trainer.cfg.dtype)
    streamed = dict(policy_weights(trainer, "bfloat16"))
    for name, p in trainer.model.named_parameters():
        assert p.dtype == torch.float32 and streamed[name].dtype == torch.bfloat16
        torch.testing.assert_close(streamed[name], p.detach().to(torch.bfloat16), atol=0, rtol=0)


def test_importance_sampling_weights_each_token_by_the_capped_ratio(tiny_model, rollouts):
    """The sampler's log-probs made to differ from the trainer's (as vLLM in bf16 does): with a
    cap the weights are min(π_old / π_sampler, C), the metrics report the mismatch, and the
    surrogate of each token is scaled by its weight."""
    import dataclasses

    shifted = [
        dataclasses.replace(r, sampling_logprobs=[lp + (0.5 if i % 2 else -0.5) for i, lp in enumerate(r.sampling_logprobs)])
        for r in rollouts
    ]
    trainer = Trainer(str(tiny_model), resolve("microcoder-grpo", {"importance_sampling_cap": 1.2, "truncation": "none"}))
    prep = trainer.prepare_samples(shifted, verdicts(shifted))
    for s in prep.samples:
        expected = [min(math.exp(o - q), 1.2) for o, q in zip(s.old_logprobs, s.rollout.sampling_logprobs, strict=True)]
        assert s.is_weights == pytest.approx(expected, rel=1e-6)
    assert prep.metrics["is/logprob_diff"] == pytest.approx(0.5, abs=0.01)
    assert 0 < prep.metrics["is/capped"] < 1 and prep.metrics["is/weight_mean"] < 1.2

    logp, adv, mask = torch.zeros(1, 3), torch.tensor([1.0]), torch.ones(1, 3)
    w = torch.tensor([[0.5, 1.0, 2.0]])
    cfg, kw = TrainConfig(eps_low=0.2, eps_high=0.2, beta=0.0), {"num_tokens": 3.0, "num_seqs": 1}
    plain = grpo.policy_loss(logp, logp, adv, mask, cfg, **kw).loss
    weighted = grpo.policy_loss(logp, logp, adv, mask, cfg, is_weights=w, **kw).loss
    assert float(weighted) == pytest.approx(float(plain) * float(w.mean()))


# ------------------------------------------------------------------ token-budget micro-batches


def _sample(prompt: int, completion: int, i: int):
    from mcoder.records import Rollout, Verdict
    from mcoder.train.batching import Sample

    r = Rollout(id=f"r{i}", problem_id="p", completion="", prompt_token_ids=[1] * prompt, completion_token_ids=[2] * completion)
    v = Verdict(rollout_id=r.id, problem_id="p", reward=0.0, passed=False, status="wrong_answer", tests_passed=0, tests_total=1)
    return Sample(r, v, 0)


@given(
    lengths=st.lists(st.tuples(st.integers(1, 40), st.integers(1, 200)), min_size=0, max_size=30),
    budget=st.integers(1, 600),
)
def test_token_budget_micro_batches_hold_every_sample_once_within_the_budget(lengths, budget):
    from mcoder.train.batching import microbatches

    samples = [_sample(p, c, i) for i, (p, c) in enumerate(lengths)]
    micros = microbatches(samples, 4, token_budget=budget)
    assert sorted(s.rollout.id for m in micros for s in m) == sorted(s.rollout.id for s in samples)
    for m in micros:
        padded = len(m) * max(len(s.rollout.prompt_token_ids) + s.num_tokens for s in m)
        assert padded <= budget or len(m) == 1
    widths = [max(len(s.rollout.prompt_token_ids) + s.num_tokens for s in m) for m in micros]
    assert widths == sorted(widths, reverse=True), "longest first: similar lengths together"


def test_token_budget_micro_batches_give_the_gradient_of_fixed_counts(tiny_model, rollouts):
    grads = {}
    for name, extra in (("count", {"micro_batch_size": 4}), ("tokens", {"micro_batch_tokens": 60})):
        trainer = Trainer(str(tiny_model), resolve("microcoder-grpo", {"truncation": "none", **extra}))
        prep = trainer.prepare_samples(rollouts, verdicts(rollouts))
        trainer.accumulate_gradients(prep.samples, prep.T, prep.L_max)
        grads[name] = {n: p.grad.clone() for n, p in trainer.model.named_parameters()}
    for n in grads["count"]:
        torch.testing.assert_close(grads["tokens"][n], grads["count"][n], atol=1e-6, rtol=1e-4, msg=n)


@pytest.mark.slow
def test_two_ranks_bf16_compute_update_float32_masters_as_one_process(tiny_model, rollouts, tmp_path):
    """FSDP2's mixed-precision policy (bf16 gathers, float32 shards and reduction) against
    autocast in one process: both keep float32 weights, move them, and agree to bf16 precision
    (measured: 1-3 % of the elements differ by more than 1e-4, none by more than 4e-3)."""
    from safetensors.torch import load_file

    with RecordWriter(tmp_path / "r.jsonl", "id") as w:
        w.write_all(rollouts)
    with RecordWriter(tmp_path / "v.jsonl", "rollout_id") as w:
        w.write_all(verdicts(rollouts).values())
    outs = {}
    for nproc in (1, 2):
        out = tmp_path / f"ck{nproc}"
        launch = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}"]
        args = [
            "-m", "mcoder", "train", "--model", tiny_model, "--rollouts", tmp_path / "r.jsonl",
            "--verdicts", tmp_path / "v.jsonl", "--out", out, "--lr", "1e-3", "--dtype", "bfloat16",
            "--truncation", "none", "--mini-batch-size", "2", "--micro-batch-size", "3", "-q",
        ]  # fmt: skip
        r = subprocess.run([*launch, *map(str, args)], capture_output=True, text=True, timeout=300, env=_env(), check=False)
        assert r.returncode == 0, r.stderr[-3000:]
        outs[nproc] = load_file(out / "model.safetensors")
    base = load_file(tiny_model / "model.safetensors")
    for k, v in outs[2].items():
        assert v.dtype == torch.float32, k
        d = (v - outs[1][k]).abs()
        # bf16 rounding differs between the two paths: where a gradient is near 0, AdamW's step
        # (about lr, of either sign) may flip; 2 steps of lr 1e-3 bound it, and most agree closely
        assert d.max() < 4.4e-3 and (d > 1e-4).float().mean() < 0.05, (k, d.max())
    assert max((outs[2][k] - base[k]).abs().max().item() for k in base) > 1e-4


def test_a_lora_hand_over_gathers_the_adapter_alone(tiny_model, tmp_path):
    """Under FSDP2 each step's adapter is gathered for vLLM (and each checkpoint): the frozen
    base never is, and the adapter folder PEFT writes from it loads as before."""
    from safetensors.torch import load_file

    D.init_groups("gloo", 60, store=dist.HashStore(), rank=0, world_size=1)
    try:
        trainer = D.FSDPTrainer(str(tiny_model), resolve("microcoder-grpo", {"lora_rank": 4}))
        with trainer.full_weights():
            gathered = dict(trainer._full_weights)
            trainer.save_weights(tmp_path)
    finally:
        D.leave()
    trainable = {n for n, p in trainer.model.named_parameters() if p.requires_grad}
    assert set(gathered) == trainable and all("lora_" in n for n in gathered)
    assert len(load_file(tmp_path / "adapter_model.safetensors")) == len(trainable)
