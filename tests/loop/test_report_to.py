"""`--report-to tensorboard --report-to wandb`: every metric of every step, named as in
metrics.jsonl, read back with each library's own reader (TensorBoard's EventAccumulator, W&B's
`wandb leet inspect` of the offline run's .wandb log); a run killed and resumed logs no step twice."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from conftest import sandbox_or_skip
from mcoder.cli.app import app
from mcoder.reporting import scalars
from train_records import write_batch

pytest.importorskip("tensorboard", reason="--report-to needs the report extra (make test installs it)")
pytest.importorskip("wandb", reason="--report-to needs the report extra (make test installs it)")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "problems"
BOTH = ["--report-to", "tensorboard", "--report-to", "wandb"]


@pytest.fixture(autouse=True)
def offline_wandb(monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")  # no network, no account: the run stays in RUN/wandb
    monkeypatch.setenv("WANDB_SILENT", "true")


def tensorboard_steps(folder: Path) -> dict[str, list[tuple[int, float]]]:
    """tag -> [(step, value)] as TensorBoard shows them (earlier runs' purged events left out)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(folder), size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def wandb_history(wandb_dir: Path) -> list[dict]:
    """The history rows of every offline run under ``wandb_dir``, in order, from W&B's reader."""
    rows, run_ids = [], set()
    for log in sorted(wandb_dir.glob("offline-run-*/run-*.wandb")):
        out = subprocess.run(
            [sys.executable, "-m", "wandb", "leet", "inspect", str(log), "--json"],
            capture_output=True, text=True, timeout=120, check=True,
        )  # fmt: skip
        for line in out.stdout.splitlines():
            record = json.loads(line)
            if record["type"] == "run":
                run_ids.add(record["run"]["run_id"])
            elif record["type"] == "history":
                rows.append(record["history"]["item"])
    assert len(run_ids) == 1, f"one W&B run, resumed: {run_ids}"
    return rows


def assert_same(logged: float, want: float) -> None:
    assert math.isclose(logged, want, rel_tol=1e-6, abs_tol=1e-6), (logged, want)


def check_tensorboard(folder: Path, by_step: dict[int, dict]) -> None:
    tags = tensorboard_steps(folder / "tensorboard")
    for step, metrics in by_step.items():
        for name, value in scalars(metrics).items():
            points = [v for s, v in tags.get(name, []) if s == step]
            assert len(points) == 1, f"{name} at step {step}: {points}"
            assert_same(points[0], value)
    assert {s for points in tags.values() for s, _ in points} == set(by_step)


def test_chained_updates_draw_one_curve_in_both_loggers(tiny_model, tmp_path):
    batch = write_batch(
        tiny_model, tmp_path / "batch", {"a": "sum", "b": "sort"}, n=2, max_tokens=8, temperature=0.9,
        reward=lambda r: r.sample_index,
    )  # fmt: skip
    run = tmp_path / "run"
    start = tiny_model
    for name in ("ck1", "ck2"):  # the second update continues the first checkpoint (step 2)
        args = ["train", "-m", str(start), "-r", str(batch / "r.jsonl"), "--verdicts", str(batch / "v.jsonl"),
                "-o", str(run / name), "--lr", "1e-3", "-q", *BOTH]  # fmt: skip
        r = CliRunner().invoke(app, args)
        assert r.exit_code == 0, r.output
        assert r.stdout.splitlines()[-1] == str(run / name), "stdout: the metrics line and the path only"
        start = run / name
    by_step = {i: json.loads((run / f"ck{i}" / "metrics.json").read_text()) for i in (1, 2)}
    check_tensorboard(run, by_step)

    rows = wandb_history(run / "wandb")
    assert [row["_step"] for row in rows] == [1, 2]
    for row in rows:
        for name, value in scalars(by_step[row["_step"]]).items():
            assert_same(row[name], value)


def test_report_to_choices_are_checked_before_anything_loads(tmp_path):
    base = ["train", "-m", str(tmp_path), "-r", "r", "--verdicts", "v", "-o", str(tmp_path / "o")]
    r = CliRunner().invoke(app, [*base, "--report-to", "mlflow"])
    assert r.exit_code == 2 and "unknown --report-to 'mlflow'" in r.stderr
    r = CliRunner().invoke(app, [*base, "--report-to", "none", "--report-to", "wandb"])
    assert r.exit_code == 2 and "none goes alone" in r.stderr


# ---------------------------------------------------------------- the loop, killed and resumed


def _loop_cmd(model: Path, run: Path) -> list[str]:
    return [
        sys.executable, "-m", "mcoder", "loop", "--model", str(model),
        "--problems", str(EXAMPLES / "stdin.jsonl"), "--run-dir", str(run), "--steps", "4", "--save-every", "2",
        "-n", "2", "--train-batch-size", "2", "--max-tokens", "8", "--temperature", "1.0", "--lr", "1e-3",
        "--workers", "1", "--seed", "5", "-q", *BOTH,
    ]  # fmt: skip


def _metric_steps(run: Path) -> list[int]:
    try:
        return [orjson.loads(x)["step"] for x in (run / "metrics.jsonl").read_bytes().splitlines()]
    except (FileNotFoundError, orjson.JSONDecodeError):
        return []


@pytest.mark.slow
def test_a_killed_loop_resumed_logs_every_step_once(tiny_model, tmp_path):

    sandbox_or_skip()
    run = tmp_path / "run"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "WANDB_MODE": "offline", "WANDB_SILENT": "true"}
    env.pop("WANDB_SERVICE", None)  # each run starts its own W&B service
    # killed once step 3 is logged everywhere but not checkpointed (checkpoints at steps 2 and 4)
    proc = subprocess.Popen(
        _loop_cmd(tiny_model, run), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    deadline = time.monotonic() + 300
    while _metric_steps(run) != [1, 2, 3] and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _metric_steps(run) == [1, 2, 3], (
        proc.stderr.read().decode() if proc.poll() is not None else "timeout"
    )
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    killed_run = {
        orjson.loads(x)["step"]: orjson.loads(x) for x in (run / "metrics.jsonl").read_bytes().splitlines()
    }

    done = subprocess.run(
        _loop_cmd(tiny_model, run), capture_output=True, text=True, env=env, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(run / "checkpoint")
    metrics = {m["step"]: m for m in map(orjson.loads, (run / "metrics.jsonl").read_bytes().splitlines())}
    assert list(metrics) == [1, 2, 3, 4], "step 3 was redone, once"

    check_tensorboard(run, metrics)  # the redone step 3 as metrics.jsonl has it, the killed one purged

    rows = wandb_history(run / "wandb")
    assert sorted(row["_step"] for row in rows) == [1, 2, 3, 4], "every step once in the resumed W&B run"
    for row in rows:  # a step W&B kept from the killed run keeps its values (W&B cannot step back)
        step = row["_step"]
        wants = [m for m in (metrics[step], killed_run.get(step)) if m is not None]
        assert any(
            all(math.isclose(row[k], v, rel_tol=1e-6, abs_tol=1e-6) for k, v in scalars(want).items())
            for want in wants
        ), f"step {step}"


# ---------------------------------------------------------------- the loggers' folders go through the guard


def _tree(p: Path) -> dict:
    return {str(f.relative_to(p)): f.read_bytes() for f in sorted(p.rglob("*")) if f.is_file()}


@pytest.mark.parametrize("kind", ["tensorboard", "wandb"])
def test_a_loggers_folder_of_the_users_is_refused_not_written_into(kind, tmp_path, tiny_model):
    """A tensorboard/ or wandb/ beside OUT that mcoder did not make: TensorBoard would hide the
    user's earlier series behind the new ones (purge_step), W&B would add a run to theirs."""
    batch = write_batch(tiny_model, tmp_path / "batch", {"a": "sum"}, n=2, max_tokens=8, temperature=0.9,
                        reward=lambda r: r.sample_index)  # fmt: skip
    theirs = tmp_path / "out" / kind
    theirs.mkdir(parents=True)
    (theirs / "events.out.tfevents.1.host").write_bytes(b"the user's own curves")
    before = _tree(theirs)
    r = CliRunner().invoke(app, ["train", "-m", str(tiny_model), "-r", str(batch / "r.jsonl"), "--verdicts",
                                 str(batch / "v.jsonl"), "-o", str(tmp_path / "out" / "ckpt"), "--report-to", kind])  # fmt: skip
    assert r.exit_code == 2, r.output
    assert f"--report-to {kind}" in r.stderr and str(theirs) in r.stderr and "internal error" not in r.stderr
    assert _tree(theirs) == before


def test_a_link_named_tensorboard_is_refused(tmp_path):
    from mcoder.errors import UsageError
    from mcoder.reporting import open_reporters

    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "tensorboard").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UsageError, match="symbolic link"):
        open_reporters(["tensorboard"], tmp_path / "run", purge_from=1)
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_an_unwritable_tensorboard_folder_is_the_environment_named_in_one_line(tmp_path, capfd):
    """Before: TensorBoard's writer thread died with a 50-line traceback and a bytes repr."""
    from mcoder.errors import EnvironmentMissing
    from mcoder.reporting import open_reporters

    folder = tmp_path / "run" / "tensorboard"
    folder.mkdir(parents=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(folder)], check=False,
                      capture_output=True).returncode:  # fmt: skip
        pytest.skip("cannot mount a read-only file system here")
    try:
        with pytest.raises(EnvironmentMissing) as e:
            open_reporters(["tensorboard"], tmp_path / "run", purge_from=1)
        time.sleep(0.5)  # a writer thread, had one started, would have failed by now
    finally:
        subprocess.run(["umount", str(folder)], check=False)
    assert e.value.exit_code == 4 and str(folder) in e.value.message and "b'" not in e.value.message
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Exception in thread" not in err, err


def test_the_loggers_own_folders_are_taken_again(tmp_path):
    from mcoder.reporting import open_reporters

    for _ in range(2):  # made, then resumed: its mark says it is mcoder's
        open_reporters(["tensorboard"], tmp_path, purge_from=1).close()
    assert (tmp_path / "tensorboard" / ".mcoder-tensorboard").exists()
