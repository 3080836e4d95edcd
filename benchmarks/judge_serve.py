"""`mcoder judge serve` against the in-process judge on the same machine: throughput (requests and
completions per second) and latency percentiles, and the service's overhead per request.

Workload: the bundled problems (examples/problems/stdin.jsonl), G completions each (the
reference solution and a wrong program, alternating), every program made unique by a comment so
that no cache hit makes either side look faster. Three measures, each with the same judge
settings and worker count W:

1. in process: ``Judge.judge`` on one group at a time (one call per problem, as the loop sends
   them), then on the whole batch at once;
2. the service's native ``/judge``: one request per group, from C client threads at once;
3. the service's SandboxFusion ``/run_code``: R one-line programs, one at a time and from C
   client threads, against the same programs judged alone in process.

Overhead per request = the median latency of a request sent alone to the service minus the
median time of the same work judged in process (both at concurrency 1, after a warm-up).

Usage: ``python benchmarks/judge_serve.py [--workers 2] [--group 8] [--problems 16]
[--concurrency 4] [--run-code 100]``. Loopback only; the service is started and stopped here.

Measured with the defaults on a 2-core machine shared with other work (load average 11-14, so
every figure moves by tens of percent between runs; three runs, medians in ms):

    in process, group of 8 judged alone        214-365   (25-40 completions/s)
    /judge, a group of 8 sent alone            119-352   (20-57 completions/s)
    /health, the HTTP round trip alone         0.6
    in process, a one-line program alone       11-24
    /run_code, a one-line program alone        6-26      (32-86 requests/s; 103-171 at 4 at a time)

The service's own cost per request (an HTTP round trip, JSON in and out, a thread hop) is under
a millisecond, below what this machine's noise lets a run see: at concurrency 1 the service
and the in-process judge are level within the spread. Throughput is the judge's: W workers judge
as many programs through HTTP as in process. Before the listening socket set TCP_NODELAY every
request waited ~40 ms for a delayed ACK (/health 44 ms, /run_code 64 ms median).
"""

from __future__ import annotations

import json
import os
import select
import signal
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from mcoder.judge.config import JudgeConfig
from mcoder.judge.core import Judge
from mcoder.records import Problem, Rollout, from_dict, to_dict

if __package__:  # python -m benchmarks.judge_serve, or imported
    from benchmarks import common
else:  # python benchmarks/judge_serve.py: this folder is first on sys.path
    import common

EXAMPLES = common.PROBLEMS / "stdin.jsonl"


def workload(n_problems: int, group: int, salt: str) -> list[tuple[Problem, list[str]]]:
    """Each problem with ``group`` completions; ``salt`` (a comment in every program) keeps two
    measures from sharing a cached outcome."""
    problems = [from_dict(Problem, json.loads(x)) for x in EXAMPLES.read_text().splitlines()][:n_problems]
    out = []
    for p in problems:
        codes = [
            f"# {salt} {p.id} {j}\n" + (p.reference_solutions[0] if j % 2 == 0 else "print(0)\n")
            for j in range(group)
        ]
        out.append((p, [f"```python\n{c}```" for c in codes]))
    return out


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def row(name: str, n_req: int, n_items: int, wall: float, lat: list[float]) -> str:
    return (
        f"{name:<28} {n_req:>5} {n_req / wall:>8.1f} {n_items / wall:>9.1f} "
        f"{1000 * pct(lat, 0.5):>7.1f} {1000 * pct(lat, 0.9):>7.1f} {1000 * pct(lat, 0.99):>7.1f}"
    )


def in_process(cfg: JudgeConfig, make) -> tuple[list[float], float, float]:
    """(per-group seconds, one-group-at-a-time wall, whole-batch wall)."""
    with Judge(cfg) as judge:
        judge.judge(*_rollouts(make("warm")[:2]))
        lat = []
        t0 = time.perf_counter()
        for p, comps in make("a"):
            rs = [Rollout(id=f"{i}", problem_id=p.id, completion=c) for i, c in enumerate(comps)]
            t = time.perf_counter()
            judge.judge({p.id: p}, rs)
            lat.append(time.perf_counter() - t)
        one_by_one = time.perf_counter() - t0
        batch = _rollouts(make("b"))
        t0 = time.perf_counter()
        judge.judge(*batch)
        return lat, one_by_one, time.perf_counter() - t0


def _rollouts(work) -> tuple[dict[str, Problem], list[Rollout]]:
    by_id = {p.id: p for p, _ in work}
    return by_id, [
        Rollout(id=f"{p.id}/{i}", problem_id=p.id, completion=c) for p, cs in work for i, c in enumerate(cs)
    ]


def in_process_small(cfg: JudgeConfig, n: int) -> list[float]:
    """Seconds per one-line program run alone in process (``Judge.run_code``, what a /run_code
    request runs)."""
    with Judge(cfg) as judge:
        lat = []
        for i in range(n + 5):
            t = time.perf_counter()
            judge.run_code(f"print({i} * 2)")
            lat.append(time.perf_counter() - t)
        return lat[5:]  # after a warm-up


def start_service(workers: int, capacity: int) -> tuple[subprocess.Popen, str]:
    cmd = [sys.executable, "-m", "mcoder", "judge", "serve", "--port", "0", "-w", str(workers), "-q",
           "--capacity", str(capacity)]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    ready, _, _ = select.select([proc.stdout], [], [], 120)
    url = proc.stdout.readline().strip() if ready else ""
    if not url.startswith("http://"):
        proc.kill()
        sys.exit(f"the service did not start ({url!r})")
    return proc, url


def native(client: httpx.Client, url: str, work, concurrency: int) -> tuple[list[float], float]:
    def one(item):
        p, comps = item
        t = time.perf_counter()
        r = client.post(f"{url}/judge", json={"problem": to_dict(p), "completions": comps})
        r.raise_for_status()
        return time.perf_counter() - t

    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        lat = list(pool.map(one, work))
    return lat, time.perf_counter() - t0


def run_code(
    client: httpx.Client, url: str, n: int, concurrency: int, salt: str
) -> tuple[list[float], float, int]:
    def one(i: int):
        t = time.perf_counter()
        r = client.post(f"{url}/run_code", json={"code": f"# {salt}\nprint({i} * 2)", "language": "python"})
        return time.perf_counter() - t, r.status_code

    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        got = list(pool.map(one, range(n)))
    busy = sum(code == 503 for _, code in got)
    return [t for t, code in got if code == 200], time.perf_counter() - t0, busy


def main() -> None:
    ap = common.parser(__doc__)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--problems", type=int, default=16)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--run-code", type=int, default=100)
    args = ap.parse_args()
    cfg = JudgeConfig(workers=args.workers)
    run = time.time_ns()
    make = lambda part: workload(args.problems, args.group, f"{run} {part}")
    work = make("shape")
    n_items = sum(len(c) for _, c in work)
    print(f"{len(work)} problems x G={args.group} = {n_items} completions, {args.workers} workers, "
          f"{os.cpu_count()} cores, client concurrency {args.concurrency}")  # fmt: skip
    print(f"{'':<28} {'reqs':>5} {'req/s':>8} {'compl/s':>9} {'p50 ms':>7} {'p90 ms':>7} {'p99 ms':>7}")

    lat_in, one_wall, batch_wall = in_process(cfg, make)
    print(row("in process, group by group", len(work), n_items, one_wall, lat_in))
    print(row("in process, one batch", 1, n_items, batch_wall, [batch_wall]))

    proc, url = start_service(args.workers, capacity=4 * args.workers * args.group)
    try:
        with httpx.Client(timeout=600) as client:
            native(client, url, make("warm")[:2], 1)
            lat_1, wall_1 = native(client, url, make("c"), 1)
            print(row("/judge, 1 at a time", len(work), n_items, wall_1, lat_1))
            lat_c, wall_c = native(client, url, make("d"), args.concurrency)
            print(row(f"/judge, {args.concurrency} at a time", len(work), n_items, wall_c, lat_c))
            lat_h = []
            for _ in range(50):
                t = time.perf_counter()
                client.get(f"{url}/health").raise_for_status()
                lat_h.append(time.perf_counter() - t)
            print(row("/health (HTTP alone)", len(lat_h), 0, sum(lat_h), lat_h))
            run_code(client, url, 5, 1, f"{run} warm")
            lat_r1, wall_r1, _ = run_code(client, url, args.run_code // 2, 1, f"{run} one")
            print(row("/run_code, 1 at a time", len(lat_r1), len(lat_r1), wall_r1, lat_r1))
            lat_r, wall_r, busy = run_code(client, url, args.run_code, args.concurrency, f"{run} many")
            print(row(f"/run_code, {args.concurrency} at a time", len(lat_r), len(lat_r), wall_r, lat_r))
            if busy:
                print(f"  ({busy} of {args.run_code} run_code requests answered 503 busy)")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    lat_s = in_process_small(cfg, args.run_code // 2)
    print(row("in process, 1 program alone", len(lat_s), len(lat_s), sum(lat_s), lat_s))
    small = statistics.median(lat_r1) - statistics.median(lat_s)
    print(f"overhead per /run_code request (median, concurrency 1): {1000 * small:.1f} ms "
          f"on {1000 * statistics.median(lat_s):.1f} ms judged in process")  # fmt: skip
    overhead = statistics.median(lat_1) - statistics.median(lat_in)
    print(f"overhead per /judge request (median, concurrency 1): {1000 * overhead:.1f} ms "
          f"on {1000 * statistics.median(lat_in):.1f} ms of judging in process")  # fmt: skip


if __name__ == "__main__":
    main()
