"""Files `mcoder train` can be trusted with: one writer per checkpoint or run folder (two real
processes), a rerun that goes on only with the settings and inputs it started with, and rollouts
or verdicts that disagree refused as bad data."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from conftest import sandbox_or_skip
from mcoder.cli.app import app
from train_records import write_batch

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "problems"

# A real second process that holds an output's lock until it is killed.
HOLDER = "import sys, time\nfrom mcoder.outputs import hold_lock\nwith hold_lock(sys.argv[1]):\n    print('held', flush=True)\n    time.sleep(600)\n"


@pytest.fixture(scope="module")
def batch(tiny_model, tmp_path_factory):
    prompts = {"a": "sum", "b": "sort"}
    return write_batch(
        tiny_model, tmp_path_factory.mktemp("batch"), prompts, n=2, max_tokens=8, temperature=0.9,
        reward=lambda r: r.sample_index,
    )  # fmt: skip


def _train(
    model: Path,
    batch: Path,
    out: Path,
    *extra: str,
    rollouts: Path | None = None,
    verdicts: Path | None = None,
):
    args = ["train", "-m", str(model), "-r", str(rollouts or batch / "r.jsonl"), "--verdicts",
            str(verdicts or batch / "v.jsonl"), "-o", str(out), "--lr", "1e-3", *extra]  # fmt: skip
    return CliRunner().invoke(app, args)


class Holder:
    """``python -c HOLDER OUT`` running: OUT is locked by another process until ``stop``."""

    def __init__(self, out: Path):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(out)], stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout.readline().strip() == "held"

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


def test_a_second_writer_of_a_checkpoint_exits_2_naming_the_holder(tiny_model, batch, tmp_path):
    out = tmp_path / "ck"
    holder = Holder(out)
    try:
        r = _train(tiny_model, batch, out)
        assert r.exit_code == 2, r.output
        assert str(out) in r.stderr and f"pid {holder.proc.pid}" in r.stderr
        assert not out.exists(), "nothing written while another process holds the checkpoint"
    finally:
        holder.stop()
    r = _train(tiny_model, batch, out)  # the holder was killed: its lock is taken over
    assert r.exit_code == 0, r.output


def test_a_rerun_goes_on_only_with_the_same_settings_and_inputs(tiny_model, batch, tmp_path):
    out = tmp_path / "ck"
    assert _train(tiny_model, batch, out).exit_code == 0
    state = (out / "trainer" / "trainer_state.json").read_text()
    again = _train(tiny_model, batch, out)
    assert again.exit_code == 0 and "nothing to do" in again.stderr
    assert (out / "trainer" / "trainer_state.json").read_text() == state, "a finished update is not redone"
    other = _train(tiny_model, batch, out, "--lr", "5e-3")
    assert other.exit_code == 2 and "lr" in other.stderr and "--overwrite" in other.stderr
    changed = tmp_path / "v2.jsonl"
    changed.write_bytes((batch / "v.jsonl").read_bytes().replace(b'"reward":1.0', b'"reward":0.5'))
    assert _train(tiny_model, batch, out, verdicts=changed).exit_code == 2
    # --overwrite is a transaction: a mistyped or malformed input leaves the trained checkpoint
    files = {f: f.read_bytes() for f in out.rglob("*") if f.is_file()}
    assert _train(tiny_model, batch, out, "--overwrite", verdicts=tmp_path / "typo.jsonl").exit_code == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"rollout_id": \n')
    assert _train(tiny_model, batch, out, "--overwrite", verdicts=bad).exit_code == 3
    assert {f: f.read_bytes() for f in out.rglob("*") if f.is_file()} == files
    assert _train(tiny_model, batch, out).exit_code == 0  # still ours, still finished
    assert _train(tiny_model, batch, out, "--lr", "5e-3", "--overwrite").exit_code == 0


def test_an_output_that_is_not_a_checkpoint_is_never_touched(tiny_model, batch, tmp_path):
    mine = tmp_path / "notes"
    mine.mkdir()
    (mine / "thesis.txt").write_text("mine")
    r = _train(tiny_model, batch, mine, "--overwrite")
    assert r.exit_code == 2 and "not an output of this stage" in r.stderr
    assert (mine / "thesis.txt").read_text() == "mine"


def test_duplicate_rollout_ids_and_mismatched_verdicts_are_bad_data(tiny_model, batch, tmp_path):
    lines = (batch / "r.jsonl").read_bytes().splitlines(keepends=True)
    dup = tmp_path / "dup.jsonl"
    dup.write_bytes(b"".join(lines + lines[:1]))
    r = _train(tiny_model, batch, tmp_path / "ck1", rollouts=dup)
    assert r.exit_code == 3 and f"dup.jsonl:{len(lines) + 1}" in r.stderr and "duplicate id" in r.stderr, (
        r.output
    )
    verdicts = [orjson.loads(x) for x in (batch / "v.jsonl").read_bytes().splitlines()]
    verdicts[0]["problem_id"] = "someone-else"
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"".join(orjson.dumps(v) + b"\n" for v in verdicts))
    r = _train(tiny_model, batch, tmp_path / "ck2", verdicts=bad)
    assert r.exit_code == 3 and "someone-else" in r.stderr and "problem_id" in r.stderr, r.output


def _loop_args(model: Path, run: Path, steps: int) -> list[str]:
    return ["loop", "-m", str(model), "-p", str(EXAMPLES / "stdin.jsonl"), "--run-dir", str(run),
            "--steps", str(steps), "-n", "2", "--train-batch-size", "2", "--max-tokens", "8", "--temperature", "1.0",
            "--workers", "1", "--seed", "3"]  # fmt: skip


def test_two_loops_on_one_run_folder_the_second_exits_2(tiny_model, tmp_path):
    run = tmp_path / "run"
    holder = Holder(run)  # a real other process holds RUN as a running loop does
    try:
        r = subprocess.run([sys.executable, "-m", "mcoder", *_loop_args(tiny_model, run, 1)],
                           capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
        assert r.returncode == 2, r.stderr[-2000:]
        assert str(run) in r.stderr and f"pid {holder.proc.pid}" in r.stderr
        assert not (run / "metrics.jsonl").exists()
    finally:
        holder.stop()


def test_a_running_loop_holds_its_run_folder(tiny_model, tmp_path):
    """The lock a loop takes is the one a second loop meets: started for many steps, a second
    loop on its folder is refused while it runs."""

    sandbox_or_skip()
    run = tmp_path / "run"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    first = subprocess.Popen([sys.executable, "-m", "mcoder", *_loop_args(tiny_model, run, 500)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not (run / "metrics.jsonl").exists() and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.2)
        assert (run / "metrics.jsonl").exists(), "the first loop ran a step"
        second = CliRunner().invoke(app, _loop_args(tiny_model, run, 500))
        assert second.exit_code == 2 and f"pid {first.pid}" in second.stderr, second.output
    finally:
        first.kill()
        first.wait()
    steps = [orjson.loads(x)["step"] for x in (run / "metrics.jsonl").read_bytes().splitlines()]
    assert steps == sorted(set(steps)), "only one writer's steps"


def test_rerunning_a_finished_loop_says_there_is_nothing_to_do(tiny_model, tmp_path):
    run = tmp_path / "run"
    r = CliRunner().invoke(app, _loop_args(tiny_model, run, 1))  # the default sandboxed judge
    assert r.exit_code == 0, r.output
    again = CliRunner().invoke(app, _loop_args(tiny_model, run, 1))
    assert again.exit_code == 0 and "nothing to do" in again.stderr and "steps 2..1" not in again.stderr
    assert again.stdout.strip().endswith(str(run / "checkpoint"))
    assert json.loads((run / "checkpoint" / "trainer" / "trainer_state.json").read_text())["loop_step"] == 1


def test_a_verdict_of_an_unknown_rollout_or_a_repeated_one_is_bad_data_naming_rollout_id(tiny_model, batch, tmp_path):
    lines = (batch / "v.jsonl").read_text().splitlines()
    stray = {**json.loads(lines[0]), "rollout_id": "not-in-the-batch/0/0"}
    cases = {
        "unknown.jsonl": ([*lines, json.dumps(stray)], "not in the rollouts file", len(lines) + 1),
        "repeated.jsonl": ([*lines, lines[0]], "duplicate rollout_id", len(lines) + 1),
    }
    for name, (rows, words, line) in cases.items():
        verdicts = tmp_path / name
        verdicts.write_text("\n".join(rows) + "\n")
        res = _train(tiny_model, batch, tmp_path / f"ckpt-{name}", verdicts=verdicts)
        assert res.exit_code == 3, res.output
        assert words in res.stderr and f"{name}:{line}" in res.stderr and "field 'rollout_id'" in res.stderr, res.stderr
