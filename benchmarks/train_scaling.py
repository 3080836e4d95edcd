"""Training throughput of `mcoder train` at 1 and 2 processes (torchrun + FSDP2, gloo on CPU).

One fixed rollout batch (P prompts x G completions of L tokens, rewards with variance in every
group) and a small Qwen3 (mcoder.testing, 4 layers x 256 hidden by default) are written once;
then the real command runs as a subprocess, alternating the settings within each repeat so that
a load change on a shared machine hits all of them alike:

    1 process,  1 thread          the baseline a 2-process run is measured against
    2 processes, 1 thread each    torchrun --nproc-per-node 2 (FSDP2, gloo)
    1 process,  2 threads         the same two cores used by intra-op threads instead

Reported per setting: completion tokens per second of the update (metrics.json
``tokens_per_s``: tokens / time of train_on_batch, so start-up and checkpoint writing are out)
and the whole command's wall time, mean ± std over repeats; scaling efficiency is
tokens/s(2 processes) / (2 x tokens/s(1 process)).

    python benchmarks/train_scaling.py [--repeats 3] [--prompts 8] [--group 8] [--length 64]
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__:  # python -m benchmarks.train_scaling, or imported
    from benchmarks import common
else:  # python benchmarks/train_scaling.py: this folder is first on sys.path
    import common

SETTINGS = {"1 proc x 1 thread": (1, 1), "2 procs x 1 thread": (2, 1), "1 proc x 2 threads": (1, 2)}


def write_batch(d: Path, prompts: int, group: int, length: int) -> Path:
    from transformers import AutoTokenizer

    from mcoder.jsonl import RecordWriter
    from mcoder.records import Rollout, Verdict
    from mcoder.testing import TinySpec, make_tiny_model

    model = make_tiny_model(
        d / "model", TinySpec(layers=4, hidden=256, intermediate=512, heads=4, kv_heads=2)
    )
    tok = AutoTokenizer.from_pretrained(model)
    rng = random.Random(0)
    vocab = range(3, len(tok))
    with RecordWriter(d / "r.jsonl", "id") as rw, RecordWriter(d / "v.jsonl", "rollout_id") as vw:
        for p in range(prompts):
            prompt = [rng.choice(vocab) for _ in range(32)]
            for g in range(group):
                comp = [rng.choice(vocab) for _ in range(length - 1)] + [tok.eos_token_id]
                rid, reward = f"p{p}-{g}", float(g % 2)
                rw.write(Rollout(id=rid, problem_id=f"p{p}", completion="", prompt_token_ids=prompt,
                                 completion_token_ids=comp, sampling_logprobs=[-6.9] * length,
                                 finish_reason="stop", temperature=1.0))  # fmt: skip
                vw.write(Verdict(rollout_id=rid, problem_id=f"p{p}", reward=reward, passed=reward == 1.0,
                                 status="accepted" if reward else "wrong_answer", tests_passed=int(reward),
                                 tests_total=1))  # fmt: skip
    return model


def run_once(d: Path, model: Path, nproc: int, threads: int, mini: int) -> tuple[float, float]:
    out = d / f"ck-{nproc}-{threads}"
    launch = [sys.executable, "-m", "mcoder"]
    if nproc > 1:
        launch = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
                  "-m", "mcoder"]  # fmt: skip
    cmd = [*launch, "train", "--model", model, "--rollouts", d / "r.jsonl", "--verdicts", d / "v.jsonl",
           "--out", out, "--overwrite", "--lora-rank", "0", "--mini-batch-size", str(mini),
           "--micro-batch-size", "4", "--truncation", "none", "-q"]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    t0 = time.perf_counter()
    subprocess.run([str(c) for c in cmd], check=True, env=env, capture_output=True)
    wall = time.perf_counter() - t0
    return json.loads((out / "metrics.json").read_text())["tokens_per_s"], wall


def main() -> None:
    ap = common.parser(__doc__, whole_doc=True)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--group", type=int, default=8)
    ap.add_argument("--length", type=int, default=64)
    args = ap.parse_args()
    results: dict[str, list[tuple[float, float]]] = {k: [] for k in SETTINGS}
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        model = write_batch(d, args.prompts, args.group, args.length)
        mini = args.prompts  # one optimizer step over the whole batch
        print(f"batch: {args.prompts} prompts x G={args.group} x {args.length} tokens, cores visible: "
              f"{len(os.sched_getaffinity(0))}, load average {os.getloadavg()[0]:.2f}")  # fmt: skip
        for r in range(args.repeats):
            for name, (nproc, threads) in SETTINGS.items():
                results[name].append(run_once(d, model, nproc, threads, mini))
                tps, wall = results[name][-1]
                print(f"  repeat {r + 1}: {name:20s} {tps:8.0f} tokens/s   wall {wall:5.1f}s", flush=True)
    print(f"\n{'setting':20s} {'tokens/s (update)':>22s} {'wall s (command)':>20s}")
    for name, rows in results.items():
        tps, wall = [x for x, _ in rows], [w for _, w in rows]
        print(f"{name:20s} {_ms(tps):>22s} {_ms(wall):>20s}")
    one = statistics.mean(x for x, _ in results["1 proc x 1 thread"])
    two = statistics.mean(x for x, _ in results["2 procs x 1 thread"])
    print(f"\nscaling efficiency, 2 processes vs 1: {two / (2 * one):.2f} (speed-up {two / one:.2f}x); "
          f"load average now {os.getloadavg()[0]:.2f}")  # fmt: skip


def _ms(xs: list[float]) -> str:
    sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
    return f"{statistics.mean(xs):.1f} ± {sd:.1f}"


if __name__ == "__main__":
    main()
