"""MicroCoder-GRPO's two mechanisms, switched one at a time, on a family whose answers are long.

    python benchmarks/long_ablation.py --out long-run --jobs 2           # 7 arms x 3 seeds
    python benchmarks/long_ablation.py --out long-run --arms auto,T1.0    # some arms
    python benchmarks/long_ablation.py --out long-run --smoke             # plumbing only

(``python -m benchmarks.long_ablation`` is the same.)

The problems are examples/long/ (2 to 4 expressions of two integers, one per line: answers of 34
to 66 tokens against an L_max of 56, which 52 of the 240 train references and 20 of the 100
held-out ones exceed), so a share of the samples is cut off by the limit before the program
finishes: outputs that are incomplete, not wrong, which is what truncation masking is about. For each seed, the warm start (``python -m mcoder.warmstart``) gives a tiny model a gated supervised
pass on the train part; then every arm trains from that same warm start with
`mcoder loop --algo microcoder-grpo`, changing one setting:

- truncation handling at T = 1.0: ``trunc-none`` (no masking: a cut-off output is an ordinary
  failure), ``trunc-all`` (DAPO: every cut-off output masked), ``cond-0.1`` and ``cond-0.3``
  (MicroCoder's conditional masking with rho 0.1 and 0.3);
- temperature with conditional masking (rho 0.1): ``T0.6``, ``auto`` (diversity-determined by
  the knee rule its table was measured with, chosen in stages) and ``T1.8``; ``cond-0.1`` is the T = 1.0 point of this series.

Each run's held-out pass@1 is measured with `mcoder rollout` + `judge` + `bench` as in
benchmarks/learning_proof.py, and its training figures are read from its metrics.jsonl: mean
response length, truncation rate, masked outputs, diversity. OUT/results.md holds the table per
run and per arm (mean and spread over seeds) beside the paper's direction for each arm;
OUT/plots-truncation/ and OUT/plots-temperature/ hold each series' runs on shared axes. A rerun
with the same settings keeps finished rows and warm starts.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

if __package__:  # python -m benchmarks.long_ablation, or imported
    from benchmarks import common
else:  # python benchmarks/long_ablation.py: this folder is first on sys.path
    import common

LONG = common.LONG

COND = ["--truncation", "conditional", "--mask-rho", "0.1"]
ARMS: dict[str, list[str]] = {
    "trunc-none": ["--truncation", "none", "--temperature", "1.0"],
    "trunc-all": ["--truncation", "all", "--temperature", "1.0"],
    "cond-0.1": COND + ["--temperature", "1.0"],
    "cond-0.3": ["--truncation", "conditional", "--mask-rho", "0.3", "--temperature", "1.0"],
    "T0.6": COND + ["--temperature", "0.6"],
    # the rule this family's table was measured with (the loop's default is now spread)
    "auto": COND + ["--temperature", "auto", "--temperature-rule", "knee"],
    "T1.8": COND + ["--temperature", "1.8"],
}
SERIES = {
    "truncation": ["trunc-none", "trunc-all", "cond-0.1", "cond-0.3"],
    "temperature": ["T0.6", "cond-0.1", "auto", "T1.8"],
}
# What the paper reports for each arm (its Qwen3 runs with 4K-16K-token answers), to read beside ours.
PAPER = {
    "trunc-none": "shorter answers, a lower peak",
    "trunc-all": "length runs to the cap, then accuracy collapses",
    "cond-0.1": "the highest peak (T = 1.0 point of the temperature series too)",
    "cond-0.3": "between none and all",
    "T0.6": "diversity keeps falling and training fails",
    "auto": "diversity kept up, the best of the series",
    "T1.8": "an early drop in diversity (drastic fluctuations)",
}
_SAVE = threading.Lock()


def train(arm: str, warm: Path, run: Path, args, seed: int, log: Path) -> Path:
    common.run_stage(common.loop_command(warm, run, args, seed, "microcoder-grpo") + ARMS[arm], log)
    return run / "checkpoint"


def run_figures(run: Path) -> dict:
    """Training figures of one run from its metrics.jsonl (first and last 10 steps, and all)."""
    steps = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]

    def mean(key: str, part: list[dict]) -> float:
        values = [s[key] for s in part if key in s]
        return statistics.fmean(values) if values else float("nan")

    first, last = steps[:10], steps[-10:]
    out = {
        "length_first": mean("length/mean", first),
        "length_last": mean("length/mean", last),
        "truncated_first": mean("truncated_rate", first),
        "truncated_all": mean("truncated_rate", steps),
        "masked_total": sum(s.get("masked_count", 0) for s in steps),
        "diversity_first": mean("diversity/lexical", first),
        "diversity_last": mean("diversity/lexical", last),
        "train_pass_first": mean("pass_rate", first),
        "train_pass_last": mean("pass_rate", last),
    }
    record = run / "temperature.json"
    if record.exists():
        t = json.loads(record.read_text())
        stages = t.get("stages") or [{"from_step": 1, "temperature": t.get("temperature")}]
        out["temperature"] = "/".join(f"{s['temperature']:g}" for s in stages)
    return out


def warm_start(seed: int, args) -> float:
    """The seed's warm start and its held-out pass@1 (both kept for a rerun)."""
    root = args.out / f"seed{seed}"
    root.mkdir(parents=True, exist_ok=True)
    log = root / "log.txt"
    # The gate this family's table was measured with (the learning proof's default is now the
    # likelihood gate, whose P(reference) of ~50-token programs is far below a pass rate).
    warm = common.warm_start(
        args, root / "warm", seed, log, gate="sampled", check_problems=16, check_every=25, fine_every=10
    )
    if (root / "eval-warm" / "bench.json").exists():
        before = common.pass_at_1(root / "eval-warm" / "verdicts.jsonl")
    else:
        before = common.heldout(warm, root / "eval-warm", args, seed, log)
    common.heldout_at_test_budget(warm, root / "eval-warm", args, seed, log)  # --eval-max-tokens
    print(f"seed {seed}: warm start held-out pass@1 {100 * before:.1f}%", file=sys.stderr, flush=True)
    return before


def one_run(seed: int, arm: str, before: float, args, rows: list[dict]) -> None:
    root = args.out / f"seed{seed}"
    log = root / f"log-{arm}.txt"
    t0 = time.perf_counter()
    run = root / f"run-{arm}-s{seed}"
    shutil.rmtree(run, ignore_errors=True)  # a fresh run: the loop would resume an old one
    ckpt = train(arm, root / "warm", run, args, seed, log)
    minutes = (time.perf_counter() - t0) / 60
    after = common.heldout(
        ckpt, root / f"eval-{arm}", args, seed, log, baseline=root / "eval-warm" / "verdicts.jsonl"
    )
    row = {"arm": arm, "seed": seed, "warm_pass1": 100 * before, "final_pass1": 100 * after}
    row |= {"delta": 100 * (after - before), "minutes": minutes, **run_figures(run)}
    baseline = root / "eval-warm" / "verdicts.jsonl"
    after_test = common.heldout_at_test_budget(ckpt, root / f"eval-{arm}", args, seed, log, baseline=baseline)
    if after_test is not None:  # --eval-max-tokens: held-out pass@1 at the test budget too
        before_test = common.heldout_at_test_budget(root / "warm", root / "eval-warm", args, seed, log)
        row |= {"final_pass1_test": 100 * after_test, "delta_test": 100 * (after_test - before_test)}
    with _SAVE:
        rows.append(row)
        save(args, rows)
    print(format_row(row), file=sys.stderr, flush=True)


COLUMNS = [
    ("final_pass1", "held-out pass@1 %", "{:.1f}"),
    ("delta", "change", "{:+.1f}"),
    ("final_pass1_test", "at the test budget %", "{:.1f}"),
    ("delta_test", "change there", "{:+.1f}"),
    ("length_first", "length first 10", "{:.1f}"),
    ("length_last", "length last 10", "{:.1f}"),
    ("truncated_first", "cut off first 10 %", "{:.1%}"),
    ("truncated_all", "cut off all %", "{:.1%}"),
    ("masked_total", "masked", "{:.0f}"),
    ("diversity_first", "diversity first 10", "{:.3f}"),
    ("diversity_last", "diversity last 10", "{:.3f}"),
]


def fmt(spec: str, value) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "-"
    return spec.format(value).rstrip("%")


def format_row(r: dict) -> str:
    cells = [f"{r['arm']:<10}", f"s{r['seed']}", f"T {r.get('temperature', '-')}"]
    return "  ".join(cells + [f"{label} {fmt(spec, r[key])}" for key, label, spec in COLUMNS[:2]])


def shown(rows: list[dict]) -> list[tuple[str, str, str]]:
    """The columns some row has (the test-budget ones only with --eval-max-tokens)."""
    return [c for c in COLUMNS if any(c[0] in r for r in rows)]


def arm_summary(rows: list[dict], arm: str) -> dict:
    mine = [r for r in rows if r["arm"] == arm]
    out = {"arm": arm, "seeds": len(mine)}
    for key, _, _ in shown(mine):
        values = [r[key] for r in mine if key in r and not math.isnan(r[key])]
        out[key] = statistics.fmean(values) if values else float("nan")
        out[key + "_std"] = statistics.stdev(values) if len(values) > 1 else 0.0
    out["temperature"] = ", ".join(sorted({str(r.get("temperature", "-")) for r in mine}))
    return out


def save(args, rows: list[dict]) -> None:
    order = {arm: i for i, arm in enumerate(ARMS)}
    rows.sort(key=lambda r: (order.get(r["arm"], 99), r["seed"]))
    summaries = [arm_summary(rows, a) for a in ARMS if any(r["arm"] == a for r in rows)]
    columns = shown(rows)
    md = []
    for series, arms in SERIES.items():
        if not any(s["arm"] in arms for s in summaries):
            continue
        md += [f"### {series}", ""]
        md += ["| arm | T | seeds | " + " | ".join(label for _, label, _ in columns) + " | the paper |"]
        md += ["|---" * (len(columns) + 4) + "|"]
        for s in summaries:
            if s["arm"] not in arms:
                continue
            cells = [
                f"{fmt(spec, s.get(key, math.nan))} ± {fmt(spec.replace('+', ''), s.get(key + '_std', 0.0))}"
                for key, _, spec in columns
            ]
            md.append(
                f"| {s['arm']} | {s['temperature']} | {s['seeds']} | "
                + " | ".join(cells)
                + f" | {PAPER[s['arm']]} |"
            )
        md.append("")
    md += [
        "### every run",
        "",
        "| arm | seed | T | warm % | " + " | ".join(l for _, l, _ in columns) + " | minutes |",
    ]
    md += ["|---" * (len(columns) + 5) + "|"]
    for r in rows:
        cells = [fmt(spec, r.get(key, math.nan)) for key, _, spec in columns]
        md.append(
            f"| {r['arm']} | {r['seed']} | {r.get('temperature', '-')} | {r['warm_pass1']:.1f} | "
            + " | ".join(cells)
            + f" | {r['minutes']:.1f} |"
        )
    results(args).save(common.config_dict(args), rows, "\n".join(md) + "\n", arms=summaries)


def results(args) -> common.Results:
    return common.Results(args.out, "long_ablation", RUN_ONLY)


def plots(args) -> None:
    for series, arms in SERIES.items():
        runs = [r for arm in arms for r in sorted(args.out.glob(f"seed*/run-{arm}-s*/"))]  # folders: not RUN.meta.json
        common.plots(runs, args.out / f"plots-{series}", args.out / "plots.log")


SMOKE = {"sft_steps": 2, "steps": 2, "n": 2, "batch": 2, "mini_batch": 2, "eval_n": 1, "warm_target": 0.0,
         "max_tokens": 16}  # fmt: skip


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = common.measurement_parser(
        __doc__, out=Path("long-run"), train=LONG / "train.jsonl", heldout=LONG / "heldout.jsonl",
        warm_target=0.3, steps=40, max_tokens=56, eval_n=4,
    )  # fmt: skip
    p.add_argument("--arms", default=",".join(ARMS), help=f"comma-separated, of {', '.join(ARMS)}")
    args = p.parse_args(argv)
    args.seeds = common.seeds(args.seeds)
    args.arms = args.arms.split(",")
    unknown = [a for a in args.arms if a not in ARMS]
    if unknown:
        p.error(f"unknown arm(s) {', '.join(unknown)}: use {', '.join(ARMS)}")
    return common.smoke_sizes(args, SMOKE)


# Settings that choose what to run, not how: a rerun may change them and keep earlier rows.
RUN_ONLY = {"seeds", "arms", "jobs", "out"}


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    return common.one_writer(args.out, lambda: measure(args), "long_ablation")


def measure(args) -> int:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    args.out.mkdir(parents=True, exist_ok=True)
    rows = results(args).load(common.config_dict(args))
    t0 = time.perf_counter()
    # Warm starts first (one per seed), then every (seed, arm) run: --jobs of them side by side.
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        befores = dict(zip(args.seeds, pool.map(lambda s: warm_start(s, args), args.seeds)))
        todo = [  # arm by arm in --arms order, so a cut-short run has whole arms
            (seed, arm)
            for arm in args.arms
            for seed in args.seeds
            if not any(r["arm"] == arm and r["seed"] == seed for r in rows)
        ]
        for f in [pool.submit(one_run, seed, arm, befores[seed], args, rows) for seed, arm in todo]:
            f.result()
    save(args, rows)
    plots(args)
    print((args.out / "results.md").read_text())
    print(
        f"{(time.perf_counter() - t0) / 60:.1f} minutes; wrote {args.out / 'results.md'}, {args.out}/plots-*"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
