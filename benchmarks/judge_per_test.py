"""What the judge spends per test beyond the program, split by process: the judge, its worker, and
the candidate's process (its fork, its sandbox entry, the harness around the program).

A program that does next to nothing (``print(input())``) is judged on records of 1, 10 and 100
stdin tests; the CPU time of each process, read from /proc (the worker's own, and the candidates'
it reaped), is divided by the tests run. Records of one test show what a record costs (its
process), records of many what each further test costs. CPU time depends on load far less than
wall time, which is printed too.

Usage: ``python benchmarks/judge_per_test.py [--tests 1,10,100] [--records 300] [--process-per-test]``.
"""

from __future__ import annotations

import argparse
import os
import time

from mcoder.judge.config import JudgeConfig
from mcoder.judge.core import Judge
from mcoder.records import Problem, Rollout, Test

_TCK = os.sysconf("SC_CLK_TCK")


def cpu_of(pid: int) -> tuple[float, float]:
    """(its own CPU seconds, those of the children it reaped)."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    utime, stime, cutime, cstime = (int(x) / _TCK for x in fields[11:15])
    return utime + stime, cutime + cstime


def measure(n_tests: int, records: int, per_test: bool) -> dict:
    problem = Problem(id="echo", source="t", question="", tests=[Test(f"{i}\n", f"{i}\n") for i in range(n_tests)])

    def rollouts(k: int, tag: str) -> list[Rollout]:  # each program different, so each runs
        return [Rollout(id=f"{tag}{i}", problem_id="echo", completion=f"```python\nprint(input())  # {tag}{i}\n```")
                for i in range(k)]  # fmt: skip

    with Judge(JudgeConfig(workers=1, cache=False, process_per_test=per_test)) as judge:
        judge.judge({"echo": problem}, rollouts(3, "warm"))
        pid = judge.pool.workers[0].proc.pid
        (w0, c0), j0, t0 = cpu_of(pid), time.process_time(), time.perf_counter()
        verdicts = judge.judge({"echo": problem}, rollouts(records, "r"))
        (w1, c1), j1, t1 = cpu_of(pid), time.process_time(), time.perf_counter()
    assert all(v.passed for v in verdicts), "the echo program failed"
    n = records * n_tests
    return {"judge": (j1 - j0) / n, "worker": (w1 - w0) / n, "candidate": (c1 - c0) / n, "wall": (t1 - t0) / n}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tests", default="1,10,100", help="stdin tests per record, comma-separated")
    ap.add_argument("--records", type=int, default=300, help="records of one test (fewer for more tests)")
    ap.add_argument("--process-per-test", action="store_true", help="a process per stdin test (the old way)")
    args = ap.parse_args()
    print(f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; ms per test, beyond the program's own")
    print(f"{'tests/record':>12} {'judge':>7} {'worker':>7} {'candidate':>9} {'all CPU':>8} {'wall':>7}")
    for n in (int(x) for x in args.tests.split(",")):
        m = measure(n, max(3, args.records // n), args.process_per_test)
        total = m["judge"] + m["worker"] + m["candidate"]
        print(f"{n:>12} {1000 * m['judge']:>7.3f} {1000 * m['worker']:>7.3f} {1000 * m['candidate']:>9.3f} "
              f"{1000 * total:>8.3f} {1000 * m['wall']:>7.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
