"""How the loop's rollout engine follows the policy it trains.

- hf engine: samples from the live policy object (one process) or from rank 0's refreshed copy
  (torchrun, train/distributed_loop.py): always the current weights, nothing to send.
- vllm engine: a separate inference engine. With LoRA, each step's adapter is written to
  RUN/adapters/step_NNNN and the engine is pointed at it (``VLLMEngine.set_adapter``: a new
  LoRA id makes vLLM load it on the next request); the base model stays loaded, no restart.
  Full fine-tuning would need the whole weights pushed into vLLM's workers each step; that is
  not done here, and asking for it is a usage error rather than silently stale rollouts.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from mcoder.errors import UsageError

KEEP_ADAPTERS = 2
VLLM_GPU_MEMORY = 0.35  # share of the GPU for vLLM's weights and KV cache beside the trainer (an estimate)  # the engine may still read the previous folder while the next is written


def check_engine(engine: str, lora_rank: int) -> None:
    if engine not in ("hf", "vllm"):
        raise UsageError(f"--engine {engine}: the loop samples with hf or vllm")
    if engine == "vllm" and lora_rank <= 0:
        raise UsageError(
            "--engine vllm in the loop needs LoRA (--lora-rank > 0)",
            hint="the adapter is handed to vLLM each step; full-weight sync into vLLM is not "
            "implemented, use --engine hf for full fine-tuning",
        )


def vllm_engine_for(job, start: str):
    """A vLLM engine on the base model with LoRA enabled, on the adapter of ``start`` if it is one."""
    from mcoder.rollout.engines.factory import make_engine

    adapter_cfg = Path(start) / "adapter_config.json"
    base, adapter = start, None
    if adapter_cfg.exists():
        base, adapter = json.loads(adapter_cfg.read_text())["base_model_name_or_path"], start
    # the trainer's dtype: sampling log-probs then match the trainer's π_old (bfloat16 on GPUs)
    kwargs = {"max_lora_rank": job.cfg.lora_rank, "seed": job.cfg.seed, "dtype": job.cfg.dtype}
    if _has_cuda():
        # the trainer shares the GPU (rank 0's, under torchrun): vLLM must not take 90% of it
        kwargs["gpu_memory_utilization"] = getattr(job, "vllm_gpu_memory", VLLM_GPU_MEMORY)
    if getattr(job, "tensor_parallel_size", 1) > 1:
        kwargs["tensor_parallel_size"] = job.tensor_parallel_size
    return make_engine("vllm", base, adapter, **kwargs)


def publish_adapter(trainer, engine, folder: Path, step: int) -> Path | None:
    """Write the policy's adapter for step ``step`` and point ``engine`` at it. Under torchrun
    every rank calls this (the weights are gathered); rank 0 writes and owns the engine."""
    from mcoder.train.distributed import is_main

    out = Path(folder) / f"step_{step:04d}"
    export_weights(trainer, out)
    if engine is None or not is_main():
        return None
    engine.set_adapter(out)
    for old in sorted(Path(folder).glob("step_*"))[:-KEEP_ADAPTERS]:
        shutil.rmtree(old, ignore_errors=True)
    return out


def export_weights(trainer, out: Path) -> None:
    """The policy's weights (the adapter alone, with LoRA) in ``out``, loadable by vLLM or hf."""
    from mcoder.train.distributed import FSDPTrainer, barrier, is_main

    if isinstance(trainer, FSDPTrainer):
        trainer.gather_weights()
    try:
        if is_main():
            tmp = out.with_name(out.name + ".tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            trainer.save_weights(tmp)
            shutil.rmtree(out, ignore_errors=True)
            tmp.rename(out)
    finally:
        if isinstance(trainer, FSDPTrainer):
            trainer._full_weights = None
    barrier()


def _has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()
