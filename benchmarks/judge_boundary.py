"""The figures of two holes of the judge's trust boundary (issue 27), rerunnable.

- Hole 3, a reply that stalls the judge: a call test's reply that is a set (or a dict) of N
  integers that all hash alike (``k * (2**61 - 1)``). The candidate writes its bytes in linear
  time; building a real set of them is quadratic. Timed, in this process, for each N: decoding
  the reply into a real set or dict (``plain.decode``, as the judge did before: quadratic), and
  the judge's path now (``plain.decode(hashfree=True)``, then ``compare_value`` against the same
  items as the expected answer, which orders them by a canonical key without hashing).
- Hole 7, output size in the judge process: the peak of the judge process's own Python
  allocations (tracemalloc) while the real judge, in its sandbox, judges one program that
  prints ``--output-mb`` MB against a 2-byte expected answer; beside it, the peak of holding that
  output as text and as tokens (what a comparison of whole texts holds, the shape of the
  ~860 MB the audit measured).

Usage: ``python benchmarks/judge_boundary.py [--sizes 10000,20000,40000] [--output-mb 16]
[--skip-judge]`` (``--skip-judge``: hole 3 and the whole-text figure only, no sandbox needed).
"""

from __future__ import annotations

import textwrap
import time
import tracemalloc

from mcoder.judge import plain
from mcoder.judge.compare import compare_value

if __package__:  # python -m benchmarks.judge_boundary, or imported
    from benchmarks import common
else:  # python benchmarks/judge_boundary.py: this folder is first on sys.path
    import common

M = 2**61 - 1  # hash(k * M) == 0 for every k


def colliding_frame(n: int, container: str) -> tuple[bytes, list[int]]:
    """A reply's value as the candidate sends it: ``n`` integers of hash 0 in a set or dict."""
    items = [k * M for k in range(1, n + 1)]
    if container == "set":
        body = '{"s":[' + ",".join(map(str, items)) + "]}"
    else:
        body = '{"d":[' + ",".join(f"[{k},0]" for k in items) + "]}"
    return body.encode(), items


def hole3(sizes: list[int]) -> list[tuple[str, int, float, float]]:
    """(container, n, seconds decoding into a real set/dict, seconds of the judge's path now)."""
    rows = []
    for container in ("set", "dict"):
        for n in sizes:
            frame, items = colliding_frame(n, container)
            expected = items if container == "set" else {str(k): 0 for k in items}
            t0 = time.perf_counter()
            plain.decode(frame)  # a real set or dict: every item hashed, all alike
            before = time.perf_counter() - t0
            t0 = time.perf_counter()
            value = plain.decode(frame, hashfree=True)
            compare_value(expected, value)
            now = time.perf_counter() - t0
            rows.append((container, n, before, now))
    return rows


def whole_text_peak_mb(output_mb: float) -> float:
    """Peak MB of holding an output of ``output_mb`` MB (``1\\n`` lines) as text and as tokens."""
    data = b"1\n" * int(output_mb * (1 << 19))
    tracemalloc.start()
    try:
        text = data.decode()
        tokens = text.split()
        del text, tokens
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def judge_peak_mb(output_mb: float) -> tuple[str, float, float]:
    """(verdict status, peak MB of the judge process's Python allocations, seconds) while the
    real judge judges a program printing ``output_mb`` MB against the answer ``1``."""
    from mcoder.judge.config import JudgeConfig
    from mcoder.judge.core import Judge
    from mcoder.records import Problem, Rollout, Test

    lines = int(output_mb * (1 << 19))
    program = f"import sys\nsys.stdout.write('1\\n' * {lines})"
    problem = Problem(id="big", source="benchmark", question="", tests=[Test("", "1\n")])
    rollout = Rollout(id="r", problem_id="big", completion=f"```python\n{textwrap.dedent(program)}\n```")
    cfg = JudgeConfig(workers=1, timeout_s=10.0, memory_mb=512, max_output_mb=output_mb + 4, cache=False)
    with Judge(cfg) as judge:
        judge.judge({"big": problem}, [Rollout(id="warm", problem_id="big", completion="```python\nprint(1)\n```")])
        tracemalloc.start()
        try:
            t0 = time.perf_counter()
            (v,) = judge.judge({"big": problem}, [rollout])
            return v.status, tracemalloc.get_traced_memory()[1] / 2**20, time.perf_counter() - t0
        finally:
            tracemalloc.stop()


def main(argv: list[str] | None = None) -> int:
    ap = common.parser(__doc__)
    ap.add_argument("--sizes", default="10000,20000,40000", help="items per reply, comma-separated")
    ap.add_argument("--output-mb", type=float, default=16.0, help="hole 7's output size in MB")
    ap.add_argument("--skip-judge", action="store_true", help="no sandboxed judge run (hole 7's judge figure)")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    print("hole 3: a call reply of N integers that all hash alike, decoded in the judge process")
    print(f"{'container':<10}{'N':>8}{'real set/dict (before) s':>27}{'hash-free + compare (now) s':>30}")
    for container, n, before, now in hole3(sizes):
        print(f"{container:<10}{n:>8}{before:>27.3f}{now:>30.4f}")

    print()
    print(f"hole 7: peak memory of the judge process, a {args.output_mb:g} MB output against a 2-byte answer")
    print(f"{'what':<52}{'peak MB':>10}")
    print(f"{'the output held as text and tokens (whole-text)':<52}{whole_text_peak_mb(args.output_mb):>10.1f}")
    if not args.skip_judge:
        status, peak, seconds = judge_peak_mb(args.output_mb)
        print(f"{f'the judge, in its sandbox (now: {status}, {seconds:.2f} s)':<52}{peak:>10.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
