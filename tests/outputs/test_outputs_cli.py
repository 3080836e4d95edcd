"""One writer per output, with real processes: a second `judge` or `rollout` on the same --out
exits 2 naming the file and the first one's pid; a run killed with -9 leaves a lock that the
rerun takes over, and the rerun completes the output with each record once."""

from __future__ import annotations

import dataclasses
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from tests.rollout_models import problems

from conftest import sandbox_or_skip
from mcoder.outputs import lock_path


def mcoder(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mcoder", *args], check=False, capture_output=True, text=True, timeout=180
    )


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "mcoder", *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def wait_for(check, proc: subprocess.Popen, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert proc.poll() is None, "the first run ended before the check"
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def lines(path: Path) -> int:
    return path.read_text().count("\n") if path.exists() else 0


@pytest.mark.heavy
def test_two_judges_on_one_output_and_a_stale_lock(tmp_path):
    sandbox_or_skip()
    problems_file = tmp_path / "problems.jsonl"
    problems_file.write_text(
        json.dumps({"id": "neg", "source": "t", "question": "", "tests": [{"input": "4\n", "output": "-4\n"}]})
        + "\n"
    )
    slow = "```python\nimport time\ntime.sleep(0.4)\nprint(-int(input()))  # {}\n```"
    rollouts = tmp_path / "rollouts.jsonl"
    rows = [{"id": f"r{i}", "problem_id": "neg", "completion": slow.format(i)} for i in range(16)]
    rollouts.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "v.jsonl"
    part = Path(str(out) + ".part")
    args = ("judge", "-p", str(problems_file), "-r", str(rollouts), "-o", str(out), "-w", "1", "-q")
    first = start(*args)
    try:
        wait_for(lambda: lines(part) >= 1, first)
        second = mcoder(*args)
        assert second.returncode == 2, second.stderr
        assert str(out) in second.stderr and f"pid {first.pid}" in second.stderr
        assert first.poll() is None  # the first is not disturbed
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    assert 1 <= lines(part) < 16
    rerun = mcoder(*args[:-1])
    assert rerun.returncode == 0, rerun.stderr
    assert f"earlier run (pid {first.pid}, no longer running)" in rerun.stderr and "resuming" in rerun.stderr
    ids = [json.loads(x)["rollout_id"] for x in out.read_text().splitlines()]
    assert sorted(ids) == sorted(f"r{i}" for i in range(16))  # each once


def test_two_rollouts_on_one_output(tiny_model, tmp_path):
    src = tmp_path / "problems.jsonl"
    many = [dataclasses.replace(p, id=f"{p.id}-{k}") for k in range(150) for p in problems(2)]
    src.write_bytes(b"".join(orjson.dumps(dataclasses.asdict(p)) + b"\n" for p in many))
    out = tmp_path / "r.jsonl"
    args = ("rollout", "-p", str(src), "-m", str(tiny_model), "-o", str(out), "--engine", "hf",
            "--n", "2", "--max-tokens", "16", "--batch-size", "4", "-q")  # fmt: skip
    first = start(*args)
    try:
        lock = lock_path(out)
        wait_for(lambda: lock.exists() and lock.read_text().strip() == str(first.pid), first)
        second = mcoder(*args)
        assert second.returncode == 2, second.stderr
        assert str(out) in second.stderr and f"pid {first.pid}" in second.stderr
        assert first.poll() is None
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    assert not out.exists()
