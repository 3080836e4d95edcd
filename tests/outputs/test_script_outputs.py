"""The scripts and benchmarks around the stages (commands/, scripts/, benchmarks/) write, replace or
remove files under a folder the user names. Each must claim that folder first
(mcoder.outputs.claim_folder: commands/common.sh's claim_folder, benchmarks/common.py's claim_out)
and refuse, with exit 2 and nothing touched, what a stage refuses.

Which files must is read from their text, not listed by hand: every file with an output option
(``--out``/``--keep``/``--out-dir``, as argparse or a bash ``case``), a positional output folder, or
a removal (rm -r/-f, rmtree, unlink, os.remove). Each must have a way to be run here (RUN) or a
reason it needs none (EXEMPT); a new one fails until it is given one.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests.outputs.test_output_guard import CASES, _make_node, _state

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("commands", "scripts", "benchmarks")
WRITES = re.compile(
    r"""add_argument\(\s*"--(out|keep|out-dir)"|\("--out",|^\s*--(out|keep|out-dir)\)|"\$\{1:-"""
    r"""|\brm\s+-[a-z]*[rf]|rmtree\(|\.unlink\(|os\.unlink\(|os\.remove\(""",
    re.MULTILINE,
)

# how each is run with its output folder at AT (an env of (name, value) pairs, then argv)
RUN = {
    "commands/demo.sh": ((), ["--smoke", "--out", "AT"]),
    "commands/ci_judge.sh": ((), ["--smoke", "--out", "AT"]),
    "scripts/gpu_carry.sh": ((), ["AT"]),
    "scripts/gpu_rehearse.sh": ((("GPU_IMAGE_VENV", "AT"),), []),
    "scripts/test_torch_compat.sh": ((("TORCH_VENV", "AT"),), []),
    "scripts/record_outputs.sh": ((), ["AT"]),
    "benchmarks/gpu_check.sh": ((), ["--smoke", "--out", "AT"]),
    "benchmarks/gpu_bench.py": ((), ["--smoke", "--out", "AT"]),
    "benchmarks/learning_proof.py": ((), ["--smoke", "--out", "AT"]),
    "benchmarks/long_ablation.py": ((), ["--smoke", "--out", "AT"]),
    "benchmarks/demo_robustness.py": ((), ["--smoke", "--out", "AT"]),
    "benchmarks/difficulty_predict.py": ((), ["--out", "AT"]),
    "benchmarks/dataset_scale.py": ((), ["--keep", "AT", "--data", "DATA", "--no-stages"]),
}
EXEMPT = {
    "commands/judge_sharded.sh": "writes only through `mcoder judge --out` (the stages' own guard)",
    "benchmarks/common.py": "defines claim_out and one_writer, which claim; its --out is the benchmarks'",
    "benchmarks/judge_vs_lcb.py": "unlinks only the temporary files it made",
}


def writers() -> list[str]:
    found = []
    for folder in FOLDERS:
        for p in sorted((ROOT / folder).iterdir()):
            if p.suffix in (".sh", ".py") and WRITES.search(p.read_text()):
                found.append(f"{folder}/{p.name}")
    return found


def test_every_script_that_writes_under_a_users_folder_is_run_here_or_exempt_with_a_reason():
    found = writers()
    assert "commands/demo.sh" in found and "benchmarks/gpu_bench.py" in found  # the scan reads what it should
    missing = [f for f in found if f not in RUN and f not in EXEMPT]
    assert not missing, f"set these up in RUN (or EXEMPT with a reason): {missing}"
    stale = [f for f in [*RUN, *EXEMPT] if f not in found]
    assert not stale, f"no longer write under a user's folder (or were renamed): {stale}"


# the guard's cases a script lets through, and why
SCRIPTS_ALLOW = {
    "input": "no script's input is named by its output option (the demo's problems folder: test_output_guard)",
    "empty": "an empty folder holds nothing to lose: a script may write there",
}


@pytest.mark.parametrize(("script", "case"), [
    pytest.param(script, case, id=f"{script}-{case}")
    for case in CASES  # every case of the CLI's guard test: a new one must be set up here
    if case not in SCRIPTS_ALLOW for script in sorted(RUN)
])  # fmt: skip
def test_the_script_refuses_a_folder_that_is_not_its_own(tmp_path, script, case):
    at = tmp_path / "target"
    if case == "foreign":  # someone's folder, with names the scripts write or remove
        at.mkdir()
        for name in ("notes.txt", "report.txt", "results.json", "requirements.txt", "x.whl"):
            (at / name).write_text("the user's\n")
        (at / "run").mkdir()
        (at / "run" / "keep.py").write_text("keep\n")
    elif case == "link_being_written":  # a link to someone's folder: the script would write through it
        users = tmp_path / "users"
        users.mkdir()
        (users / "keep.txt").write_text("keep\n")
        at.symlink_to(users)
    elif case == "wrong_kind":
        at.write_text("the user's file\n")
    elif case in ("fifo", "device"):
        _make_node(at, case)
    else:
        pytest.fail(f"no script set-up for the guard's case {case!r}")
    data = tmp_path / "data"
    data.mkdir()
    (data / "rllm_codeforces.json").write_text("[]")
    before = {p: _state(p) for p in tmp_path.rglob("*")}
    env_pairs, argv = RUN[script]
    fill = {"AT": str(at), "DATA": str(data)}
    env = {**os.environ, "PY": sys.executable, "PYTHONDONTWRITEBYTECODE": "1"}
    env.update({k: fill.get(v, v) for k, v in env_pairs})
    words = [fill.get(w, w) for w in argv]
    exe = ["bash"] if script.endswith(".sh") else [sys.executable]
    done = subprocess.run(
        [*exe, str(ROOT / script), *words], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert "error:" in done.stderr and str(at) in done.stderr, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert {p: _state(p) for p in tmp_path.rglob("*")} == before


LOCKED = sorted(f for f in RUN if "one_writer(" in (ROOT / f).read_text())


def test_the_benchmarks_that_remove_run_folders_take_the_folders_lock():
    removers = [f for f in RUN if f.endswith(".py") and re.search(r"rmtree\(", (ROOT / f).read_text())]
    assert removers and sorted(removers) == [f for f in LOCKED if f in removers], (removers, LOCKED)


@pytest.mark.parametrize("script", LOCKED)
def test_a_second_run_into_the_same_folder_exits_2_and_touches_nothing(tmp_path, script):
    """Two runs into one folder would delete each other's run folders: while one holds the lock
    (OUT.lock, as every stage), the second exits 2 naming it, before writing anything."""
    from mcoder.outputs import hold_lock

    at = tmp_path / "target"
    env_pairs, argv = RUN[script]
    data = tmp_path / "data"
    data.mkdir()
    (data / "rllm_codeforces.json").write_text("[]")
    fill = {"AT": str(at), "DATA": str(data)}
    with hold_lock(at):
        done = subprocess.run(
            [sys.executable, str(ROOT / script), *[fill.get(w, w) for w in argv]], cwd=tmp_path,
            env={**os.environ, **{k: fill.get(v, v) for k, v in env_pairs}}, capture_output=True, text=True,
            timeout=120, check=False,
        )  # fmt: skip
    assert done.returncode == 2, done.stderr[-2000:]
    assert "being written by another run" in done.stderr and str(os.getpid()) in done.stderr
    assert not at.exists()
