"""The judge's memory over a long run of reward calls: the resident memory of the process that
judges, sampled while the same large problem is scored again and again, as a trainer does.

Three callers, each in a fresh process of its own (so that one's memory is not another's):

- ``verl``: ``compute_score`` once per sample, the problem record as the parquet row's ground
  truth (its JSON text, parsed anew by every call, as verl hands it over);
- ``trl``: ``JudgeReward`` with the record in a ``problem`` column, one completion per call;
- ``service``: ``mcoder judge serve`` (the service process's memory), one ``/judge`` request per
  call with the record in the body, every fifth a ``/run_code`` with the same large input as stdin.

The problem has one stdin test of ``--mib`` MiB (the program prints the length of its input);
every call's program differs by a comment, so each call runs it (no cached outcome). RSS is read
from ``/proc/PID/status`` after the warm-up (``--warmup`` calls) and then every ``--every`` calls;
"flat" is the last sample within 10 % of the first.

Usage: ``python -m benchmarks.judge_memory [--calls 1000] [--mib 1] [--callers verl,trl,service]``.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time

if __package__:  # python -m benchmarks.judge_memory, or imported
    from benchmarks import common
else:  # python benchmarks/judge_memory.py: this folder is first on sys.path
    import common

CALLERS = ("verl", "trl", "service")
PROGRAM = "# call {i}\nimport sys\nprint(len(sys.stdin.buffer.read()))\n"


def problem_record(mib: float) -> dict:
    """One stdin test of ``mib`` MiB of numbers; the expected output is its length."""
    line = " ".join(str(i % 1000) for i in range(2000)) + "\n"
    text = line * max(1, int(mib * (1 << 20)) // len(line))
    return {
        "id": "large",
        "source": "bench",
        "question": "print the length of the input",
        "tests": [{"input": text, "output": f"{len(text.encode())}\n", "kind": "stdin"}],
    }


def rss_mib(pid: int | str = "self") -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def completion(i: int) -> str:
    return f"```python\n{PROGRAM.format(i=i)}```"


def run_verl(calls: int, mib: float, sample) -> None:
    from mcoder.integrations import verl_reward

    truth = json.dumps(problem_record(mib))  # a parquet row's ground truth: JSON text
    for i in range(calls):
        score = verl_reward.compute_score("bench", completion(i), truth, None, workers=1)
        assert score == 1.0, score
        sample(i + 1)
    verl_reward.close()


def run_trl(calls: int, mib: float, sample) -> None:
    from mcoder.integrations.trl_reward import JudgeReward
    from mcoder.judge.config import JudgeConfig

    reward = JudgeReward(cfg=JudgeConfig(workers=1))
    record = json.dumps(problem_record(mib))
    for i in range(calls):
        (r,) = reward(prompts=["p"], completions=[completion(i)], problem=[record])
        assert r == 1.0, r
        sample(i + 1)
    reward.close()


def run_service(calls: int, mib: float, sample) -> None:
    import httpx

    record = problem_record(mib)
    cmd = [*common.mcoder_cmd(), "judge", "serve", "--port", "0", "-w", "1", "-q"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 120)
        url = proc.stdout.readline().strip() if ready else ""
        if not url.startswith("http://"):
            sys.exit(f"the service did not start ({url!r})")
        stdin = record["tests"][0]["input"]
        with httpx.Client(timeout=600) as client:
            for i in range(calls):
                if i % 5 == 4:
                    body = {"code": PROGRAM.format(i=i), "language": "python", "stdin": stdin}
                    res = client.post(f"{url}/run_code", json=body).json()
                    assert res["run_result"]["stdout"] == record["tests"][0]["output"], res
                else:
                    body = {"problem": record, "completions": [completion(i)]}
                    res = client.post(f"{url}/judge", json=body)
                    assert json.loads(res.content)["passed"], res.content[:300]
                sample(i + 1, proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)


def one(caller: str, calls: int, mib: float, warmup: int, every: int) -> None:
    """Run one caller here and print its samples as JSON lines (calls, RSS MiB)."""
    t0 = time.monotonic()

    def sample(done: int, pid: int | str = "self") -> None:
        if done == warmup or (done > warmup and (done - warmup) % every == 0) or done == calls:
            print(json.dumps({"calls": done, "rss_mib": round(rss_mib(pid), 1), "s": round(time.monotonic() - t0, 1)}),
                  flush=True)  # fmt: skip

    {"verl": run_verl, "trl": run_trl, "service": run_service}[caller](calls, mib, sample)


def main() -> None:
    ap = common.parser(__doc__)
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--mib", type=float, default=1.0, help="size of the problem's test input")
    ap.add_argument("--warmup", type=int, default=50, help="calls before the first sample")
    ap.add_argument("--every", type=int, default=100, help="calls between samples")
    ap.add_argument("--callers", default=",".join(CALLERS))
    ap.add_argument("--one", choices=CALLERS, help=argparse_hidden())
    args = ap.parse_args()
    if args.one:
        one(args.one, args.calls, args.mib, args.warmup, args.every)
        return
    print(f"{args.calls} calls per caller, a {args.mib:g} MiB problem, load {os.getloadavg()[0]:.1f}")
    verdict = 0
    for caller in [c for c in args.callers.split(",") if c in CALLERS]:
        cmd = [sys.executable, "-m", "benchmarks.judge_memory", "--one", caller, "--calls", str(args.calls),
               "--mib", str(args.mib), "--warmup", str(args.warmup), "--every", str(args.every)]  # fmt: skip
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=common.ROOT, check=False)
        if r.returncode != 0:
            print(f"{caller}: failed\n{r.stderr[-3000:]}")
            verdict = 1
            continue
        rows = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
        first, last = rows[0], rows[-1]
        growth = last["rss_mib"] / first["rss_mib"] - 1
        flat = abs(growth) <= 0.10
        verdict |= not flat
        trace = " ".join(f"{x['calls']}:{x['rss_mib']:.0f}" for x in rows)
        print(f"{caller:<8} RSS {first['rss_mib']:.1f} MiB after {first['calls']} calls -> {last['rss_mib']:.1f} MiB "
              f"after {last['calls']} ({100 * growth:+.1f} %, {'flat' if flat else 'GROWS'}; {last['s']:.0f} s)")  # fmt: skip
        print(f"         calls:MiB {trace}")
    sys.exit(verdict)


def argparse_hidden() -> str:
    import argparse

    return argparse.SUPPRESS


if __name__ == "__main__":
    main()
