"""Helpers for the rollout tests: small problems, a reference forward pass, and real variants of
the tiny model (EOS-prone, peaky, LoRA-adapted) built in memory or saved to temp folders."""

from __future__ import annotations

from pathlib import Path

import torch

from mcoder.records import Problem, Test


def problems(count: int = 3) -> list[Problem]:
    """Stdin and call-based problems of different statement lengths (so prompts need padding)."""
    out = []
    for i in range(count):
        if i % 2:
            out.append(Problem(
                id=f"call-{i}", source="test", question="Return the sum of a and b. " * (i + 1),
                starter_code="class Solution:\n    def add(self, a: int, b: int) -> int:\n        ",
                fn_name="add", tests=[Test("1\n2", "3", "call")],
            ))
        else:
            out.append(Problem(
                id=f"stdin-{i}", source="test", question="Read n and print n squared. " * (i + 1),
                tests=[Test("2\n", "4\n")],
            ))
    return out


def forward_logprobs(model, prompt_ids: list[int], completion_ids: list[int], temperature: float) -> torch.Tensor:
    """log_softmax(logits / T) of each completion token, from one unpadded forward pass."""
    ids = torch.tensor([prompt_ids + completion_ids])
    with torch.no_grad():
        logits = model(ids).logits[0].float()
    scaled = logits[len(prompt_ids) - 1 : -1] / temperature
    return torch.log_softmax(scaled, -1).gather(-1, torch.tensor(completion_ids)[:, None]).squeeze(-1)


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
