"""One way to make a process group, proved from the code: every call of ``init_process_group`` or
``new_group`` in the repository is in ``mcoder.train.distributed``; every module that reaches that
one way is an entry point run here on CPUs under a CUDA stand-in (tests/helpers/cuda_standin:
``torch.cuda.is_available()`` True, NCCL served by gloo for the cuda device alone, tensors on the
CPU), where a group of NCCL alone fails on the first host scalar as it does on a GPU.

benchmarks/gpu_bench.py made its own NCCL-only group: its FSDP2 stage died at the first
micro-batch on a GPU while its --smoke, on gloo, passed. Under the stand-in it fails on a CPU
("No backend type associated with device type cpu"), and the first test names its call."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.standin import ASKED, standin_env

ROOT = Path(__file__).resolve().parents[2]
ONE_WAY_MODULE = "src/mcoder/train/distributed.py"
ONE_WAY = {"setup", "join", "init_groups", "side_group", "make_trainer"}  # what makes or needs a group
GROUP_CALLS = {"init_process_group", "new_group"}

# Each module that reaches the one way, and the test that runs it under the stand-in (a module
# found below that is not here fails test_every_entry_point_is_run_under_the_cuda_standin).
ENTRY_POINTS = {
    "src/mcoder/train/stage.py": "test_entry_point_under_the_cuda_standin[train]",
    "src/mcoder/loop/loop.py": "test_entry_point_under_the_cuda_standin[loop]",
    "benchmarks/gpu_bench.py": "test_benchmarks.py::test_the_gpu_check_without_vllm_passes_its_smoke_run",
    "benchmarks/start_memory.py": "test_train_distributed.py::test_a_two_rank_start_holds_a_shard_and_a_unit_more_than_one_process",
}


def _sources() -> list[Path]:
    """Every Python file of the project but its tests (the library, benchmarks, scripts, examples)."""
    skip = {"tests", "build", "dist"}
    return [
        f
        for f in sorted(ROOT.rglob("*.py"))
        if not any(part.startswith(".") or part in skip for part in f.relative_to(ROOT).parts)
    ]


def _called_name(node: ast.Call) -> str | None:
    fn = node.func
    return fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", None)


def group_calls() -> list[str]:
    """``file:line`` of every call of init_process_group / new_group."""
    found = []
    for f in _sources():
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            if isinstance(node, ast.Call) and _called_name(node) in GROUP_CALLS:
                found.append(f"{f.relative_to(ROOT)}:{node.lineno}")
    return found


def one_way_users() -> set[str]:
    """The modules that import a group-making function of mcoder.train.distributed, or use it
    through the module (``from mcoder.train import distributed``)."""
    users = set()
    for f in _sources():
        rel = str(f.relative_to(ROOT))
        if rel == ONE_WAY_MODULE:
            continue
        tree = ast.parse(f.read_text(), str(f))
        aliases = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "mcoder.train.distributed":
                if {a.name for a in node.names} & ONE_WAY:
                    users.add(rel)
            elif isinstance(node, ast.ImportFrom) and node.module == "mcoder.train":
                aliases |= {a.asname or a.name for a in node.names if a.name == "distributed"}
            elif isinstance(node, ast.Import):
                aliases |= {a.asname for a in node.names if a.name == "mcoder.train.distributed" and a.asname}
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in ONE_WAY
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
            ):
                users.add(rel)
    return users


@pytest.mark.heavy
def test_every_process_group_is_made_by_the_library():
    calls = group_calls()
    assert any(c.startswith(ONE_WAY_MODULE) for c in calls), "the scan finds the library's own calls"
    others = [c for c in calls if not c.startswith(ONE_WAY_MODULE + ":")]
    assert others == [], (
        f"process groups made outside {ONE_WAY_MODULE}: {others}; use mcoder.train.distributed.join "
        "(the cpu:gloo,cuda:nccl group of the device) or side_group"
    )


@pytest.mark.heavy
def test_every_entry_point_is_run_under_the_cuda_standin():
    users = one_way_users()
    assert {"src/mcoder/loop/loop.py", "benchmarks/gpu_bench.py"} <= users  # the scan reads what it should
    assert users == set(ENTRY_POINTS), f"reach the one way: {sorted(users)}; run under the stand-in: {sorted(ENTRY_POINTS)}"


@pytest.mark.heavy
def test_the_standin_fails_a_host_scalar_on_an_nccl_only_group_as_nccl_does(tmp_path):
    """The stand-in itself: NCCL alone refuses a CPU tensor; the library's group takes it."""
    code = """
import torch, torch.distributed as dist
from mcoder.train import distributed as D
assert torch.cuda.is_available() and D.accelerator() == "cuda"
for spec in ("nccl", D.backend_spec("cuda")):
    dist.init_process_group(spec, store=dist.HashStore(), rank=0, world_size=1)
    try:
        dist.all_reduce(torch.ones(1))
        print(spec, "ok")
    except RuntimeError as e:
        print(spec, "failed:", e)
    dist.destroy_process_group()
"""
    done = subprocess.run([sys.executable, "-c", code], env=standin_env(), capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("nccl failed:") and "No backend type associated with device type cpu" in lines[0]
    assert lines[1] == "cpu:gloo,cuda:nccl ok"


def _torchrun(*args: str) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2", "-m", "mcoder", *args]


def _entry_command(name: str, model: Path, tmp: Path) -> list[str]:
    problems = ROOT / "examples" / "problems" / "stdin.jsonl"
    if name == "train":
        from mcoder.jsonl import RecordWriter
        from mcoder.records import Rollout
        from train_records import verdicts_for

        rollouts = [
            Rollout(id=f"p{g}/0/{i}", problem_id=f"p{g}", completion="", sample_index=i,
                    prompt_token_ids=[5, 6, 7], completion_token_ids=[8 + i, 9, 10], temperature=1.0,
                    sampling_logprobs=[-1.0] * 3, finish_reason="stop")
            for g in range(2) for i in range(2)
        ]  # fmt: skip
        with RecordWriter(tmp / "r.jsonl", "id") as w:
            w.write_all(rollouts)
        with RecordWriter(tmp / "v.jsonl", "rollout_id") as w:
            w.write_all(verdicts_for(rollouts, lambda r: r.sample_index % 2).values())
        return _torchrun("train", "-m", str(model), "-r", str(tmp / "r.jsonl"), "--verdicts", str(tmp / "v.jsonl"),
                         "-o", str(tmp / "ckpt"), "--mini-batch-size", "2", "-q")  # fmt: skip
    return _torchrun(
        "loop", "-m", str(model), "-p", str(problems), "--run-dir", str(tmp / "run"), "--steps", "1",
        "-n", "2", "--train-batch-size", "2", "--max-tokens", "8", "--temperature", "1.0", "--workers", "2",
        "--off-policy", "1", "-q",
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("name", ["train", "loop"])
def test_entry_point_under_the_cuda_standin(name, tiny_model, tmp_path):
    """Two ranks under torchrun, each taking its GPU branch: the group asked for is the library's
    cpu:gloo,cuda:nccl (the stand-in says so on stderr), and every collective finds a backend."""
    done = subprocess.run(_entry_command(name, tiny_model, tmp_path), env=standin_env(), cwd=tmp_path,
                          capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    asked = [ln for ln in done.stderr.splitlines() if ln.startswith(ASKED)]
    assert len(asked) == 2 and all("'cpu:gloo,cuda:nccl'" in ln for ln in asked), asked
