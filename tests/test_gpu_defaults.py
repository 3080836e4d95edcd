"""The defaults a GPU run gets without asking, and that a CPU run keeps as they were: bf16 compute
over float32 masters on a GPU (float32 on a CPU), TF32 for what stays float32 on a GPU only,
truncated importance sampling on by default when vLLM samples (as TRL), and the hf engine
sampling the float32 masters in the compute dtype."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from mcoder.judge.config import JudgeConfig
from mcoder.loop.config import LoopConfig
from mcoder.loop.recipe import build, merge, read_recipe
from mcoder.rollout.sampling import SamplingConfig
from mcoder.train.config import VLLM_IMPORTANCE_SAMPLING_CAP, TrainConfig, resolve

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def a_gpu(monkeypatch):
    """torch sees a GPU (nothing is placed on it: settle only reads which device it would be)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)


def test_compute_dtype_is_float32_on_a_cpu_as_before():
    assert TrainConfig().dtype == "auto"
    assert TrainConfig().settle().dtype == "float32"
    assert resolve("microcoder-grpo").settle().dtype == "float32"


def test_compute_dtype_is_bf16_on_a_gpu_unless_asked_otherwise(a_gpu):
    assert TrainConfig().settle().dtype == "bfloat16"
    assert TrainConfig(device="cpu").settle().dtype == "float32", "the device trained on decides"
    assert TrainConfig(dtype="float32").settle().dtype == "float32", "a value given stays"


def test_the_paper_recipe_trains_in_bf16_with_importance_sampling_on_a_gpu(a_gpu, tmp_path):
    settings = merge(
        read_recipe(ROOT / "recipes" / "microcoder-grpo.toml"),
        {"model": "m", "problems": str(tmp_path / "p.jsonl"), "run_dir": str(tmp_path / "run")},
    )
    cfg = build(settings).validate()
    assert cfg.engine == "vllm" and cfg.train.dtype == "bfloat16"
    assert cfg.train.importance_sampling_cap == VLLM_IMPORTANCE_SAMPLING_CAP


def _loop(**kw) -> LoopConfig:
    train = kw.pop("train", resolve("microcoder-grpo"))
    return LoopConfig(model="m", problems=Path("p.jsonl"), run_dir=Path("run"), train=train,
                      sampling=SamplingConfig(temperature="1.0"), judge=JudgeConfig(), **kw).validate()  # fmt: skip


def test_importance_sampling_is_on_by_default_when_vllm_samples():
    assert _loop(engine="vllm").train.importance_sampling_cap == VLLM_IMPORTANCE_SAMPLING_CAP
    assert _loop(engine="hf").train.importance_sampling_cap == 0.0, "the live policy samples: nothing to correct"
    # one step off-policy takes π_old from the sampler: the correction has nothing to compare
    assert _loop(engine="vllm", off_policy=1).train.importance_sampling_cap == 0.0
    given = resolve("microcoder-grpo", {"importance_sampling_cap": 0.0})
    assert _loop(engine="vllm", train=given).train.importance_sampling_cap == 0.0, "off when asked"
    assert resolve("microcoder-grpo").settle().importance_sampling_cap == 0.0, "mcoder train: off"


def test_tf32_is_allowed_for_float32_matmuls_on_a_gpu_only():
    from mcoder.train.trainer import allow_tf32

    before = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("highest")  # as in-process vLLM leaves it
        allow_tf32(torch.device("cpu"))
        assert torch.get_float32_matmul_precision() == "highest", "a CPU run computes as before"
        allow_tf32(torch.device("cuda"))
        assert torch.get_float32_matmul_precision() == "high"
    finally:
        torch.set_float32_matmul_precision(before)


def test_the_hf_engine_samples_the_float32_masters_in_the_compute_dtype(tiny_model):
    """With the live policy (one process, --engine hf) the sampler runs the trainer's own float32
    master weights: under bf16 compute its forwards run in bf16 too (they ran in float32)."""
    from mcoder.loop.samplers import LivePolicy
    from mcoder.train.trainer import Trainer

    trainer = Trainer(str(tiny_model), resolve("microcoder-grpo", {"dtype": "bfloat16"}))
    assert all(p.dtype == torch.float32 for p in trainer.params)
    engine = LivePolicy(trainer).engine
    seen: set[torch.dtype] = set()
    layer = next(m for m in trainer.model.modules() if isinstance(m, torch.nn.Linear))
    hook = layer.register_forward_hook(lambda m, i, o: seen.add(o.dtype))
    engine.generate([[5, 6, 7]], n=2, max_tokens=4, temperature=1.0, seed=1)
    hook.remove()
    assert seen == {torch.bfloat16}


def test_settled_values_are_what_a_run_records():
    cfg = dataclasses.replace(resolve("microcoder-grpo")).settle(vllm_sampling=True)
    assert '"dtype": "float32"' in cfg.to_json() and '"importance_sampling_cap": 2.0' in cfg.to_json()


def test_the_importance_sampling_metrics_are_drawn_with_the_clip_fractions(tmp_path):
    """A vLLM run logs is/logprob_diff, is/weight_mean and is/capped every step: `bench --plots`
    draws them beside the clip fractions and the ratio (they were logged and never drawn)."""
    import json

    from mcoder.bench.metrics import read_run
    from mcoder.bench.plots import build_figures

    rows = [{"step": s, "clip/high": 0.01 * s, "is/logprob_diff": 0.02 + 0.001 * s,
             "is/weight_mean": 1.0 - 0.001 * s, "is/capped": 0.001 * s} for s in range(1, 5)]  # fmt: skip
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    figures, _ = build_figures([read_run(tmp_path, "vllm")])
    titles = [ax.get_title() for ax in figures["clip"].axes if ax.get_visible()]
    assert {"is/logprob_diff", "is/weight_mean", "is/capped"} <= set(titles), titles


def test_vllms_share_of_the_gpu_is_a_setting_measured_by_default(tiny_model, monkeypatch):
    """It was 0.35 whatever the model: at 8B that starved the trainer, at 0.6B it starved the KV
    cache. Given, it is used as it is; not given, on a GPU, it is what is free once the policy is
    loaded, less AdamW's moments the trainer will hold while vLLM samples, less a margin."""
    from mcoder.errors import EnvironmentMissing, UsageError
    from mcoder.loop import samplers
    from mcoder.train.trainer import Trainer

    trainer = Trainer(str(tiny_model), resolve("microcoder-grpo"))
    params = sum(p.numel() for p in trainer.params)
    GiB = 2**30
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda *a: (100 * GiB, 141 * GiB))
    share = samplers.vllm_memory_share(trainer)
    assert share == pytest.approx((100 * GiB - 8 * params - samplers.VLLM_MEMORY_MARGIN) / (141 * GiB))
    assert samplers.gpu_share(_loop(engine="vllm", vllm_gpu_memory=0.5), trainer) == 0.5
    assert samplers.gpu_share(_loop(engine="vllm"), trainer) is None, "a CPU: the engine's own setting"
    monkeypatch.setattr(samplers, "_has_cuda", lambda: True)
    assert samplers.gpu_share(_loop(engine="vllm"), trainer) == share
    seen = {}
    monkeypatch.setattr("mcoder.engines.factory.make_engine", lambda name, base, adapter, **kw: seen.update(kw))
    samplers.vllm_engine(str(tiny_model), trainer.cfg, gpu_memory=share)
    assert seen["gpu_memory_utilization"] == share
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda *a: (5 * GiB, 141 * GiB))
    with pytest.raises(EnvironmentMissing, match="--vllm-gpu-memory"):
        samplers.vllm_memory_share(trainer)
    with pytest.raises(UsageError, match="--vllm-gpu-memory"):
        _loop(engine="vllm", vllm_gpu_memory=1.5)


def test_a_large_checkpoint_is_not_written_every_step_by_default():
    """--save-every was 1: a 21 GB checkpoint (Qwen3-1.7B, float32 weights and AdamW's moments)
    every step. Not given, it is every step only while a checkpoint is under 2 GB."""
    from types import SimpleNamespace

    from mcoder.errors import UsageError
    from mcoder.loop.loop import default_save_every

    assert LoopConfig(model="m", problems=Path("p"), run_dir=Path("r")).save_every is None

    def policy(params: int):  # a trainer's trainable parameters, of this count (no memory: meta)
        return SimpleNamespace(params=[torch.empty(params, device="meta")])

    assert default_save_every(policy(1_720_000_000)) == 10
    assert default_save_every(policy(5_000_000)) == 1, "a small model: every step, as before"
    with pytest.raises(UsageError, match="--save-every"):
        _loop(engine="hf", save_every=-1)
