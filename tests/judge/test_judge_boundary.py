"""The judge's trust boundary on candidate data, one test per hole of the audit that found it open
(issue 27's holes 1, 2, 3, 4 and 7), each written the way an attacker would: a real program, run
by the real judge in its sandbox, sending what a policy could learn to send. Each failed before
the boundary was made (the run stopped, hung, re-rolled a guess, or held ~860 MB).

Then the rules around it: the ``judge_refused`` verdict when the judge's own code fails on a
candidate's data (a comparator made to raise, the one fault here that no program can cause any
more), a call test that cannot tell a do-nothing function from a correct one, and the one door
``untrusted.admit`` read field by field.
"""

from __future__ import annotations

import json
import textwrap
import tracemalloc
from pathlib import Path

import orjson
import pytest

from conftest import judge_config
from mcoder.jsonl import dumps
from mcoder.judge import core, untrusted
from mcoder.judge.config import JudgeConfig
from mcoder.judge.core import Judge
from mcoder.judge.stage import judge_files
from mcoder.records import STATUSES, Problem, Rollout, Test, Verdict, from_dict

DOUBLE = Problem(id="double", source="t", question="", tests=[Test("1\n", "2\n"), Test("5\n", "10\n")])
HONEST = "print(2 * int(input()))"


def _cfg(**kw) -> JudgeConfig:
    return judge_config(**{"workers": 1, "timeout_s": 5.0, "memory_mb": 512, **kw})


@pytest.fixture(scope="module")
def judge():
    with Judge(_cfg(max_output_mb=20)) as j:  # room for hole 7's 16 MB output
        yield j


def _fenced(code: str) -> str:
    return f"```python\n{textwrap.dedent(code).strip()}\n```"


def _judge(judge: Judge, problem: Problem, *programs: str) -> list[Verdict]:
    rollouts = [Rollout(id=f"r{i}", problem_id=problem.id, completion=_fenced(c)) for i, c in enumerate(programs)]
    return judge.judge({problem.id: problem}, rollouts)


def _judge_files(tmp_path: Path, problem: Problem, programs: list[str], **cfg) -> list[dict]:
    """The stage itself (`mcoder judge`): problems and rollouts files in, the verdicts file out."""
    problems, rollouts, out = tmp_path / "p.jsonl", tmp_path / "r.jsonl", tmp_path / "v.jsonl"
    problems.write_bytes(dumps(problem))
    rollouts.write_bytes(
        b"".join(dumps(Rollout(id=f"r{i}", problem_id=problem.id, completion=_fenced(c))) for i, c in enumerate(programs))
    )
    judge_files(_cfg(**cfg), problems, rollouts, out)
    return [json.loads(line) for line in out.read_text().splitlines()]


# ------------------------------------------------------------------ hole 1: text the writer cannot encode

FORGED_ERROR_REPLY = r"""
import os, struct
frame = b'{"t":["error","\ud800",false]}'
os.write(4, struct.pack("<I", len(frame)) + frame)
def f(x):
    import time
    time.sleep(30)
"""

LONE_SURROGATE_PROGRAMS = {
    # a stdin program forges the report line the harness reads on fd 3, then leaves at once
    "stdin_report": (
        DOUBLE,
        r"""
        import os
        os.write(3, b'{"ok": false, "exc": "\\ud800", "mem": false}\n')
        os._exit(0)
        """,
    ),
    # a call test: the program forges an error reply on the call channel (fd 4) naming a lone
    # surrogate as its exception (a class cannot have such a name; a forged reply can)
    "call_error_reply": (
        Problem(id="c", source="t", question="", fn_name="f", tests=[Test("1", "2", "call")]),
        FORGED_ERROR_REPLY,
    ),
    # a functional check reads the same forged reply and reports the name it holds
    "functional_error_reply": (
        Problem(
            id="fx", source="t", question="", fn_name="f",
            tests=[Test("def check(candidate):\n    assert candidate(1) == 2\n", "", "functional")],
        ),
        FORGED_ERROR_REPLY,
    ),
}


@pytest.mark.parametrize("channel", sorted(LONE_SURROGATE_PROGRAMS))
def test_hole1_a_lone_surrogate_in_a_candidates_text_is_written_not_fatal(tmp_path, channel):
    problem, attack = LONE_SURROGATE_PROGRAMS[channel]
    honest = HONEST if problem is DOUBLE else "def f(x):\n    return 2 * x"
    rows = _judge_files(tmp_path, problem, [attack, honest])
    by_id = {r["rollout_id"]: r for r in rows if "rollout_id" in r}
    assert set(by_id) == {"r0", "r1"}
    assert by_id["r0"]["status"] == "runtime_error"
    assert "\\ud800" in json.dumps(by_id["r0"]["first_failure"])  # written out, still visible
    assert by_id["r1"]["status"] == "accepted"


# ------------------------------------------------------------------ hole 2: an unparsable literal

def test_hole2_an_unparsable_literal_is_a_wrong_answer_and_the_run_goes_on(tmp_path):
    problem = Problem(id="lit", source="t", question="", tests=[Test("", "[1, 2]\n")])
    rows = _judge_files(tmp_path, problem, ["print(\"['\\\\N{foo}']\")", "print([1, 2])"])
    by_id = {r["rollout_id"]: r for r in rows if "rollout_id" in r}
    assert by_id["r0"]["status"] == "wrong_answer" and by_id["r0"]["first_failure"]["got"].startswith("['\\N{foo}']")
    assert by_id["r1"]["status"] == "accepted"


def test_a_comparator_that_raises_refuses_that_candidate_only(judge, monkeypatch):
    """Fault injection (named as such): no known output makes a comparator raise any more, so one
    is made to; the candidate gets judge_refused, its neighbours their own verdicts, and the
    worker is still in step with the judge for the next job."""
    real = core.compare_output

    def raising(expected, got, mode, **kw):
        if got.startswith("boom"):
            raise SyntaxError("a comparator bug")
        return real(expected, got, mode, **kw)

    monkeypatch.setattr(core, "compare_output", raising)
    v = _judge(judge, DOUBLE, "print('boom')", HONEST, "print('boom'); print(input())")
    assert [x.status for x in v] == ["judge_refused", "accepted", "judge_refused"]
    assert "SyntaxError" in v[0].first_failure["detail"] and not v[0].passed and v[0].reward == 0.0
    monkeypatch.undo()
    assert _judge(judge, DOUBLE, HONEST)[0].status == "accepted"


def test_judge_refused_is_a_status_every_reader_knows():
    assert "judge_refused" in STATUSES
    from mcoder.bench.table import FAILURE_STATUSES
    from mcoder.train.masking import is_non_incorrect

    assert "judge_refused" in FAILURE_STATUSES
    assert not any(is_non_incorrect("judge_refused", cut, r) for cut in (False, True)
                   for r in ("accepted", "accepted_or_no_code"))
    v = from_dict(Verdict, {"rollout_id": "r", "problem_id": "p", "reward": 0.0, "passed": False,
                            "status": "judge_refused", "tests_passed": 0, "tests_total": 1})
    assert v.status == "judge_refused"


# ------------------------------------------------------------------ hole 3: a set whose items hash alike

_COLLIDING = 150_000  # items of hash 0 (k * (2**61 - 1)): ~3 MB, minutes to decode into a set


@pytest.mark.timeout(90)
@pytest.mark.parametrize("container", ["set", "dict"])
def test_hole3_a_reply_of_colliding_items_is_read_in_linear_time(judge, container):
    """The program forges its reply frame on the call channel (fd 4) while it loads: building
    such a set in its own process would be quadratic for it too, writing the bytes is not. A
    hang here (the 90 s timeout) is the hole; the judge then answers in about a second."""
    item = "[{k}, 0]" if container == "dict" else "{k}"
    tag = "d" if container == "dict" else "s"
    attack = f"""
    import os, struct
    M = 2**61 - 1
    body = ",".join({item!r}.format(k=k * M) for k in range(1, {_COLLIDING}))
    frame = ('{{"t":["ok",{{"{tag}":[' + body + ']}}]}}').encode()
    data = struct.pack("<I", len(frame)) + frame
    while data:
        data = data[os.write(4, data):]
    def f(x):
        return [1, 2]
    """
    problem = Problem(id="h3", source="t", question="", fn_name="f", tests=[Test("1", "[1, 2]", "call")])
    (v,) = _judge(judge, problem, attack)
    assert v.status == "wrong_answer"


# ------------------------------------------------------------------ hole 4: kill the worker, re-roll

def test_hole4_a_program_that_breaks_its_workers_cleanup_is_not_run_again(judge):
    """The attacker guesses; when it knows it guessed wrong it makes the cleanup crash its worker
    (a folder chain 2,000 deep under the name main.py, which the cleanup skipped and then walked
    recursively), hoping for a fresh run. A fresh worker's first folder is c1, so a re-run is
    visible to it: there it answers right. A re-run would be accepted."""
    _judge(judge, DOUBLE, HONEST)  # the worker is not fresh any more: its next folder is not c1
    attack = """
    import os
    if os.path.basename(os.getcwd()) == "c1":  # a fresh worker: the judge ran us again
        print(2 * int(input()))
    else:
        print(7)  # the wrong guess; now break the cleanup and hope for a re-roll
        os.remove("main.py")
        os.mkdir("main.py")
        os.chdir("main.py")
        for _ in range(2000):
            os.mkdir("d")
            os.chdir("d")
    """
    worker = judge.pool.workers[0].proc
    (v,) = _judge(judge, DOUBLE, attack)
    assert v.status == "wrong_answer" and v.tests_passed == 0
    assert judge.pool.workers[0].proc is worker and worker.poll() is None  # the cleanup held
    assert _judge(judge, DOUBLE, HONEST)[0].status == "accepted"


def test_a_folder_named_main_py_does_not_survive_to_the_next_test(judge):
    """Between two tests of one program the scratch is cleared with no name spared: state kept
    under the name main.py (a folder) would let test 1 know what test 0 printed."""
    attack = """
    import os
    if os.path.isdir("main.py"):
        print("kept")
    else:
        os.remove("main.py")
        os.mkdir("main.py")
        print(2 * int(input()))
    """
    problem = Problem(id="keep", source="t", question="", tests=[Test("1\n", "2\n"), Test("5\n", "kept\n")])
    (v,) = _judge(judge, problem, attack)
    assert v.status == "wrong_answer" and v.tests_passed == 1


# ------------------------------------------------------------------ hole 7: memory of a comparison

def _peak_mb(judge: Judge, problem: Problem, program: str) -> tuple[Verdict, float]:
    tracemalloc.start()
    try:
        (v,) = _judge(judge, problem, program)
        return v, tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(
    ("expected", "program", "limit_mb"),
    [
        # 16 MB against a 2-byte answer: refused unread (Python objects peaked at 214 MB before)
        ("1\n", "import sys\nsys.stdout.write('1\\n' * (8 << 20))", 80),
        # 1.3 MB of padded lines against a 0.5 MB answer: compared, in chunks (21 MB before, 4 after)
        ("1\n" * (1 << 18), "import sys\nsys.stdout.write('1   \\n' * (1 << 18) + '2\\n')", 10),
        # a line of 0.5M tokens against one token a line (16 MB before, 4 after)
        ("1 " * (1 << 19) + "\n", "import sys\nsys.stdout.write('1\\n' * (1 << 19) + '2\\n')", 10),
    ],
    ids=["far_longer", "padded", "tokens"],
)
def test_hole7_a_huge_output_is_compared_in_bounded_memory(judge, expected, program, limit_mb):
    """Peak memory of the judge process (Python's own allocations, tracemalloc) while it judges
    one hostile output: a few copies of the output at most, never ~50 times its size."""
    problem = Problem(id="big", source="t", question="", tests=[Test("", expected)])
    v, peak = _peak_mb(judge, problem, program)
    assert v.status == "wrong_answer"
    assert peak < limit_mb, f"the judge held {peak:.0f} MB"


# ------------------------------------------------------------------ lesser: in-place results

def test_a_problem_whose_call_tests_all_expect_null_accepts_no_program(judge):
    """LeetCode's "modify nums in-place" functions return None; tests that only say "returns
    null" cannot tell a correct one from one that does nothing, so neither is accepted. A null
    among other answers is an ordinary expected value."""
    in_place = Problem(
        id="rotate", source="t", question="", fn_name="rotate",
        tests=[Test("[1, 2, 3]\n1", "null", "call"), Test("[1, 2]\n3", "null", "call")],
    )
    v = _judge(judge, in_place, "def rotate(nums, k):\n    pass", "def rotate(nums, k):\n    nums[:] = nums[-k:] + nums[:-k]")
    assert [x.status for x in v] == ["wrong_answer", "wrong_answer"]
    assert "null" in v[0].first_failure["reason"]
    mixed = Problem(
        id="first", source="t", question="", fn_name="first",
        tests=[Test("[]", "null", "call"), Test("[4, 5]", "4", "call")],
    )
    right = "def first(xs):\n    return xs[0] if xs else None"
    assert [x.status for x in _judge(judge, mixed, right, "def first(xs):\n    pass")] == ["accepted", "wrong_answer"]


# ------------------------------------------------------------------ the door itself

def test_admit_keeps_known_fields_typed_capped_and_encodable():
    res = {
        "status": "runtime_error", "i": 0, "detail": "\ud800" * 1000, "stderr": b"\xff" * 10,
        "stdout": "x" * 100, "value": None, "t": float("nan"), "extra": object(),
    }
    out = untrusted.admit(res, 1, 50)
    assert set(out) == {"status", "i", "detail", "stderr", "stdout"}
    assert len(out["stdout"]) == 50 and out["detail"].startswith("\\ud800")
    orjson.dumps(out)
    for bad in ({"status": "accepted"}, {"status": "ok", "i": 1}, {"status": "ok", "i": True}, [], None):
        with pytest.raises(untrusted.Refused):
            untrusted.admit(bad, 1, 50)


# ------------------------------------------------------------------ lesser: later tests' inputs

_SEARCH_MEMORY = """
import gc
def seen():
    needle = "".join(["TOP", "SECRET"])
    for o in gc.get_objects():
        items = o.values() if isinstance(o, dict) else o if isinstance(o, (list, tuple)) else ()
        for x in items:
            if isinstance(x, bytes):
                x = x.decode("latin-1")
            if isinstance(x, str) and needle in x:
                return "found"
            if isinstance(x, list) and any(isinstance(y, str) and needle in y for y in x):
                return "found"
    return "clean"
"""


@pytest.mark.parametrize("kind", ["stdin", "call"])
def test_a_program_at_its_first_test_cannot_read_the_next_tests_input(judge, kind):
    """A job once carried every test's input, so the process of test 0 (a fork of the worker)
    could find them all in its memory. Each input now reaches the worker when its test comes."""
    if kind == "stdin":
        problem = Problem(id="mem-s", source="t", question="", tests=[Test("x\n", "clean\n"), Test("TOPSECRET1\n", "?\n")])
        program = _SEARCH_MEMORY + "print(seen())"
    else:
        problem = Problem(
            id="mem-c", source="t", question="", fn_name="f",
            tests=[Test('"x"', '"clean"', "call"), Test('"TOPSECRET1"', '"?"', "call")],
        )
        program = _SEARCH_MEMORY + "def f(x):\n    return seen()"
    (v,) = _judge(judge, problem, program)
    assert v.tests_passed == 1 and v.first_failure["index"] == 1, v.first_failure


def test_a_worker_whose_job_raised_is_replaced_not_reused(judge, monkeypatch):
    """Fault injection (named as such): the judge's reading of a result raises past the grader's
    own guard, in the middle of the worker's protocol. That candidate gets judge_refused, the
    worker process is replaced before it goes back to the pool, and the next job is judged."""
    real = core._Grader.receive

    def raising(self, indexes, res):
        if "boom" in (res.get("stdout") or ""):
            raise RuntimeError("a bug in the judge's own reading")
        return real(self, indexes, res)

    monkeypatch.setattr(core._Grader, "receive", raising)
    before = judge.pool.workers[0].proc
    (v,) = _judge(judge, DOUBLE, "print('boom')  # not the cached program of another test")
    assert v.status == "judge_refused" and "RuntimeError" in v.first_failure["detail"] and not v.cached
    assert judge.pool.workers[0].proc is not before and before.poll() is not None
    monkeypatch.undo()
    assert _judge(judge, DOUBLE, HONEST)[0].status == "accepted"


def test_a_verdict_the_writer_cannot_encode_becomes_a_refusal_not_an_exit(judge, monkeypatch):
    """Fault injection (named as such): record_safe is bypassed, so a lone surrogate reaches the
    writer's own encoding (orjson, as `mcoder judge` writes). The rollout still gets a verdict."""
    monkeypatch.setattr(untrusted, "record_safe", lambda value: value)
    written = []
    problem = Problem(id="sur", source="t", question="", tests=[Test("", "a\n")])
    rollout = Rollout(id="r", problem_id="sur", completion=_fenced("print('\\ud800 '[0:0] + 'b')  # writer"))

    def write(_i, v):
        written.append(orjson.loads(dumps(v)))

    monkeypatch.setattr(core, "_shown", lambda text: "\ud800")
    (v,) = judge.judge({"sur": problem}, [rollout], write)
    assert v.status == "judge_refused" and [w["status"] for w in written] == ["judge_refused"]


def test_a_worker_that_ended_between_jobs_costs_the_next_candidate_nothing():
    """A worker can end after its last reply (killed from outside, as the host's OOM killer
    would; or a crash while it tidies up): that death belongs to no candidate of the next job.
    Before, the next honest program met the dead pipe and got runtime_error "judge worker died"."""
    with Judge(_cfg()) as j:
        (first,) = _judge(j, DOUBLE, HONEST)
        (worker,) = j.pool.workers
        worker.proc.kill()  # fault injection (named as such): the death between two jobs
        worker.proc.wait()
        (after,) = _judge(j, DOUBLE, HONEST + "  # the next candidate")
    assert first.status == "accepted"
    assert after.status == "accepted", after.first_failure


# ------------------------------------------------------------------ the benchmark of holes 3 and 7

def test_the_boundary_benchmark_prints_its_two_tables(capsys):
    """benchmarks/judge_boundary.py at a small size: both tables, the judge's path on colliding
    items far faster than a real set, the real judge's peak under the whole-text one."""
    _cfg()  # skips where there is no sandbox
    from benchmarks import judge_boundary as bench

    assert bench.main(["--sizes", "3000", "--output-mb", "2"]) == 0
    out = capsys.readouterr().out
    rows = {}
    for line in out.splitlines():
        parts = line.split()
        if parts[:1] in (["set"], ["dict"]):
            rows[parts[0]] = (int(parts[1]), float(parts[2]), float(parts[3]))
    assert set(rows) == {"set", "dict"} and all(n == 3000 for n, _, _ in rows.values())
    assert all(now < before for _, before, now in rows.values())
    peaks = [float(line.split()[-1]) for line in out.splitlines() if line.startswith("the ")]
    assert len(peaks) == 2 and "now: wrong_answer" in out
    whole, judged = peaks
    assert judged < whole
