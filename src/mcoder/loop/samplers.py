"""What the loop samples with, and how it follows the policy it trains.

A sampler has an ``engine`` (what the loop samples with: every rank has its own),
``sync()`` (called before every step's rollout but the first: bring the engine up to the
policy's weights), ``before_update()`` (called on every rank once the batch is sampled and
judged: an engine may free memory for the update) and ``after_step(step)`` (called on every
rank after the update and save).

- ``LivePolicy`` (hf, one process): the engine samples from the trainer's own model object,
  always on-policy, nothing to send.
- ``SyncedCopy`` (hf, torchrun or ``--off-policy 1``): generation from the sharded policy would
  make every token a collective all ranks join in lockstep (and off-policy, the next batch is
  sampled while the policy trains); each rank keeps an unsharded copy instead, refreshed from
  the gathered weights (one tensor at a time) before each rollout, and samples its share.
- ``VLLMAdapter`` (vllm, LoRA): a separate engine on the base model (one per rank); each
  step's adapter is written to RUN/adapters/step_NNNN and every engine is pointed at it (a new
  LoRA id makes vLLM load it on the next request); the base model stays loaded, no restart.
- ``VLLMFull`` (vllm, full fine-tuning): before each rollout the policy's weights are streamed
  into the engine (``policy_weights``: under torchrun each tensor is gathered whole on every
  rank by a collective all ranks join, and dropped once the engine has it). In one process the
  engine runs inside this process and copies each tensor straight into its parameter. Under
  torchrun each rank's engine runs in a process of its own (vLLM inside a process of torchrun's
  group would take that group for its own and build its groups over all ranks) and is sent the
  tensors a layer at a time. No restart, no files, and never the whole model twice in host
  memory. On a GPU the engine sleeps while the trainer steps. A tensor-parallel engine is not
  reached by either (refused by ``LoopConfig.validate``, never left stale).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from mcoder.train.distributed import FSDPTrainer, barrier, is_main, world_size

KEEP_ADAPTERS = 2  # the engine may still read the previous folder while the next is written
# What the trainer's process keeps free beside vLLM on its GPU (CUDA context, allocator slack)
# when vLLM's share is measured (``vllm_memory_share``).
VLLM_MEMORY_MARGIN = 4 * 2**30
VLLM_MEMORY_MAX = 0.9  # vLLM's own default share: never more


class Sampler(Protocol):
    engine: Any

    def sync(self) -> None: ...

    def before_update(self) -> None: ...

    def after_step(self, step: int) -> None: ...


def make_sampler(cfg, start: str, trainer, adapters: Path) -> Sampler:
    """The sampler for this launch: ``cfg`` is the LoopConfig, ``start`` the folder the policy was
    loaded from, ``adapters`` where a vLLM engine's adapters go."""
    if cfg.engine == "vllm":
        if cfg.train.lora_rank > 0:
            return VLLMAdapter(cfg, start, trainer, adapters)
        return VLLMFull(cfg, start, trainer)
    if world_size() > 1 or cfg.off_policy:  # (off-policy: the copy samples while the policy trains)
        return SyncedCopy(start, trainer)
    return LivePolicy(trainer)


class LivePolicy:
    def __init__(self, trainer):
        from mcoder.engines.hf_engine import HFEngine

        # the float32 masters, sampled in the compute dtype (autocast, as the update's forwards)
        self.engine = HFEngine(trainer.model, trainer.tokenizer, autocast=trainer.compute_dtype)

    def sync(self) -> None:
        pass

    def before_update(self) -> None:
        pass

    def after_step(self, step: int) -> None:
        pass


class SyncedCopy:
    def __init__(self, start: str, trainer: FSDPTrainer):
        from mcoder.engines.hf_engine import HFEngine
        from mcoder.train.models import load_policy

        self.trainer = trainer
        # in the compute dtype: it samples, never updates (sync casts the float32 masters)
        self.copy = load_policy(start, trainer.cfg, dtype=trainer.cfg.dtype).to(trainer.device).eval()
        self.engine = HFEngine(self.copy, trainer.tokenizer)

    def sync(self) -> None:
        """Stream the policy's weights into this rank's copy, one tensor at a time (each one
        gathered whole on every rank: every rank samples)."""
        import torch

        with torch.no_grad():
            for name, tensor in policy_weights(self.trainer):
                self.copy.get_parameter(name).copy_(tensor)

    def before_update(self) -> None:
        pass

    def after_step(self, step: int) -> None:
        pass


class VLLMAdapter:
    def __init__(self, cfg, start: str, trainer, adapters: Path):
        self.trainer, self.folder = trainer, Path(adapters)
        self.engine = vllm_engine(
            start, cfg.train, cfg.tensor_parallel_size, gpu_memory=gpu_share(cfg, trainer), sleep=cfg.vllm_sleep
        )

    def sync(self) -> None:
        pass  # the adapter folder is handed over in after_step

    def before_update(self) -> None:
        self.engine.sleep(level=1)  # the base weights stay (offloaded to host memory)

    def after_step(self, step: int) -> None:
        publish_adapter(self.trainer, self.engine, self.folder, step)


class VLLMFull:
    def __init__(self, cfg, start: str, trainer):
        self.trainer = trainer
        alone = world_size() == 1
        self.engine = vllm_engine(
            start, cfg.train, gpu_memory=gpu_share(cfg, trainer), in_process=alone, weight_sync=not alone,
            sleep=cfg.vllm_sleep,
        )  # fmt: skip

    def sync(self) -> None:
        """Stream the policy's weights into this rank's engine (every rank: the gathers are
        collectives all ranks join, tensor by tensor in the same order), each cast to the
        engine's dtype (bf16 on a GPU) from the float32 masters."""
        self.engine.load_weights(policy_weights(self.trainer, engine_dtype(self.trainer.cfg)))

    def before_update(self) -> None:
        self.engine.sleep(level=2)  # weights and KV cache freed: the next sync rewrites every weight

    def after_step(self, step: int) -> None:
        pass


def policy_weights(trainer, dtype: str | None = None) -> Iterator[tuple[str, Any]]:
    """The policy's weights as ``(name, tensor)`` pairs named as in its checkpoint, one at a time
    (a tied output layer comes once, as the embeddings), cast to ``dtype`` when given. Under
    torchrun each sharded tensor is gathered whole on every rank when it is reached: every rank
    must run through the whole iterator, in the same order, and each gathered tensor is dropped
    when the consumer lets it go."""
    import torch
    from torch.distributed.tensor import DTensor

    cast = None if dtype is None else getattr(torch, dtype)
    with torch.no_grad():
        for name, p in trainer.model.named_parameters():
            t = p.full_tensor() if isinstance(p, DTensor) else p.detach()
            yield name, (t if cast is None else t.to(cast))


def gpu_share(cfg, trainer) -> float | None:
    """vLLM's share of the GPU: --vllm-gpu-memory, else measured (``vllm_memory_share``); None
    on a CPU (the engine's own setting there)."""
    if cfg.vllm_gpu_memory is not None:
        return cfg.vllm_gpu_memory
    return vllm_memory_share(trainer) if _has_cuda() else None


def vllm_memory_share(trainer, margin: float = VLLM_MEMORY_MARGIN) -> float:
    """The share of this GPU vLLM may take for its weights and KV cache, measured as the engine
    starts (the policy loaded, no step taken yet): what is free now, less what the trainer will
    hold beside the engine while it samples (AdamW's two float32 moments of this rank's trainable
    parameters; gradients are freed after each step, and during the update itself vLLM sleeps),
    less ``margin``; at most VLLM_MEMORY_MAX."""
    import torch

    from mcoder.errors import EnvironmentMissing

    free, total = torch.cuda.mem_get_info()
    moments = 8 * sum(getattr(p, "to_local", lambda p=p: p)().numel() for p in trainer.params)
    share = (free - moments - margin) / total
    if share < 0.05:
        raise EnvironmentMissing(
            f"the trainer leaves vLLM {max(share, 0.0):.0%} of the GPU ({free / 2**30:.1f} GiB free, "
            f"{moments / 2**30:.1f} GiB for AdamW's moments to come), too little to measure --vllm-gpu-memory by",
            hint="train under torchrun over more GPUs (FSDP2 shards the moments), with LoRA (--lora-rank R), "
            "or give --vllm-gpu-memory yourself",
        )
    return min(share, VLLM_MEMORY_MAX)


def engine_dtype(train_cfg) -> str:
    """The vLLM engine's dtype: bfloat16 on a GPU whatever the trainer's (flash attention, half
    the KV cache, and vLLM's LoRA kernels take no float32); the trainer's compute dtype on a CPU."""
    return "bfloat16" if _has_cuda() else ("float32" if train_cfg.dtype == "auto" else train_cfg.dtype)


def vllm_engine(
    start: str,
    train_cfg,
    tensor_parallel_size: int = 1,
    gpu_memory: float | None = None,
    *,
    in_process: bool = False,
    weight_sync: bool = False,
    sleep: bool = False,
):
    """A vLLM engine on ``start``: for LoRA (``train_cfg.lora_rank`` > 0) the base model with LoRA
    enabled, on the adapter of ``start`` if it is one; for full fine-tuning ``in_process`` or
    with ``weight_sync`` (in a process of its own) so that ``load_weights`` can replace its
    weights. ``gpu_memory``: its share of the GPU (vLLM's own default when None). ``sleep``: vLLM's
    sleep mode, on a GPU only."""
    from mcoder.engines.factory import make_engine

    adapter_cfg = Path(start) / "adapter_config.json"
    base, adapter = start, None
    if adapter_cfg.exists():
        base, adapter = json.loads(adapter_cfg.read_text())["base_model_name_or_path"], start
    kwargs: dict[str, Any] = {
        "max_lora_rank": train_cfg.lora_rank,
        "seed": train_cfg.seed,
        "dtype": engine_dtype(train_cfg),
    }
    if _has_cuda() and gpu_memory is not None:
        # the trainer shares the GPU (rank 0's, under torchrun): vLLM must not take 90% of it
        kwargs["gpu_memory_utilization"] = gpu_memory
    if tensor_parallel_size > 1:
        kwargs["tensor_parallel_size"] = tensor_parallel_size
    if in_process:
        kwargs["in_process"] = True
    if weight_sync:
        kwargs["weight_sync"] = True
    if sleep and _has_cuda():
        kwargs["sleep_mode"] = True
    return make_engine("vllm", base, adapter, **kwargs)


def publish_adapter(trainer, engine, folder: Path, step: int) -> Path | None:
    """Write the policy's adapter for step ``step`` and point ``engine`` at it. Under torchrun
    every rank calls this (the weights are gathered); rank 0 writes, every rank's engine reads."""
    out = Path(folder) / f"step_{step:04d}"
    export_weights(trainer, out)  # (ends with a barrier: the folder is there for every rank)
    if engine is not None:
        engine.set_adapter(out)
    if is_main():
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
