"""The policy (full or LoRA) and the reference model of a training run, and scoring completions
with them. Folders, tokenizers and weights are loaded by ``mcoder.models``; a checkpoint written by
mcoder (full weights, or a PEFT adapter folder naming its base model) is a model folder too.
"""

from __future__ import annotations

import contextlib

import torch

from mcoder.models import add_lora, check_model_dir, load_model, model_device
from mcoder.train import grpo
from mcoder.train.batching import Batch
from mcoder.train.config import TrainConfig


def load_policy(path: str, cfg: TrainConfig):
    """The trainable policy: a full model, a fresh LoRA adapter on it, or a saved adapter to continue."""
    folder = check_model_dir(path)
    model = load_model(folder, dtype=cfg.dtype, device=None, trainable=True)
    if cfg.lora_rank > 0 and folder.adapter is None:
        model = add_lora(
            model, rank=cfg.lora_rank, alpha=cfg.lora_alpha, dropout=cfg.lora_dropout,
            target_modules=cfg.lora_target_modules,
        )
    return model


def load_reference(path: str, policy, cfg: TrainConfig):
    """π_ref for the KL term. None when beta = 0 (nothing is loaded). With LoRA the reference
    is the policy with its adapter switched off, so no second copy is held."""
    if cfg.beta == 0.0:
        return None
    if hasattr(policy, "disable_adapter"):
        return policy
    ref = load_model(path, dtype=cfg.dtype, device=None)
    return ref.to(model_device(policy)).eval().requires_grad_(False)


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
