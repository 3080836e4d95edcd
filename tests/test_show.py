"""`mcoder show`: a step folder, a run folder, a rollouts file and one rollout, through the real CLI;
the HTML report checked as a file and opened in a real headless browser (Chromium)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mcoder.cli.app import app
from mcoder.records import Problem, Rollout, Test, from_dict, to_dict

runner = CliRunner()

PROBLEMS = [
    Problem(id="add", source="test", platform="atcoder", difficulty="easy", question="Print a + b.\nInput: a b",
            tests=[Test("1 2\n", "3\n"), Test("5 7\n", "12\n")]),
    Problem(id="double", source="test", platform="codeforces", difficulty="1900", question="Print 2 * n.",
            tests=[Test("4\n", "8\n")]),
]  # fmt: skip
FENCE = "```"
# (rollout id, problem, completion, finish reason): an accepted, a wrong and a crashing program,
# and an output cut off at the length limit inside its code block.
ROLLOUTS = [
    (
        "add/0/0",
        "add",
        f"Sum them.\n{FENCE}python\na, b = map(int, input().split())\nprint(a + b)\n{FENCE}\n",
        "stop",
    ),
    (
        "add/0/1",
        "add",
        f"{FENCE}python\na, b = map(int, input().split())\nprint(a - b)\n{FENCE}\nDone.",
        "stop",
    ),
    (
        "double/0/0",
        "double",
        f"{FENCE}python\nn = int(input())\nraise ValueError('boom ' + str(n))\n{FENCE}",
        "stop",
    ),
    ("double/0/1", "double", f"Let me think.\n{FENCE}python\nn = int(input())\nprint(2 *", "length"),
]
MASKED = "double/0/1"


def mc(*args):
    return runner.invoke(app, [str(a) for a in args])


def _ok(r):
    assert r.exit_code == 0, r.stderr
    return r


def _write(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """A run folder as `train --loop` leaves it: config.json naming the problems, two steps of
    rollouts, verdicts (the real judge) and samples.jsonl rows (the trainer's own Sample.to_row),
    and metrics.jsonl."""
    from mcoder.records import Verdict
    from mcoder.train.batching import Sample

    root = tmp_path_factory.mktemp("show") / "run"
    problems = _write(root.parent / "problems.jsonl", [to_dict(p) for p in PROBLEMS])
    root.mkdir()
    (root / "config.json").write_text(json.dumps({"problems": str(problems)}))
    for step in (1, 2):
        folder = root / f"step_{step:04d}"
        folder.mkdir()
        rollouts = [
            Rollout(id=f"{rid}@{step}", problem_id=pid, completion=text, sample_index=i % 2, finish_reason=finish,
                    completion_token_ids=list(range(10 + 5 * i)), sampling_logprobs=[-0.5 - 0.1 * i] * (10 + 5 * i),
                    temperature=1.0, policy_version=step - 1)
            for i, (rid, pid, text, finish) in enumerate(ROLLOUTS)
        ]  # fmt: skip
        _write(folder / "rollouts.jsonl", [to_dict(r) for r in rollouts])
        verdicts = folder / "verdicts.jsonl"
        _ok(
            mc(
                "judge",
                "-p",
                problems,
                "-r",
                folder / "rollouts.jsonl",
                "-o",
                verdicts,
                "-w",
                1,
                "--unsafe-no-sandbox",
                "-q",
            )
        )
        by_id = {
            v["rollout_id"]: from_dict(Verdict, v) for v in map(json.loads, verdicts.read_text().splitlines())
        }
        rows = []
        for r in rollouts:
            s = Sample(rollout=r, verdict=by_id[r.id], group=0, reward=by_id[r.id].reward)
            s.truncated = s.cut_off = r.finish_reason == "length"
            s.masked = r.id.startswith(MASKED)
            s.mask_reason = "masked_cut_off" if s.masked else "not_truncated"
            s.advantage = 0.0 if s.masked else (1.0 if by_id[r.id].passed else -1.0)
            rows.append(s.to_row())
        _write(folder / "samples.jsonl", rows)
        metrics = {"step": step, "reward/mean": 0.25 * step, "pass_rate": 0.25 * step, "length/mean": 17.5}
        with (root / "metrics.jsonl").open("a") as f:
            f.write(json.dumps(metrics) + "\n")
    return root


def test_a_line_per_group_by_default(run):
    out = _ok(mc("show", run / "step_0001")).stdout.splitlines()
    assert len(out) == 3, out  # two groups and the totals line
    assert out[0].startswith("step 1 add | 1/2 passed | ")
    assert "accepted 1" in out[0] and "wrong_answer 1" in out[0] and "adv +1.00 -1.00" in out[0]
    assert out[1].startswith("step 1 double | 0/2 passed") and "truncated 1, masked 1" in out[1]
    assert out[2].startswith("4 samples, 1 passed, 2 groups")


def test_a_run_folder_shows_its_last_step_or_the_one_asked(run):
    assert "step 2 add" in _ok(mc("show", run)).stdout
    assert "step 1 add" in _ok(mc("show", run, "--step", "1")).stdout
    both = _ok(mc("show", run, "--step", "all")).stdout
    assert "step 1 add" in both and "step 2 add" in both
    r = mc("show", run, "--step", "9")
    assert r.exit_code == 2 and "no step 9" in r.stderr


def test_wrong_answer_in_full_shows_the_program_the_test_and_the_diff(run):
    out = _ok(mc("show", run, "--status", "wrong_answer", "--full")).stdout
    assert "rollout add/0/1@2 | problem add | step 2" in out
    assert "Print a + b." in out  # the problem statement
    assert "completion (the extracted program highlighted)" in out and "print(a - b)" in out
    assert "verdict wrong_answer: 0/2 tests passed" in out
    assert "first failing test: #0" in out and "1 2" in out
    assert "-3" in out and "+-1" in out  # the diff: expected 3, got -1
    assert "mask: not masked (reason: not_truncated)" in out
    assert "rollout add/0/0" not in out  # the filter


def test_runtime_error_shows_stderr(run):
    out = _ok(mc("show", run, "--problem", "double", "--status", "runtime_error", "-f")).stdout
    assert "runtime_error" in out and "ValueError: boom 4" in out


def test_masked_filter_and_the_training_decision(run):
    out = _ok(mc("show", run, "--masked", "--full")).stdout
    assert out.count("rollout ") == 1 and f"rollout {MASKED}@2" in out
    assert "finish: length (cut at the length limit)" in out
    assert "truncated: yes (cut off before its program finished)" in out
    assert "mask: masked: advantage set to 0 (reason: masked_cut_off)" in out
    assert "length: 25 tokens" in out and "mean log-prob: -0.800" in out


def test_one_rollout_by_id(run):
    out = _ok(mc("show", run, "--id", "double/0/0@2")).stdout
    assert out.count("rollout ") == 1 and "boom" in out
    r = mc("show", run, "--id", "double/0/0@1")  # it is in step 1, not the last
    assert r.exit_code == 2 and "--step all" in r.stderr
    assert "boom" in _ok(mc("show", run, "--id", "double/0/0@1", "--step", "all")).stdout


def test_a_rollouts_file_with_its_verdicts_beside_it(run, tmp_path):
    out = _ok(mc("show", run / "step_0002" / "rollouts.jsonl", "-p", run.parent / "problems.jsonl")).stdout
    assert "add | 1/2 passed" in out
    alone = tmp_path / "r.jsonl"
    shutil.copy(run / "step_0002" / "rollouts.jsonl", alone)
    r = _ok(mc("show", alone))
    assert "unjudged 2" in r.stdout and "no verdicts found" in r.stderr


# ------------------------------------------------------------------ the HTML report


@pytest.fixture(scope="module")
def report(run) -> Path:
    out = run.parent / "report.html"
    r = _ok(mc("show", run, "--step", "all", "--html", out, "--k", "1,2"))
    assert r.stdout.strip() == str(out)
    return out


def test_the_report_is_one_self_contained_file(report):
    page = report.read_text()
    assert '<table class="passk">' in page and "pass@2 (%, problems averaged)" in page
    assert page.count('<details class="sample"') == 8  # 4 samples x 2 steps
    assert "data:image/png;base64," in page  # the training plots, embedded
    assert 'src="http' not in page and 'href="http' not in page  # nothing fetched
    assert "ValueError: boom 4" in page and "masked_cut_off" in page
    assert 'class="diff"' in page and "print" in page


def test_a_bench_report_from_a_rollouts_file(run, tmp_path):
    out = tmp_path / "bench.html"
    _ok(mc("show", run / "step_0001" / "rollouts.jsonl", "-p", run.parent / "problems.jsonl", "--html", out))
    page = out.read_text()
    assert "<td>atcoder</td>" in page and "<td>50.0 (1)</td>" in page  # pass@1 of add: 1 of 2
    assert "data:image/png" not in page  # no run, no plots


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no chromium binary on PATH (Debian: apt-get install -y chromium)")


def _headless(*args: str) -> subprocess.CompletedProcess:
    # --no-sandbox: CI runs as root, where Chromium's own sandbox refuses to start
    cmd = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


def test_the_report_opens_in_a_real_browser(report, tmp_path):
    dom = _headless("--dump-dom", report.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert (
        '<table class="passk">' in dom.stdout
        and "<caption>pass@1 (%, problems averaged)</caption>" in dom.stdout
    )
    assert dom.stdout.count('<details class="sample"') == 8 and "add/0/1@2" in dom.stdout
    # the page's own script runs: a filter in the link hides the other samples
    dom = _headless("--dump-dom", report.as_uri() + "#status=runtime_error")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert dom.stdout.count('style="display: none;"') == 6
    assert '<span id="shown-count">2</span>' in dom.stdout
    shot = tmp_path / "report.png"
    r = _headless(f"--screenshot={shot}", "--window-size=1200,1600", report.as_uri())
    assert r.returncode == 0, r.stderr[-2000:]
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (1200, 1600)


def test_an_unknown_status_is_refused(run):
    r = mc("show", run, "--status", "wrong")
    assert r.exit_code == 2 and "not a verdict status" in r.stderr and "wrong_answer" in r.stderr


def test_help_fits_80_columns_with_every_flag_and_an_example():
    import typer

    text = runner.invoke(app, ["show", "-h"], env={"COLUMNS": "80"}).stdout
    assert max(len(line) for line in text.splitlines()) <= 80
    for p in typer.main.get_command(app).commands["show"].params:
        for flag in p.opts:
            if flag.startswith("--"):
                assert flag in text, flag
    assert "Example: mcoder show" in text
