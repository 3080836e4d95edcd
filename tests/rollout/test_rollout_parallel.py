"""`mcoder rollout --tensor-parallel-size`: a vLLM setting; the hf engine refuses it with a hint."""

from __future__ import annotations

import dataclasses
import importlib.util

import orjson
import pytest
from tests.rollout_models import problems
from typer.testing import CliRunner

from mcoder.cli.app import app


@pytest.fixture
def src(tmp_path):
    path = tmp_path / "problems.jsonl"
    path.write_bytes(b"".join(orjson.dumps(dataclasses.asdict(p)) + b"\n" for p in problems(2)))
    return path


def rollout(tiny_model, src, out, *extra):
    args = ["rollout", "--problems", str(src), "--model", str(tiny_model), "--out", str(out),
            "--n", "2", "--max-tokens", "4", *extra]  # fmt: skip
    return CliRunner().invoke(app, args)


def test_hf_engine_refuses_tensor_parallel_with_a_hint(tiny_model, src, tmp_path):
    res = rollout(tiny_model, src, tmp_path / "r.jsonl", "--engine", "hf", "--tensor-parallel-size", "2")
    assert res.exit_code == 2
    assert "needs the vllm engine" in res.stderr and "--engine vllm" in res.stderr
    assert not (tmp_path / "r.jsonl").exists()


def test_tensor_parallel_size_must_be_positive(tiny_model, src, tmp_path):
    res = rollout(tiny_model, src, tmp_path / "r.jsonl", "--engine", "hf", "--tensor-parallel-size", "0")
    assert res.exit_code == 2 and "must be >= 1" in res.stderr


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed here")
def test_auto_engine_without_vllm_cannot_split_the_model(tiny_model, src, tmp_path):
    res = rollout(tiny_model, src, tmp_path / "r.jsonl", "--tensor-parallel-size", "2")
    assert res.exit_code == 4
    assert "vllm is not installed" in res.stderr and "pip install" in res.stderr


def test_tensor_parallel_size_reaches_vllm(monkeypatch, tiny_model, src, tmp_path):
    """The flag arrives in vllm.LLM's arguments. A fake vllm module stands in for the engine:
    a second GPU, which a real tensor-parallel run needs, cannot be had here."""
    import sys
    import types

    seen = {}

    class FakeLLM:
        def __init__(self, **kwargs):
            seen.update(kwargs)
            raise RuntimeError("stop after construction")

    fake = types.SimpleNamespace(LLM=FakeLLM, envs=types.SimpleNamespace())  # envs: read while the engine is built
    monkeypatch.setitem(sys.modules, "vllm", fake)
    monkeypatch.setattr("mcoder.engines.factory.vllm_available", lambda: True)
    res = rollout(tiny_model, src, tmp_path / "r.jsonl", "--engine", "vllm", "--tensor-parallel-size", "2")
    assert seen.get("tensor_parallel_size") == 2
    assert res.exit_code == 1  # the fake's own stop, reported as an internal error


@pytest.mark.parametrize(
    "extra, words",
    [
        (["--engine", "hf", "--data-parallel-size", "2"], "needs the vllm engine"),
        (
            ["--engine", "vllm", "--data-parallel-size", "2", "--temperature", "auto"],
            "each replica would choose",
        ),
        (["--engine", "vllm", "--data-parallel-size", "0"], "must be >= 1"),
    ],
)
def test_data_parallel_flag_errors(tiny_model, src, tmp_path, extra, words):
    res = rollout(tiny_model, src, tmp_path / "r.jsonl", *extra)
    assert res.exit_code == 2 and words in res.stderr, res.output


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed here")
def test_data_parallel_without_vllm_exits_4(tiny_model, src, tmp_path):
    res = rollout(tiny_model, src, tmp_path / "r.jsonl", "--data-parallel-size", "2")
    assert res.exit_code == 4 and "vllm" in res.stderr


def test_a_replica_is_given_every_setting_of_the_run(tmp_path):
    """The replicas' command lines come from the config's fields, not a hand-kept list: read back
    by the real `rollout` parser, they give the run's config on the replica's own part and output."""
    import typer.main

    from mcoder.cli.rollout import make_config
    from mcoder.rollout.config import RolloutConfig
    from mcoder.rollout.data_parallel import _PER_REPLICA, _child_args

    cfg = RolloutConfig(
        problems=tmp_path / "p.jsonl", model="M", out=tmp_path / "o.jsonl", adapter=tmp_path / "ad", n=3,
        max_tokens=77, temperature="0.7", step=4, top_k=5, top_p=0.9, seed=11, policy_version=2, batch_size=9,
        tensor_parallel_size=2, data_parallel_size=2, engine="vllm", long_prompts="error", overwrite=True,
        quiet=True, diversity_target=0.3, temperature_candidates=(0.5, 1.0), probe_problems=3,
    )  # fmt: skip
    args = _child_args(cfg, tmp_path / "part.jsonl", tmp_path / "part-out.jsonl")
    command = typer.main.get_command(app).commands["rollout"]  # type: ignore[attr-defined]
    back = make_config(command.make_context("rollout", args).params)
    for f in dataclasses.fields(RolloutConfig):
        if f.name not in _PER_REPLICA:
            assert getattr(back, f.name) == getattr(cfg, f.name), f.name
    assert (back.problems, back.out, back.engine, back.data_parallel_size) == (
        tmp_path / "part.jsonl",
        tmp_path / "part-out.jsonl",
        "vllm",
        1,
    )
