"""Helpers for the rollout tests: small problems and a reference forward pass (from mcoder.testing,
where the benchmarks take them too), and real variants of the tiny model (EOS-prone, peaky,
LoRA-adapted) built in memory or saved to temp folders."""

from __future__ import annotations

from pathlib import Path

import torch

from mcoder.testing import forward_logprobs, problems  # noqa: F401 - re-exported for the tests


def untie_lm_head(model) -> torch.nn.Linear:
    """Give the model its own output layer (the tiny model ties it to the embeddings)."""
    old = model.lm_head
    head = torch.nn.Linear(old.in_features, old.out_features, bias=True)
    with torch.no_grad():
        head.weight.copy_(old.weight)
        head.bias.zero_()
    model.lm_head = head
    return head


def eos_prone(model, eos_id: int, bias: float = 5.0):
    """The model with a bias towards EOS: some samples stop, some hit max tokens."""
    head = untie_lm_head(model)
    with torch.no_grad():
        head.bias[eos_id] = bias
    return model


def peaky(model, k: float):
    """The model with its logits scaled by k: the same ranking, far less diverse at any T."""
    head = untie_lm_head(model)
    with torch.no_grad():
        head.weight.mul_(k)
    return model


def make_lora_adapter(model_dir: Path, out: Path) -> Path:
    """A PEFT LoRA adapter on the tiny model with random (non-zero) A and B weights, saved."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(1)
    base = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
    config = LoraConfig(r=8, lora_alpha=32, target_modules=["q_proj", "v_proj", "up_proj"], init_lora_weights=False)
    model = get_peft_model(base, config)
    for name, p in model.named_parameters():
        if "lora_B" in name:
            assert p.abs().sum() > 0, name
    model.save_pretrained(str(out))
    return out


def one_torch_thread():
    """Generator for a module fixture: one intra-op thread while the module runs. Tiny tensors gain
    nothing from two threads, and on a shared 2-core machine the spinning threads cost 10x."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
