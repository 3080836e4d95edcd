"""Does the loop learn? Held-out pass@1 of a warm-started tiny model before and after RL.

    python benchmarks/learning_proof.py --out learn-run                      # 3 seeds, both algos
    python benchmarks/learning_proof.py --out learn-run --seeds 0 --steps 10 # a quicker look
    python benchmarks/learning_proof.py --out learn-run --smoke              # seconds-sized plumbing check

For each seed: examples/learn/warm_start.py builds a tiny model and gives it a short supervised
pass on the train problems of examples/learn/, stopped once its gate reads --warm-target: the
mean probability that it writes the reference programs of 48 train problems the pass leaves out
(the same 48 for every seed; near the target the pass slows down and the gate reads every step),
so that every seed starts from a comparable policy above the share that guessing the constant
reaches; its held-out pass@1 is measured with
`mcoder rollout` + `mcoder judge` + `mcoder bench`; then `mcoder train --loop` runs
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
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LEARN = ROOT / "examples" / "learn"
ALGOS = ("microcoder-grpo", "grpo")
_SAVE = threading.Lock()  # seeds run in threads (each waits on its subprocesses); one writer at a time


def mcoder() -> list[str]:
    """The mcoder beside this Python (the venv's), or $MCODER."""
    if os.environ.get("MCODER"):
        return [os.environ["MCODER"]]
    return [sys.executable, "-m", "mcoder"]


def sh(cmd: list[str], log: Path) -> str:
    """Run one stage; its stderr goes to the log (the bench tables land there too), stdout is returned."""
    print("  $ " + " ".join(map(str, cmd)), file=sys.stderr, flush=True)
    with open(log, "a") as err:
        done = subprocess.run(list(map(str, cmd)), stdout=subprocess.PIPE, stderr=err, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}): {' '.join(map(str, cmd))}; see {log}")
    return done.stdout


def evaluate(model: Path, out: Path, args, seed: int, log: Path, baseline: Path | None = None) -> float:
    """Held-out pass@1 of `model` (in [0, 1]); writes rollouts, verdicts and the bench tables under out."""
    out.mkdir(parents=True, exist_ok=True)
    heldout = args.heldout
    sh(
        mcoder()
        + [
            "rollout",
            "-p",
            heldout,
            "-m",
            model,
            "-o",
            out / "rollouts.jsonl",
            "--n",
            args.eval_n,
            "--max-tokens",
            args.max_tokens,
            "-t",
            args.eval_temperature,
            "--seed",
            1000 + seed,
            "--overwrite",
            "-q",
        ],
        log,
    )
    sh(
        mcoder()
        + [
            "judge",
            "-p",
            heldout,
            "-r",
            out / "rollouts.jsonl",
            "-o",
            out / "verdicts.jsonl",
            "--overwrite",
            "-q",
        ],
        log,
    )
    bench = mcoder() + [
        "bench",
        "-p",
        heldout,
        "--verdicts",
        out / "verdicts.jsonl",
        "--markdown",
        out / "bench.md",
        "--json",
        out / "bench.json",
        "-q",
    ]
    if baseline is not None:
        bench += ["--baseline", baseline]
    sh(bench, log)
    return pass_at_1(out / "verdicts.jsonl")


def pass_at_1(verdicts: Path) -> float:
    """Mean over problems of the share of accepted samples (the unbiased pass@1)."""
    per: dict[str, list[bool]] = {}
    for line in verdicts.read_text().splitlines():
        v = json.loads(line)
        per.setdefault(v["problem_id"], []).append(bool(v["passed"]))
    return statistics.fmean(sum(p) / len(p) for p in per.values()) if per else 0.0


def train(algo: str, warm: Path, run: Path, args, seed: int, log: Path) -> Path:
    cmd = mcoder() + [
        "train",
        "--loop",
        "--model",
        warm,
        "--problems",
        args.train,
        "--run-dir",
        run,
        "--algo",
        algo,
        "--steps",
        args.steps,
        "--n",
        args.n,
        "--train-batch-size",
        args.batch,
        "--mini-batch-size",
        args.mini_batch,
        "--micro-batch-size",
        args.micro_batch,
        "--max-tokens",
        args.max_tokens,
        "--lr",
        args.lr,
        "--seed",
        seed,
        "--save-every",
        args.steps,
        "-q",
    ]
    if args.temperature != "preset":
        cmd += ["--temperature", args.temperature]
    if args.pass_guard is not None:
        cmd += ["--pass-guard", args.pass_guard]
    if args.temperature_rule is not None:
        cmd += ["--temperature-rule", args.temperature_rule]
    sh(cmd, log)
    return run / "checkpoint"


def one_seed(seed: int, args, rows: list[dict]) -> None:
    root = args.out / f"seed{seed}"
    root.mkdir(parents=True, exist_ok=True)
    log = root / "log.txt"
    t0 = time.perf_counter()
    warm = root / "warm"
    if not (warm / "config.json").exists():
        sh(
            [
                sys.executable,
                LEARN / "warm_start.py",
                "--problems",
                args.train,
                "--out",
                warm,
                "--steps",
                args.sft_steps,
                "--seed",
                seed,
                "--layers",
                args.layers,
                "--target-pass",
                args.warm_target,
                "--max-tokens",
                args.max_tokens,
            ],
            log,
        )
    warm_min = (time.perf_counter() - t0) / 60
    done = root / "eval-warm" / "bench.json"  # written last: its presence means a whole evaluation
    if done.exists():
        before = pass_at_1(root / "eval-warm" / "verdicts.jsonl")
    else:
        before = evaluate(warm, root / "eval-warm", args, seed, log)
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
        after = evaluate(
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
        with _SAVE:
            rows.append(row)
            save(args, rows)
        print(format_row(row), file=sys.stderr, flush=True)


HEADER = f"{'algo':<16} {'seed':>4} {'warm pass@1':>11} {'final pass@1':>12} {'delta':>7} {'minutes':>7}"


def format_row(r: dict) -> str:
    return (
        f"{r['algo']:<16} {r['seed']:>4} {r['warm_pass1']:>10.1f}% {r['final_pass1']:>11.1f}% "
        f"{r['delta']:>+6.1f} {r['minutes']:>7.1f}"
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


def save(args, rows: list[dict]) -> None:
    rows = sorted(rows, key=lambda r: table_order(args, r))
    (args.out / "results.json").write_text(json.dumps({"config": config_dict(args), "rows": rows}, indent=2))
    md = [
        "| algo | seed | warm pass@1 % | final pass@1 % | delta | train minutes |",
        "|---|---|---|---|---|---|",
    ]
    md += [
        f"| {r['algo']} | {r['seed']} | {r['warm_pass1']:.1f} | {r['final_pass1']:.1f} | "
        f"{r['delta']:+.1f} | {r['minutes']:.1f} |"
        for r in rows
    ]
    (args.out / "results.md").write_text("\n".join(md + [""] + summary_lines(rows)) + "\n")


def load_rows(args, run_only: frozenset[str] | set[str] | None = None) -> list[dict]:
    """Rows of an earlier, interrupted run into the same --out with the same settings: a rerun
    measures only what is missing. Different settings start over (the old results are kept aside).
    ``run_only``: the settings a rerun may change (default RUN_ONLY)."""
    run_only = RUN_ONLY if run_only is None else run_only
    path = args.out / "results.json"
    if not path.exists():
        return []
    old = json.loads(path.read_text())
    new = {k: v for k, v in config_dict(args).items() if k not in run_only}
    # a setting the old run did not have yet reads as unset (None), so adding an option to this
    # script does not discard the rows of every earlier run
    if {k: old.get("config", {}).get(k) for k in new} != new:
        path.rename(path.with_suffix(".json.old"))
        print(f"{path}: other settings, moved to {path.name}.old; starting over", file=sys.stderr)
        return []
    return list(old.get("rows", []))


# Settings that choose what to run, not how: a rerun may change them and keep earlier rows.
RUN_ONLY = {"seeds", "algos", "jobs", "out"}


def config_dict(args) -> dict:
    return {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}


def plots(args) -> None:
    runs = sorted(args.out.glob("seed*/run-*/"))  # the run folders, not their RUN.meta.json beside them
    if runs:
        cmd = mcoder() + ["bench", "--plots", "--out-dir", args.out / "plots", "-q"]
        for r in runs:
            cmd += ["--run-dir", r]
        sh(cmd, args.out / "plots.log")


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path("learn-run"), help="folder for everything written")
    p.add_argument("--seeds", default="0,1,2", help="comma-separated seeds")
    p.add_argument("--algos", default=",".join(ALGOS), help="comma-separated presets")
    p.add_argument("--train", type=Path, default=LEARN / "train.jsonl")
    p.add_argument("--heldout", type=Path, default=LEARN / "heldout.jsonl")
    p.add_argument("--layers", type=int, default=2, help="tiny model layers")
    p.add_argument("--sft-steps", type=int, default=1500, help="warm-start optimizer steps (the most)")
    p.add_argument(
        "--warm-target",
        type=float,
        default=0.35,
        help="the warm start stops once its gate (the mean probability of the reference programs of 48 "
        "train problems it was not trained on) reads this (0: all --sft-steps on every train problem)",
    )
    p.add_argument("--steps", type=int, default=150, help="RL loop steps")
    p.add_argument("--n", type=int, default=8, help="G, samples per problem in training")
    p.add_argument("--batch", type=int, default=16, help="problems per RL step")
    p.add_argument("--mini-batch", type=int, default=4, help="prompt groups per optimizer step")
    p.add_argument("--micro-batch", type=int, default=16, help="sequences per forward/backward")
    p.add_argument("--lr", type=float, default=3e-4, help="RL learning rate (full fine-tuning)")
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument(
        "--temperature",
        default="1.0",
        help="sampling temperature of both algorithms ('preset' keeps each preset's own; "
        "MicroCoder-GRPO's is 'auto')",
    )
    p.add_argument("--eval-n", type=int, default=8, help="held-out samples per problem")
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
    p.add_argument("--eval-temperature", type=float, default=1.0)
    p.add_argument("--jobs", type=int, default=1, help="seeds run side by side (2 on a 2-core CPU)")
    p.add_argument("--smoke", action="store_true", help="tiny sizes: checks the plumbing, proves nothing")
    args = p.parse_args(argv)
    args.seeds = [int(s) for s in args.seeds.split(",")]
    args.algos = args.algos.split(",")
    if args.smoke:
        args.sft_steps, args.steps, args.n, args.batch, args.mini_batch, args.eval_n = 2, 1, 2, 2, 2, 1
        args.warm_target = 0.0
        args.max_tokens = 16
    return args


def one_writer(out: Path, run) -> int:
    """``run()`` while holding OUT's lock (``OUT.lock``, as every mcoder stage): a second run into
    the same folder would delete the first one's run folders under it. It exits 2 at once instead."""
    from mcoder.errors import UsageError
    from mcoder.outputs import hold_lock

    out.mkdir(parents=True, exist_ok=True)
    try:
        lock = hold_lock(out)
        lock.__enter__()
    except UsageError as e:
        print(f"{e}", file=sys.stderr)
        return 2
    try:
        return run()
    finally:
        lock.__exit__(None, None, None)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    return one_writer(args.out, lambda: measure(args))


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
