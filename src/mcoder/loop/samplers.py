"""What the loop samples with, and how it follows the policy it trains.

A sampler has an ``engine`` (what ``make_rollouts`` calls; None on ranks that do not sample),
``sync()`` (called before every step's rollout but the first: bring the engine up to the
policy's weights) and ``after_step(step)`` (called on every rank after the update and save).

- ``LivePolicy`` (hf, one process): the engine samples from the trainer's own model object,
  always on-policy, nothing to send.
- ``SyncedCopy`` (hf, torchrun): generation from the sharded policy would make every token a
  collective all ranks join in lockstep; rank 0 keeps an unsharded copy instead, refreshed from
  the gathered weights before each rollout.
- ``VLLMAdapter`` (vllm, LoRA): a separate engine on the base model; each step's adapter is
  written to RUN/adapters/step_NNNN and the engine is pointed at it (a new LoRA id makes vLLM
  load it on the next request); the base model stays loaded, no restart. Full fine-tuning would
  need the whole weights pushed into vLLM's workers each step; that is not done here, and asking
  for it is a usage error (``LoopConfig.validate``) rather than silently stale rollouts.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Protocol

from mcoder.train.distributed import FSDPTrainer, barrier, is_main, world_size

KEEP_ADAPTERS = 2  # the engine may still read the previous folder while the next is written
VLLM_GPU_MEMORY = 0.35  # share of the GPU for vLLM's weights and KV cache beside the trainer (an estimate)


class Sampler(Protocol):
    engine: Any

    def sync(self) -> None: ...

    def after_step(self, step: int) -> None: ...


def make_sampler(cfg, start: str, trainer, adapters: Path) -> Sampler:
    """The sampler for this launch: ``cfg`` is the LoopConfig, ``start`` the folder the policy was
    loaded from, ``adapters`` where a vLLM engine's adapters go."""
    if cfg.engine == "vllm":
        return VLLMAdapter(cfg, start, trainer, adapters)
    if world_size() > 1:
        return SyncedCopy(start, trainer)
    return LivePolicy(trainer)


class LivePolicy:
    def __init__(self, trainer):
        from mcoder.rollout.engines.hf_engine import HFEngine

        self.engine = HFEngine(trainer.model, trainer.tokenizer)

    def sync(self) -> None:
        pass

    def after_step(self, step: int) -> None:
        pass


class SyncedCopy:
    def __init__(self, start: str, trainer: FSDPTrainer):
        from mcoder.rollout.engines.hf_engine import HFEngine
        from mcoder.train.models import load_policy

        self.trainer = trainer
        self.engine = self.copy = None
        if is_main():
            self.copy = load_policy(start, trainer.cfg).to(trainer.device).eval()
            self.engine = HFEngine(self.copy, trainer.tokenizer)

    def sync(self) -> None:
        """Gather the policy's weights (every rank) into rank 0's copy."""
        full = self.trainer.full_state_dict()
        if self.copy is not None:
            self.copy.load_state_dict(full, strict=False)  # a tied lm_head comes under both names

    def after_step(self, step: int) -> None:
        pass


class VLLMAdapter:
    def __init__(self, cfg, start: str, trainer, adapters: Path):
        self.trainer, self.folder = trainer, Path(adapters)
        self.engine = vllm_engine(start, cfg.train, cfg.tensor_parallel_size) if is_main() else None

    def sync(self) -> None:
        pass  # the adapter folder is handed over in after_step

    def after_step(self, step: int) -> None:
        publish_adapter(self.trainer, self.engine, self.folder, step)


def vllm_engine(start: str, train_cfg, tensor_parallel_size: int = 1, gpu_memory: float = VLLM_GPU_MEMORY):
    """A vLLM engine on the base model with LoRA enabled, on the adapter of ``start`` if it is one."""
    from mcoder.rollout.engines.factory import make_engine

    adapter_cfg = Path(start) / "adapter_config.json"
    base, adapter = start, None
    if adapter_cfg.exists():
        base, adapter = json.loads(adapter_cfg.read_text())["base_model_name_or_path"], start
    # the trainer's dtype: sampling log-probs then match the trainer's π_old (bfloat16 on GPUs)
    kwargs: dict[str, Any] = {
        "max_lora_rank": train_cfg.lora_rank,
        "seed": train_cfg.seed,
        "dtype": train_cfg.dtype,
    }
    if _has_cuda():
        # the trainer shares the GPU (rank 0's, under torchrun): vLLM must not take 90% of it
        kwargs["gpu_memory_utilization"] = gpu_memory
    if tensor_parallel_size > 1:
        kwargs["tensor_parallel_size"] = tensor_parallel_size
    return make_engine("vllm", base, adapter, **kwargs)


def publish_adapter(trainer, engine, folder: Path, step: int) -> Path | None:
    """Write the policy's adapter for step ``step`` and point ``engine`` at it. Under torchrun
    every rank calls this (the weights are gathered); rank 0 writes and owns the engine."""
    out = Path(folder) / f"step_{step:04d}"
    export_weights(trainer, out)
    if engine is None or not is_main():
        return None
    engine.set_adapter(out)
    for old in sorted(Path(folder).glob("step_*"))[:-KEEP_ADAPTERS]:
        shutil.rmtree(old, ignore_errors=True)
    return out


def export_weights(trainer, out: Path) -> None:
    """The policy's weights (the adapter alone, with LoRA) in ``out``, loadable by vLLM or hf.
    Under torchrun every rank calls this (the weights are gathered), rank 0 writes."""
    with trainer.full_weights():
        if is_main():
            tmp = out.with_name(out.name + ".tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            trainer.save_weights(tmp)
            shutil.rmtree(out, ignore_errors=True)
            tmp.rename(out)
    barrier()


def _has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()
