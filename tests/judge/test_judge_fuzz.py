"""A fuzzing suite for the judge's trust boundary: what a hostile program can send, generated.

- Every channel a candidate can write (taken from ``harness.CHANNELS``, which a test checks
  against the fds a real candidate finds open) gets random and malformed bytes: broken UTF-8,
  lone surrogates, forged frames and report lines, huge length headers, deeply nested and
  hash-colliding replies, at a random point of the program's run, which then ends in a random
  way. Property: the judge finishes, every rollout gets a verdict that the verdict writer can
  encode, honest neighbours in the same batch get the verdict they get alone, and no hostile
  program is accepted.
- Every comparator of ``compare``'s own registries (``RULES``, ``OUTPUT_RULES``, ``VALUE_RULES``, per
  mode) gets hostile text and values (unparsable literals, deep nesting, colliding sets,
  surrogates): it returns its rule's name or None and never raises; the stream-reading text
  rules agree with a list-based reading of their definition.
- The worker dies at every step of the protocol (a fault the test injects, named as such:
  no program can kill its worker): the judge finishes, the verdict counts only what was graded
  before the death, and the next job runs on a fresh worker.

A short budget by default; ``make test-slow`` runs the slow variants with many more examples.
"""

from __future__ import annotations

import json
import textwrap

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import judge_config
from mcoder.jsonl import dumps
from mcoder.judge import compare, harness, plain, pool
from mcoder.judge.config import JudgeConfig
from mcoder.judge.core import Judge
from mcoder.records import Problem, Rollout, Test

SHORT = settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
LONG = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
PURE_SHORT = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
PURE_LONG = settings(max_examples=5000, deadline=None, suppress_health_check=list(HealthCheck))

# Two tests with different answers: a program that ignores its input cannot pass both, so a
# hostile program (which writes the same bytes every run) is never rightly accepted.
PROBLEMS = {
    # two stdin tests: one process serves them (harness.serve_stdin); one: a process of its own
    "stdin": Problem(id="stdin", source="t", question="", tests=[Test("3\n", "6\n"), Test("5\n", "10\n")]),
    "stdin-alone": Problem(id="stdin-alone", source="t", question="", tests=[Test("3\n", "6\n")]),
    "call": Problem(
        id="call", source="t", question="", fn_name="f",
        tests=[Test("3", "6", "call"), Test("5", "10", "call")],
    ),
    "functional": Problem(
        id="functional", source="t", question="", fn_name="f",
        tests=[Test("def check(candidate):\n    assert candidate(3) == 6\n    assert candidate(5) == 10\n", "", "functional")],
    ),
}
TEST_KIND = {"stdin": "stdin", "stdin-alone": "stdin", "call": "call", "functional": "functional"}
HONEST = {"stdin": "print(2 * int(input()))", "stdin-alone": "print(2 * int(input()))", "call": "def f(x):\n    return 2 * x", "functional": "def f(x):\n    return 2 * x"}


def _cfg(**kw) -> JudgeConfig:
    # a roomy wall backstop: honest neighbours must not meet it on a loaded machine (hostile
    # programs that spin are stopped by the CPU limit, not by it)
    return judge_config(
        **{"workers": 2, "timeout_s": 2.0, "wall_factor": 4.0, "memory_mb": 512, "max_output_mb": 2.0, **kw}
    )


@pytest.fixture(scope="module")
def judge():
    with Judge(_cfg()) as j:
        yield j


def _rollout(rid: str, problem: Problem, code: str) -> Rollout:
    return Rollout(id=rid, problem_id=problem.id, completion=f"```python\n{code}\n```")


# ------------------------------------------------------------------ what a hostile program sends

_M = 2**61 - 1  # k * _M all hash to 0


def _frame(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "little") + payload


json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20),
    st.sampled_from(["\ud800", "\udfff", "\x00", "\N{RIGHT-TO-LEFT OVERRIDE}"]),
)
tagged = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.builds(lambda xs: {"l": xs}, st.lists(inner, max_size=4)),
        st.builds(lambda xs: {"t": xs}, st.lists(inner, max_size=4)),
        st.builds(lambda xs: {"s": xs}, st.lists(inner, max_size=4)),
        st.builds(lambda xs: {"d": [[k, v] for k, v in xs]}, st.lists(st.tuples(inner, inner), max_size=3)),
        st.builds(lambda k, v: {k: v}, st.sampled_from(["l", "d", "b", "x", "f"]), inner),
    ),
    max_leaves=12,
)


def _reply_json(value) -> bytes:
    return json.dumps(value, ensure_ascii=True).encode()


hostile_bytes = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=100).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.builds(lambda v: _frame(b'{"t":["ok",' + _reply_json(v) + b"]}"), tagged),
    st.builds(lambda v: _frame(_reply_json({"t": ["error", v, False]})), json_scalars),
    st.builds(lambda v: _reply_json({"ok": False, "exc": v, "mem": False}) + b"\n", json_scalars),
    st.builds(lambda v: _reply_json(v) + b"\n", tagged),
    st.integers(20, 200_000).map(lambda d: _frame(b'{"t":["ok",' + b'{"l":[' * d + b"1" + b"]}" * d + b"]}")),
    st.integers(10, 20_000).map(
        lambda n: _frame(b'{"t":["ok",{"s":[' + ",".join(str(k * _M) for k in range(1, n)).encode() + b"]}]}")
    ),
    st.integers(10, 20_000).map(
        lambda n: _frame(b'{"t":["ok",{"d":[' + ",".join(f"[{k * _M},0]" for k in range(1, n)).encode() + b"]}]}")
    ),
    st.just(b"\xff\xff\xff\xff"),  # a header promising 4 GB
    st.just(b"['\\N{foo}']\n"),
    st.just(b"[" * 100_000),
)
ENDINGS = {
    "return": "",
    "exit0": "os._exit(0)",
    "exit3": "os._exit(3)",
    "segv": "os.kill(os.getpid(), signal.SIGSEGV)",
    "raise": "raise type('\\ud800', (Exception,), {})()",
    "spin": "while True: pass",
}


def _hostile_program(kind: str, channel: int, data: bytes, when: str, ending: str) -> str:
    """A program that writes ``data`` to fd ``channel`` when it loads or when it is called (or
    reads its input), then ends by ``ending``; whatever it returns or prints is a constant."""
    write = textwrap.dedent(f"""
        data = {data!r}
        try:
            while data:
                data = data[os.write({channel}, data):]
        except OSError:
            pass
        {ENDINGS[ending]}
    """).strip("\n")
    body = textwrap.indent(write, "    ")
    if TEST_KIND[kind] == "stdin":
        run = f"def run():\n{body}\n    print(6)\n"
        return f"import os, signal\n{run}run()\n" if when == "load" else f"import os, signal\ninput()\n{run}run()\n"
    if when == "load":
        return f"import os, signal\ndef run():\n{body}\nrun()\ndef f(x):\n    return 6\n"
    return f"import os, signal\ndef f(x):\n{body}\n    return 6\n"


def hostile(kind: str):
    return st.builds(
        lambda channel, data, when, ending: _hostile_program(kind, channel, data, when, ending),
        st.sampled_from(sorted(harness.CHANNELS[TEST_KIND[kind]].values())),
        hostile_bytes,
        st.sampled_from(["load", "run"]),
        st.sampled_from(sorted(ENDINGS)),
    )


batches = st.sampled_from(sorted(PROBLEMS)).flatmap(
    lambda kind: st.tuples(st.just(kind), st.lists(hostile(kind), min_size=1, max_size=3))
)


def _check_batch(judge: Judge, kind: str, programs: list[str]) -> None:
    problem = PROBLEMS[kind]
    rollouts = []
    for i, code in enumerate(programs):  # honest neighbours around each hostile program
        rollouts += [_rollout(f"h{i}", problem, code), _rollout(f"n{i}", problem, HONEST[kind] + f"  # {i}")]
    verdicts = judge.judge({problem.id: problem}, rollouts)
    assert len(verdicts) == len(rollouts) and all(v is not None for v in verdicts)
    for r, v in zip(rollouts, verdicts):
        dumps(v)  # the verdict writer's own encoding: it cannot fail on any verdict
        orjson.loads(orjson.dumps(v.first_failure))
        if r.id.startswith("h"):
            assert v.status != "accepted", (r.completion, v)
        else:  # the neighbour's verdict alone is "accepted" (checked once below)
            assert v.status == "accepted", (r.completion, v)


def test_honest_neighbours_are_accepted_alone(judge):
    for kind, problem in PROBLEMS.items():
        (v,) = judge.judge({problem.id: problem}, [_rollout("alone", problem, HONEST[kind])])
        assert v.status == "accepted", (kind, v)


@SHORT
@given(batch=batches)
@pytest.mark.heavy
def test_hostile_bytes_on_every_channel(judge, batch):
    _check_batch(judge, *batch)


@pytest.mark.slow
@LONG
@given(batch=batches)
def test_hostile_bytes_on_every_channel_long(judge, batch):
    _check_batch(judge, *batch)


def test_the_channels_are_the_fds_a_candidate_finds_open(judge):
    """harness.CHANNELS is what the fuzzing drives; here a real candidate of each kind lists the
    fds it holds that it can write to, and nothing is missing from the registry."""
    probe = (
        "import os, fcntl\n"
        "def flags(f):\n"
        "    try:\n"
        "        return fcntl.fcntl(f, fcntl.F_GETFL)\n"
        "    except OSError:\n"
        "        return None\n"
        "w = [f for f in range(1, 1024) if flags(f) is not None and flags(f) & (os.O_WRONLY | os.O_RDWR)]\n"
    )
    for kind, problem in PROBLEMS.items():
        say = "os.write(2, ('FDS' + json.dumps(w) + '\\n').encode()); os._exit(1)"
        code = "import json\n" + probe + (say if TEST_KIND[kind] == "stdin" else f"def f(x):\n    {say}")
        (v,) = judge.judge({problem.id: problem}, [_rollout("probe", problem, code)])
        (line,) = [ln for ln in v.first_failure["stderr"].splitlines() if ln.startswith("FDS")]
        writable = set(json.loads(line[3:]))
        assert writable - {0} <= set(harness.CHANNELS[TEST_KIND[kind]].values()), (kind, writable, v.first_failure)


# ------------------------------------------------------------------ every comparator, hostile input

hostile_text = st.one_of(
    st.text(max_size=60),
    st.text(alphabet="[](){},:'\"\\ 0123456789.eE+-NTFaslrue\n\t", max_size=60),
    st.sampled_from([
        "['\\N{foo}']", "['\\x']", "[1e999999999]", "{1, 1}", "{1: 2, 1: 3}", "(1)", "[1,]", "['\\ud800']",
        "[" * 5000, "[" * 3000 + "]" * 3000, "\ud800", "1" * 5000, "-" * 10, "nan", "inf", "1e-999999999999999999999",
        "{" + ", ".join(str(k * _M) for k in range(1, 500)) + "}", "sNaN", "1 2 3\n\n4", "\r\n\r\n",
    ]),
)
expected_texts = st.one_of(
    st.sampled_from(["[1, 2]\n", "(1, 'a')\n", "{1: 2}\n", "{1, 2}\n", "1.5\n", "42\n", "YES\n", "a b\n\nc\n", ""]),
    st.text(max_size=30),
)


def _rules_total(expected: str, got: str) -> None:
    names = set(compare.MICROCODER_RULES) | set(compare.STRICT_RULES)
    for mode, rules in compare.OUTPUT_RULES.items():
        for rule in rules:
            assert rule(expected, got, compare.FLOAT_RTOL, compare.FLOAT_ATOL) in names | {None}
        assert compare.compare_output(expected, got, mode) in names | {None}
    for fn in compare.RULES.values():  # every registered rule, one added by a user's module too
        seen = compare.Compared("stdin", expected, got, "", compare.FLOAT_RTOL, compare.FLOAT_ATOL)
        assert isinstance(fn(seen), str | None)
    for data in (got.encode("utf-8", "surrogatepass"), b'{"t":["ok",' + got.encode("utf-8", "surrogatepass") + b"]}"):
        try:
            value = plain.decode(data, hashfree=True)
        except plain.NotPlain:
            continue
        for exp in (json.loads("[1, 2]"), {"a": 1}, None, 1.5, "x", [[1], {"k": [2]}]):
            for mode, rules in compare.VALUE_RULES.items():
                for rule in rules:
                    assert rule(exp, value, compare.FLOAT_RTOL, compare.FLOAT_ATOL) in names | {None}
                assert compare.compare_value(exp, value, mode) in names | {None}
            for fn in compare.RULES.values():
                seen = compare.Compared("call", exp, value, "", compare.FLOAT_RTOL, compare.FLOAT_ATOL)
                assert isinstance(fn(seen), str | None)


@PURE_SHORT
@given(expected=expected_texts, got=hostile_text)
def test_every_comparator_is_total_on_hostile_text(expected, got):
    _rules_total(expected, got)


@pytest.mark.slow
@PURE_LONG
@given(expected=expected_texts, got=hostile_text)
def test_every_comparator_is_total_on_hostile_text_long(expected, got):
    _rules_total(expected, got)


def _lines_by_definition(text: str) -> tuple[list[str], list[str]]:
    """The whitespace and lines rules' readings as lists, from the module docstring."""
    lines = [ln.rstrip() for ln in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    stripped = [ln.strip() for ln in lines]
    while stripped and not stripped[0]:
        stripped.pop(0)
    while stripped and not stripped[-1]:
        stripped.pop()
    return lines, stripped


def _tokens_by_definition(e: list[str], g: list[str]) -> bool:
    def same(a: list[str], b: list[str]) -> bool:
        return len(a) == len(b) and all(x == y or compare._token_match(x, y, 1e-6, 1e-6) for x, y in zip(a, b))

    if "" in e or "" in g:
        return len(e) == len(g) and all(same(x.split(), y.split()) for x, y in zip(e, g))
    return same("\n".join(e).split(), "\n".join(g).split())


layout_text = st.text(alphabet=" \t\r\n\x0b\x0c\x1c\u2028\u00a0ab12.5-", max_size=40)


@PURE_SHORT
@given(expected=layout_text, got=layout_text)
def test_the_stream_rules_read_as_their_definition(expected, got):
    """Read in the module's chunks and batches, and in tiny ones (every cut point exercised)."""
    (e_ws, e_lines), (g_ws, g_lines) = _lines_by_definition(expected), _lines_by_definition(got)
    for chunk, batch in ((compare._CHUNK, compare._BATCH), (3, 2)):
        with pytest.MonkeyPatch.context() as m:
            m.setattr(compare, "_CHUNK", chunk)
            m.setattr(compare, "_BATCH", batch)
            assert (compare._whitespace_rule(expected, got, 1e-6, 1e-6) is not None) == (e_ws == g_ws)
            assert (compare._lines_rule(expected, got, 1e-6, 1e-6) is not None) == (e_lines == g_lines)
            tokens = _tokens_by_definition(e_lines, g_lines)
            assert (compare._tokens_rule(expected, got, 1e-6, 1e-6) is not None) == tokens
            for text in (expected, got):
                assert list(compare._tokens(text)) == text.split()
                assert list(compare._text_lines(text)) == (text.split("\n") if text else [])


@PURE_SHORT
@given(values=st.lists(st.one_of(st.integers(), st.text(max_size=5), st.floats(allow_nan=False), st.booleans()), max_size=8))
def test_hashfree_sets_and_dicts_compare_as_real_ones(values):
    """A set or dict decoded without hashing compares as the real one does (same verdicts)."""
    try:
        real_set = set(values)
    except TypeError:
        return
    as_set = plain.decode(plain.encode(real_set), hashfree=True)
    assert compare.compare_value(real_set, as_set) == compare.compare_value(real_set, real_set)
    real_dict = {v: i for i, v in enumerate(values)}
    as_dict = plain.decode(plain.encode(real_dict), hashfree=True)
    assert compare.compare_value(real_dict, as_dict) == "value_exact"
    assert compare.compare_value(real_dict, as_dict, "strict") == compare.compare_value(real_dict, real_dict, "strict")


# ------------------------------------------------------------------ the worker dies at each step

class _KillAt:
    """Fault injection (named as such): kill the worker process just before its ``step``-th
    frame exchange with the judge (sent or received); counts the exchanges of a run."""

    def __init__(self, step: int | None):
        self.step, self.seen = step, 0

    def wrap(self, fn):
        def exchange(worker, *args):
            if self.step is not None and self.seen == self.step and worker.proc is not None:
                worker.proc.kill()
                worker.proc.wait()
            self.seen += 1
            return fn(worker, *args)

        return exchange


def _run_with_kill(monkeypatch, judge: Judge, kind: str, step: int | None):
    kill = _KillAt(step)
    monkeypatch.setattr(pool.Worker, "_send", kill.wrap(pool.Worker._send))
    monkeypatch.setattr(pool.Worker, "_recv", kill.wrap(pool.Worker._recv))
    problem = PROBLEMS[kind]
    (v,) = judge.judge({problem.id: problem}, [_rollout(f"k{step}", problem, HONEST[kind] + f"  # kill {step}")])
    monkeypatch.undo()
    return v, kill.seen


def _kill_at_every_step(monkeypatch, kinds: list[str]) -> None:
    with Judge(_cfg(workers=1, cache=False, wall_factor=10.0)) as judge:
        for kind in kinds:
            _, steps = _run_with_kill(monkeypatch, judge, kind, None)  # the protocol's own length
            for step in range(steps):
                v, _ = _run_with_kill(monkeypatch, judge, kind, step)
                dumps(v)
                if v.status != "accepted":  # what was graded before the death stands, the rest fails
                    assert v.status == "runtime_error" and "judge worker died" in v.first_failure["detail"], v
                problem = PROBLEMS[kind]
                (after,) = judge.judge({problem.id: problem}, [_rollout("after", problem, HONEST[kind] + f" # {step}")])
                assert after.status == "accepted", (kind, step, after)


def test_the_worker_dies_at_every_step_of_a_stdin_job(monkeypatch):
    _kill_at_every_step(monkeypatch, ["stdin", "stdin-alone"])


@pytest.mark.slow
def test_the_worker_dies_at_every_step_of_every_job(monkeypatch):
    _kill_at_every_step(monkeypatch, sorted(PROBLEMS))

