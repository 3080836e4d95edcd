"""benchmarks/train_speed.py picks its model without downloading one: the tiny default, or a real
Qwen3 shape cut in depth and vocabulary, counted on an empty (meta-device) model. The timed run
itself (two trainers in subprocesses) is too slow for the test suite."""

from __future__ import annotations

import argparse

import pytest


@pytest.fixture(scope="module")
def bench():
    from benchmarks import train_speed

    return train_speed


def _args(shape=None, layers=None, model_vocab=None):
    return argparse.Namespace(shape=shape, layers=layers, model_vocab=model_vocab)


def test_default_is_the_tiny_model(bench):
    from mcoder.testing import TinySpec

    spec, name = bench.model_spec(_args())
    assert spec == TinySpec()
    assert name.startswith("tiny Qwen3")
    assert 0.4e6 < bench.parameter_count(spec) < 0.45e6


def test_a_cut_shape_is_float32_and_counts_its_parameters(bench):
    spec, name = bench.model_spec(_args("qwen3-0.6b", layers=4, model_vocab=1024))
    assert (spec.layers, spec.hidden, spec.model_vocab, spec.dtype) == (4, 1024, 1024, "float32")
    assert "qwen3-0.6b" in name
    assert bench.parameter_count(spec) == 63_973_376  # 4 x 15.7M per layer + 1M tied embeddings
    full, _ = bench.model_spec(_args("qwen3-0.6b", layers=2))
    assert full.model_vocab == 151936  # the real vocabulary unless cut


@pytest.mark.parametrize(
    "args", [_args(model_vocab=4096), _args("qwen3-9b"), _args("qwen3-0.6b", model_vocab=100)]
)
def test_bad_model_options_exit(bench, args):
    with pytest.raises(SystemExit):
        bench.model_spec(args)
