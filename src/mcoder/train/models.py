"""The policy (full or LoRA) and the reference model of a training run, and scoring completions
with them. Folders, tokenizers and weights are loaded by ``mcoder.models``; a checkpoint written by
mcoder (full weights, or a PEFT adapter folder naming its base model) is a model folder too.
"""

from __future__ import annotations

import contextlib

import torch

from mcoder.models import add_lora, check_model_dir, load_model, model_device, resolve_dtype
from mcoder.train import grpo
from mcoder.train.batching import Batch
from mcoder.train.config import TrainConfig

MASTER_DTYPE = "float32"  # the weights the optimizer updates, whatever the compute dtype


def load_policy(path: str, cfg: TrainConfig, *, dtype: str = MASTER_DTYPE):
    """The trainable policy: a full model, a fresh LoRA adapter on it, or a saved adapter to continue.

    Full weights load in ``dtype`` (float32 master weights: an update of lr 1e-6 is far below
    half a bf16 ulp, so bf16 weights would not move); with LoRA the frozen base loads in the
    compute dtype (nothing updates it) and PEFT keeps the adapter in float32."""
    folder = check_model_dir(path)
    base_dtype = cfg.dtype if cfg.lora_rank > 0 or folder.adapter is not None else dtype
    model = load_model(folder, dtype=base_dtype, device=None, trainable=True)
    if cfg.lora_rank > 0 and folder.adapter is None:
        model = add_lora(
            model, rank=cfg.lora_rank, alpha=cfg.lora_alpha, dropout=cfg.lora_dropout,
            target_modules=cfg.lora_target_modules,
        )
    if dtype == MASTER_DTYPE:  # (a sampling copy, loaded in the compute dtype, is never updated)
        _float32_masters(model)
    return model


def empty_policy(path: str, cfg: TrainConfig, *, dtype: str = MASTER_DTYPE):
    """``load_policy``'s model (modules, parameter names, shapes, dtypes, which ones train) with
    no weights: parameters on the meta device, nothing read but the config; buffers computed as
    the modules make them (rotary frequencies: small, and in no weights file). Under torchrun
    each rank fills its shards into it (train/distributed.py)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    folder = check_model_dir(path)
    base_dtype = cfg.dtype if cfg.lora_rank > 0 or folder.adapter is not None else dtype
    config = AutoConfig.from_pretrained(str(folder.base))
    with parameters_on_meta():
        model = AutoModelForCausalLM.from_config(config, dtype=resolve_dtype(base_dtype))
        if folder.adapter is not None:  # the adapter's own settings, trainable (as load_policy continues it)
            from peft import PeftConfig, get_peft_model

            adapter = PeftConfig.from_pretrained(str(folder.adapter))
            adapter.inference_mode = False
            model = get_peft_model(model, adapter)
        elif cfg.lora_rank > 0:
            model = add_lora(
                model, rank=cfg.lora_rank, alpha=cfg.lora_alpha, dropout=cfg.lora_dropout,
                target_modules=cfg.lora_target_modules,
            )  # fmt: skip
    if dtype == MASTER_DTYPE:
        _float32_masters(model)
    return model


def empty_reference(path: str, policy, cfg: TrainConfig):
    """``load_reference``'s model with no weights (see ``empty_policy``)."""
    if cfg.beta == 0.0:
        return None
    if hasattr(policy, "disable_adapter"):
        return policy
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(str(check_model_dir(path).base))
    with parameters_on_meta():
        ref = AutoModelForCausalLM.from_config(config, dtype=resolve_dtype(cfg.dtype))
    return ref.eval().requires_grad_(False)


@contextlib.contextmanager
def parameters_on_meta():
    """Modules built inside put each parameter on the meta device as it is registered (made
    uninitialised first, one at a time: untouched memory), and keep their buffers."""
    register = torch.nn.Module.register_parameter

    def on_meta(module, name, param):
        if param is not None and param.device.type != "meta":
            param = torch.nn.Parameter(param.to("meta"), requires_grad=param.requires_grad)
        register(module, name, param)

    torch.nn.Module.register_parameter = on_meta
    try:
        yield
    finally:
        torch.nn.Module.register_parameter = register


def _float32_masters(model) -> None:
    for p in model.parameters():
        if p.requires_grad and p.dtype != torch.float32:
            p.data = p.data.float()  # a trainable weight is a float32 master


def load_reference(path: str, policy, cfg: TrainConfig):
    """π_ref for the KL term. None when beta = 0 (nothing is loaded). With LoRA the reference
    is the policy with its adapter switched off, so no second copy is held; otherwise it is
    loaded in the compute dtype (forward only: no master copy needed)."""
    if cfg.beta == 0.0:
        return None
    if hasattr(policy, "disable_adapter"):
        return policy
    ref = load_model(path, dtype=cfg.dtype, device=None)
    return ref.to(model_device(policy)).eval().requires_grad_(False)


def output_layer(model):
    """The output layer (lm_head) of a transformers model, under a PEFT wrapper too."""
    get = getattr(model, "get_base_model", None)
    return (get() if get is not None else model).get_output_embeddings()


def completion_logprobs(
    model, batch: Batch, temperature: float, *, chunk: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """log π^T of each completion token (with gradient) and the entropy of π^T there (without),
    each (B, C), 0 on padding. Position P-1+t predicts token t.

    The full-vocabulary logits are never made for all tokens at once: the model's output layer
    is given, for this call, a forward that reads the last hidden states of the real completion
    tokens (padding skipped) ``chunk`` rows at a time (``grpo.head_logprobs_and_entropy``). It
    runs inside the model's own forward, so an FSDP2-sharded output layer is gathered as usual
    and the result is the model's output, through which the backward reaches every layer."""
    B, C = batch.completion_ids.shape
    batch = batch.to(model_device(model))
    rows = batch.token_mask.flatten().nonzero().squeeze(-1)  # (N,) real completion tokens
    tokens = batch.completion_ids.flatten()[rows]  # (N,)
    head = output_layer(model)

    def forward(hidden):  # (B, C + 1, H): the hidden states of logits_to_keep = C + 1
        h = hidden[:, :-1].reshape(B * C, -1)[rows]  # (N, H)
        logp, entropy = grpo.head_logprobs_and_entropy(h, head.weight, head.bias, tokens, temperature, chunk)
        return torch.stack([logp, entropy], dim=-1)  # (N, 2), returned as the model's "logits"

    own = head.__dict__.get("forward")  # a forward set on the instance before (a hook library's)
    head.forward = forward
    try:
        out = model(
            input_ids=batch.input_ids,
            attention_mask=batch.attention_mask,
            position_ids=batch.position_ids,
            logits_to_keep=C + 1,
            use_cache=False,
        ).logits  # (N, 2)
    finally:
        if own is None:
            del head.forward  # the class's forward again
        else:
            head.forward = own
    logp = out.new_zeros(B * C).index_put((rows,), out[:, 0]).view(B, C)  # (B, C)
    entropy = out.new_zeros(B * C).index_put((rows,), out[:, 1].detach()).view(B, C)  # (B, C)
    return logp, entropy


@torch.no_grad()
def score(model, batch: Batch, temperature: float, *, reference: bool = False, chunk: int = 0) -> torch.Tensor:
    """log π^T of each completion token without gradient (π_old recomputed, or π_ref). (B, C)"""
    ctx = (
        model.disable_adapter()
        if reference and hasattr(model, "disable_adapter")
        else contextlib.nullcontext()
    )
    with ctx:
        logp, _ = completion_logprobs(model, batch, temperature, chunk=chunk)  # (B, C)
    return logp.cpu()
