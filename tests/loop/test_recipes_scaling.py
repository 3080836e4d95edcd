"""commands/train_multigpu.sh and commands/judge_sharded.sh: they parse, show usage, and run at
--smoke size (2 CPU processes under torchrun; 3 judge shards merged against one run)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import sandbox_or_skip

COMMANDS = Path(__file__).resolve().parents[2] / "commands"
RECIPES = ["train_multigpu.sh", "judge_sharded.sh"]


def run_recipe(name: str, *args: str, cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("mcoder")
    mcoder = str(exe) if exe.exists() else f"{sys.executable} -m mcoder"
    env = {**os.environ, "MCODER": mcoder, "PY": sys.executable}
    return subprocess.run(
        ["bash", str(COMMANDS / name), *args],
        cwd=cwd,
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.parametrize("name", RECIPES)
def test_recipe_parses_and_has_usage(name, tmp_path):
    assert (
        subprocess.run(["bash", "-n", str(COMMANDS / name)], capture_output=True, check=False).returncode == 0
    )
    done = run_recipe(name, "--help", cwd=tmp_path)
    assert done.returncode == 0 and "--smoke" in done.stdout
    bad = run_recipe(name, "--bogus", cwd=tmp_path)
    assert bad.returncode == 2 and "unknown argument --bogus" in bad.stderr


@pytest.mark.slow
def test_judge_sharded_smoke_equals_one_run(tmp_path):

    sandbox_or_skip()
    done = run_recipe("judge_sharded.sh", "--smoke", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "3 shards merged == one run" in done.stdout
    parts = sorted((tmp_path / "runs" / "judge-sharded").glob("verdicts.shard-*-of-3.jsonl"))
    assert len(parts) == 3


@pytest.mark.slow
def test_train_multigpu_smoke_runs_two_processes(tmp_path):

    sandbox_or_skip()
    done = run_recipe("train_multigpu.sh", "--smoke", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    train = tmp_path / "runs" / "multigpu-smoke" / "train"
    metrics = [json.loads(x) for x in (train / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics] == [1, 2] and all(m["processes"] == 2 for m in metrics)
    assert (train / "checkpoint" / "adapter_model.safetensors").exists()
