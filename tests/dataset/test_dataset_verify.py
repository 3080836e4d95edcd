"""The verify stage: reference solutions run through the real judge (sandboxed workers)."""

from __future__ import annotations

import dataclasses
import time

import pytest

from helpers.dataset_real import examples, real
from mcoder.dataset.verify.step import VerifyConfig, _Cell, decide, step_up, verify
from mcoder.records import Problem, Test

pytest.importorskip("mcoder.judge.core", reason="the judge library (mcoder.judge.core) is not in this tree")


@pytest.fixture(scope="module")
def judge():
    """One warm judge for the module (2 workers, 2 s per test; the cache is off, as verify needs)."""
    from mcoder.judge.core import Judge

    with Judge(VerifyConfig(workers=2, timeout_s=2.0).judge_config()) as j:
        yield j


def cfg(**kw) -> VerifyConfig:
    return VerifyConfig(**{"workers": 2, "timeout_s": 2.0, **kw})


def with_wrong_test(p: Problem, index: int) -> Problem:
    tests = list(p.tests)
    t = tests[index]
    wrong = "[999999]" if t.kind == "call" else "999999\n"
    tests[index] = Test(t.input, wrong, t.kind)
    return dataclasses.replace(p, tests=tests)


def test_real_problem_with_one_wrong_test_keeps_its_other_tests(problem_sets, judge):
    leetcode = [p for p in real(problem_sets, "rllm_leetcode_test.json") if len(p.tests) >= 3][:4]
    planted = with_wrong_test(leetcode[0], 1)
    kept, result = verify([planted, *leetcode[1:]], cfg(runs=2), judge)
    assert [p.id for p in kept] == [p.id for p in leetcode]
    fixed = kept[0]
    assert fixed.tests == [t for i, t in enumerate(leetcode[0].tests) if i != 1]
    assert fixed.meta["verify_dropped_tests"] == [{"test": 1, "why": "no_reference_passes"}]
    assert fixed.meta["verified"] is True and len(fixed.meta["ref_time_s"]) == len(fixed.tests)
    assert all(
        p.tests == q.tests and "verify_dropped_tests" not in p.meta for p, q in zip(kept[1:], leetcode[1:])
    )
    assert result.notes["tests_dropped"] == 1 and result.removals == []


def test_own_stdin_problems_verify_and_a_wrong_reference_is_removed(judge):
    problems = [p for p in examples() if p.reference_solutions and p.test_kinds == {"stdin"}][:3]
    broken = dataclasses.replace(problems[0], id="broken", reference_solutions=["print('nonsense')"])
    kept, result = verify([*problems, broken], cfg(runs=1), judge)
    assert [p.id for p in kept] == [p.id for p in problems]
    assert all(p.tests == q.tests for p, q in zip(kept, problems))
    (removal,) = result.removals
    assert removal.problem_id == "broken" and removal.reason == "reference_fails_all_tests"
    assert removal.detail["statuses"] == ["wrong_answer"]


@pytest.mark.heavy
def test_reference_that_times_out_is_reported_not_waited_on(judge):
    base = next(p for p in examples() if p.reference_solutions and p.test_kinds == {"stdin"})
    slow = dataclasses.replace(
        base, id="slow", reference_solutions=["while True:\n    pass\n"], tests=base.tests[:2]
    )
    start = time.monotonic()
    kept, result = verify([slow], cfg(runs=1), judge)
    assert time.monotonic() - start < 30  # two tests at a 2 s limit, not forever
    assert kept == [] and result.removals[0].reason == "reference_fails_all_tests"
    assert result.removals[0].detail["statuses"] == ["time_limit"]
    assert result.notes["reference_timeouts"] == [
        {"id": "slow", "reference": 0, "test": 0, "runs": 1},
        {"id": "slow", "reference": 0, "test": 1, "runs": 1},
    ]


@pytest.mark.heavy
def test_a_reference_that_timed_out_is_not_run_again_on_that_test(judge):
    """Three runs of a reference that loops: the first run's time limit decides (before, each of
    the three runs paid the limit again: 271 s for 5 problems with one slow reference)."""
    base = next(p for p in examples() if p.reference_solutions and p.test_kinds == {"stdin"})
    slow = dataclasses.replace(
        base, id="slow", tests=base.tests[:2],
        reference_solutions=["while True:\n    pass\n", *base.reference_solutions],
    )  # fmt: skip
    calls = []
    real_judge = judge.judge

    def counting(problems, rollouts, on_verdict=None):
        calls.append([r.id for r in rollouts])
        return real_judge(problems, rollouts, on_verdict)

    judge.judge = counting  # counts the candidates each run hands the real judge
    try:
        (kept,), result = verify([slow], cfg(runs=3), judge)
    finally:
        del judge.judge
    refs = len(slow.reference_solutions)
    assert [len(c) for c in calls] == [2 * refs, 2 * (refs - 1), 2 * (refs - 1)]  # x 2 tests; then not the loop
    assert all("#r0#" not in rid for c in calls[1:] for rid in c)
    assert kept.tests == slow.tests  # the other references pass every test in every run
    assert result.notes["reference_timeouts"] == [
        {"id": "slow", "reference": 0, "test": 0, "runs": 1},
        {"id": "slow", "reference": 0, "test": 1, "runs": 1},
    ]


@pytest.mark.heavy
def test_ctrl_c_in_dataset_build_verify_stops_within_two_seconds(tmp_path):
    """Before: Ctrl-C waited for every running reference (86 s with slow ones)."""
    import json
    import os
    import signal
    import sys
    import tempfile
    from pathlib import Path

    from tests.outputs.test_outputs_stages import spawn_for_ctrl_c

    from mcoder.records import to_dict

    sleepy = [Problem(id=f"slow{i}", source="t", question="Print 1.", tests=[Test("", "1\n"), Test("", "1\n")],
                      reference_solutions=["import time\ntime.sleep(60)\nprint(1)"]) for i in range(3)]  # fmt: skip
    src = tmp_path / "p.jsonl"
    src.write_text("".join(json.dumps(to_dict(p)) + "\n" for p in sleepy))
    judges = Path(tempfile.gettempdir())
    earlier = set(judges.glob("mcoder-judge-*"))  # (other runs' judges, on a shared machine)
    proc = spawn_for_ctrl_c([sys.executable, "-m", "mcoder", "dataset", "build", str(src), "--verify",
                             "-o", str(tmp_path / "out.jsonl"), "--verify-workers", "2",
                             "--verify-timeout-s", "60"])  # fmt: skip
    deadline = time.monotonic() + 120
    while not set(judges.glob("mcoder-judge-*")) - earlier:  # the judge is up: its workers run
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
        time.sleep(0.05)
    time.sleep(2)  # the references are sleeping in their workers
    start = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    err = proc.communicate(timeout=120)[1]
    took = time.monotonic() - start
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    assert took < 2, f"Ctrl-C took {took:.1f} s"


@pytest.mark.heavy
def test_ctrl_c_in_verify_with_its_own_judge_kills_the_running_references():
    """``verify()`` without a judge makes its own: Ctrl-C there ends it at once too."""
    import threading

    from mcoder.dataset.verify.step import _open_judge

    p = Problem(id="z", source="t", question="?", tests=[Test("", "1\n")],
                reference_solutions=["import time\ntime.sleep(60)\nprint(1)"])  # fmt: skip
    from mcoder.dataset.verify.step import _jobs

    subs, rollouts = _jobs([p])
    start = None
    with pytest.raises(KeyboardInterrupt), _open_judge(None, cfg(timeout_s=60.0)) as j:
        worker = threading.Thread(target=lambda: j.judge(subs, rollouts), daemon=True)
        worker.start()
        time.sleep(2)  # the reference sleeps in its worker
        start = time.monotonic()
        raise KeyboardInterrupt  # what Ctrl-C raises in the main thread
    assert time.monotonic() - start < 2


def test_disagreeing_references_are_flagged_and_the_passing_one_keeps_the_problem(judge):
    base = next(p for p in examples() if p.id == "mc-stdin-001")  # a + b
    wrong_on_negatives = "a, b = map(int, input().split())\nprint(abs(a) + abs(b))\n"
    p = dataclasses.replace(base, reference_solutions=[wrong_on_negatives, *base.reference_solutions])
    (kept,), result = verify([p], cfg(runs=1), judge)
    assert kept.tests == base.tests and kept.meta["references_disagree"] is True
    assert result.notes["references_disagree"] == [base.id]


def test_problems_without_references_pass_unverified_unless_required(judge):
    p = dataclasses.replace(examples()[0], id="noref", reference_solutions=[])
    (kept,), _ = verify([p], cfg(), judge)
    assert kept.meta["verified"] is False and kept.tests == p.tests
    kept, result = verify([p], cfg(require_reference=True), judge)
    assert kept == [] and result.removals[0].reason == "no_reference"


# ---------------------------------------------------------------- the decision, from run results


def cells(table: dict[tuple[int, int], list[bool]], seconds: float = 0.1) -> dict[tuple[int, int], _Cell]:
    return {
        k: _Cell(v, ["accepted" if ok else "wrong_answer" for ok in v], [seconds] * len(v))
        for k, v in table.items()
    }


def problem(n_tests: int, n_refs: int = 1) -> Problem:
    return Problem(
        "p",
        "s",
        "q",
        [Test(str(i), str(i)) for i in range(n_tests)],
        reference_solutions=[f"print({r})" for r in range(n_refs)],
    )


def test_flaky_test_is_dropped():
    runs = {(0, 0): [True, True, True], (0, 1): [True, False, True], (0, 2): [True, True, True]}
    d = decide(problem(3), cells(runs), VerifyConfig())
    assert [t.input for t in d.problem.tests] == ["0", "2"]
    assert d.dropped == [{"id": "p", "test": 1, "why": "flaky"}]


def test_too_many_failing_tests_blame_the_reference():
    runs = {(0, t): [t == 0] for t in range(4)}
    d = decide(problem(4), cells(runs), VerifyConfig(runs=1))
    assert d.problem is None and d.removal.reason == "reference_fails_most_tests"


def test_no_single_reference_passing_everything_removes_the_problem():
    runs = {(0, 0): [True], (0, 1): [False], (1, 0): [False], (1, 1): [True]}
    d = decide(problem(2, 2), cells(runs), VerifyConfig(runs=1, max_drop_fraction=1.0))
    assert d.problem is None and d.removal.reason == "no_reference_passes_all" and d.disagree


def test_reference_time_is_the_fastest_passing_reference_stepped_up():
    c = cells({(0, 0): [True] * 3, (1, 0): [True] * 3})
    c[0, 0].seconds = [2.5, 0.61, 0.3]  # a cold first run does not count
    c[1, 0].seconds = [0.9, 1.2, 0.8]
    d = decide(problem(1, 2), c, VerifyConfig(runs=3))
    assert d.problem.meta["ref_time_s"] == [1.0]


@pytest.mark.parametrize(
    "s, step", [(0.0, 0.2), (0.05, 0.2), (0.2, 0.2), (0.21, 0.5), (0.7, 1.0), (3.2, 5.0), (20, 20)]
)
def test_step_up(s, step):
    assert step_up(s) == step


def test_only_the_first_references_run_and_all_are_kept(judge):
    base = next(p for p in examples() if p.id == "mc-stdin-001")
    never_run = "raise SystemExit(1)\n"
    p = dataclasses.replace(base, reference_solutions=[base.reference_solutions[0], never_run])
    (kept,), _ = verify([p], cfg(runs=1, max_references=1), judge)
    assert kept.reference_solutions == p.reference_solutions and "references_disagree" not in kept.meta
    (kept,), _ = verify([p], cfg(runs=1, max_references=2), judge)
    assert kept.meta["references_disagree"] is True


def test_a_reference_that_needs_a_package_verifies_only_when_it_is_allowed():
    """The judge shows programs the standard library only: a reference importing a third-party
    package fails verification unless the package is allowed (`dataset build --allow-package`)."""
    (p,) = [p for p in examples() if p.reference_solutions and p.test_kinds == {"stdin"}][:1]
    needs = dataclasses.replace(
        p, id="needs-orjson", reference_solutions=["import orjson\n" + p.reference_solutions[0]]
    )
    kept, result = verify([needs], cfg(runs=1))
    assert kept == [] and result.removals[0].detail["statuses"] == ["runtime_error"]
    kept, _ = verify([needs], cfg(runs=1, allow_packages=("orjson",)))
    assert [q.id for q in kept] == ["needs-orjson"]
