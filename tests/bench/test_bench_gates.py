"""`mcoder bench` as a CI gate: exit 5 for results worse than a gate allows (a worse model),
1-4 for a broken job; --junit read back by a real JUnit parser (junitparser); the one place
candidate text enters the XML fuzzed, and checked on every character range the code declares."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from junitparser import Failure, JUnitXml, Skipped
from typer.testing import CliRunner

from bench_data import BASELINE, PROBLEMS, VERDICTS, verdict_lines, write_problems, write_verdicts
from mcoder.bench import junit
from mcoder.bench.gates import Change, Gates, changes, parse_rate
from mcoder.bench.table import ProblemTally
from mcoder.cli.app import app
from mcoder.errors import EXIT_DATA, EXIT_GATE, EXIT_USAGE, UsageError
from mcoder.records import STATUSES

runner = CliRunner()


def bench(*args):
    return runner.invoke(app, ["bench", *map(str, args)])


@pytest.fixture
def files(tmp_path):
    """The hand-made set: p5 has no verdict (in the verdicts and in the baseline)."""
    return (
        write_problems(tmp_path / "problems.jsonl"),
        write_verdicts(tmp_path / "verdicts.jsonl"),
        write_verdicts(tmp_path / "baseline.jsonl", BASELINE),
    )


@pytest.fixture
def judged(files, tmp_path):
    """The same without p5: every problem judged, now and in the baseline (what a gate needs)."""
    _, verdicts, base = files
    return write_problems(tmp_path / "judged.jsonl", [p for p in PROBLEMS if p[0] != "p5"]), verdicts, base


# ------------------------------------------------------------------ exit codes


def test_fail_under_passes_at_the_floor_and_fails_above_it(judged):
    problems, verdicts, _ = judged  # pass@1 over all is 60.0%
    for floor in ("0.6", "60%", "0"):
        r = bench("-p", problems, "--verdicts", verdicts, "--fail-under", floor)
        assert r.exit_code == 0, (floor, r.stderr)
        assert "every gate passed" in r.stderr
    r = bench("-p", problems, "--verdicts", verdicts, "--fail-under", "60.1%")
    assert r.exit_code == EXIT_GATE == 5
    assert "pass@1 60.0% over all 5 problems is under the floor 60.1% (--fail-under 60.1%)" in r.stderr
    assert r.stdout.startswith("pass@1 all: 60.0%")  # the result is still printed


def test_a_regressed_problem_fails_the_job_and_is_named(judged):
    problems, verdicts, base = judged
    # p2 passed 1 of 2 in the baseline and 0 of 2 now; p1, p4, p6 got better; p3 the same
    r = bench("-p", problems, "--verdicts", verdicts, "--baseline", base, "--fail-on-regression")
    assert r.exit_code == EXIT_GATE, r.stderr
    assert "regressed p2: 1/2 -> 0/2 passed, now runtime_error" in r.stderr
    assert "1 problem regressed against the baseline (--fail-on-regression): p2" in r.stderr
    assert "improved p1: 1/4 -> 2/4 passed\n" in r.stderr and "regressed p1" not in r.stderr
    # the baseline alone only reports: no gate, exit 0
    assert bench("-p", problems, "--verdicts", verdicts, "--baseline", base).exit_code == 0
    # the same verdicts as their own baseline: nothing regressed
    same = bench("-p", problems, "--verdicts", verdicts, "--baseline", verdicts, "--fail-on-regression")
    assert same.exit_code == 0, same.stderr


def test_a_problem_with_no_verdict_now_regresses_when_the_baseline_passed_it(judged, tmp_path):
    problems, verdicts, _ = judged
    fewer = write_verdicts(tmp_path / "fewer.jsonl", {k: v for k, v in VERDICTS.items() if k != "p3"})
    r = bench("-p", problems, "--verdicts", fewer, "--baseline", verdicts, "--fail-on-regression")
    assert r.exit_code == EXIT_GATE and "regressed p3: 4/4 -> no verdict now" in r.stderr


def test_max_drop_gates_the_mean_not_each_problem(judged):
    problems, verdicts, base = judged  # baseline 35.0% -> now 60.0%; reversed it is a 25-point drop
    assert bench("-p", problems, "--verdicts", verdicts, "--baseline", base, "--max-drop", "0").exit_code == 0
    r = bench("-p", problems, "--verdicts", base, "--baseline", verdicts, "--max-drop", "24.9")
    assert r.exit_code == EXIT_GATE
    assert "pass@1 fell 25.0 points (60.0% -> 35.0%) over all 5 problems, more than --max-drop 24.9" in r.stderr
    assert (
        bench("-p", problems, "--verdicts", base, "--baseline", verdicts, "--max-drop", "25").exit_code == 0
    )


def test_a_broken_job_is_not_a_failed_gate(files, tmp_path):
    problems, verdicts, base = files
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"rollout_id": "x", "problem_id": "p1"}\n')
    r = bench("-p", problems, "--verdicts", bad, "--fail-under", "0.1", "--junit", tmp_path / "j.xml")
    assert r.exit_code == EXIT_DATA, r.stderr
    assert not (tmp_path / "j.xml").exists()
    usage = bench("-p", problems, "--verdicts", verdicts, "--fail-on-regression")
    assert usage.exit_code == EXIT_USAGE and "--baseline" in usage.stderr
    for rate in ("60", "1.5", "-0.1", "nan", "sixty", "101%"):
        r = bench("-p", problems, "--verdicts", verdicts, "--fail-under", rate)
        assert r.exit_code == EXIT_USAGE, rate
    assert (
        "did you mean 0.6 (60%)?"
        in bench("-p", problems, "--verdicts", verdicts, "--fail-under", "60").stderr
    )
    assert (
        bench("-p", problems, "--verdicts", verdicts, "--baseline", base, "--max-drop", "-1").exit_code == 2
    )


# ------------------------------------------------------------------ the gate x missing-data matrix

# A value for each gate (every field of Gates, read from the code) at which it would pass on these
# results if nothing were missing: what fails it below is the missing data alone.
LENIENT = {"fail_under": ["--fail-under", "0"], "fail_on_regression": ["--fail-on-regression"],
           "max_drop": ["--max-drop", "100"]}  # fmt: skip
SIX = [(f"q{i}", "atcoder", "easy") for i in range(6)]
ALL_PASS = {pid: ["accepted"] for pid, *_ in SIX}
# case -> (verdicts now, baseline, exit code, problems a gate counts as failed)
MATRIX = {
    "empty verdicts": ({}, ALL_PASS, EXIT_GATE, {pid for pid, *_ in SIX}),
    "partial verdicts": ({"q0": ["accepted"]}, ALL_PASS, EXIT_GATE, {f"q{i}" for i in range(1, 6)}),
    "empty baseline": (ALL_PASS, {}, EXIT_DATA, None),
    "baseline of part of the set": (ALL_PASS, {"q0": ["accepted"]}, EXIT_DATA, None),
    "baseline of another set": (ALL_PASS, {"other": ["accepted"]}, EXIT_DATA, None),
}


def test_every_gate_is_in_the_matrix():
    assert set(LENIENT) == {f.name for f in dataclasses.fields(Gates)}


@pytest.mark.parametrize("case", MATRIX)
@pytest.mark.parametrize("gate", LENIENT)
def test_a_gate_never_passes_on_missing_verdicts(gate, case, tmp_path):
    now, base, code, failing = MATRIX[case]
    problems = write_problems(tmp_path / "problems.jsonl", SIX)
    verdicts = tmp_path / "verdicts.jsonl"
    verdicts.write_text("".join(line + "\n" for line in verdict_lines(now)))  # empty: an empty file
    baseline = tmp_path / "baseline.jsonl"
    baseline.write_text("".join(line + "\n" for line in verdict_lines(base)))
    out = tmp_path / "junit.xml"
    r = bench("-p", problems, "--verdicts", verdicts, "--baseline", baseline, *LENIENT[gate], "--junit", out)
    assert r.exit_code == code, r.stderr
    assert "every gate passed" not in r.stderr
    if code == EXIT_DATA:  # a broken job: nothing written, the baseline named
        assert not out.exists() and "baseline" in r.stderr
        return
    # the JUnit file agrees with the gate, case by case
    suite = next(iter(JUnitXml.fromfile(str(out))))
    failed = {c.name for c in suite if not c.is_passed and c.classname != "mcoder.gates"}
    assert failed == failing
    for c in suite:
        if c.name in failing:
            assert c.result[0].type == "no_verdict"
    (gate_case,) = [c for c in suite if c.classname == "mcoder.gates"]
    assert not gate_case.is_passed and gate_case.name.startswith(LENIENT[gate][0])
    assert gate_case.result[0].message in r.stderr  # the gate's own line


def test_with_every_verdict_the_lenient_gates_pass(tmp_path):
    problems = write_problems(tmp_path / "problems.jsonl", SIX)
    verdicts = write_verdicts(tmp_path / "verdicts.jsonl", ALL_PASS)
    out = tmp_path / "junit.xml"
    args = [a for v in LENIENT.values() for a in v]
    r = bench("-p", problems, "--verdicts", verdicts, "--baseline", verdicts, *args, "--junit", out)
    assert r.exit_code == 0 and "every gate passed" in r.stderr, r.stderr
    suite = next(iter(JUnitXml.fromfile(str(out))))
    assert (suite.tests, suite.failures) == (6 + len(LENIENT), 0)


def test_parse_rate():
    assert parse_rate("0.25") == 0.25 and parse_rate(" 25% ") == 0.25 and parse_rate("1") == 1.0
    with pytest.raises(UsageError):
        parse_rate("inf")


def test_regression_is_decided_on_counts_not_rounded_shares():
    # 1/3 against 2/6 is the same share; a float comparison of 0.333.. values must not call it worse
    base = {"a": ProblemTally("a", "x", "easy", n=3, c=1), "b": ProblemTally("b", "x", "easy", n=7, c=1)}
    now = {"a": ProblemTally("a", "x", "easy", n=6, c=2), "b": ProblemTally("b", "x", "easy", n=700, c=99)}
    worse, better = changes(now, base)
    assert [c.id for c in worse] == ["b"] and better == []  # 99/700 < 1/7 = 100/700
    assert Gates(fail_on_regression=True).need_baseline and not Gates().any


# ------------------------------------------------------------------ JUnit XML


def test_junit_read_back_by_a_junit_parser(files, judged, tmp_path):
    problems, verdicts, base = judged
    lines = verdicts.read_text().splitlines()
    first = json.loads(lines[4])  # p2-0, runtime_error: give it the judge's first_failure shape
    first["first_failure"] = {"index": 1, "input": "4\n", "expected": "8\n", "got": None,
                              "stderr": "Traceback ...\nValueError: boom", "detail": None}  # fmt: skip
    first["elapsed_s"] = 0.25
    lines[4] = json.dumps(first)
    verdicts.write_text("\n".join(lines) + "\n")
    out = tmp_path / "ci" / "junit.xml"
    r = bench(
        "-p", problems, "--verdicts", verdicts, "--baseline", base, "--fail-on-regression", "--junit", out
    )
    assert r.exit_code == EXIT_GATE  # the report is written before the gate fails the job
    assert str(out) in r.stdout.splitlines()
    xml = JUnitXml.fromfile(str(out))
    suites = list(xml)
    assert len(suites) == 1
    suite = suites[0]
    assert (suite.tests, suite.failures, suite.skipped, suite.errors) == (6, 2, 0, 0)
    cases = {c.name: c for c in suite}
    assert set(cases) == {"p1", "p2", "p3", "p4", "p6", "--fail-on-regression"}
    assert cases["--fail-on-regression"].classname == "mcoder.gates"
    assert "1 problem regressed" in cases["--fail-on-regression"].result[0].message
    assert cases["p1"].classname == "atcoder.easy" and cases["p3"].classname == "codeforces.easy"
    assert cases["p1"].is_passed and "2/4 samples passed" in cases["p1"].system_out
    (failure,) = cases["p2"].result
    assert isinstance(failure, Failure) and failure.type == "runtime_error"
    assert failure.message == "regressed p2: 1/2 -> 0/2 passed, now runtime_error"
    assert "first failing sample: p2-0 (runtime_error)" in failure.text
    assert (
        "--- stderr\nTraceback ...\nValueError: boom" in failure.text and "--- expected\n8\n" in failure.text
    )
    assert cases["p2"].time == pytest.approx(0.25)
    # without a gate p2 still fails (no sample passed), typed by its status and test, and p5,
    # which has no verdict, is skipped: nothing counts it
    bench("-p", files[0], "--verdicts", verdicts, "--junit", out)
    cases = {c.name: c for c in next(iter(JUnitXml.fromfile(str(out))))}
    (failure,) = cases["p2"].result
    assert failure.message == "runtime_error on test #1"
    assert isinstance(cases["p5"].result[0], Skipped)


def test_junit_to_stdout_keeps_the_summary_off_stdout(files):
    problems, verdicts, _ = files
    r = bench("-p", problems, "--verdicts", verdicts, "--junit", "-")
    assert r.exit_code == 0
    assert r.stdout.startswith("<?xml") and "pass@1 all" in r.stderr


def _tally(pid: str, status: str, ff, rollout_id: str = "r") -> ProblemTally:
    t = ProblemTally(pid, "plat", "easy", n=1, c=0)
    t.statuses[status] += 1
    t.failed = {"rollout_id": rollout_id, "status": status, "first_failure": ff}
    return t


def _parse(text: str, tmp_path: Path) -> JUnitXml:
    path = tmp_path / "j.xml"
    path.write_text(text, encoding="utf-8")
    return JUnitXml.fromfile(str(path))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    pid=st.text(max_size=40),
    got=st.text(max_size=300),
    stderr=st.text(alphabet=st.characters(codec=None), max_size=300),
    other=st.recursive(st.none() | st.integers() | st.floats() | st.text(max_size=20),
                       lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3)),
)  # fmt: skip
def test_any_candidate_text_makes_a_document_a_junit_parser_reads(tmp_path, pid, got, stderr, other):
    ff = {"index": other, "got": got, "stderr": stderr, "detail": other, "input": "x\x00\x1b[31m"}
    text = junit.document([_tally(pid, "wrong_answer", ff, rollout_id=got[:10])], [], source=pid,
                          gate_regressions=False)  # fmt: skip
    (case,) = next(iter(_parse(text, tmp_path)))
    assert case.name == junit.xml_text(pid)  # attributes keep CR and LF (escaped as character references)
    (failure,) = case.result
    assert junit.xml_text(got).replace("\r\n", "\n").replace("\r", "\n") in failure.text.replace("\r", "\n")


def test_every_character_range_the_code_declares(tmp_path):
    """Both edges of each allowed range and the code points just outside them, from XML_CHAR_RANGES."""
    allowed = set()
    for lo, hi in junit.XML_CHAR_RANGES:
        allowed |= {lo, hi}
    edges = sorted({c for lo, hi in junit.XML_CHAR_RANGES for c in (lo - 1, lo, hi, hi + 1)} - {-1, 0x110000})
    for code in edges:
        ch = chr(code)
        inside = any(lo <= code <= hi for lo, hi in junit.XML_CHAR_RANGES)
        assert junit.xml_text(ch) == (ch if inside else junit.REPLACEMENT), hex(code)
    text = junit.document([_tally("p", "wrong_answer", {"got": "".join(map(chr, edges))})], [], source="s",
                          gate_regressions=False)  # fmt: skip
    (case,) = next(iter(_parse(text, tmp_path)))
    assert junit.REPLACEMENT in case.result[0].text


@pytest.mark.parametrize("status", [s for s in STATUSES if s != "accepted"])
def test_every_failure_status_types_its_case(status, tmp_path):
    text = junit.document([_tally("p", status, {"index": 0})], [], source="s", gate_regressions=False)
    (case,) = next(iter(_parse(text, tmp_path)))
    assert case.result[0].type == status and case.result[0].message == f"{status} on test #0"


def test_a_long_field_is_cut():
    assert len(junit.xml_text("x" * 10_000)) < junit.FIELD_CHARS + 40
    assert Change("p", (1, 1), (0, 0)).text() == "p: 1/1 -> no verdict now"


# ------------------------------------------------------------------ examples/ci: the jobs' own steps

EXAMPLES_CI = Path(__file__).resolve().parents[2] / "examples" / "ci"
INSTALL = "pip install ."  # the one step not run here: mcoder is installed in this interpreter


def ci_steps(name: str) -> tuple[dict[str, str], list[tuple[str, bool]]]:
    """The environment and the shell steps (script, runs even after a failure) of an example job."""
    import yaml

    doc = yaml.safe_load((EXAMPLES_CI / name).read_text())
    if "jobs" in doc:  # GitHub Actions
        job = doc["jobs"]["judge"]
        runs = [s for s in job["steps"] if "run" in s]
        steps = [(s["run"], s.get("if") == "always()") for s in runs if s["run"].strip() != INSTALL]
        assert len(steps) == len(runs) - 1, "exactly the install step is left out"
        return job["env"], steps
    job = doc["mcoder-judge"]  # GitLab CI
    assert job["before_script"] == [INSTALL] and job["artifacts"]["reports"]["junit"] == "ci-out/junit.xml"
    return job["variables"], [(line, False) for line in job["script"]]


def run_ci(name: str, workdir: Path) -> list[int]:
    """Run the job's shell steps as the CI system would (bash -e, stop at the first failure but
    for `if: always()` steps); each step's exit code."""
    from mcoder.judge import sandbox

    try:
        sandbox.check_isolation()
    except Exception as e:  # noqa: BLE001  (EnvironmentMissing: the job would exit 4 here)
        pytest.skip(f"no sandbox on this machine: {e}")
    if not (workdir / "examples" / "ci").exists():
        shutil.copytree(EXAMPLES_CI, workdir / "examples" / "ci")
    env_vars, steps = ci_steps(name)
    env = {**os.environ, **{k: str(v) for k, v in env_vars.items()}}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"  # python and mcoder
    env["GITHUB_STEP_SUMMARY"] = str(workdir / "summary.md")
    codes: list[int] = []
    for script, always in steps:
        if codes and codes[-1] != 0 and not always:
            continue
        done = subprocess.run(["bash", "-eo", "pipefail", "-c", script], cwd=workdir, env=env,
                              capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
        codes.append(done.returncode)
    return codes


@pytest.mark.heavy
def test_the_github_workflow_passes_on_the_bundled_solutions(tmp_path):
    codes = run_ci("github-actions.yml", tmp_path)
    assert codes == [0, 0, 0, 0], codes
    suite = next(iter(JUnitXml.fromfile(str(tmp_path / "ci-out" / "junit.xml"))))
    assert (suite.tests, suite.failures, suite.skipped) == (6 + 2, 0, 0)  # a case per problem and per gate
    assert "### pass@1" in (tmp_path / "summary.md").read_text()


@pytest.mark.heavy
def test_the_gitlab_job_fails_with_5_on_a_broken_solution(tmp_path):
    shutil.copytree(EXAMPLES_CI, tmp_path / "examples" / "ci")
    (tmp_path / "examples" / "ci" / "solutions" / "mc-stdin-002.py").write_text("print(input())\n")
    codes = run_ci("gitlab-ci.yml", tmp_path)
    assert codes == [0, 0, EXIT_GATE], codes
    suite = next(iter(JUnitXml.fromfile(str(tmp_path / "ci-out" / "junit.xml"))))
    assert (suite.tests, suite.failures) == (6 + 2, 2)
    (gate,) = [c for c in suite if c.classname == "mcoder.gates" and not c.is_passed]
    assert gate.name == "--fail-on-regression" and "mc-stdin-002" in gate.result[0].message
    (case,) = [c for c in suite if c.classname != "mcoder.gates" and not c.is_passed]
    assert case.name == "mc-stdin-002" and case.result[0].type == "wrong_answer"
    assert case.result[0].message.startswith("regressed mc-stdin-002: 1/1 -> 0/1 passed")
    assert "--- expected" in case.result[0].text and "--- got" in case.result[0].text


@pytest.mark.parametrize("name", ["github-actions.yml", "gitlab-ci.yml"])
@pytest.mark.heavy
def test_a_job_on_a_persistent_workspace_judges_a_changed_solution(name, tmp_path):
    """A runner that keeps ci-out/ between jobs (a self-hosted one): the second job, after a
    solution changed, must judge it and gate (exit 5), not stop at the earlier verdicts (exit 2)."""
    first = run_ci(name, tmp_path)
    assert first[:3] == [0, 0, 0], first
    (tmp_path / "examples" / "ci" / "solutions" / "mc-call-001.py").write_text("def add(a, b):\n    return a - b\n")
    second = run_ci(name, tmp_path)
    assert second[:3] == [0, 0, EXIT_GATE], second
    suite = next(iter(JUnitXml.fromfile(str(tmp_path / "ci-out" / "junit.xml"))))
    assert {c.name for c in suite if not c.is_passed and c.classname != "mcoder.gates"} == {"mc-call-001"}


def test_the_bundled_ci_data_is_the_examples_own():
    """examples/ci holds six problems of examples/problems, their reference solutions, and the
    baseline verdicts of those solutions: every one passed."""
    source = {}
    for name in ("stdin.jsonl", "call.jsonl"):
        for line in (EXAMPLES_CI.parent / "problems" / name).read_text().splitlines():
            row = json.loads(line)
            source[row["id"]] = row
    bundled = [json.loads(x) for x in (EXAMPLES_CI / "problems.jsonl").read_text().splitlines()]
    assert len(bundled) == 6
    for row in bundled:
        assert row["tests"] == source[row["id"]]["tests"], row["id"]
        solution = (EXAMPLES_CI / "solutions" / f"{row['id']}.py").read_text()
        assert solution.strip() == source[row["id"]]["reference_solutions"][0].strip()
    baseline = [json.loads(x) for x in (EXAMPLES_CI / "baseline.jsonl").read_text().splitlines()]
    assert sorted(v["problem_id"] for v in baseline) == sorted(r["id"] for r in bundled)
    assert all(v["passed"] for v in baseline)
