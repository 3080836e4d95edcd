"""`mcoder train` as a user runs it: one batch through the CLI and its errors; `mcoder loop` killed
with SIGKILL after step 2 and rerun."""

from __future__ import annotations

import json
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
from train_records import write_batch

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "problems"


@pytest.fixture(scope="module")
def batch_files(tiny_model, tmp_path_factory):
    prompts = {"a": "sum", "b": "sort"}
    return write_batch(
        tiny_model, tmp_path_factory.mktemp("batch"), prompts, n=2, max_tokens=8, temperature=0.9,
        reward=lambda r: r.sample_index,
    )  # fmt: skip


def test_train_one_batch_writes_a_checkpoint_and_is_not_redone(tiny_model, batch_files, tmp_path):
    args = [
        "train",
        "--model",
        str(tiny_model),
        "--rollouts",
        str(batch_files / "r.jsonl"),
        "--verdicts",
        str(batch_files / "v.jsonl"),
        "--out",
        str(tmp_path / "ck"),
        "--lr",
        "1e-3",
        "--truncation",
        "none",
        "--mini-batch-size",
        "1",
        "-q",
    ]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    metrics = json.loads(r.stdout.splitlines()[0])
    assert r.stdout.splitlines()[1] == str(tmp_path / "ck")
    assert metrics["updates"] == 2 and metrics["temperature"] == 0.9 and metrics["grad_norm"] > 0
    ck = tmp_path / "ck"
    assert {
        "model.safetensors",
        "tokenizer.json",
        "README.md",
        "samples.jsonl",
        "metrics.json",
    } <= {p.name for p in ck.iterdir()}
    # the training state lies beside the model files, in trainer/
    assert {"train_config.json", "optimizer.pt", "trainer_state.json"} == {
        p.name for p in (ck / "trainer").iterdir()
    }
    assert json.loads((ck / "trainer" / "train_config.json").read_text())["truncation"] == "none"
    rows = [json.loads(x) for x in (ck / "samples.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and all("mask_reason" in x for x in rows)

    stamp = (ck / "trainer" / "optimizer.pt").stat().st_mtime_ns
    again = CliRunner().invoke(app, args[:-1])
    assert again.exit_code == 0 and "already finished" in again.stderr
    assert (ck / "trainer" / "optimizer.pt").stat().st_mtime_ns == stamp


def test_truncated_reward_zero_from_the_command_line_scores_every_cut_off_sample_0(tiny_model, batch_files, tmp_path):
    """The random model never stops within 8 tokens: every sample is cut off, so under
    --truncated-reward zero every reward is 0 (the verdicts say 0 and 1) and nothing is learnt;
    the saved config records it."""
    rollouts = [json.loads(x) for x in (batch_files / "r.jsonl").read_text().splitlines()]
    verdicts = [json.loads(x) for x in (batch_files / "v.jsonl").read_text().splitlines()]
    assert {r["finish_reason"] for r in rollouts} == {"length"} and {v["reward"] for v in verdicts} == {0.0, 1.0}
    common = ["train", "--model", str(tiny_model), "--rollouts", str(batch_files / "r.jsonl"),
              "--verdicts", str(batch_files / "v.jsonl"), "--mini-batch-size", "1", "-q"]  # fmt: skip
    r = CliRunner().invoke(app, [*common, "--out", str(tmp_path / "zero"), "--truncated-reward", "zero"])
    assert r.exit_code == 0, r.output
    rows = [json.loads(x) for x in (tmp_path / "zero" / "samples.jsonl").read_text().splitlines()]
    assert [x["reward"] for x in rows] == [0.0] * 4 and all(x["program"] in ("none", "unparsed", "complete") for x in rows)
    assert json.loads(r.stdout.splitlines()[0])["reward/mean"] == 0.0
    assert json.loads((tmp_path / "zero" / "trainer" / "train_config.json").read_text())["truncated_reward"] == "zero"
    judged = CliRunner().invoke(app, [*common, "--out", str(tmp_path / "judged")])
    assert judged.exit_code == 0, judged.output
    rows = [json.loads(x) for x in (tmp_path / "judged" / "samples.jsonl").read_text().splitlines()]
    assert sorted(x["reward"] for x in rows) == [0.0, 0.0, 1.0, 1.0]
    bad = CliRunner().invoke(app, [*common, "--out", str(tmp_path / "bad"), "--truncated-reward", "half"])
    assert bad.exit_code == 2 and "verdict, zero" in bad.stderr


def test_missing_flags_are_a_usage_error(tiny_model):
    r = CliRunner().invoke(app, ["train", "--model", str(tiny_model), "--rollouts", "r.jsonl"])
    assert r.exit_code == 2 and "--verdicts, --out" in r.stderr
    r = CliRunner().invoke(app, ["loop", "--model", str(tiny_model)])
    assert r.exit_code == 2 and "--problems, --run-dir, --steps" in r.stderr
    # the loop's options are not the update's
    r = CliRunner().invoke(app, ["train", "--model", str(tiny_model), "--steps", "2"])
    assert r.exit_code == 2 and "No such option" in r.stderr


def test_missing_verdict_names_the_file(tiny_model, batch_files, tmp_path):
    lines = (batch_files / "v.jsonl").read_text().splitlines()
    (tmp_path / "v.jsonl").write_text("\n".join(lines[:-1]) + "\n")
    r = CliRunner().invoke(
        app,
        [
            "train",
            "--model",
            str(tiny_model),
            "--rollouts",
            str(batch_files / "r.jsonl"),
            "--verdicts",
            str(tmp_path / "v.jsonl"),
            "--out",
            str(tmp_path / "ck"),
        ],
    )
    assert r.exit_code == 3
    assert "v.jsonl" in r.stderr and "no verdict for rollout" in r.stderr
    assert not (tmp_path / "ck").exists()


def test_bad_algo_is_a_usage_error(tiny_model, batch_files, tmp_path):
    r = CliRunner().invoke(
        app,
        [
            "train",
            "--model",
            str(tiny_model),
            "--rollouts",
            str(batch_files / "r.jsonl"),
            "--verdicts",
            str(batch_files / "v.jsonl"),
            "--out",
            str(tmp_path / "ck"),
            "--algo",
            "ppo",
        ],
    )
    assert r.exit_code == 2 and "grpo, dapo, microcoder-grpo" in r.stderr


# ---------------------------------------------------------------- the loop, killed and resumed


def _sandbox_or_skip():

    sandbox_or_skip()


def _loop_cmd(model: Path, run: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "mcoder",
        "loop",
        "--model",
        str(model),
        "--problems",
        str(EXAMPLES / "stdin.jsonl"),
        "--run-dir",
        str(run),
        "--steps",
        "3",
        "--n",
        "2",
        "--train-batch-size",
        "2",
        "--max-tokens",
        "12",
        "--temperature",
        "1.0",
        "--lr",
        "1e-4",
        "--workers",
        "1",
        "--seed",
        "5",
    ]


def _checkpoint_step(run: Path) -> int:
    try:
        return json.loads((run / "checkpoint" / "trainer" / "trainer_state.json").read_text())["loop_step"]
    except (FileNotFoundError, json.JSONDecodeError, KeyError):
        return 0


def test_loop_in_process_runs_a_step_and_extends(tiny_model, tmp_path):
    _sandbox_or_skip()
    run = tmp_path / "run"
    cmd = _loop_cmd(tiny_model, run)[3:]  # the same flags, through the CLI in this process
    cmd[cmd.index("--steps") + 1] = "1"
    r = CliRunner().invoke(app, cmd)
    assert r.exit_code == 0, r.output
    assert _checkpoint_step(run) == 1
    cmd[cmd.index("--steps") + 1] = "2"  # a finished run may be extended; the rest of its config may not
    r = CliRunner().invoke(app, cmd)
    assert r.exit_code == 0 and "resuming after step 1" in r.stderr, r.output
    assert [orjson.loads(x)["step"] for x in (run / "metrics.jsonl").read_bytes().splitlines()] == [1, 2]
    cmd[cmd.index("--lr") + 1] = "1e-2"
    r = CliRunner().invoke(app, cmd)
    assert r.exit_code == 2 and "other settings (lr 0.0001 -> 0.01)" in r.stderr, r.stderr  # the values too


@pytest.mark.slow
def test_loop_killed_after_step_2_resumes_at_step_3(tiny_model, tmp_path):
    _sandbox_or_skip()
    run = tmp_path / "run"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        _loop_cmd(tiny_model, run), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    deadline = time.monotonic() + 300
    while _checkpoint_step(run) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _checkpoint_step(run) == 2, proc.stderr.read().decode() if proc.poll() is not None else "timeout"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL

    done = subprocess.run(
        _loop_cmd(tiny_model, run), capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "resuming after step 2" in done.stderr
    assert "step 1/3" not in done.stderr and "step 3/3" in done.stderr
    assert done.stdout.strip() == str(run / "checkpoint")

    metrics = [orjson.loads(x) for x in (run / "metrics.jsonl").read_bytes().splitlines()]
    assert [m["step"] for m in metrics] == [1, 2, 3]
    for key in (
        "masked_count",
        "diversity/lexical",
        "diversity/program",
        "temperature",
        "time/rollout",
        "time/judge",
        "time/train",
        "tokens_per_s",
        "kl",
        "entropy",
        "clip/low",
        "clip/high",
    ):
        assert key in metrics[-1], key
    state = json.loads((run / "checkpoint" / "trainer" / "trainer_state.json").read_text())
    assert state["loop_step"] == 3 and state["policy_version"] == 3 and state["step"] == 3
    for step in (1, 2, 3):
        d = run / f"step_{step:04d}"
        rollouts = [orjson.loads(x) for x in (d / "rollouts.jsonl").read_bytes().splitlines()]
        verdicts = [orjson.loads(x) for x in (d / "verdicts.jsonl").read_bytes().splitlines()]
        assert len(rollouts) == 4 and {v["rollout_id"] for v in verdicts} == {r["id"] for r in rollouts}
        assert {r["policy_version"] for r in rollouts} == {step - 1}
    assert not list(run.rglob("*.part"))


@pytest.mark.slow
def test_loop_dapo_resamples_when_no_group_has_signal(tiny_model, tmp_path):
    """The random tiny model never passes a test: every group is flat, so dynamic sampling draws
    more problems (up to max_resample_rounds) and then trains on nothing rather than on noise."""
    _sandbox_or_skip()
    run = tmp_path / "run"
    cmd = _loop_cmd(tiny_model, run)[3:]
    cmd[cmd.index("--steps") + 1] = "1"
    r = CliRunner().invoke(app, [*cmd, "--algo", "dapo"])
    assert r.exit_code == 0, r.output
    (m,) = [orjson.loads(x) for x in (run / "metrics.jsonl").read_bytes().splitlines()]
    assert m["resample_rounds"] == 3 and m["samples"] > 4 and m["samples_kept"] == 0
    assert "updates" not in m  # nothing to learn from: no optimizer step
    rollouts = (run / "step_0001" / "rollouts.jsonl").read_bytes().splitlines()
    assert len(rollouts) == m["samples"]


def _one_auto_step(tiny_model, run, *extra: str) -> dict:
    """One loop step with --temperature auto over 2 probe problems (plus ``extra``): its
    temperature.json."""
    _sandbox_or_skip()
    cmd = _loop_cmd(tiny_model, run)[3:]
    cmd[cmd.index("--steps") + 1] = "1"
    cmd[cmd.index("--temperature") + 1] = "auto"
    r = CliRunner().invoke(app, [*cmd, "--probe-problems", "2", *extra])
    assert r.exit_code == 0, r.output
    return json.loads((run / "temperature.json").read_text())


def test_loop_takes_the_diversity_target_and_probe_size_from_the_cli(tiny_model, tmp_path):
    """A target of 0 is reached by the coolest candidate, so the choice shows the flag arrived."""
    record = _one_auto_step(tiny_model, tmp_path / "run", "--diversity-target", "0")
    assert record["target"] == 0.0
    assert record["temperature"] == min(t for t, _ in record["table"])
    assert len(record["pass_rates"]) == len(record["table"])  # the probe is judged whatever the rule


def test_loop_judges_the_diversity_probe_for_the_pass_rate_guard(tiny_model, tmp_path):
    """`auto` also judges the probe (the loop's own judge) and records the pass rate at every
    candidate and the guard asked for; the random tiny model passes nothing, so the guard leaves
    the knee alone."""
    record = _one_auto_step(tiny_model, tmp_path / "run", "--pass-guard", "0.8")
    assert record["pass_guard"] == 0.8
    assert record["pass_rates"] == [0.0] * len(record["table"])
    assert record["by_diversity"] is None and "+guard" not in record["rule"]


def test_loop_spread_rule_records_the_probe_spreads_and_falls_back_to_the_knee_when_none(
    tiny_model, tmp_path
):
    """--temperature-rule spread: the judged probe's within-group reward spread is recorded at
    every candidate; the random tiny model passes nothing, so no group has a spread anywhere and
    the choice is the knee of D(T), said in the rule and the note."""
    record = _one_auto_step(tiny_model, tmp_path / "run", "--temperature-rule", "spread")
    assert record["rule_asked"] == "spread" and record["probe_problems"] == 2
    assert record["spreads"] == [0.0] * len(record["table"])
    assert record["rule"].startswith("spread->") and "no probe group has a reward spread" in record["note"]


def test_loop_auto_temperature_is_measured_again_at_each_stage_and_kept_on_resume(tiny_model, tmp_path):
    """--temperature-stage-steps 2: stages begin at steps 1 and 3 (T holds in between); a run
    stopped after step 2 and resumed to step 3 keeps stage 1 and measures stage 3 afresh."""
    _sandbox_or_skip()
    run = tmp_path / "run"
    cmd = _loop_cmd(tiny_model, run)[3:]
    cmd[cmd.index("--steps") + 1] = "2"
    cmd[cmd.index("--temperature") + 1] = "auto"
    cmd += ["--diversity-target", "9", "--probe-problems", "2", "--temperature-stage-steps", "2"]
    r = CliRunner().invoke(app, cmd)
    assert r.exit_code == 0, r.output
    record = json.loads((run / "temperature.json").read_text())
    assert [s["from_step"] for s in record["stages"]] == [1]
    first = record["stages"][0]
    cmd[cmd.index("--steps") + 1] = "3"
    r = CliRunner().invoke(app, cmd)
    assert r.exit_code == 0, r.output
    record = json.loads((run / "temperature.json").read_text())
    assert [s["from_step"] for s in record["stages"]] == [1, 3]
    assert record["stages"][0] == first  # resumed: the checkpointed stage is not measured again
    # an unreachable target picks the hottest candidate, each time from a fresh measurement
    assert all(s["temperature"] == max(t for t, _ in s["table"]) for s in record["stages"])
    assert record["stages"][1]["table"] != first["table"]  # measured again, from the trained policy
    temps = [orjson.loads(x)["temperature"] for x in (run / "metrics.jsonl").read_bytes().splitlines()]
    assert temps == [first["temperature"]] * 2 + [record["stages"][1]["temperature"]]


def test_loop_rejects_a_negative_stage_length(tiny_model, tmp_path):
    run = tmp_path / "run"
    cmd = _loop_cmd(tiny_model, run)[3:]
    cmd[cmd.index("--temperature") + 1] = "auto"
    cmd += ["--temperature-stage-steps", "-1"]
    r = CliRunner().invoke(app, cmd)
    assert r.exit_code == 2 and "--temperature-stage-steps" in r.output
