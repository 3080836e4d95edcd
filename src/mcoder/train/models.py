"""Load the policy (full or LoRA through PEFT) and the reference model; score completions.

A checkpoint written by mcoder is a model folder too: either full weights, or a PEFT adapter
folder whose ``adapter_config.json`` names its base model. ``--model`` accepts both.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import torch

from mcoder.errors import EnvironmentMissing, UsageError
from mcoder.train import grpo
from mcoder.train.batching import Batch
from mcoder.train.config import TrainConfig

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def _check_model_dir(path: str) -> Path:
    p = Path(path)
    if not p.is_dir() or not ((p / "config.json").exists() or (p / "adapter_config.json").exists()):
        raise UsageError(
            f"{path} is not a model folder (no config.json or adapter_config.json)",
            hint="pass a transformers model folder, or a checkpoint written by `mcoder train`",
        )
    return p


def load_tokenizer(path: str):
    from transformers import AutoTokenizer

    p = _check_model_dir(path)
    if not (p / "tokenizer_config.json").exists() and (p / "adapter_config.json").exists():
        p = Path(_adapter_base(p))
    tok = AutoTokenizer.from_pretrained(p)
    if tok.pad_token_id is None:
        raise UsageError(
            f"the tokenizer of {path} has no pad token", hint="set pad_token in tokenizer_config.json"
        )
    return tok


def _adapter_base(path: Path) -> str:
    import json

    return json.loads((path / "adapter_config.json").read_text())["base_model_name_or_path"]


def load_policy(path: str, cfg: TrainConfig):
    """The trainable policy: a full model, a fresh LoRA adapter on it, or a saved adapter to continue."""
    from transformers import AutoModelForCausalLM

    p = _check_model_dir(path)
    dtype = DTYPES[cfg.dtype]
    if (p / "adapter_config.json").exists():
        from peft import PeftModel

        base = AutoModelForCausalLM.from_pretrained(_adapter_base(p), dtype=dtype)
        return PeftModel.from_pretrained(base, p, is_trainable=True)
    model = AutoModelForCausalLM.from_pretrained(p, dtype=dtype)
    if cfg.lora_rank > 0:
        try:
            from peft import LoraConfig, get_peft_model
        except ImportError as e:  # pragma: no cover - peft is a dependency
            raise EnvironmentMissing("LoRA needs peft", hint="pip install peft") from e
        lora = LoraConfig(
            r=cfg.lora_rank,
            lora_alpha=cfg.lora_alpha or 2 * cfg.lora_rank,
            lora_dropout=cfg.lora_dropout,
            target_modules=cfg.lora_target_modules[0]
            if cfg.lora_target_modules == ["all-linear"]
            else cfg.lora_target_modules,
            task_type="CAUSAL_LM",
        )
        model = get_peft_model(model, lora)
    return model


def load_reference(path: str, policy, cfg: TrainConfig):
    """π_ref for the KL term. None when beta = 0 (nothing is loaded). With LoRA the reference
    is the policy with its adapter switched off, so no second copy is held."""
    if cfg.beta == 0.0:
        return None
    if hasattr(policy, "disable_adapter"):
        return policy
    from transformers import AutoModelForCausalLM

    ref = AutoModelForCausalLM.from_pretrained(_check_model_dir(path), dtype=DTYPES[cfg.dtype])
    ref.to(model_device(policy)).eval().requires_grad_(False)
    return ref


def resolve_device(name: str) -> torch.device:
    """auto -> cuda when present, else cpu. Asking for cuda where there is none is an error."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise EnvironmentMissing(f"--device {name}: no CUDA device here", hint="use --device cpu (or auto)")
    return torch.device(name)


def model_device(model) -> torch.device:
    return next(model.parameters()).device


def completion_logits(model, batch: Batch) -> torch.Tensor:
    """Logits that predict each completion token: position P-1+t predicts token t. (B, C, V)"""
    C = batch.completion_ids.shape[1]
    batch = batch.to(model_device(model))
    out = model(
        input_ids=batch.input_ids,
        attention_mask=batch.attention_mask,
        position_ids=batch.position_ids,
        logits_to_keep=C + 1,
        use_cache=False,
    )
    return out.logits[:, :-1]  # (B, C, V)


@torch.no_grad()
def score(model, batch: Batch, temperature: float, *, reference: bool = False) -> torch.Tensor:
    """log π^T of each completion token without gradient (π_old recomputed, or π_ref). (B, C)"""
    ctx = (
        model.disable_adapter()
        if reference and hasattr(model, "disable_adapter")
        else contextlib.nullcontext()
    )
    with ctx:
        logits = completion_logits(model, batch)  # (B, C, V)
    return grpo.token_logprobs(logits, batch.completion_ids.to(logits.device), temperature).cpu()  # (B, C)
