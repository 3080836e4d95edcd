"""`python -m mcoder.testing DIR --shape qwen3-...`: random models with the architecture of the real
Qwen3 checkpoints. The fast tests build each shape's config and an empty (meta-device) model and
check its numbers against the model cards; the slow one writes the smallest shape and loads it."""

from __future__ import annotations

import json

import pytest

from mcoder.testing import SHAPES, build_config

# (layers, hidden, heads, kv heads, intermediate, non-embedding parameters on the model card)
CARDS = {
    "qwen3-0.6b": (28, 1024, 16, 8, 3072, 0.44e9),
    "qwen3-1.7b": (28, 2048, 16, 8, 6144, 1.4e9),
    "qwen3-4b": (36, 2560, 32, 8, 9728, 3.6e9),
}


@pytest.mark.parametrize("name", sorted(CARDS))
def test_shape_has_the_real_architecture(name):
    import torch
    from transformers import Qwen3ForCausalLM

    layers, hidden, heads, kv_heads, inter, non_embedding = CARDS[name]
    config = build_config(SHAPES[name], vocab_size=1024, eos_id=2, pad_id=0)
    got = (
        config.num_hidden_layers,
        config.hidden_size,
        config.num_attention_heads,
        config.num_key_value_heads,
        config.intermediate_size,
    )
    assert got == (layers, hidden, heads, kv_heads, inter)
    assert (config.head_dim, config.vocab_size, config.tie_word_embeddings) == (128, 151936, True)
    assert config.rope_parameters["rope_theta"] == 1_000_000.0

    with torch.device("meta"):  # shapes only, no memory
        model = Qwen3ForCausalLM(config)
    total = sum(p.numel() for p in model.parameters())  # the tied output layer counted once
    assert abs((total - 151936 * hidden) / non_embedding - 1) < 0.03, total


def test_layers_can_be_cut_for_a_cheaper_model_of_the_same_width():
    from dataclasses import replace

    config = build_config(replace(SHAPES["qwen3-1.7b"], layers=2), vocab_size=1024, eos_id=2, pad_id=0)
    assert (config.num_hidden_layers, config.hidden_size, config.vocab_size) == (2, 2048, 151936)


@pytest.mark.slow
def test_smallest_shape_is_written_and_loads(tmp_path):
    import torch

    from mcoder.models import load_model, load_tokenizer
    from mcoder.testing import main

    assert main([str(tmp_path), "--shape", "qwen3-0.6b"]) == 0
    config = json.loads((tmp_path / "config.json").read_text())
    assert (config["num_hidden_layers"], config["hidden_size"], config["vocab_size"]) == (28, 1024, 151936)
    model = load_model(tmp_path, dtype="bfloat16", device=None)
    tok = load_tokenizer(tmp_path)
    assert sum(p.numel() for p in model.parameters()) == pytest.approx(596e6, rel=0.01)
    ids = torch.tensor([tok("def solve():").input_ids])
    with torch.no_grad():
        logits = model(ids).logits
    assert logits.shape[-1] == 151936 and torch.isfinite(logits).all()


@pytest.mark.slow
def test_the_tiny_model_command_prints_its_path_and_nothing_else(tmp_path):
    """`python -m mcoder.testing DIR` (the README's first step): the path on stdout, and no progress
    bar of transformers on stderr (it drew "Writing model shards: 100%|...")."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "mcoder.testing", str(tmp_path / "tiny")],
                          capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{tmp_path / 'tiny'}\n" and done.stderr == "", done.stderr
