"""A checkpoint you can serve: `mcoder train` writes the policy as a plain Hugging Face folder
(from_pretrained loads it as it is; the training state lies in CKPT/trainer/), with a model card;
`mcoder export` copies it out, and merges a LoRA adapter into its base (the merged model's logits
equal the PEFT model's). vLLM loading the merged export: tests/test_export_vllm.py."""

from __future__ import annotations

from pathlib import Path

import torch
from typer.testing import CliRunner

from mcoder.cli.app import app
from mcoder.outputs import fingerprint
from mcoder.train.config import resolve
from mcoder.train.trainer import Trainer, read_state

IDS = torch.tensor([[5, 17, 42, 99, 3, 250, 7, 64]])  # any token ids of the tiny vocabulary


def logits(model) -> torch.Tensor:
    with torch.no_grad():
        return model.eval()(IDS).logits.float()


def make_checkpoint(model_dir: Path, out: Path, *, lora_rank: int = 0, data: Path | None = None) -> Trainer:
    """A checkpoint whose weights moved away from the base: a LoRA adapter whose B matrices are
    random (a fresh one is zero, and merging it would prove nothing), or full weights nudged."""
    trainer = Trainer(str(model_dir), resolve("microcoder-grpo", {"lora_rank": lora_rank}))
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in trainer.model.named_parameters():
            if p.requires_grad and ("lora_B" in name or lora_rank == 0):
                p.add_(torch.randn(p.shape, generator=gen) * 0.05)
    state = {"loop_step": 3, **({"data": {"problems": fingerprint(data)}} if data else {})}
    trainer.save(out, extra_state=state)
    return trainer


def test_from_pretrained_loads_a_full_checkpoint_as_it_is(tiny_model, tmp_path):
    from transformers import AutoModelForCausalLM

    problems = tmp_path / "problems.jsonl"
    problems.write_text('{"id": "p"}\n')
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "bench.md").write_text("| platform | pass@1 |\n|---|---|\n| all | 12.5 % |\n")
    ckpt = tmp_path / "run" / "checkpoint"
    trainer = make_checkpoint(tiny_model, ckpt, data=problems)

    loaded = AutoModelForCausalLM.from_pretrained(ckpt, dtype=torch.float32)
    assert torch.equal(logits(loaded), logits(trainer.model)), "the folder holds the trained weights"
    assert not {"optimizer.pt", "trainer_state.json", "train_config.json"} & {p.name for p in ckpt.iterdir()}
    assert {p.name for p in (ckpt / "trainer").iterdir()} == {
        "optimizer.pt",
        "trainer_state.json",
        "train_config.json",
    }
    assert read_state(ckpt)["loop_step"] == 3

    card = (ckpt / "README.md").read_text()
    for text in (str(tiny_model), "microcoder-grpo", "| loop steps | 3 |", "| eps_high | `0.28` |",
                 fingerprint(problems)["sha256"], "| all | 12.5 % |"):  # fmt: skip
        assert text in card, text

    resumed = Trainer(str(ckpt), trainer.cfg)  # training goes on from the same folder
    assert resumed.base_model == str(tiny_model) and resumed.policy_version == trainer.policy_version


def test_export_copies_the_model_without_the_training_state(tiny_model, tmp_path):
    from transformers import AutoModelForCausalLM

    ckpt = tmp_path / "checkpoint"
    trainer = make_checkpoint(tiny_model, ckpt)
    out = tmp_path / "export"
    r = CliRunner().invoke(app, ["export", str(ckpt), "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == str(out)
    assert not (out / "trainer").exists() and (out / "README.md").is_file()
    assert torch.equal(
        logits(AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32)), logits(trainer.model)
    )

    r = CliRunner().invoke(app, ["export", str(ckpt), "--out", str(out)])
    assert r.exit_code == 0 and "nothing to do" in r.stderr
    r = CliRunner().invoke(app, ["export", str(ckpt), "--out", str(tmp_path / "m"), "--merge-lora"])
    assert r.exit_code == 2 and "nothing to merge" in r.stderr
    r = CliRunner().invoke(app, ["export", str(tiny_model), "--out", str(tmp_path / "x")])
    assert r.exit_code == 2 and "not a checkpoint written by `mcoder train`" in r.stderr


def test_merged_lora_export_has_the_peft_models_logits(tiny_model, tmp_path):
    from transformers import AutoModelForCausalLM

    from mcoder.models import load_model

    ckpt = tmp_path / "checkpoint"
    make_checkpoint(tiny_model, ckpt, lora_rank=4)
    assert (ckpt / "adapter_config.json").is_file() and (ckpt / "trainer" / "optimizer.pt").is_file()
    out = tmp_path / "merged"
    r = CliRunner().invoke(app, ["export", str(ckpt), "--out", str(out), "--merge-lora"])
    assert r.exit_code == 0, r.output
    assert not (out / "adapter_config.json").exists() and (out / "config.json").is_file()
    assert "merged into the base weights" in (out / "README.md").read_text()

    peft_logits = logits(load_model(ckpt, dtype="float32", device="cpu"))  # base + adapter, unmerged
    merged = logits(AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32))
    base = logits(AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32))
    assert (peft_logits - base).abs().max() > 1e-2, "the adapter changes the model"
    diff = float((merged - peft_logits).abs().max())
    print(f"max |merged - PEFT| logit {diff:.2e}")
    assert diff < 1e-4


def test_from_pretrained_loads_a_lora_checkpoint_on_its_base(tiny_model, tmp_path):
    """transformers reads the adapter folder itself (with peft installed): base + adapter."""
    from transformers import AutoModelForCausalLM

    from mcoder.models import load_model

    ckpt = tmp_path / "checkpoint"
    make_checkpoint(tiny_model, ckpt, lora_rank=4)
    direct = logits(AutoModelForCausalLM.from_pretrained(ckpt, dtype=torch.float32))
    assert torch.allclose(direct, logits(load_model(ckpt, dtype="float32", device="cpu")), atol=1e-5)
