"""Does the loop learn? Held-out pass@1 of a warm-started tiny model before and after RL.

    python benchmarks/learning_proof.py --out learn-run                      # 3 seeds, both algos
    python benchmarks/learning_proof.py --out learn-run --seeds 0 --steps 10 # a quicker look
    python benchmarks/learning_proof.py --out learn-run --smoke              # seconds-sized plumbing check

(``python -m benchmarks.learning_proof`` is the same.) For each seed: the warm start
(``python -m mcoder.warmstart``, the one ``make demo`` runs) builds a tiny model and gives it a short supervised
pass on the train problems of examples/learn/, stopped once its gate reads --warm-target: the
mean probability that it writes the reference programs of 48 train problems the pass leaves out
(the same 48 for every seed; near the target the pass slows down and the gate reads every step),
so that every seed starts from a comparable policy above the share that guessing the constant
reaches; its held-out pass@1 is measured with
`mcoder rollout` + `mcoder judge` + `mcoder bench`; then `mcoder loop` runs
MicroCoder-GRPO and plain GRPO from that same warm start on the train problems, and the
held-out pass@1 of each final checkpoint is measured the same way. Goal: +15 points
over the warm start within 30 minutes on a 2-core CPU, over 3 seeds.

Held-out pass@1 is the unbiased estimate over --eval-n samples per problem at --eval-temperature
(the same for the warm start and both algorithms). Prints a table (algo, seed, warm-start pass@1,
final pass@1, delta, minutes) and the mean and spread per algorithm; writes OUT/results.json,
OUT/results.md, a bench table (markdown + JSON, with the warm start as baseline) per run, and the
training-dynamics figures of all runs on the same axes (OUT/plots/).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

if __package__:  # python -m benchmarks.learning_proof, or imported
    from benchmarks import common
else:  # python benchmarks/learning_proof.py: this folder is first on sys.path
    import common

LEARN = common.LEARN
ALGOS = ("microcoder-grpo", "grpo")
_SAVE = threading.Lock()  # seeds run in threads (each waits on its subprocesses); one writer at a time


def train(algo: str, warm: Path, run: Path, args, seed: int, log: Path) -> Path:
    cmd = common.loop_command(warm, run, args, seed, algo)
    if args.temperature != "preset":
        cmd += ["--temperature", args.temperature]
    if args.pass_guard is not None:
        cmd += ["--pass-guard", args.pass_guard]
    if args.temperature_rule is not None:
        cmd += ["--temperature-rule", args.temperature_rule]
    common.run_stage(cmd, log)
    return run / "checkpoint"


def one_seed(seed: int, args, rows: list[dict]) -> None:
    root = args.out / f"seed{seed}"
    root.mkdir(parents=True, exist_ok=True)
    log = root / "log.txt"
    t0 = time.perf_counter()
    warm = root / "warm"
    common.warm_start(args, warm, seed, log)
    warm_min = (time.perf_counter() - t0) / 60
    done = root / "eval-warm" / "bench.json"  # written last: its presence means a whole evaluation
    if done.exists():
        before = common.pass_at_1(root / "eval-warm" / "verdicts.jsonl")
    else:
        before = common.heldout(warm, root / "eval-warm", args, seed, log)
    before_test = common.heldout_at_test_budget(warm, root / "eval-warm", args, seed, log)
    print(
        f"seed {seed}: warm start held-out pass@1 {100 * before:.1f}% ({warm_min:.1f} min)", file=sys.stderr
    )
    for algo in args.algos:
        if any(r["algo"] == algo and r["seed"] == seed for r in rows):
            print(f"seed {seed}: {algo} already measured (results.json), skipped", file=sys.stderr)
            continue
        t1 = time.perf_counter()
        run = root / f"run-{algo}-s{seed}"  # the folder name labels the run in the shared figures
        if run.exists():
            shutil.rmtree(run)  # a fresh run each time: the loop would resume an old one
        ckpt = train(algo, warm, run, args, seed, log)
        train_min = (time.perf_counter() - t1) / 60
        after = common.heldout(
            ckpt, root / f"eval-{algo}", args, seed, log, baseline=root / "eval-warm" / "verdicts.jsonl"
        )
        after_test = common.heldout_at_test_budget(
            ckpt, root / f"eval-{algo}", args, seed, log, baseline=root / "eval-warm" / "verdicts.jsonl"
        )
        row = {
            "algo": algo,
            "seed": seed,
            "warm_pass1": 100 * before,
            "final_pass1": 100 * after,
            "delta": 100 * (after - before),
            "minutes": train_min,
            "warm_start_minutes": warm_min,
            "eval_minutes": (time.perf_counter() - t1) / 60 - train_min,
        }
        if after_test is not None:  # --eval-max-tokens: the same figures at the test budget
            row |= {"warm_pass1_test": 100 * before_test, "final_pass1_test": 100 * after_test,
                    "delta_test": 100 * (after_test - before_test)}  # fmt: skip
        with _SAVE:
            rows.append(row)
            save(args, rows)
        print(format_row(row), file=sys.stderr, flush=True)


HEADER = f"{'algo':<16} {'seed':>4} {'warm pass@1':>11} {'final pass@1':>12} {'delta':>7} {'minutes':>7}"


def format_row(r: dict) -> str:
    at_test = f"  at the test budget {r['final_pass1_test']:.1f}%" if "final_pass1_test" in r else ""
    return (
        f"{r['algo']:<16} {r['seed']:>4} {r['warm_pass1']:>10.1f}% {r['final_pass1']:>11.1f}% "
        f"{r['delta']:>+6.1f} {r['minutes']:>7.1f}{at_test}"
    )


def summary_lines(rows: list[dict]) -> list[str]:
    out = []
    for algo in dict.fromkeys(r["algo"] for r in rows):
        d = [r["delta"] for r in rows if r["algo"] == algo]
        spread = statistics.stdev(d) if len(d) > 1 else 0.0
        out.append(
            f"{algo}: delta mean {statistics.fmean(d):+.1f} points, std {spread:.1f}, "
            f"min {min(d):+.1f}, max {max(d):+.1f} over {len(d)} seed(s)"
        )
    return out


def table_order(args, row: dict) -> tuple:
    """Rows by algorithm (in --algos order), then seed, whatever order they finished in."""
    return (args.algos.index(row["algo"]) if row["algo"] in args.algos else len(args.algos), row["seed"])


# Settings that choose what to run, not how: a rerun may change them and keep earlier rows.
RUN_ONLY = {"seeds", "algos", "jobs", "out"}


def results(args) -> common.Results:
    return common.Results(args.out, "learning_proof", RUN_ONLY)


def save(args, rows: list[dict]) -> None:
    rows = sorted(rows, key=lambda r: table_order(args, r))
    md = [
        "| algo | seed | warm pass@1 % | final pass@1 % | delta | train minutes |",
        "|---|---|---|---|---|---|",
    ]
    md += [
        f"| {r['algo']} | {r['seed']} | {r['warm_pass1']:.1f} | {r['final_pass1']:.1f} | "
        f"{r['delta']:+.1f} | {r['minutes']:.1f} |"
        for r in rows
    ]
    tested = [r for r in rows if "final_pass1_test" in r]
    if tested:
        md += ["", f"At the test budget ({args.eval_max_tokens} tokens):", "",
               "| algo | seed | warm pass@1 % | final pass@1 % | delta |", "|---|---|---|---|---|"]  # fmt: skip
        md += [
            f"| {r['algo']} | {r['seed']} | {r['warm_pass1_test']:.1f} | {r['final_pass1_test']:.1f} | "
            f"{r['delta_test']:+.1f} |"
            for r in tested
        ]
    results(args).save(common.config_dict(args), rows, "\n".join(md + [""] + summary_lines(rows)) + "\n")


def load_rows(args) -> list[dict]:
    """Rows of an earlier, interrupted run into the same --out with the same settings: a rerun
    measures only what is missing (``common.Results``)."""
    return results(args).load(common.config_dict(args))


def plots(args) -> None:
    runs = sorted(args.out.glob("seed*/run-*/"))  # the run folders, not their RUN.meta.json beside them
    common.plots(runs, args.out / "plots", args.out / "plots.log")


SMOKE = {"sft_steps": 2, "steps": 1, "n": 2, "batch": 2, "mini_batch": 2, "eval_n": 1, "warm_target": 0.0,
         "max_tokens": 16}  # fmt: skip


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = common.measurement_parser(
        __doc__, out=Path("learn-run"), train=LEARN / "train.jsonl", heldout=LEARN / "heldout.jsonl",
        warm_target=0.35, steps=150, max_tokens=64, eval_n=8,
    )  # fmt: skip
    p.add_argument("--algos", default=",".join(ALGOS), help="comma-separated presets")
    p.add_argument(
        "--temperature",
        default="1.0",
        help="sampling temperature of both algorithms ('preset' keeps each preset's own; "
        "MicroCoder-GRPO's is 'auto')",
    )
    p.add_argument(
        "--pass-guard",
        type=float,
        help="with --temperature auto: the loop's pass-rate guard (default: the loop's own; 0: diversity alone)",
    )
    p.add_argument(
        "--temperature-rule",
        choices=("knee", "rise", "spread"),
        help="with --temperature auto: how the loop chooses T (default: the loop's own)",
    )
    args = p.parse_args(argv)
    args.seeds = common.seeds(args.seeds)
    args.algos = args.algos.split(",")
    return common.smoke_sizes(args, SMOKE)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    return common.one_writer(args.out, lambda: measure(args), "learning_proof")


def measure(args) -> int:
    # One math thread per process: on a busy 2-core machine two torch threads per process ran
    # the tiny model's forward/backward ~8x slower than one (thread contention), measured here.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    args.out.mkdir(parents=True, exist_ok=True)
    rows = load_rows(args)
    # Each seed is a chain of subprocesses; --jobs seeds run side by side (threads only wait).
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for f in [pool.submit(one_seed, seed, args, rows) for seed in args.seeds]:
            f.result()
    rows.sort(key=lambda r: table_order(args, r))
    plots(args)
    print(HEADER)
    for r in rows:
        print(format_row(r))
    for line in summary_lines(rows):
        print(line)
    print(
        f"wrote {args.out / 'results.md'}, {args.out / 'results.json'}, {args.out / 'plots'}, "
        f"{args.out}/seed*/eval-*/bench.md"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
