"""`mcoder judge` as a real command: outputs, exit codes, shards, resume after a kill."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import sandbox_or_skip
from mcoder.cli.app import app
from mcoder.errors import EnvironmentMissing
from mcoder.judge import sandbox

runner = CliRunner()

PROBLEMS = [
    {
        "id": "add",
        "source": "t",
        "question": "",
        "tests": [{"input": "1 2\n", "output": "3\n"}, {"input": "5 6\n", "output": "11\n"}],
    },
    {"id": "neg", "source": "t", "question": "", "tests": [{"input": "4\n", "output": "-4\n"}]},
]
GOOD_ADD = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"


@pytest.fixture(autouse=True)
def _needs_sandbox():
    sandbox_or_skip()


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def mcoder(*args: str, **kw) -> subprocess.CompletedProcess:
    """The command in a process of its own (for kills, users and the real entry point)."""
    return subprocess.run(
        [sys.executable, "-m", "mcoder", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        **kw,
    )


def invoke(*args: str):
    """The command in this process (fast: the checks of flags and data)."""
    return runner.invoke(app, list(args))


def read_verdicts(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def files(tmp_path):
    problems = write_jsonl(tmp_path / "problems.jsonl", PROBLEMS)
    rollouts = write_jsonl(
        tmp_path / "rollouts.jsonl",
        [
            {"id": "a", "problem_id": "add", "completion": GOOD_ADD},
            {"id": "b", "problem_id": "add", "completion": "print(3)"},
            {"id": "c", "problem_id": "neg", "completion": "```python\nprint(-int(input()))\n```"},
            {"id": "d", "problem_id": "neg", "completion": "no idea"},
        ],
    )
    return problems, rollouts, tmp_path / "verdicts.jsonl"


def test_judges_every_rollout(files):
    problems, rollouts, out = files
    r = mcoder("judge", "-p", str(problems), "-r", str(rollouts), "-o", str(out), "--workers", "2", "--quiet")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(out)
    got = {v["rollout_id"]: (v["status"], v["reward"]) for v in read_verdicts(out)}
    assert got == {
        "a": ("accepted", 1.0),
        "b": ("wrong_answer", 0.0),
        "c": ("accepted", 1.0),
        "d": ("no_code", 0.0),
    }
    assert not Path(str(out) + ".part").exists()


def test_summary_table_on_stderr(files):
    problems, rollouts, out = files
    r = mcoder("judge", "-p", str(problems), "-r", str(rollouts), "-o", str(out), "-w", "1")
    assert r.returncode == 0
    assert "judge summary" in r.stderr and "pass rate" in r.stderr and "2/4" in r.stderr


def test_explain_judges_one_rollout_again_and_prints_every_test(files, tmp_path):
    """A failed rollout's verdict holds its first failing test only, and re-judging it took a new
    rollouts file and reading verdicts JSON: --explain runs every test of one rollout and prints
    each one's input, expected and actual output, the rule or status, time and memory."""
    problems, _, _ = files
    rollouts = write_jsonl(tmp_path / "one.jsonl", [
        {"id": "x", "problem_id": "add", "completion": "```python\na, b = map(int, input().split())\n"
                                                       "print(a + b if a < 5 else a * b)\n```"},
    ])  # fmt: skip
    r = mcoder("judge", "-p", str(problems), "-r", str(rollouts), "--explain", "x", "-w", "1")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "wrong_answer: 1/2 tests passed" in out
    assert "test #0 (stdin): passed, rule exact" in out and "test #1 (stdin): wrong_answer" in out
    first, second = out.split("test #1")
    assert "1 2" in first and "expected:\n    3" in first and "actual:\n    3" in first
    assert "5 6" in second and "expected:\n    11" in second and "actual:\n    30" in second
    assert "first difference: line 1, column 1 (token 0)" in second
    assert re.search(r"wall [0-9.]+ ms, cpu [0-9.]+ ms, memory [0-9.]+ MiB", second)
    missing = mcoder("judge", "-p", str(problems), "-r", str(rollouts), "--explain", "nope")
    assert missing.returncode == 3 and "no rollout with id 'nope'" in missing.stderr
    assert invoke("judge", "-p", str(problems), "-r", str(rollouts)).exit_code == 2  # judging needs --out


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--shard", "3/2"], "--shard"),
        (["--compare", "loose"], "--compare"),
        (["--reward", "all"], "--reward"),
        (["--timeout-s", "0"], "--timeout-s"),
        (["--timeout", "0"], "--timeout-s"),  # the old spelling, still accepted
    ],
)
def test_bad_flags_exit_2(files, flags, message):
    problems, rollouts, out = files
    r = invoke("judge", "-p", str(problems), "-r", str(rollouts), "-o", str(out), *flags)
    assert r.exit_code == 2 and message in r.stderr


def test_rollout_of_an_unknown_problem_exits_3_naming_its_line(files, tmp_path):
    problems, _, out = files
    rollouts = write_jsonl(
        tmp_path / "bad.jsonl",
        [
            {"id": "a", "problem_id": "add", "completion": "x"},
            {"id": "b", "problem_id": "gone", "completion": "x"},
        ],
    )
    r = invoke("judge", "-p", str(problems), "-r", str(rollouts), "-o", str(out))
    assert r.exit_code == 3
    assert f"{rollouts}:2" in r.stderr and "problem_id" in r.stderr and "gone" in r.stderr


def test_malformed_rollout_exits_3(files, tmp_path):
    problems, _, out = files
    rollouts = write_jsonl(tmp_path / "bad.jsonl", [{"id": "a", "problem_id": "add"}])
    r = invoke("judge", "-p", str(problems), "-r", str(rollouts), "-o", str(out))
    assert r.exit_code == 3 and "completion" in r.stderr


def test_missing_isolation_exits_4_and_names_what_is_missing(files, monkeypatch):
    # a fake kernel without Landlock (this machine has it): the fault cannot be caused otherwise
    monkeypatch.setattr(sandbox, "landlock_abi", lambda: 0)
    problems, rollouts, out = files
    r = invoke("judge", "-p", str(problems), "-r", str(rollouts), "-o", str(out))
    assert r.exit_code == 4 and "Landlock" in r.stderr and "--unsafe-no-sandbox" in r.stderr
    assert not out.exists()


def test_check_isolation_without_root_needs_user_namespaces(monkeypatch):
    # fakes: a non-root process on a kernel without user namespaces (this test runs as root)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(sandbox, "user_namespaces_work", lambda: False)
    with pytest.raises(EnvironmentMissing, match="user namespaces") as e:
        sandbox.check_isolation()
    assert e.value.exit_code == 4


def test_unsafe_no_sandbox_runs_as_this_user(files):
    problems, rollouts, out = files
    r = invoke(
        "judge",
        "-p",
        str(problems),
        "-r",
        str(rollouts),
        "-o",
        str(out),
        "-w",
        "1",
        "--unsafe-no-sandbox",
        "-q",
    )
    assert r.exit_code == 0, r.stderr
    assert [v["status"] for v in read_verdicts(out)].count("accepted") == 2


def test_shards_partition_the_rollouts(files, tmp_path):
    problems, _, _ = files
    rows = [{"id": f"r{i}", "problem_id": "neg", "completion": "print(-int(input()))"} for i in range(20)]
    rollouts = write_jsonl(tmp_path / "many.jsonl", rows)
    seen: list[str] = []
    for i in range(3):
        out = tmp_path / f"v{i}.jsonl"
        r = invoke(
            "judge",
            "-p",
            str(problems),
            "-r",
            str(rollouts),
            "-o",
            str(out),
            "--shard",
            f"{i}/3",
            "-w",
            "2",
            "-q",
        )
        assert r.exit_code == 0, r.stderr
        ids = [v["rollout_id"] for v in read_verdicts(out)]
        assert ids, "each of 3 shards of 20 ids gets some"
        seen += ids
    assert sorted(seen) == sorted(r["id"] for r in rows)  # disjoint and whole


@pytest.mark.heavy
def test_resume_after_the_command_is_killed(files, tmp_path):
    problems, _, _ = files
    slow = "```python\nimport time\ntime.sleep(0.4)\nprint(-int(input()))  # {}\n```"
    rows = [
        {"id": f"r{i}", "problem_id": "neg", "completion": slow.format(i)} for i in range(12)
    ]  # no cache hits
    rollouts = write_jsonl(tmp_path / "slow.jsonl", rows)
    out = tmp_path / "v.jsonl"
    part = Path(str(out) + ".part")
    args = [
        sys.executable,
        "-m",
        "mcoder",
        "judge",
        "-p",
        str(problems),
        "-r",
        str(rollouts),
        "-o",
        str(out),
        "-w",
        "1",
        "-q",
    ]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not part.exists() or part.read_text().count("\n") < 3):
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    first = part.read_text().count("\n")
    assert 3 <= first < 12 and not out.exists()

    r = mcoder("judge", "-p", str(problems), "-r", str(rollouts), "-o", str(out), "-w", "2")
    assert r.returncode == 0, r.stderr
    assert "resuming" in r.stderr
    ids = [v["rollout_id"] for v in read_verdicts(out)]
    assert sorted(ids) == sorted(r["id"] for r in rows)  # each once: none lost, none twice
    assert all(v["status"] == "accepted" for v in read_verdicts(out))


# ---- outputs you can trust (issue 15): rows 3, 5, 6 and 9


def test_out_naming_an_input_is_refused_before_anything_is_renamed(files):
    problems, rollouts, _ = files
    before = problems.read_bytes()
    r = invoke("judge", "-p", str(problems), "-r", str(rollouts), "-o", str(problems))
    assert r.exit_code == 2 and "is also the problems input" in r.stderr
    assert "delete" not in r.stderr
    assert problems.read_bytes() == before and not Path(str(problems) + ".part").exists()


def test_out_naming_a_file_of_another_kind_is_refused(files, tmp_path):
    problems, rollouts, _ = files
    other = tmp_path / "other-problems.jsonl"
    other.write_bytes(problems.read_bytes())
    r = invoke("judge", "-p", str(problems), "-r", str(rollouts), "-o", str(other), "--overwrite")
    assert r.exit_code == 2 and "not an output of this stage" in r.stderr and "delete" not in r.stderr
    assert other.read_bytes() == problems.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other-problems.jsonl", "problems.jsonl", "rollouts.jsonl"]


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--compare", "strict"], 'compare "microcoder" -> "strict"'),
        (["--reward", "fraction"], 'reward "binary" -> "fraction"'),
        (["--timeout-s", "2"], "timeout_s 6.0 -> 2.0"),
    ],
)
def test_a_rerun_with_other_settings_is_refused_and_overwrite_redoes_it(files, flags, words):
    problems, rollouts, out = files
    base = ("judge", "-p", str(problems), "-r", str(rollouts), "-o", str(out), "-w", "2", "-q")
    assert invoke(*base).exit_code == 0
    before = out.read_bytes()
    r = invoke(*base, *flags)
    assert r.exit_code == 2 and words in r.stderr and "--overwrite" in r.stderr, r.stderr
    assert out.read_bytes() == before
    r = invoke(*base, *flags, "--overwrite")
    assert r.exit_code == 0, r.stderr
    assert len(read_verdicts(out)) == 4


def test_new_tests_in_the_problems_file_are_a_change(files):
    problems, rollouts, out = files
    base = ("judge", "-p", str(problems), "-r", str(rollouts), "-o", str(out), "-w", "2")
    assert invoke(*base, "-q").exit_code == 0
    r = invoke(*base)
    assert r.exit_code == 0 and "already finished" in r.stderr and "0/0" not in r.stderr
    rows = [dict(p, tests=p["tests"] + [{"input": "0\n", "output": "0\n"}]) for p in PROBLEMS]
    write_jsonl(problems, rows)
    r = invoke(*base)
    assert r.exit_code == 2 and "input problems changed" in r.stderr


def test_duplicate_rollout_ids_exit_3_naming_file_line_and_id(files, tmp_path):
    problems, _, out = files
    rollouts = write_jsonl(
        tmp_path / "dup.jsonl",
        [
            {"id": "a", "problem_id": "add", "completion": "x"},
            {"id": "b", "problem_id": "add", "completion": "x"},
            {"id": "a", "problem_id": "neg", "completion": "y"},
        ],
    )
    r = invoke("judge", "-p", str(problems), "-r", str(rollouts), "-o", str(out))
    assert r.exit_code == 3 and f"{rollouts}:3" in r.stderr and "'a'" in r.stderr and "line 1" in r.stderr
    assert not out.exists() and not Path(str(out) + ".part").exists()


def test_duplicate_problem_ids_name_the_line(files, tmp_path):
    _, rollouts, out = files
    problems = write_jsonl(tmp_path / "p2.jsonl", [PROBLEMS[0], PROBLEMS[1], PROBLEMS[0]])
    r = invoke("judge", "-p", str(problems), "-r", str(rollouts), "-o", str(out))
    assert r.exit_code == 3 and f"{problems}:3" in r.stderr and "'add'" in r.stderr


def test_two_stdin_inputs_are_a_usage_error(files):
    _, _, out = files
    r = invoke("judge", "-p", "-", "-r", "-", "-o", str(out))
    assert r.exit_code == 2 and "stdin" in r.stderr


@pytest.mark.parametrize("which", ["problems", "rollouts"])
def test_empty_input_exits_3_and_leaves_no_part_file(files, which):
    problems, rollouts, out = files
    (problems if which == "problems" else rollouts).write_text("")
    r = invoke("judge", "-p", str(problems), "-r", str(rollouts), "-o", str(out))
    assert r.exit_code == 3 and f"no {which} in the file" in r.stderr
    assert not out.exists() and not Path(str(out) + ".part").exists()
    assert not Path(str(out) + ".meta.json").exists()


def test_rejected_inputs_leave_no_part_file(files, tmp_path):
    problems, _, out = files
    rollouts = write_jsonl(tmp_path / "bad.jsonl", [{"id": "a", "problem_id": "gone", "completion": "x"}])
    r = invoke("judge", "-p", str(problems), "-r", str(rollouts), "-o", str(out))
    assert r.exit_code == 3
    assert not Path(str(out) + ".part").exists() and not out.exists()


# ---- commands/ci_judge.sh: regression, bad input and internal error by exit code (issue 15 row 9)

CI_JUDGE = Path(__file__).resolve().parents[2] / "commands" / "ci_judge.sh"


def ci_judge(*args: str, cwd: Path, mcoder_cmd: str | None = None) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("mcoder")
    env = {**os.environ, "MCODER": mcoder_cmd or (str(exe) if exe.exists() else f"{sys.executable} -m mcoder")}
    return subprocess.run(
        ["bash", str(CI_JUDGE), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.heavy
def test_ci_judge_tells_regression_bad_input_and_internal_error_apart(files, tmp_path):
    problems, _, _ = files
    sol = tmp_path / "solutions"
    sol.mkdir()
    base = tmp_path / "baseline.jsonl"
    args = ["--problems", str(problems), "--solutions", str(sol), "--baseline", str(base)]
    empty = ci_judge(*args, "--update-baseline", cwd=tmp_path)
    assert empty.returncode == 3 and "no <problem_id>.py files" in empty.stderr
    (sol / "add.py").write_text("a, b = map(int, input().split())\nprint(a + b)\n")
    (sol / "neg.py").write_text("print(-int(input()))\n")
    assert ci_judge(*args, cwd=tmp_path).returncode == 3  # no baseline yet
    assert ci_judge(*args, "--update-baseline", cwd=tmp_path).returncode == 0
    assert ci_judge(*args, cwd=tmp_path).returncode == 0
    (sol / "neg.py").write_text("print(int(input()))\n")
    worse = ci_judge(*args, cwd=tmp_path)
    assert worse.returncode == 5 and "regressed neg: 1/1 -> 0/1 passed, now wrong_answer" in worse.stderr
    broken = ci_judge(*args, cwd=tmp_path, mcoder_cmd="false")  # a judge that fails without a verdict
    assert broken.returncode == 1 and "internal error" in broken.stderr
    base.write_text("not json\n")
    assert ci_judge(*args, cwd=tmp_path).returncode == 3
