"""The bundled example problems: they parse strictly, the set has the stated mix, and every
reference solution passes every test when run for real in a fresh Python process."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from mcoder.jsonl import read_records
from mcoder.records import SCHEMA_VERSION, Problem

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "problems"
FILES = {"stdin": EXAMPLES / "stdin.jsonl", "call": EXAMPLES / "call.jsonl"}
TOLERANCE = 1e-6
RUN_TIMEOUT_S = 120  # whole batch of one problem; generous because the machine is shared

# Runs one stdin solution on every test of a problem in one process: each test gets a fresh
# namespace run as __main__, its own stdin (with .buffer) and a captured stdout.
STDIN_BATCH = r"""
import io, json, sys
payload = json.load(sys.stdin)
code = compile(payload["code"], "<solution>", "exec")
real_in, real_out = sys.stdin, sys.stdout
outputs = []
for text in payload["inputs"]:
    sys.stdin = io.TextIOWrapper(io.BytesIO(text.encode()), encoding="utf-8")
    buf = io.BytesIO()
    sys.stdout = io.TextIOWrapper(buf, encoding="utf-8")
    try:
        exec(code, {"__name__": "__main__"})
    except SystemExit as e:
        if e.code not in (None, 0):
            raise
    finally:
        sys.stdout.flush()
        captured = buf.getvalue().decode()
        sys.stdin, sys.stdout = real_in, real_out
    outputs.append(captured)
print(json.dumps(outputs))
"""

# Calls a call-based solution on every test: Solution().fn_name when the code defines a
# Solution class with that method, else the plain function fn_name. Prints each return as JSON.
CALL_BATCH = r"""
import json, sys
payload = json.load(sys.stdin)
ns = {"__name__": "__solution__"}
exec(compile(payload["code"], "<solution>", "exec"), ns)
name = payload["fn_name"]
cls = ns.get("Solution")
fn = getattr(cls(), name) if cls is not None and hasattr(cls, name) else ns[name]
print(json.dumps([json.dumps(fn(*[json.loads(a) for a in text.split("\n")])) for text in payload["inputs"]]))
"""


def _ids(path: Path) -> list[str]:
    """Problem ids for parametrising, read leniently so that a broken file still collects."""
    if not path.is_file():
        return []
    return [json.loads(line)["id"] for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def problems() -> dict[str, Problem]:
    out: dict[str, Problem] = {}
    for path in FILES.values():
        for p in read_records(path, Problem):
            assert p.id not in out, f"duplicate id {p.id}"
            out[p.id] = p
    return out


# ---------------------------------------------------------------- the set as a whole


def test_every_file_parses_strictly_with_one_kind_each():
    for kind, path in FILES.items():
        records = list(read_records(path, Problem))
        assert records, f"{path.name} is empty"
        for p in records:
            assert p.schema == SCHEMA_VERSION == 1
            assert (p.source, p.platform) == ("mcoder-examples", "mcoder")
            assert p.test_kinds == {kind}, p.id
            assert re.fullmatch(rf"mc-{kind}-\d{{3}}", p.id), p.id
            assert (p.fn_name is not None) == (kind == "call"), p.id


def test_counts_by_kind_and_difficulty(problems):
    assert len(problems) >= 48
    kinds = Counter("call" if p.fn_name else "stdin" for p in problems.values())
    assert kinds == {"stdin": 32, "call": 16}
    assert Counter(p.difficulty for p in problems.values()) == {"easy": 20, "medium": 20, "hard": 8}
    warmups = [p.id for p in problems.values() if "warm-up" in p.meta["tags"]]
    assert len(warmups) >= 10 and all(problems[i].difficulty == "easy" for i in warmups)
    classes = sum("class Solution" in p.starter_code for p in problems.values())
    assert 0 < classes < kinds["call"]  # both LeetCode-style methods and plain functions


def test_each_problem_is_complete_and_shows_its_first_test(problems):
    for p in problems.values():
        assert 5 <= len(p.tests) <= 12, p.id
        assert p.reference_solutions, p.id
        for word in ("Constraints", "Example"):
            assert word in p.question, (p.id, word)
        example = p.question.split("Example", 1)[1]
        assert p.tests[0].output.strip() in example, p.id
        if p.fn_name is None:
            assert p.tests[0].input.strip() in example, p.id
            assert p.starter_code == "", p.id
        else:
            assert f"def {p.fn_name}(" in p.starter_code, p.id
        if "float_tolerance" in p.meta:
            assert "1e-6" in p.question, p.id


def test_the_tricky_cases_are_present(problems):
    tags = Counter(t for p in problems.values() for t in p.meta["tags"])
    for tag in ("float output", "defined order", "multiple test cases", "large input",
                "multi-line output", "recursion"):
        assert tags[tag] >= 1, tag
    assert any("setrecursionlimit" in s for p in problems.values() for s in p.reference_solutions)
    assert any("sys.stdin.buffer.read()" in p.question for p in problems.values())
    assert any(p.fn_name and "float_tolerance" in p.meta for p in problems.values())
    biggest = max(len(t.input) for p in problems.values() for t in p.tests)
    assert biggest > 200_000


def test_definitions_match_the_files(problems):
    """A cheap drift check: the generator's definitions hold the same problems, tests and
    solutions as the files (the full byte-for-byte rebuild is the slow test below)."""
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import make_problems
    finally:
        sys.path.remove(str(ROOT / "examples"))
    specs = make_problems.all_specs()
    assert [s.id for s in specs] == sorted(problems, key=lambda i: (i.startswith("mc-call"), i))
    for s in specs:
        p = problems[s.id]
        assert [t.input for t in p.tests] == make_problems.test_inputs(s), s.id
        assert p.reference_solutions == s.solutions and p.difficulty == s.difficulty, s.id


@pytest.mark.slow
def test_generator_reproduces_the_files_byte_for_byte():
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "make_problems.py"), "--check"],
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr


# ---------------------------------------------------------------- reference solutions, run for real


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.rstrip().split("\n")]


def _float_token(token: str) -> bool:
    return bool(re.fullmatch(r"[-+]?(\d+\.\d*|\.\d+|\d+(\.\d*)?[eE][-+]?\d+)", token))


def _stdin_matches(expected: str, got: str, floats: bool) -> bool:
    """Exact after trailing whitespace; with ``floats``, float tokens within TOLERANCE."""
    want, have = _lines(expected), _lines(got)
    if want == have or not floats:
        return want == have
    tw, th = " ".join(want).split(), " ".join(have).split()
    if len(tw) != len(th):
        return False
    return all(a == b or (_float_token(a) and _close(float(a), b)) for a, b in zip(tw, th))


def _close(want: float, got: object) -> bool:
    try:
        return math.isclose(want, float(got), rel_tol=TOLERANCE, abs_tol=TOLERANCE)
    except (TypeError, ValueError):
        return False


def _value_matches(want: object, got: object) -> bool:
    if isinstance(want, float):
        return isinstance(got, (int, float)) and not isinstance(got, bool) and _close(want, got)
    if isinstance(want, list):
        return (isinstance(got, list) and len(got) == len(want)
                and all(_value_matches(a, b) for a, b in zip(want, got)))
    return type(want) is type(got) and want == got


def _run_batch(harness: str, payload: dict) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", harness], input=json.dumps(payload),
                          capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


@pytest.mark.parametrize("pid", _ids(FILES["stdin"]))
def test_stdin_reference_solutions_pass_every_test(problems, pid):
    p = problems[pid]
    floats = "float_tolerance" in p.meta
    for k, code in enumerate(p.reference_solutions):
        outputs = _run_batch(STDIN_BATCH, {"code": code, "inputs": [t.input for t in p.tests]})
        for i, (t, got) in enumerate(zip(p.tests, outputs)):
            assert _stdin_matches(t.output, got, floats), f"{pid} solution {k} test {i}: {got[:200]!r}"
    # The first test once more as a real program: its own process, its own stdin.
    proc = subprocess.run([sys.executable, "-c", p.reference_solutions[0]], input=p.tests[0].input,
                          capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False)
    assert proc.returncode == 0, proc.stderr
    assert _stdin_matches(p.tests[0].output, proc.stdout, floats)


@pytest.mark.parametrize("pid", _ids(FILES["call"]))
def test_call_reference_solutions_pass_every_test(problems, pid):
    p = problems[pid]
    for k, code in enumerate(p.reference_solutions):
        results = _run_batch(CALL_BATCH, {"code": code, "fn_name": p.fn_name,
                                          "inputs": [t.input for t in p.tests]})
        for i, (t, got) in enumerate(zip(p.tests, results)):
            assert _value_matches(json.loads(t.output), json.loads(got)), f"{pid} solution {k} test {i}"


def test_the_comparisons_reject_wrong_answers():
    """The checks above would catch a wrong solution: near misses are failures."""
    assert _stdin_matches("3\n", "3  \n\n", floats=False)
    assert not _stdin_matches("3\n", "4\n", floats=False)
    assert not _stdin_matches("1 2\n", "1\n", floats=False)
    assert _stdin_matches("2.5000000000\n", "2.5\n", floats=True)
    assert not _stdin_matches("2.5000000000\n", "2.5001\n", floats=True)
    assert not _stdin_matches("7\n", "7.0\n", floats=True)  # integer tokens stay exact
    assert _value_matches([1.5, [2]], [1.5000000001, [2]])
    assert not _value_matches([0, 1], [1, 0])  # order matters where the statement defines it
    assert not _value_matches(True, 1) and not _value_matches(2, 2.0)
