"""The output guard seen through the stages: --overwrite as a transaction, environment errors as
the user's, the run folder's inputs by content, Ctrl-C in the judge, problems without tests."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mcoder.cli.app import app
from mcoder.outputs import aside_path, claim_output, read_sidecar, sidecar_path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "problems"
ECHO = "```python\nprint(input())\n```"


def _problems(d: Path, n: int = 2) -> Path:
    p = d / "problems.jsonl"
    p.write_text("".join((EXAMPLES / "stdin.jsonl").read_text().splitlines(keepends=True)[:n]))
    return p


def _rollouts(d: Path, problems: Path, completions: list[str], name: str = "rollouts.jsonl") -> Path:
    ids = [json.loads(line)["id"] for line in problems.read_text().splitlines()]
    r = d / name
    r.write_text("".join(
        json.dumps({"id": f"{ids[j % len(ids)]}/0/{j}", "problem_id": ids[j % len(ids)], "completion": c}) + "\n"
        for j, c in enumerate(completions)
    ))  # fmt: skip
    return r


def judge(*args: str):
    return CliRunner().invoke(app, ["judge", "-w", "1", "-q", *map(str, args)])


# ----------------------------------------------------------------------------- --overwrite (H3)


def test_overwrite_keeps_the_old_verdicts_when_the_inputs_are_wrong(tmp_path):
    problems = _problems(tmp_path)
    rollouts = _rollouts(tmp_path, problems, [ECHO, ECHO])
    out = tmp_path / "v.jsonl"
    assert judge("-p", problems, "-r", rollouts, "-o", out).exit_code == 0
    before, meta = out.read_bytes(), read_sidecar(out)
    res = judge("-p", tmp_path / "typo.jsonl", "-r", rollouts, "-o", out, "--timeout-s", "3", "--overwrite")
    assert res.exit_code == 2 and "no such file" in res.stderr, res.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "problem_id": \n')
    res = judge("-p", problems, "-r", bad, "-o", out, "--timeout-s", "3", "--overwrite")
    assert res.exit_code == 3, res.output
    assert out.read_bytes() == before and read_sidecar(out) == meta  # the earlier output, whole
    assert not aside_path(out).exists() and not Path(f"{out}.part").exists()
    res = CliRunner().invoke(app, ["judge", "-p", str(problems), "-r", str(rollouts), "-o", str(out)])
    assert res.exit_code == 0 and "nothing to do" in res.stderr, res.output  # still known as finished


def test_a_run_that_wrote_something_new_drops_the_old_output(tmp_path):
    out = tmp_path / "r.jsonl"
    with claim_output(out, stage="judge", settings={"a": 1}, expect=("rollout_id",)) as c:
        out.write_text('{"rollout_id": "old"}\n')
        c.mark_finished()
    with pytest.raises(RuntimeError), claim_output(out, stage="judge", settings={"a": 2}, overwrite=True, expect=("rollout_id",)):
        Path(f"{out}.part").write_text('{"rollout_id": "new"}\n')
        raise RuntimeError("stopped after the first new record")
    assert not out.exists() and Path(f"{out}.part").read_text() == '{"rollout_id": "new"}\n'
    assert read_sidecar(out)["settings"] == {"a": 2} and not aside_path(out).exists()


KILLED = """
import os, sys
from mcoder.outputs import claim_output
with claim_output(sys.argv[1], stage="judge", settings={"a": 2}, overwrite=True, expect=("rollout_id",)):
    os.kill(os.getpid(), 9)  # killed after the old output was moved aside, before writing
"""


def test_a_killed_overwrite_is_undone_by_the_next_run(tmp_path):
    out = tmp_path / "r.jsonl"
    with claim_output(out, stage="judge", settings={"a": 1}, expect=("rollout_id",)) as c:
        out.write_text('{"rollout_id": "old"}\n')
        c.mark_finished()
    subprocess.run([sys.executable, "-c", KILLED, str(out)], check=False)
    assert not out.exists() and aside_path(out).is_dir()
    with claim_output(out, stage="judge", settings={"a": 1}, expect=("rollout_id",)) as c:
        assert c.finished  # put back, with its record
    assert out.read_text() == '{"rollout_id": "old"}\n' and not aside_path(out).exists()


# ----------------------------------------------------------------------------- the environment


def test_paths_of_the_wrong_shape_are_usage_errors(tmp_path):
    problems = _problems(tmp_path)
    rollouts = _rollouts(tmp_path, problems, [ECHO])
    for out, words in ((problems / "v.jsonl", "is under a file"), (tmp_path, "is a folder")):
        res = judge("-p", problems, "-r", rollouts, "-o", out)
        assert res.exit_code == 2 and words in res.stderr and "hint:" in res.stderr, res.output
        assert "internal error" not in res.stderr


@pytest.fixture
def read_only(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(ro)], check=False, capture_output=True).returncode:
        pytest.skip("cannot mount a read-only file system here")
    yield ro
    subprocess.run(["umount", str(ro)], check=False)


def test_a_read_only_folder_is_the_environment_not_a_bug(tmp_path, read_only):
    problems = _problems(tmp_path)
    rollouts = _rollouts(tmp_path, problems, [ECHO])
    res = judge("-p", problems, "-r", rollouts, "-o", read_only / "v.jsonl")
    assert res.exit_code == 4 and "read-only" in res.stderr and "hint:" in res.stderr, res.output
    verdicts = tmp_path / "v.jsonl"
    assert judge("-p", problems, "-r", rollouts, "-o", verdicts).exit_code == 0
    res = CliRunner().invoke(app, ["bench", "-p", str(problems), "--verdicts", str(verdicts), "--json", str(read_only / "b.json")])
    assert res.exit_code == 4 and "internal error" not in res.stderr, res.output


def test_an_os_error_of_the_environment_met_later_is_not_a_bug(tmp_path, read_only):
    from mcoder.cli.common import environment_error

    try:
        (read_only / "x").write_text("x")
    except OSError as e:
        known = environment_error(e)
    assert known is not None and known.exit_code == 4 and str(read_only / "x") in known.message


# ----------------------------------------------------------------------------- locks


def test_the_stale_lock_notice_names_a_pid_only_as_far_as_it_checked(tmp_path, capsys):
    from mcoder import console
    from mcoder.outputs import lock_path

    out = tmp_path / "r.jsonl"
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock_path(out).write_text(f"{alive.pid}\n")  # left unlocked: its writer is gone, the pid reused
        console.set_quiet(False)
        with claim_output(out, stage="judge", settings={}, expect=("rollout_id",)):
            pass
    finally:
        alive.kill()
        alive.wait()
    err = capsys.readouterr().err
    assert f"pid {alive.pid}" in err and "no longer running" not in err and "another process" in err


# ----------------------------------------------------------------------------- the run folder (H2, H6)


def _loop_cfg(model: Path, problems: Path, run: Path):
    from mcoder.loop.config import LoopConfig

    return LoopConfig(model=str(model), problems=problems, run_dir=run, steps=2)


def test_a_run_folder_resumes_from_the_same_content_and_keeps_its_first_record(tmp_path):
    from mcoder.loop.loop import claim_run_folder
    from mcoder.loop.run_folder import RunFolder

    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text('{"layers": 2}')
    problems = _problems(tmp_path)
    run = tmp_path / "run"
    with claim_run_folder(_loop_cfg(model, problems, run)):
        RunFolder(run).prepare(_loop_cfg(model, problems, run))
    moved = tmp_path / "moved-model"
    model.rename(moved)
    copy = tmp_path / "problems-copy.jsonl"
    copy.write_bytes(problems.read_bytes())
    with claim_run_folder(_loop_cfg(moved, copy, run)) as c:  # moved and copied: the same content
        assert c.resume
        RunFolder(run).prepare(_loop_cfg(moved, copy, run))
    recorded = json.loads((run / "config.json").read_text())
    assert (recorded["model"], recorded["problems"]) == (str(model), str(problems))  # what it trained on
    copy.write_text(copy.read_text().replace("a", "b", 1))  # edited, same size
    with pytest.raises(Exception, match="input problems changed"), claim_run_folder(_loop_cfg(moved, copy, run)):
        pass
    (moved / "config.json").write_text('{"layers": 3}')
    with pytest.raises(Exception, match="input model changed"), claim_run_folder(_loop_cfg(moved, problems, run)):
        pass


def test_a_folder_mcoder_did_not_make_is_not_a_run_folder(tmp_path):
    from mcoder.loop.loop import claim_run_folder

    run = tmp_path / "mine"
    run.mkdir()
    (run / "config.json").write_text('{"my": "settings"}')
    (run / "metrics.jsonl").write_text('{"mine": 1}\n')
    with pytest.raises(Exception, match="no record of the settings") as e, claim_run_folder(_loop_cfg(tmp_path, tmp_path / "p", run)):
        pass
    assert getattr(e.value, "exit_code", None) == 2
    assert (run / "config.json").read_text() == '{"my": "settings"}' and not sidecar_path(run).exists()


# ----------------------------------------------------------------------------- the judge


def test_a_problem_without_tests_is_bad_data_not_a_wrong_answer(tmp_path):
    problems = _problems(tmp_path, 1)
    row = json.loads(problems.read_text())
    problems.write_text(json.dumps({**row, "tests": []}) + "\n")
    rollouts = _rollouts(tmp_path, problems, [ECHO])
    res = judge("-p", problems, "-r", rollouts, "-o", tmp_path / "v.jsonl")
    assert res.exit_code == 3 and "has no tests" in res.stderr and "rollouts.jsonl:1" in res.stderr, res.output
    assert not (tmp_path / "v.jsonl").exists()


SLEEPS = "```python\nimport time\ntime.sleep(30)\n```"


def spawn_for_ctrl_c(argv: list[str]) -> subprocess.Popen:
    """``argv`` in its own session (SIGINT to the whole group, as a terminal's Ctrl-C reaches every
    process in it), with SIGINT at its default: pytest started in the background by a shell without
    job control runs with SIGINT ignored, a child inherits that, and a command started so rightly
    keeps ignoring Ctrl-C (it finished the whole batch, rc 0, and the test failed). A handled signal
    is at its default after exec, so a handler here for the moment of the fork is enough."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, start_new_session=True)
    finally:
        signal.signal(signal.SIGINT, before)


@pytest.mark.heavy
def test_ctrl_c_stops_the_judge_now_without_tracebacks_and_the_rerun_continues(tmp_path):
    problems = _problems(tmp_path, 1)
    rollouts = _rollouts(tmp_path, problems, [ECHO, *[SLEEPS] * 5])
    out = tmp_path / "v.jsonl"
    argv = [sys.executable, "-m", "mcoder", "judge", "-p", str(problems), "-r", str(rollouts), "-o", str(out),
            "-w", "1", "--timeout-s", "1", "--wall-factor", "2", "--no-cache"]  # fmt: skip
    proc = spawn_for_ctrl_c(argv)
    part = Path(f"{out}.part")
    while not (part.exists() and part.read_text().count("\n") >= 1):
        assert proc.poll() is None, proc.stderr.read()
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)
    err = proc.communicate(timeout=120)[1]
    assert proc.returncode == 130 and "interrupted" in err, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    # stopped at once: the candidates queued behind the running one never ran (before the fix the
    # whole batch was judged and written while Ctrl-C waited)
    written = part.read_text().count("\n")
    assert written <= 2, written
    done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "resuming" in done.stderr, done.stderr
    assert sorted(json.loads(v)["rollout_id"] for v in out.read_text().splitlines()) == sorted(
        json.loads(r)["id"] for r in rollouts.read_text().splitlines()
    )


# ----------------------------------------------------------------------------- the low ones


def test_a_negative_worker_count_is_refused():
    res = CliRunner().invoke(app, ["judge", "-p", "p.jsonl", "-r", "r.jsonl", "-o", "v.jsonl", "--workers", "-3"])
    assert res.exit_code == 2 and "--workers -3" in res.stderr, res.output


def test_show_takes_quiet_and_an_empty_file_is_bad_data(tmp_path):
    empty = tmp_path / "r.jsonl"
    empty.touch()
    res = CliRunner().invoke(app, ["show", str(empty), "-q"])
    assert res.exit_code == 3 and "no rollouts" in res.stderr, res.output


def test_a_finished_output_of_stdin_input_is_not_taken_as_done(tmp_path):
    problems = _problems(tmp_path)
    rollouts = _rollouts(tmp_path, problems, [ECHO])
    out = tmp_path / "v.jsonl"
    argv = ["judge", "-w", "1", "-p", str(problems), "-r", "-", "-o", str(out)]
    assert CliRunner().invoke(app, argv, input=rollouts.read_text()).exit_code == 0
    before = out.read_bytes()
    other = _rollouts(tmp_path, problems, [ECHO, ECHO], name="more.jsonl")
    res = CliRunner().invoke(app, argv, input=other.read_text())
    assert res.exit_code == 2 and "comes from stdin" in res.stderr, res.output
    assert out.read_bytes() == before
    res = CliRunner().invoke(app, [*argv, "--overwrite"], input=other.read_text())
    assert res.exit_code == 0 and out.read_text().count("\n") == 2, res.output


def test_what_a_killed_export_left_is_removed_by_the_next(tiny_model, tmp_path):
    import shutil

    ckpt = tmp_path / "ckpt"
    shutil.copytree(tiny_model, ckpt)
    (ckpt / "trainer").mkdir()
    (ckpt / "trainer" / "trainer_state.json").write_text('{"step": 1, "policy_version": 1}')
    (ckpt / "trainer" / "train_config.json").write_text("{}")
    out = tmp_path / "export"
    left = tmp_path / ".export.tmp"  # what a kill during the copy leaves: a half model
    left.mkdir()
    (left / "model.safetensors").write_bytes(b"half")
    res = CliRunner().invoke(app, ["export", str(ckpt), "-o", str(out), "-q"])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    assert (out / "config.json").exists()


def test_rollouts_name_their_model_by_its_absolute_path(tiny_model, tmp_path, monkeypatch):
    problems = _problems(tmp_path, 1)
    monkeypatch.chdir(tiny_model.parent)
    res = CliRunner().invoke(app, ["rollout", "-p", str(problems), "-m", tiny_model.name, "-o", str(tmp_path / "r.jsonl"),
                                   "--n", "1", "--max-tokens", "4", "--engine", "hf", "-q"])  # fmt: skip
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert {r["model"] for r in rows} == {str(tiny_model.resolve())}


def test_a_huge_statement_is_skipped_without_being_tokenized(tiny_model, tmp_path):
    from mcoder.models import load_tokenizer
    from mcoder.records import Problem
    from mcoder.rollout.problems import PromptBudget

    tokenizer = load_tokenizer(tiny_model)
    budget = PromptBudget.of(str(tiny_model), 4)
    longest = max(map(len, tokenizer.get_vocab()))  # no token covers more characters
    huge = Problem(id="huge", source="t", question="x" * (budget.limit * longest + 1), tests=[])
    calls = []
    real = tokenizer.apply_chat_template  # counted, not replaced
    tokenizer.apply_chat_template = lambda *a, **k: calls.append(1) or real(*a, **k)
    assert budget.render(huge, tokenizer) is None and not calls  # known too long without tokenizing
    small = Problem(id="small", source="t", question="add two numbers", tests=[])
    assert budget.render(small, tokenizer) is not None and calls


@pytest.mark.slow  # two real rollout processes on 40 problems
def test_ctrl_c_stops_a_rollout_without_a_traceback_and_the_rerun_continues(tiny_model, tmp_path):
    problems = tmp_path / "problems.jsonl"
    row = json.loads((EXAMPLES / "stdin.jsonl").read_text().splitlines()[0])
    problems.write_text("".join(json.dumps({**row, "id": f"p{i}"}) + "\n" for i in range(40)))
    out = tmp_path / "r.jsonl"
    argv = [sys.executable, "-m", "mcoder", "rollout", "-p", str(problems), "-m", str(tiny_model), "-o", str(out),
            "--n", "2", "--max-tokens", "16", "--engine", "hf", "--batch-size", "2"]  # fmt: skip
    proc = spawn_for_ctrl_c(argv)
    part = Path(f"{out}.part")
    while not (part.exists() and part.read_text().count("\n") >= 2):
        assert proc.poll() is None, proc.stderr.read()
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)
    err = proc.communicate(timeout=120)[1]
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    assert part.read_text().count("\n") < 80  # stopped before the end
    done = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and "resuming" in done.stderr, done.stderr
    assert len({json.loads(line)["id"] for line in out.read_text().splitlines()}) == 80


def test_a_run_folder_refusal_offers_no_flag_the_loop_lacks(tmp_path):
    from mcoder.loop.loop import claim_run_folder

    run = tmp_path / "old-run"
    run.mkdir()
    (run / "config.json").write_text("{}")  # the shape of a run folder, without mcoder's record
    with pytest.raises(Exception, match="no record") as e, claim_run_folder(_loop_cfg(tmp_path, tmp_path / "p", run)):
        pass
    assert "--overwrite" not in e.value.hint and "--run-dir" in e.value.hint


@pytest.fixture
def full_disk(tmp_path):
    """A file system of 256 KiB (a tmpfs): what a full disk does to a write, for real."""
    full = tmp_path / "full"
    full.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(full)], check=False,
                      capture_output=True).returncode:  # fmt: skip
        pytest.skip("cannot mount a small file system here")
    yield full
    subprocess.run(["umount", str(full)], check=False)


def test_a_full_disk_leaves_no_temporary_file_and_names_the_output(tiny_model, tmp_path, full_disk):
    """show --html and export on a full disk: exit 4 naming what was being written (export named
    the checkpoint file it read, show nothing), and nothing left behind (show left .r.html.part)."""
    import shutil

    ckpt = tmp_path / "ckpt"
    shutil.copytree(tiny_model, ckpt)  # 5 MB of weights: more than the disk holds
    (ckpt / "trainer").mkdir()
    (ckpt / "trainer" / "trainer_state.json").write_text('{"step": 1, "policy_version": 1}')
    (ckpt / "trainer" / "train_config.json").write_text("{}")
    rollouts = tmp_path / "r.jsonl"
    rollouts.write_text(json.dumps({"id": "a/0/0", "problem_id": "a", "completion": "x = 1\n" * 80_000}) + "\n")
    for argv, out in ((["export", str(ckpt), "--out", str(full_disk / "exp")], full_disk / "exp"),
                      (["show", str(rollouts), "--html", str(full_disk / "r.html")], full_disk / "r.html")):  # fmt: skip
        res = CliRunner().invoke(app, argv)
        assert res.exit_code == 4, res.output
        assert f"error: {out}: No space left on device" in res.stderr and "internal error" not in res.stderr
        assert sorted(p.name for p in full_disk.iterdir()) == [], argv[0]
