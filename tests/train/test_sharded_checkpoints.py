"""The FSDP2 trainer's checkpoints through torch.distributed.checkpoint, in one process (a 1-rank
gloo group; 2 ranks, killed and resumed: test_train_distributed.py): a mid-run save holds the
trained weights and AdamW's moments as shards and no weights files; `mcoder export` still gives a
plain Hugging Face folder from it, and a plain one-process trainer resumes from it."""

from __future__ import annotations

import json

import pytest
import torch
import torch.distributed as dist
from typer.testing import CliRunner

from mcoder.cli.app import app
from mcoder.train import distributed as D
from mcoder.train.config import resolve
from mcoder.train.trainer import Trainer
from train_records import sample_rollouts, verdicts_for

SETTINGS = {"lr": 1e-3, "mini_batch_size": 2, "truncation": "none", "weight_decay": 0.1}


@pytest.fixture(scope="module")
def batch(tiny_model):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    tok = AutoTokenizer.from_pretrained(tiny_model)
    rollouts = sample_rollouts(model, tok, {"a": "sum", "b": "sort"}, n=4, max_tokens=8, temperature=0.9)
    return rollouts, verdicts_for(rollouts, lambda r: r.sample_index % 2)


def _whole(t):
    from torch.distributed.tensor import DTensor

    return (t.full_tensor() if isinstance(t, DTensor) else t).detach().clone()


def test_a_mid_run_sharded_save_exports_whole_and_resumes_in_one_process(tiny_model, batch, tmp_path):
    rollouts, verdicts = batch
    D.init_groups("gloo", 60, store=dist.HashStore(), rank=0, world_size=1)
    try:
        trainer = D.FSDPTrainer(str(tiny_model), resolve("microcoder-grpo", SETTINGS))
        trainer.train_on_batch(rollouts, verdicts)
        ck = tmp_path / "ck"
        trainer.save(ck, final=False)
        trainer.wait_for_saves()
        weights = {n: _whole(p) for n, p in trainer.model.named_parameters()}
        moments = {n: {k: _whole(v) for k, v in trainer.optimizer.state[p].items()}
                   for n, p in trainer.model.named_parameters()}  # fmt: skip
    finally:
        D.leave()
    assert (ck / "trainer" / "dcp" / ".metadata").is_file() and (ck / "config.json").is_file()
    assert not list(ck.glob("*.safetensors")) and not (ck / "trainer" / "optimizer.pt").exists()

    out = tmp_path / "export"
    r = CliRunner().invoke(app, ["export", str(ck), "--out", str(out)])
    assert r.exit_code == 0, r.output
    from transformers import AutoModelForCausalLM

    exported = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32)
    for n, p in exported.named_parameters():
        assert torch.equal(p, weights[n]), n
    assert not (out / "trainer").exists() and (out / "tokenizer.json").is_file()

    again = Trainer(str(ck), resolve("microcoder-grpo", SETTINGS))  # one process, no group
    assert again.step == trainer.step and again.source == str(tiny_model), "weights from the base, then the shards"
    for n, p in again.model.named_parameters():
        assert torch.equal(p.detach(), weights[n]), n
        for k, v in again.optimizer.state[p].items():
            assert torch.equal(v, moments[n][k]), (n, k)
    assert json.loads((ck / "trainer" / "trainer_state.json").read_text())["step"] == again.step
