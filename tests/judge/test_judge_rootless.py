"""Without root: the judge isolates candidates in a user namespace of its own.

Run for real as an unprivileged user: this test (as root) starts the command or the hostile
sandbox tests under uid 65534, with the Python installation made reachable for that user the
way the judge's own workers do it (a private mount namespace)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from mcoder.judge import sandbox

NOBODY = 65534
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def world_dir():
    d = Path(tempfile.mkdtemp(prefix="mcoder-rootless-"))
    d.chmod(0o777)
    yield d
    subprocess.run(["rm", "-rf", str(d)], check=False)


def as_nobody(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    if os.geteuid() != 0:
        pytest.skip("becoming another user needs root (without root the other tests run rootless already)")
    if not sandbox.user_namespaces_work() or sandbox.landlock_abi() < 6:
        pytest.skip("no user namespaces or Landlock ABI 6 here: rootless mode exits 4 (tested elsewhere)")
    roots = [r for r in sandbox.readable_roots() if r.startswith("/")] + [str(ROOT)]

    def become_nobody() -> None:
        sandbox.expose(roots)
        os.setgroups([])
        os.setresgid(NOBODY, NOBODY, NOBODY)
        os.setresuid(NOBODY, NOBODY, NOBODY)

    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), "LANG": "C.UTF-8"}
    return subprocess.run(
        [sys.executable, *args],
        preexec_fn=become_nobody,
        cwd=cwd,
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=1200,  # a hang guard only: under heavy load the run takes minutes, and nothing here is timed
    )


def test_judge_command_as_an_unprivileged_user(world_dir):
    problems = [{"id": "add", "source": "t", "question": "", "tests": [{"input": "1 2\n", "output": "3\n"}]}]
    codes = {
        "ok": "a, b = map(int, input().split())\nprint(a + b)",
        "kill_parent": "import os\nos.kill(os.getppid(), 9)\nprint(3)",
        "kill_all": "import os, signal\nos.kill(-1, signal.SIGKILL)\nprint(3)",
        "net": "import socket\nsocket.create_connection(('127.0.0.1', 22), timeout=1)\nprint(3)",
        "write": f"open({str(world_dir / 'x.txt')!r}, 'w').write('x')\nprint(3)",
    }
    rollouts = [
        {"id": k, "problem_id": "add", "completion": f"```python\n{c}\n```"} for k, c in codes.items()
    ]
    (world_dir / "p.jsonl").write_text("".join(json.dumps(p) + "\n" for p in problems))
    (world_dir / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rollouts))
    r = as_nobody(
        ["-m", "mcoder", "judge", "-p", "p.jsonl", "-r", "r.jsonl", "-o", "v.jsonl", "-w", "2", "-q"],
        world_dir,
    )
    assert r.returncode == 0, r.stderr
    got = {
        v["rollout_id"]: v["status"]
        for v in map(json.loads, (world_dir / "v.jsonl").read_text().splitlines())
    }
    assert got["ok"] == "accepted"
    assert got["net"] == got["write"] == "runtime_error"
    # its parent is outside its PID namespace (getppid() is 0: kill(0) hits its own group, itself
    # included, which ends it as anywhere else); kill(-1) finds no process of its own to hit
    assert got["kill_parent"] == "runtime_error"
    assert got["kill_all"] == "runtime_error"
    assert not (world_dir / "x.txt").exists()


@pytest.mark.heavy
def test_hostile_programs_as_an_unprivileged_user(world_dir):
    r = as_nobody(
        [
            "-m",
            "pytest",
            str(ROOT / "tests" / "judge" / "test_judge_sandbox.py"),
            "-q",
            "-p",
            "no:cacheprovider",
            "-k",
            "not every_input_idiom",
            "--basetemp",
            str(world_dir / "tmp"),
        ],
        world_dir,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert " passed" in r.stdout


@pytest.mark.heavy
def test_resources_as_an_unprivileged_user(world_dir):
    """Without cgroups: the exit-time CPU check reads the program's own account, the backstop the
    run-queue wait of its process, and the libraries and system calls are as with root. (A slot has
    no CPU share of its own here: the neighbour test is root's alone, as docs/judge.md says.)"""
    r = as_nobody(
        [
            "-m",
            "pytest",
            str(ROOT / "tests" / "judge" / "test_judge_resources.py"),
            "-q",
            "-p",
            "no:cacheprovider",
            "-k",
            "not neighbour",
            "--basetemp",
            str(world_dir / "tmp"),
        ],
        world_dir,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert " passed" in r.stdout
