"""mcoder's judge and LiveCodeBench's own evaluator on the same submissions, in one run.

Records: each reference solution of the project's example problems (stdin and call), in the
versions real submissions come in: ``correct``; ``slow`` (correct, after ~0.3 s of CPU);
``wrong`` (an extra first line, or a wrong return value); ``crash`` (an exception after the
output, or in the call); ``tle`` (an endless loop). Every record has all its problem's tests
(3 to 10), so most of the time goes where it goes on real submissions: fresh processes per test,
waits for time limits, failures part-way.

Both evaluators get the same records, the same number of workers and the same time limit, and
stop a record at its first failing test. LiveCodeBench's evaluator is a copy of its repository
(``--lcb``: the folder that holds ``lcb_runner``), run in a process of its own through its
``codegen_metrics`` (one sample per record, so that its process pool spreads records as mcoder's
pool does); nothing of it is copied here. Printed: each one's wall time, the ratio, the verdicts
on which they differ, and the floor: the programs' own CPU time (each test up to the first failure,
the program run alone in a forked process, a call program's module once per record; an endless loop
until the limit stops it) divided by the workers: no evaluator that runs these programs can be
faster. A call problem's function may be a method of ``class Solution`` (LeetCode's form): its
versions replace the method.

Wall times depend on what else the machine runs: compare the two in the same run, not across runs.

``--set leetcode``: the same versions of real problems with their real tests instead: the reference
solutions of the rLLM LeetCode set (``../shared/data/rllm_leetcode_test.json``, 200 problems),
each assert of its ``check()`` a call test (its keyword arguments put in the method's order), so
that both evaluators run them; a problem whose asserts are not all plain literals is left out.
``--set codecontests``: four CodeContests problems of SandboxFusion's sample
(``../shared/data/sandboxfusion_code_contests.jsonl``, as mcoder's dataset adapter reads it) with
their whole test sets (96 to 143 stdin tests each), solved by programs written for this benchmark
(``CODECONTESTS``): the regime of many tests per record.

Usage: ``python benchmarks/judge_vs_lcb.py --lcb PATH [--set examples|leetcode|codecontests] [--workers 2]
[--timeout 2] [--limit N] [--variants ...] [--process-per-test]``.
"""

from __future__ import annotations

import ast
import io
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mcoder.judge.config import JudgeConfig
from mcoder.judge.core import Judge
from mcoder.judge.harness import prelude
from mcoder.records import Problem, Rollout, Test, from_dict

if __package__:  # python -m benchmarks.judge_vs_lcb, or imported
    from benchmarks import common
else:  # python benchmarks/judge_vs_lcb.py: this folder is first on sys.path
    import common

SLOW_PREFIX = "import time as _t\n_end = _t.process_time() + 0.3\nwhile _t.process_time() < _end:\n    pass\n"
CALL_WRAP = "\n_mc_orig = {fn}\n\n\ndef {fn}(*args, **kw):\n{body}\n"
# a LeetCode-style problem's function is a method of class Solution: the method is replaced
METHOD_WRAP = (
    "\n_mc_method = Solution.{fn}\n\n\ndef _mc_new(self, *args, **kw):\n"
    "    _mc_orig = lambda *a, **k: _mc_method(self, *a, **k)\n{body}\n\n\nSolution.{fn} = _mc_new\n"
)
VARIANTS = ("correct", "slow", "wrong", "crash", "tle")


def variant(code: str, kind: str, fn: str | None, name: str) -> str:
    """The reference ``code`` made into submission ``name``."""
    if name == "correct":
        return code
    if name == "slow":
        return SLOW_PREFIX + code
    if kind == "stdin":
        return {
            "wrong": "print('wrong')\n" + code,
            "crash": code + "\nraise ValueError('crash')\n",
            "tle": "while True:\n    pass\n" + code,
        }[name]
    body = {
        "wrong": "    return 'wrong'",
        "crash": "    _mc_orig(*args, **kw)\n    raise ValueError('crash')",
        "tle": "    while True:\n        pass",
    }[name]
    wrap = METHOD_WRAP if "class Solution" in code else CALL_WRAP
    return code + wrap.format(fn=fn, body=body)


def records(limit: int, variants: list[str], which: str = "examples") -> list[tuple[Problem, str, str]]:
    """(problem, variant name, code) for the first ``limit`` problems of each example set (or of
    the LeetCode set, ``which="leetcode"``)."""
    if which == "leetcode":
        problems = leetcode_problems(common.shared_data() / "rllm_leetcode_test.json")[:limit]
    elif which == "codecontests":
        problems = codecontests_problems(common.shared_data() / "sandboxfusion_code_contests.jsonl")[:limit]
    else:
        problems = [
            from_dict(Problem, json.loads(line))
            for kind in ("stdin", "call")
            for line in (common.PROBLEMS / f"{kind}.jsonl").read_text().splitlines()[:limit]
        ]
    out = []
    for p in problems:
        if p.reference_solutions and p.tests:
            kind = p.tests[0].kind
            out += [(p, v, variant(p.reference_solutions[0], kind, p.fn_name, v)) for v in variants]
    return out


def leetcode_problems(path: Path) -> list[Problem]:
    """The rLLM LeetCode set as call tests: each ``assert candidate(...) == value`` of a row's
    ``check()`` a test, its arguments in the order of the reference's method; rows whose asserts
    are not all plain literals (or whose every answer is None) are left out."""
    if not path.exists():
        sys.exit(f"{path}: not found (set MCODER_SHARED_DATA to the folder of the third-party sets)")
    out = []
    for i, row in enumerate(json.loads(path.read_text())):
        try:
            tree = ast.parse(row["tests"]["functional"])
            fn = tree.body[-1].value.args[0].attr  # check(Solution().NAME)
            method = next(f for c in ast.parse(row["solutions"]).body if isinstance(c, ast.ClassDef) and c.name == "Solution"
                          for f in c.body if isinstance(f, ast.FunctionDef) and f.name == fn)  # fmt: skip
            params = [a.arg for a in method.args.args[1:]]
            check = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check")
            tests = []
            for st in check.body:
                call, (expected,) = st.test.left, st.test.comparators
                if call.func.id != "candidate" or not isinstance(st.test.ops[0], ast.Eq):
                    raise ValueError("not a plain assert")
                kw = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
                args = [ast.literal_eval(a) for a in call.args] + [kw[n] for n in params[len(call.args):]]
                tests.append(Test("\n".join(json.dumps(a) for a in args), json.dumps(ast.literal_eval(expected)), "call"))
        except (SyntaxError, ValueError, AttributeError, IndexError, KeyError, StopIteration, TypeError):
            continue
        if tests and any(t.output != "null" for t in tests):
            out.append(Problem(id=f"leetcode-{i}", source="rllm", question="", tests=tests, fn_name=fn,
                               reference_solutions=[row["solutions"]], platform="leetcode"))  # fmt: skip
    return out


# Solutions of CodeContests problems of the shared sample (by the problem's id there), written for
# this benchmark: the sample holds the problems and their tests, not solutions.
CODECONTESTS = {
    "1000_A. Codehorses T-shirts": """\
import sys
from collections import Counter
data = sys.stdin.read().split()
n = int(data[0])
left = Counter(data[1:1 + n])
changes = 0
for size in data[1 + n:1 + 2 * n]:
    if left[size] > 0:
        left[size] -= 1
    else:
        changes += 1
print(changes)
""",
    "12_B. Correct Solution?": """\
n, m = input().strip(), input().strip()
digits = sorted(n)
if len(digits) > 1 and digits[0] == "0":
    first = next(i for i, d in enumerate(digits) if d != "0")
    digits[0], digits[first] = digits[first], digits[0]
print("OK" if "".join(digits) == m else "WRONG_ANSWER")
""",
    "1238_B. Kill 'Em All": """\
import sys
data = sys.stdin.buffer.read().split()
q, pos, out = int(data[0]), 1, []
for _ in range(q):
    n, r = int(data[pos]), int(data[pos + 1])
    xs = sorted(set(map(int, data[pos + 2:pos + 2 + n])), reverse=True)
    pos += 2 + n
    shots = 0
    for x in xs:
        if x - shots * r <= 0:
            break
        shots += 1
    out.append(shots)
print("\\n".join(map(str, out)))
""",
    "1198_A. MP3": """\
import sys
data = sys.stdin.buffer.read().split()
n, size = int(data[0]), int(data[1])
values = sorted(map(int, data[2:2 + n]))
keep = 1 << min(8 * size // n, 30)
counts = []
for i, x in enumerate(values):
    if i and values[i - 1] == x:
        counts[-1] += 1
    else:
        counts.append(1)
if keep >= len(counts):
    print(0)
else:
    window = best = sum(counts[:keep])
    for i in range(keep, len(counts)):
        window += counts[i] - counts[i - keep]
        best = max(best, window)
    print(n - best)
""",
}


def codecontests_problems(path: Path) -> list[Problem]:
    """The problems of ``CODECONTESTS`` from SandboxFusion's CodeContests sample, as mcoder's
    dataset adapter reads them, each with its solution."""
    from mcoder.dataset.collect.sources import expand
    from mcoder.dataset.process.adapters import detect

    if not path.exists():
        sys.exit(f"{path}: not found (set MCODER_SHARED_DATA to the folder of the third-party sets)")
    (source,), _ = expand([str(path)])
    out = []
    for ref, row in source.rows():
        p = detect(row).convert(row, ref)
        if p.id in CODECONTESTS:
            p.reference_solutions = [CODECONTESTS[p.id]]
            out.append(p)
    return out


def is_call(p: Problem) -> bool:
    return p.tests[0].kind == "call"


# ---------------------------------------------------------------- mcoder


def cpu_s() -> float:
    """CPU seconds of this process and of every child it has reaped (and theirs)."""
    own, reaped = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime


def run_mcoder(recs, workers: int, timeout: float, per_test: bool = False) -> tuple[float, list[bool], list[int], float]:
    """Wall time, passed per record, tests run per record (up to the first failure), and the CPU
    seconds of the judge and everything under it (workers, candidates), its start and stop included."""
    problems = {p.id: p for p, _, _ in recs}
    rollouts = [
        Rollout(id=f"r{i}", problem_id=p.id, completion=f"```python\n{code}\n```") for i, (p, _, code) in enumerate(recs)
    ]
    cfg = JudgeConfig(workers=workers, timeout_s=timeout, cache=False, process_per_test=per_test)
    c0 = cpu_s()
    with Judge(cfg) as judge:
        t0 = time.perf_counter()
        verdicts = judge.judge(problems, rollouts)
        wall = time.perf_counter() - t0
    cpu = cpu_s() - c0  # the workers (and the candidates they reaped) are reaped once the judge closes
    ran = [v.tests_total if v.passed else v.tests_passed + 1 for v in verdicts]
    return wall, [v.passed for v in verdicts], ran, cpu


# ---------------------------------------------------------------- LiveCodeBench's evaluator

LCB_RUNNER = """\
import json, sys, time
from lcb_runner.evaluation.compute_code_generation_metrics import codegen_metrics
data = json.load(open(sys.argv[1]))
t0 = time.perf_counter()
metrics, results, _ = codegen_metrics(
    data["samples"], data["generations"], k_list=[1], num_process_evaluate=data["workers"], timeout=data["timeout"]
)
wall = time.perf_counter() - t0
passed = [all(r is True or r == 1 for r in results[i][0]) for i in range(len(data["samples"]))]
print(json.dumps({"wall": wall, "passed": passed}))
"""


def lcb_sample(p: Problem) -> dict:
    io_ = {"inputs": [t.input for t in p.tests], "outputs": [t.output for t in p.tests]}
    if is_call(p):
        io_["fn_name"] = p.fn_name
    return {"input_output": json.dumps(io_)}


def run_lcb(recs, workers: int, timeout: float, lcb: Path) -> tuple[float, list[bool], float]:
    data = {
        "samples": [lcb_sample(p) for p, _, _ in recs],
        "generations": [[code] for _, _, code in recs],
        "workers": workers,
        "timeout": max(1, round(timeout)),  # its alarm takes whole seconds
    }
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(data, f)
    try:
        # lcb_runner is imported from the --lcb folder, put on the child's PYTHONPATH
        path = os.pathsep.join(x for x in (str(lcb), os.environ.get("PYTHONPATH", "")) if x)
        c0 = cpu_s()
        r = subprocess.run(
            [sys.executable, "-c", LCB_RUNNER, f.name], capture_output=True, text=True, check=False,
            env={**os.environ, "PYTHONPATH": path},
        )  # fmt: skip
        cpu = cpu_s() - c0  # its process, its pool and its per-record processes (it reaps them), its start included
    finally:
        os.unlink(f.name)
    if r.returncode != 0:
        sys.exit(f"LiveCodeBench's evaluator failed:\n{r.stderr[-3000:]}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    return out["wall"], out["passed"], cpu


# ---------------------------------------------------------------- the floor


def own_cpu_s(p: Problem, code: str, tests: list[int], timeout: float) -> float:
    """CPU seconds the program spends on ``tests``, run alone in a forked process (no judge, no
    interpreter start), capped at the time limit per test. A stdin program runs whole once per
    test; a call program's module runs once and its function once per test (as both evaluators
    run it: one process per record)."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(rfd)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        sys.stdout = open(1, "w")  # noqa: SIM115 - the forked child ends with os._exit
        scope: dict = {}
        names = prelude() if is_call(p) else {}  # LeetCode's names (typing's List...), made before the clock starts
        hard = resource.getrlimit(resource.RLIMIT_CPU)[1]  # kept: raising it back needs CAP_SYS_RESOURCE
        for n, i in enumerate(tests):
            t0 = time.process_time()
            cap = math.ceil(t0) + math.ceil(timeout)  # this test's limit, on the process's CPU clock
            resource.setrlimit(resource.RLIMIT_CPU, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))
            try:
                if not is_call(p) or n == 0:
                    sys.stdin = io.TextIOWrapper(io.BytesIO(p.tests[i].input.encode() if not is_call(p) else b""))
                    scope = {**names, "__name__": "__main__"}
                    exec(compile(code, "main.py", "exec"), scope)  # noqa: S102 - the program, alone, as its floor
                if is_call(p):  # a function, or a method of class Solution (LeetCode's form)
                    fn = getattr(scope["Solution"](), p.fn_name) if "Solution" in scope else scope[p.fn_name]
                    fn(*[json.loads(a) for a in p.tests[i].input.split("\n")])
                sys.stdout.flush()
            except BaseException:  # noqa: BLE001, S110 - a forked child: it must reach os._exit
                pass
            os.write(wfd, f"{min(time.process_time() - t0, timeout)}\n".encode())  # each test as it ends
        os._exit(0)
    os.close(wfd)
    with os.fdopen(rfd) as f:
        done = [float(x) for x in f.read().split()]
    os.waitpid(pid, 0)
    return sum(done) + timeout * (len(tests) - len(done))  # a test killed at its CPU limit counts the limit


def floor_s(recs, ran: list[int], workers: int, timeout: float) -> dict[str, float]:
    """The floor of each version: its programs' own CPU time divided by the workers."""
    total: dict[str, float] = {}
    for (p, name, code), n in zip(recs, ran):  # an endless loop is stopped at the limit, and counts it
        total[name] = total.get(name, 0.0) + own_cpu_s(p, code, list(range(n)), timeout) / workers
    return total


def main() -> None:
    ap = common.parser(__doc__)
    ap.add_argument("--lcb", type=Path, required=True, help="a copy of LiveCodeBench's repository")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=2.0, help="time limit per test, whole seconds (LCB's alarm)")
    ap.add_argument("--limit", type=int, default=1000, help="problems per example set")
    ap.add_argument("--process-per-test", action="store_true", help="mcoder with a process per stdin test (its old way)")
    ap.add_argument("--variants", default=",".join(VARIANTS), help="which versions of each reference")
    ap.add_argument("--set", default="examples", choices=("examples", "leetcode", "codecontests"), help="whose references and tests")
    args = ap.parse_args()
    if not (args.lcb / "lcb_runner" / "evaluation").is_dir():
        sys.exit(f"--lcb {args.lcb}: no lcb_runner/evaluation there (give the folder of LiveCodeBench's repository)")
    variants = [v for v in args.variants.split(",") if v in VARIANTS]
    recs = records(args.limit, variants, args.set)
    tests = sum(len(p.tests) for p, _, _ in recs)
    print(f"{len(recs)} records ({', '.join(variants)}), {tests} tests, {args.workers} workers, limit {args.timeout} s")
    load = os.getloadavg()[0]
    t_lcb, lcb_passed, cpu_lcb = run_lcb(recs, args.workers, args.timeout, args.lcb)
    t_mc, mc_passed, ran, cpu_mc = run_mcoder(recs, args.workers, args.timeout, args.process_per_test)
    floors = floor_s(recs, ran, args.workers, args.timeout)
    floor = sum(floors.values())
    print(f"LiveCodeBench: {t_lcb:.1f} s   mcoder: {t_mc:.1f} s   LiveCodeBench/mcoder: {t_lcb / t_mc:.2f}x")
    print(f"floor (programs' own CPU time / workers): {floor:.1f} s   floor/mcoder: {floor / t_mc:.2f}")
    print("  by version: " + ", ".join(f"{k} {v:.1f} s" for k, v in floors.items()))
    # CPU time depends on load far less than wall time: what each evaluator spent beyond the programs
    own, n = floor * args.workers, sum(ran)
    print(f"CPU: LiveCodeBench {cpu_lcb:.1f} s, mcoder {cpu_mc:.1f} s, the programs' own {own:.1f} s; outside "
          f"the programs, per test run ({n}): LiveCodeBench {1000 * (cpu_lcb - own) / n:.2f} ms, "
          f"mcoder {1000 * (cpu_mc - own) / n:.2f} ms (load {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end)")  # fmt: skip
    differ = [(p.id, name, a, b) for (p, name, _), a, b in zip(recs, mc_passed, lcb_passed) if a != b]
    print(f"accepted: mcoder {sum(mc_passed)}, LiveCodeBench {sum(lcb_passed)}; verdicts that differ: {len(differ)}")
    for pid, name, a, b in differ:
        print(f"  {pid} {name}: mcoder {'pass' if a else 'fail'}, LiveCodeBench {'pass' if b else 'fail'}")


if __name__ == "__main__":
    main()
