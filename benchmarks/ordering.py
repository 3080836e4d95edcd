"""The paper's ordering in miniature: GRPO < DAPO < MicroCoder-GRPO, paired over seeds, at a test
budget larger than the train budget, with a pre-registered rule for what the runs mean.

    python benchmarks/ordering.py --out order-run --pick-budget 27,28 --seeds 0,1,2,3   # stage 1
    python benchmarks/ordering.py --out order-run --seeds 0-11 --jobs 2                  # every arm
    python benchmarks/ordering.py --out order-run --seeds 12-29 --arms grpo,dapo,mc      # more seeds
    python benchmarks/ordering.py --out order-run --analyze                              # the verdict
    python benchmarks/ordering.py --out order-smoke --smoke --seeds 0                    # plumbing

(``python -m benchmarks.ordering`` is the same.) Problems: examples/learn/ (the learning proof's
family; references of 25-32 tokens with the end-of-turn token). Per seed, one warm start (as
benchmarks/learning_proof.py) and, from it, every arm for --steps RL steps on the train part,
everything else equal: the same warm start, RL seed, steps, problems and evaluation. The arms:

- ``grpo``, ``dapo``, ``mc``: the presets of docs/algorithm.md as they are (``mc`` is
  ``microcoder-grpo`` with its diversity-determined temperature);
- ``mc-no-mask`` (MicroCoder-GRPO with ``--truncation none``), ``mc-T1`` (its temperature fixed at
  1.0) and ``mc-no-mask-T1`` (both). The fixed-T arms run only on seeds whose probe chose T != 1.0;
  elsewhere they equal their parent, and their row says so (``same_as``; difference 0);
- exploratory, outside the rule and only when ``--arms`` names them: ``mc-clip``, ``mc-kl`` and
  ``mc-seq``, MicroCoder-GRPO with GRPO's clip above, KL or loss aggregation (``EXPLORATORY``),
  each reported as MC - arm with its CI.

Every arm trains with the same --truncated-reward (default ``zero``: a cut-off answer scores 0, as
in the paper's regime where a cut-off never holds a finished answer). Held-out pass@1 (100
problems x --eval-n samples, the same sampling seed for every arm) is measured at the train budget
(--max-tokens) and the test budget (--eval-max-tokens) after --checkpoints steps and at the end;
the primary endpoint is the last checkpoint at the test budget. Each row also has: pass@1 at the
test budget on held-out problems whose reference fits the train budget and on those that need
more, the share of outputs that hit the test budget, the train truncation rate, the masked and
dropped shares (samples and tokens), entropy, diversity, the chosen T, no-EOS collapse (train
truncation >= 90 % for 3 consecutive steps, with its step), the samples generated (DAPO's
resampling and the probe included) and the CPU seconds of the arm's processes.

The analysis (``analyze``) is the rule registered before the runs (docs/measurements.md):
Page's L trend test of grpo < dapo < mc over seeds as blocks, then MC - DAPO by a one-sided
paired t-test with the Wilcoxon signed-rank test agreeing, the paper's magnitudes (+3.6 over DAPO,
+4.7 over GRPO) as the bar for "does not hold", the ablation contrasts with their CIs and
collapse incidence by an exact McNemar test; with an interim look at 12 seeds.

``--pick-budget L1,L2`` is the first stage: at each candidate train budget it samples the train
problems from each seed's warm start (G = --n, T = 1.0), judges them, and reports how much
masking would have to act on (groups holding both a finished pass and a cut-off sample that
MicroCoder-GRPO's reading makes eligible) and what each cut-off output's program was. A rerun
into the same --out keeps finished warm starts, evaluations and rows.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

if __package__:  # python -m benchmarks.ordering, or imported
    from benchmarks import common
else:  # python benchmarks/ordering.py: this folder is first on sys.path
    import common

from mcoder.train.config import preset

LEARN = common.LEARN
PRESETS = ("grpo", "dapo", "mc")  # the order the paper reports: GRPO < DAPO < MicroCoder-GRPO
ARMS: dict[str, dict] = {
    "grpo": {"algo": "grpo", "flags": []},
    "dapo": {"algo": "dapo", "flags": []},
    "mc": {"algo": "microcoder-grpo", "flags": []},
    "mc-no-mask": {"algo": "microcoder-grpo", "flags": ["--truncation", "none"]},
    "mc-T1": {"algo": "microcoder-grpo", "flags": ["--temperature", "1.0"], "parent": "mc"},
    "mc-no-mask-T1": {"algo": "microcoder-grpo", "flags": ["--truncation", "none", "--temperature", "1.0"],
                      "parent": "mc-no-mask"},
}  # fmt: skip
# Exploratory arms, not in the registered rule and run only when --arms names them: MicroCoder-GRPO
# with one more of its differences from GRPO put back to GRPO's value (its clip above, its KL, its
# loss aggregation), to find which part of the preset moves the answers that need the test budget.
# With mc-no-mask and mc-T1 they leave one difference out each. Reported as contrasts, claimed none.
_GRPO = preset("grpo")
EXPLORATORY: dict[str, dict] = {
    "mc-clip": {"algo": "microcoder-grpo", "flags": ["--eps-high", str(_GRPO["eps_high"])]},
    "mc-kl": {"algo": "microcoder-grpo", "flags": ["--beta", str(_GRPO["beta"])]},
    "mc-seq": {"algo": "microcoder-grpo", "flags": ["--loss-agg", str(_GRPO["loss_agg"])]},
}
ALL_ARMS = {**ARMS, **EXPLORATORY}
# The paper's gains (Qwen3-1.7B, LiveCodeBench v6, train 4K / test 8K): MC 24.0, DAPO 20.4, GRPO 19.3.
PAPER_OVER_DAPO, PAPER_OVER_GRPO = 3.6, 4.7
COLLAPSE_RATE, COLLAPSE_STEPS = 0.9, 3
_SAVE = threading.Lock()
_FAILED = threading.Event()  # a task failed: the others stop waiting on it


# ---------------------------------------------------------------- running a process and its CPU


def run_counted(cmd, log: Path) -> float:
    """``common.run_stage`` (stderr to ``log``, a failure ends the benchmark), returning the CPU
    seconds of the process and the children it waited for (judge workers, the engine)."""
    cmd = [str(c) for c in cmd]
    print("  $ " + " ".join(cmd), file=sys.stderr, flush=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a") as f:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=f)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}; see {log}")
    return usage.ru_utime + usage.ru_stime


# ---------------------------------------------------------------- evaluation


_TOKENIZER = threading.Lock()  # transformers' lazy imports are not safe from two threads at once


@functools.lru_cache(maxsize=8)
def reference_lengths(warm: Path, problems: Path) -> dict[str, int]:
    """Tokens of each problem's reference answer as the warm start learnt it (fence, program,
    fence, end of turn) with the warm start's tokenizer."""
    with _TOKENIZER:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(warm)
    out = {}
    for line in problems.read_text().splitlines():
        p = json.loads(line)
        ids = tok(f"```python\n{p['reference_solutions'][0]}```", add_special_tokens=False)["input_ids"]
        out[p["id"]] = len(ids) + 1
    return out


def evaluation(model: Path, where: Path, args, seed: int, budget: int, log: Path) -> dict:
    """Held-out pass@1 of ``model`` at ``budget`` (kept: a finished one is read back), split by
    whether a problem's reference fits the train budget, and the share of outputs at the budget."""
    cpu = 0.0
    if not (where / "bench.json").exists():
        where.mkdir(parents=True, exist_ok=True)
        cpu += run_counted(common.mcoder(
            "rollout", "-p", args.heldout, "-m", model, "-o", where / "rollouts.jsonl", "--n", args.eval_n,
            "--max-tokens", budget, "-t", args.eval_temperature, "--seed", 1000 + seed, "--overwrite", "-q"), log)  # fmt: skip
        cpu += run_counted(common.mcoder(
            "judge", "-p", args.heldout, "-r", where / "rollouts.jsonl", "-o", where / "verdicts.jsonl",
            "--overwrite", "-q"), log)  # fmt: skip
        cpu += run_counted(common.mcoder(
            "bench", "-p", args.heldout, "--verdicts", where / "verdicts.jsonl", "--json", where / "bench.json",
            "-q"), log)  # fmt: skip
        (where / "cpu_s").write_text(f"{cpu}\n")
    fits = reference_lengths(Path(args.out).resolve() / f"seed{seed}" / "warm", args.heldout)
    per: dict[str, list[bool]] = {}
    for line in (where / "verdicts.jsonl").read_text().splitlines():
        v = json.loads(line)
        per.setdefault(v["problem_id"], []).append(bool(v["passed"]))
    rollouts = [json.loads(x) for x in (where / "rollouts.jsonl").read_text().splitlines()]

    def mean_pass(ids) -> float:
        ids = [i for i in ids if i in per]
        return 100 * statistics.fmean(sum(per[i]) / len(per[i]) for i in ids) if ids else math.nan

    return {
        "pass1": mean_pass(per),
        "pass1_fits": mean_pass([i for i in per if fits[i] <= args.max_tokens]),
        "pass1_needs_more": mean_pass([i for i in per if fits[i] > args.max_tokens]),
        "at_budget": sum(r["finish_reason"] == "length" for r in rollouts) / max(len(rollouts), 1),
        "cpu_s": float((where / "cpu_s").read_text()) if (where / "cpu_s").exists() else 0.0,
    }


# ---------------------------------------------------------------- one arm


def loop_cmd(arm: str, warm: Path, run: Path, args, seed: int, steps: int) -> list[str]:
    spec = ALL_ARMS[arm]
    cmd = common.loop_command(warm, run, args, seed, spec["algo"])
    cmd[cmd.index("--steps") + 1] = str(steps)
    cmd[cmd.index("--save-every") + 1] = str(steps)
    return cmd + ["--truncated-reward", args.truncated_reward] + spec["flags"]


def chosen_temperature(run: Path) -> float | None:
    record = run / "temperature.json"
    return json.loads(record.read_text()).get("temperature") if record.exists() else None


def one_arm(seed: int, arm: str, args, rows: list[dict]) -> None:
    """One (seed, arm): the run in segments ending at each checkpoint, each evaluated at both
    budgets before the run goes on (a rerun continues where it stopped)."""
    try:
        _one_arm(seed, arm, args, rows)
    except BaseException:
        _FAILED.set()
        raise


def _one_arm(seed: int, arm: str, args, rows: list[dict]) -> None:
    root = args.out / f"seed{seed}"
    log = root / f"log-{arm}.txt"
    parent = ALL_ARMS[arm].get("parent")
    if parent is not None:
        if parent not in args.arms and not (root / f"run-{parent}").exists():
            raise SystemExit(f"arm {arm} needs its parent {parent} (add it to --arms)")
        T = wait_for(lambda: chosen_temperature(root / f"run-{parent}"))
        if T == 1.0:  # the probe chose 1.0: this arm is its parent's run
            row = {**wait_for(lambda: next((r for r in rows if r["seed"] == seed and r["arm"] == parent), None))}
            row |= {"arm": arm, "same_as": parent, "train_cpu_s": 0.0, "eval_cpu_s": 0.0, "samples_generated": 0}
            return save_row(args, rows, row)
    run = root / f"run-{arm}"
    warm = root / "warm"
    evals: dict[str, dict] = {}
    for steps in [*args.checkpoints, args.steps]:
        done = root / f"eval-{arm}-{steps}-L{args.eval_max_tokens}" / "bench.json"
        if not done.exists():  # the loop resumes a run folder: the steps after its checkpoint
            cpu = run_counted(loop_cmd(arm, warm, run, args, seed, steps), log)
            spent = run / f"cpu_s-{steps}"
            spent.write_text(f"{cpu + (float(spent.read_text()) if spent.exists() else 0.0)}\n")
        for budget in budgets(args):
            if args.final_only and (steps != args.steps or budget != args.eval_max_tokens):
                continue  # the ablations' endpoint only: the run itself is the same
            e = evaluation(run / "checkpoint", root / f"eval-{arm}-{steps}-L{budget}", args, seed, budget, log)
            evals[f"{steps}@{budget}"] = e
    train_cpu = sum(float(p.read_text()) for p in run.glob("cpu_s-*"))
    row = {"arm": arm, "seed": seed, **run_figures(run, args), "train_cpu_s": train_cpu}
    row["eval_cpu_s"] = sum(e["cpu_s"] for e in evals.values())
    for key, e in evals.items():
        steps, budget = key.split("@")
        tag = "test" if int(budget) == args.eval_max_tokens else "train"
        suffix = "" if int(steps) == args.steps else f"@{steps}"
        row[f"pass1_{tag}{suffix}"] = e["pass1"]
        if tag == "test" and not suffix:
            row |= {"pass1_fits": e["pass1_fits"], "pass1_needs_more": e["pass1_needs_more"],
                    "at_test_budget": e["at_budget"]}  # fmt: skip
    save_row(args, rows, row)


def wait_for(value):
    """``value()`` once it is not None (another arm's run makes it); stops when a task failed."""
    while True:
        with _SAVE:
            got = value()
        if got is not None:
            return got
        if _FAILED.is_set():
            raise SystemExit("stopped: another arm failed")
        time.sleep(5)


def save_row(args, rows: list[dict], row: dict) -> None:
    with _SAVE:
        rows[:] = [r for r in rows if not (r["seed"] == row["seed"] and r["arm"] == row["arm"])] + [row]
        save(args, rows)
    print(f"seed {row['seed']} {row['arm']}: held-out pass@1 at the test budget {row['pass1_test']:.1f}%",
          file=sys.stderr, flush=True)  # fmt: skip


def budgets(args) -> list[int]:
    return [args.max_tokens, args.eval_max_tokens]


def run_figures(run: Path, args) -> dict:
    """Training figures from the run's metrics.jsonl and temperature.json."""
    steps = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines() if x.strip()]
    if not steps:
        return {}

    def mean(key: str, part=steps) -> float:
        values = [s[key] for s in part if key in s and s[key] is not None]
        return statistics.fmean(values) if values else math.nan

    samples = sum(s.get("samples", 0) for s in steps)
    tokens = sum(s.get("length/mean", 0) * s.get("samples", 0) for s in steps)
    record = json.loads((run / "temperature.json").read_text()) if (run / "temperature.json").exists() else {}
    probe = 0
    for stage in record.get("stages", []):
        probe += len(stage.get("table", [])) * record.get("probe_problems", 0) * args.n
    out = {
        "truncated": mean("truncated_rate"),
        "truncated_last10": mean("truncated_rate", steps[-10:]),
        "masked_share": sum(s.get("masked_count", 0) for s in steps) / max(samples, 1),
        "masked_token_share": sum(s.get("masked_tokens", 0) for s in steps) / max(tokens, 1),
        "dropped_share": sum(dropped(s) for s in steps) / max(samples, 1),
        "dropped_token_share": sum(s.get("dropped_tokens", 0) for s in steps) / max(tokens, 1),
        "cut_off_complete": sum(s.get("cut_off_complete", 0) for s in steps),
        "entropy": mean("entropy"),
        "entropy_last10": mean("entropy", steps[-10:]),
        "diversity": mean("diversity/lexical"),
        "length_last10": mean("length/mean", steps[-10:]),
        "train_pass_last10": mean("pass_rate", steps[-10:]),
        "temperature": record.get("temperature"),
        "samples_generated": samples + probe,
        "probe_samples": probe,
        "collapse_step": collapse_step(steps),
        "no_pass_step": no_pass_step(steps),
    }
    return out


def dropped(step: dict) -> int:
    """Samples left out of one step's loss: by the mask (mask_mode drop) or with their flat group
    (dynamic sampling)."""
    return step.get("dropped_count", 0) + step.get("samples", 0) - step.get("samples_kept", 0)


def first_run_of(steps: list[dict], hit) -> int | None:
    """The first step of COLLAPSE_STEPS consecutive steps for which ``hit(step)`` holds, or None."""
    run = 0
    for i, s in enumerate(steps):
        run = run + 1 if hit(s) else 0
        if run == COLLAPSE_STEPS:
            return steps[i - COLLAPSE_STEPS + 1].get("step", i - COLLAPSE_STEPS + 2)
    return None


def collapse_step(steps: list[dict]) -> int | None:
    """No-EOS collapse: the first step of COLLAPSE_STEPS consecutive steps with train truncation
    >= COLLAPSE_RATE, or None."""
    return first_run_of(steps, lambda s: s.get("truncated_rate", 0) >= COLLAPSE_RATE)


def no_pass_step(steps: list[dict]) -> int | None:
    """Outside the rule (added after the runs began): the first of COLLAPSE_STEPS consecutive steps
    in which no training sample passed, or None. A policy that breaks this way (its programs stop
    compiling) can keep ending its answers, so the no-EOS collapse misses it; and under dynamic
    sampling a step with no pass has no group left to learn from, so it does not recover."""
    return first_run_of(steps, lambda s: s.get("pass_rate", 1.0) == 0)


def fill_no_pass_steps(out: Path, rows: list[dict]) -> None:
    """``no_pass_step`` for rows written before it existed, from their run folder's metrics."""
    for r in rows:
        metrics = out / f"seed{r['seed']}" / f"run-{r['arm']}" / "metrics.jsonl"
        if "no_pass_step" not in r and metrics.exists():
            lines = metrics.read_text().splitlines()
            r["no_pass_step"] = no_pass_step([json.loads(x) for x in lines if x.strip()])


# ---------------------------------------------------------------- the analysis (pre-registered)


def by_seed(rows: list[dict], arms, key: str = "pass1_test") -> tuple[list[int], list[list[float]]]:
    """Seeds that have every arm of ``arms``, and each one's ``key`` per arm (in ``arms`` order)."""
    cell = {(r["seed"], r["arm"]): r.get(key) for r in rows}
    seeds = sorted({r["seed"] for r in rows if all(cell.get((r["seed"], a)) is not None for a in arms)})
    return seeds, [[cell[(s, a)] for a in arms] for s in seeds]


def mean_ci(diffs: list[float]) -> dict:
    """Mean, sd, a two-sided 95 % CI and the one-sided 95 % upper bound of paired differences."""
    from scipy import stats

    n = len(diffs)
    m = statistics.fmean(diffs) if diffs else math.nan
    if n < 2:
        return {"n": n, "mean": m, "sd": math.nan, "ci95": [math.nan, math.nan], "upper95": math.nan}
    sd = statistics.stdev(diffs)
    se = sd / math.sqrt(n)
    t2, t1 = stats.t.ppf(0.975, n - 1), stats.t.ppf(0.95, n - 1)
    return {"n": n, "mean": m, "sd": sd, "ci95": [m - t2 * se, m + t2 * se], "upper95": m + t1 * se}


def one_sided_tests(diffs: list[float]) -> dict:
    """diff > 0: one-sided paired t-test and Wilcoxon signed-rank test (p-values)."""
    from scipy import stats

    if len(diffs) < 2 or all(d == 0 for d in diffs):
        return {"t_p": math.nan, "wilcoxon_p": math.nan}
    t = stats.ttest_1samp(diffs, 0.0, alternative="greater")
    w = stats.wilcoxon(diffs, alternative="greater", zero_method="wilcox")
    return {"t_p": float(t.pvalue), "wilcoxon_p": float(w.pvalue)}


def page(data: list[list[float]]) -> float:
    """Page's L trend test p-value for columns increasing left to right (one-sided)."""
    from scipy import stats

    if len(data) < 2:
        return math.nan
    return float(stats.page_trend_test(data, predicted_ranks=list(range(1, len(data[0]) + 1))).pvalue)


def mcnemar(rows: list[dict], a: str, b: str) -> dict:
    """Collapse incidence of arms ``a`` and ``b`` paired by seed: exact McNemar (two-sided binomial
    test on the discordant seeds)."""
    from scipy import stats

    seeds = sorted({r["seed"] for r in rows if r["arm"] == a} & {r["seed"] for r in rows if r["arm"] == b})
    col = {(r["seed"], r["arm"]): r.get("collapse_step") is not None for r in rows}
    only_a = sum(col[(s, a)] and not col[(s, b)] for s in seeds)
    only_b = sum(col[(s, b)] and not col[(s, a)] for s in seeds)
    p = float(stats.binomtest(only_a, only_a + only_b).pvalue) if only_a + only_b else 1.0
    return {"seeds": len(seeds), a: sum(col[(s, a)] for s in seeds), b: sum(col[(s, b)] for s in seeds),
            f"only_{a}": only_a, f"only_{b}": only_b, "p": p}  # fmt: skip


def analyze(rows: list[dict], interim: bool = False) -> dict:
    """The pre-registered rule on the primary endpoint (held-out pass@1 at the test budget, the
    last checkpoint) over the seeds that have all three presets. ``interim``: the look at 12 seeds
    (stop early only at p < 0.005, or for "does not hold" with a negative mean)."""
    seeds, data = by_seed(rows, PRESETS)
    out: dict = {"seeds": seeds, "n": len(seeds)}
    if len(seeds) < 2:
        return {**out, "verdict": "too few seeds"}
    grpo, dapo, mc = ([row[i] for row in data] for i in range(3))
    mc_dapo = [m - d for m, d in zip(mc, dapo, strict=True)]
    mc_grpo = [m - g for m, g in zip(mc, grpo, strict=True)]
    dapo_grpo = [d - g for d, g in zip(dapo, grpo, strict=True)]
    out["page_p"] = page(data)
    out["page_reverse_p"] = page([list(reversed(r)) for r in data])
    out["mc_minus_dapo"] = {**mean_ci(mc_dapo), **one_sided_tests(mc_dapo)}
    out["mc_minus_grpo"] = {**mean_ci(mc_grpo), **one_sided_tests(mc_grpo)}
    out["dapo_minus_grpo"] = mean_ci(dapo_grpo)
    alpha = 0.005 if interim else 0.05
    step1 = out["page_p"] < alpha
    md = out["mc_minus_dapo"]
    step2 = step1 and md["t_p"] < alpha and md["wilcoxon_p"] < (alpha if interim else 0.10)
    out["step1_page"], out["step2_mc_over_dapo"] = step1, step2
    reproduced = step2 and md["mean"] >= 2.0 and out["dapo_minus_grpo"]["mean"] > 0
    does_not_hold = (
        md["upper95"] < PAPER_OVER_DAPO and out["mc_minus_grpo"]["upper95"] < PAPER_OVER_GRPO
    ) or out["page_reverse_p"] < 0.05
    if interim:  # stop for "does not hold" only with a negative mean
        does_not_hold = does_not_hold and md["mean"] < 0
        reproduced = step2  # stop for success: both tests at 0.005
    out["verdict"] = (
        "reproduced" if reproduced else "does not hold at the paper's magnitude" if does_not_hold
        else "inconclusive at N" if not interim else "continue"
    )  # fmt: skip
    out["ablations"] = ablations(rows)
    out["collapse"] = {"mc_vs_no_mask": mcnemar(rows, "mc", "mc-no-mask"), "mc_vs_dapo": mcnemar(rows, "mc", "dapo")}
    out["exploratory"] = exploratory(rows)
    return out


def exploratory(rows: list[dict]) -> dict:
    """Outside the rule: mc - ARM paired over the seeds that have both, for each exploratory arm
    with rows (a positive mean: putting that value back to GRPO's costs MicroCoder-GRPO points)."""
    out = {}
    for arm in EXPLORATORY:
        _, data = by_seed(rows, ("mc", arm))
        if data:
            out[arm] = mean_ci([a - b for a, b in data])
    return out


def ablations(rows: list[dict]) -> dict:
    """MicroCoder-GRPO's mechanisms, each a paired contrast with its CI: masking (mc - mc-no-mask),
    temperature (mc - mc-T1) and their interaction ((mc - mc-no-mask) - (mc-T1 - mc-no-mask-T1)).
    A fixed-T arm that equals its parent (the probe chose 1.0) counts as difference 0."""
    out = {}
    _, data = by_seed(rows, ("mc", "mc-no-mask"))
    out["masking"] = mean_ci([a - b for a, b in data])
    _, data = by_seed(rows, ("mc", "mc-T1"))
    out["temperature"] = {**mean_ci([a - b for a, b in data]),
                          "seeds_probe_not_1": sum(a != b for a, b in data)}  # fmt: skip
    _, data = by_seed(rows, ("mc", "mc-no-mask", "mc-T1", "mc-no-mask-T1"))
    out["interaction"] = mean_ci([(a - b) - (c - d) for a, b, c, d in data])
    return out


# ---------------------------------------------------------------- results


COLUMNS = [  # (key, label, format)
    ("pass1_test", "pass@1 % (test budget)", "{:.1f}"),
    ("pass1_train", "pass@1 % (train budget)", "{:.1f}"),
    ("pass1_fits", "fits %", "{:.1f}"),
    ("pass1_needs_more", "needs more %", "{:.1f}"),
    ("at_test_budget", "at test budget", "{:.1%}"),
    ("truncated", "train cut off", "{:.1%}"),
    ("masked_share", "masked", "{:.1%}"),
    ("dropped_share", "dropped", "{:.1%}"),
    ("entropy", "entropy", "{:.3f}"),
    ("diversity", "diversity", "{:.3f}"),
    ("temperature", "T", "{}"),
    ("collapse_step", "collapse step", "{}"),
    ("no_pass_step", "no-pass step", "{}"),
    ("samples_generated", "samples", "{}"),
    ("train_cpu_s", "train CPU s", "{:.0f}"),
]


def cell(spec: str, value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return spec.format(value).replace("%", " %") if "%" in spec else spec.format(value)


def markdown(args, rows: list[dict], result: dict) -> str:
    order = {a: i for i, a in enumerate(ALL_ARMS)}
    rows = sorted(rows, key=lambda r: (r["seed"], order.get(r["arm"], 99)))
    md = ["| seed | arm | " + " | ".join(label for _, label, _ in COLUMNS) + " |", "|---" * (len(COLUMNS) + 2) + "|"]
    for r in rows:
        same = f" (= {r['same_as']})" if r.get("same_as") else ""
        md.append(f"| {r['seed']} | {r['arm']}{same} | " + " | ".join(cell(s, r.get(k)) for k, _, s in COLUMNS) + " |")
    md += ["", "Checkpoints (held-out pass@1 % at the test budget):", "",
           "| seed | arm | " + " | ".join(f"step {s}" for s in [*args.checkpoints, args.steps]) + " |",
           "|---" * (len(args.checkpoints) + 3) + "|"]  # fmt: skip
    for r in rows:
        steps = [r.get(f"pass1_test@{s}") for s in args.checkpoints] + [r.get("pass1_test")]
        md.append(f"| {r['seed']} | {r['arm']} | " + " | ".join(cell("{:.1f}", v) for v in steps) + " |")
    md += ["", *verdict_lines(result)]
    return "\n".join(md) + "\n"


def verdict_lines(result: dict) -> list[str]:
    if "mc_minus_dapo" not in result:
        return [f"verdict: {result.get('verdict')} ({result.get('n', 0)} seeds)"]

    def d(name: str, x: dict) -> str:
        ci = x["ci95"]
        tests = f", t p {x['t_p']:.4f}, Wilcoxon p {x['wilcoxon_p']:.4f}" if "t_p" in x else ""
        return (f"- {name}: mean {x['mean']:+.2f} points, sd {x['sd']:.2f}, 95 % CI [{ci[0]:+.2f}, {ci[1]:+.2f}], "
                f"one-sided 95 % upper bound {x['upper95']:+.2f}{tests} (n {x['n']})")  # fmt: skip

    lines = [
        f"**verdict: {result['verdict']}** over {result['n']} seeds (primary endpoint: held-out pass@1 at the test budget)",
        f"- Page's L, grpo < dapo < mc: p {result['page_p']:.4f}; the reverse order: p {result['page_reverse_p']:.4f}",
        d("MC - DAPO", result["mc_minus_dapo"]),
        d("MC - GRPO", result["mc_minus_grpo"]),
        d("DAPO - GRPO", result["dapo_minus_grpo"]),
    ]
    for name, x in result.get("ablations", {}).items():
        if x["n"]:
            lines.append(d(f"ablation {name}", x))
    for name, x in result.get("collapse", {}).items():
        lines.append(f"- collapse {name}: " + ", ".join(f"{k} {v}" for k, v in x.items()))
    for arm, x in result.get("exploratory", {}).items():
        lines.append(d(f"exploratory, not in the rule: MC - {arm}", x))
    return lines


def paired_figure(rows: list[dict], path: Path) -> None:
    """One line per seed across grpo, dapo, mc (held-out pass@1 at the test budget)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    seeds, data = by_seed(rows, PRESETS)
    if not seeds:
        return
    fig, ax = plt.subplots(figsize=(5, 4))
    for s, ys in zip(seeds, data, strict=True):
        ax.plot(range(3), ys, marker="o", alpha=0.5, label=f"seed {s}" if len(seeds) <= 12 else None)
    ax.plot(range(3), [statistics.fmean(c) for c in zip(*data, strict=True)], color="black", lw=3, label="mean")
    ax.set_xticks(range(3), ["GRPO", "DAPO", "MicroCoder-GRPO"])
    ax.set_ylabel("held-out pass@1 % at the test budget")
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def results(args) -> common.Results:
    return common.Results(args.out, "ordering", RUN_ONLY)


def save(args, rows: list[dict]) -> None:
    result = analyze(rows)
    interim = analyze([r for r in rows if r["seed"] in sorted({x["seed"] for x in rows})[:12]], interim=True)
    results(args).save(common.config_dict(args), rows, markdown(args, rows, result), analysis=result,
                       interim=interim)  # fmt: skip


# ---------------------------------------------------------------- stage 1: the train budget


def pick_budget(args) -> int:
    """At each candidate train budget: the train problems sampled from each seed's warm start,
    judged, and what masking would have to act on."""
    from mcoder.train.masking import cut_off, program_state

    table = []
    for seed in args.seeds:
        root = args.out / f"seed{seed}"
        warm = common.warm_start(args, root / "warm", seed, root / "log.txt")
        for L in args.pick_budget:
            where = root / f"budget-L{L}"
            if not (where / "verdicts.jsonl").exists():  # judge writes it whole, at its end
                where.mkdir(parents=True, exist_ok=True)
                common.run_stage(common.mcoder(
                    "rollout", "-p", args.train, "-m", warm, "-o", where / "rollouts.jsonl", "--n", args.n,
                    "--max-tokens", L, "-t", "1.0", "--seed", seed, "--overwrite", "-q"), root / "log.txt")  # fmt: skip
                common.run_stage(common.mcoder(
                    "judge", "-p", args.train, "-r", where / "rollouts.jsonl", "-o", where / "verdicts.jsonl",
                    "--overwrite", "-q"), root / "log.txt")  # fmt: skip
            rollouts = [json.loads(x) for x in (where / "rollouts.jsonl").read_text().splitlines()]
            verdicts = {json.loads(x)["rollout_id"]: json.loads(x) for x in (where / "verdicts.jsonl").read_text().splitlines()}
            kinds: Counter = Counter()
            groups: dict[str, list[tuple[bool, bool, bool]]] = {}
            for r in rollouts:
                v = verdicts[r["id"]]
                truncated = r["finish_reason"] == "length"
                prog = program_state(r["completion"]) if truncated else None
                cut = truncated and cut_off(r["completion"], "length")
                if truncated:
                    kinds[(prog, v["status"])] += 1
                eligible_now = truncated and (v["status"] == "accepted" or cut)  # accepted_or_cut_off
                eligible_new = truncated and (v["status"] == "accepted" or (cut and prog != "complete"))
                finished_pass = v["passed"] and not truncated
                groups.setdefault(r["problem_id"], []).append((finished_pass, eligible_now, eligible_new))
            truncated_n = sum(kinds.values())
            row = {
                "seed": seed, "budget": L, "samples": len(rollouts), "truncated": truncated_n / len(rollouts),
                "finished_pass": sum(g[0] for gs in groups.values() for g in gs) / len(rollouts),
                "cut_off_complete": sum(n for (p, _), n in kinds.items() if p == "complete") / max(truncated_n, 1),
                "cut_off_complete_failed": sum(n for (p, s), n in kinds.items() if p == "complete" and s != "accepted")
                / max(truncated_n, 1),
                "groups_pass_and_eligible_cut_off_text": sum(any(g[0] for g in gs) and any(g[1] for g in gs)
                                                            for gs in groups.values()) / len(groups),
                "groups_pass_and_eligible_cut_off_program": sum(any(g[0] for g in gs) and any(g[2] for g in gs)
                                                               for gs in groups.values()) / len(groups),
                "kinds": {f"{p}/{s}": n for (p, s), n in sorted(kinds.items(), key=lambda kv: -kv[1])},
            }  # fmt: skip
            table.append(row)
            print(json.dumps(row), flush=True)
    common.write_json(args.out / "budget.json", table, benchmark="ordering")
    best = max(args.pick_budget, key=lambda L: statistics.fmean(
        r["groups_pass_and_eligible_cut_off_program"] for r in table if r["budget"] == L))  # fmt: skip
    for L in args.pick_budget:
        mine = [r for r in table if r["budget"] == L]
        print(
            f"L {L}: cut off {statistics.fmean(r['truncated'] for r in mine):.1%}, finished passes "
            f"{statistics.fmean(r['finished_pass'] for r in mine):.1%}; of the cut-off outputs "
            f"{statistics.fmean(r['cut_off_complete'] for r in mine):.1%} held a complete program "
            f"({statistics.fmean(r['cut_off_complete_failed'] for r in mine):.1%} complete and failed); groups with a "
            f"finished pass and an eligible cut-off sample: {statistics.fmean(r['groups_pass_and_eligible_cut_off_program'] for r in mine):.1%} "
            f"(program reading), {statistics.fmean(r['groups_pass_and_eligible_cut_off_text'] for r in mine):.1%} (text reading)"
        )  # fmt: skip
    print(f"train budget by the rule (most groups masking can act on, program reading): {best}")
    return best


# ---------------------------------------------------------------- the command


SMOKE = {"sft_steps": 2, "steps": 2, "n": 2, "batch": 2, "mini_batch": 2, "eval_n": 1, "warm_target": 0.0,
         "max_tokens": 16, "eval_max_tokens": 24, "checkpoints": [1]}  # fmt: skip
# Settings that choose what to run, not how: a rerun may change them and keep earlier rows.
RUN_ONLY = {"seeds", "arms", "jobs", "out", "analyze", "pick_budget"}


def seed_list(text: str) -> list[int]:
    """``0,2,5-8`` -> [0, 2, 5, 6, 7, 8]."""
    out: list[int] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b) + 1)) if b else [int(a)]
    return out


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = common.measurement_parser(
        __doc__, out=Path("order-run"), train=LEARN / "train.jsonl", heldout=LEARN / "heldout.jsonl",
        warm_target=0.35, steps=150, max_tokens=27, eval_max_tokens=64, eval_n=16, seeds="0-11",
    )  # fmt: skip
    p.add_argument("--arms", default=",".join(ARMS),
                   help=f"comma-separated, of {', '.join(ARMS)} (the rule's, the default) and the exploratory "
                        f"{', '.join(EXPLORATORY)}")  # fmt: skip
    p.add_argument("--checkpoints", default="50,100", help="steps whose checkpoint is evaluated too")
    p.add_argument("--final-only", action="store_true",
                   help="evaluate only the last checkpoint, at the test budget (the ablations' endpoint), and "
                        "not the warm start; the runs are the same, with their checkpoints at --checkpoints")  # fmt: skip
    p.add_argument("--truncated-reward", default="zero", choices=("zero", "verdict"),
                   help="what a cut-off training answer scores, in every arm")  # fmt: skip
    p.add_argument("--pick-budget", help="stage 1: candidate train budgets (e.g. 27,28); runs no RL")
    p.add_argument("--analyze", action="store_true", help="apply the rule to the rows in --out; runs nothing")
    args = p.parse_args(argv)
    args.seeds = seed_list(args.seeds)
    args.arms = args.arms.split(",")
    unknown = [a for a in args.arms if a not in ALL_ARMS]
    if unknown:
        p.error(f"unknown arm(s) {', '.join(unknown)}: use {', '.join(ALL_ARMS)}")
    args.checkpoints = [int(x) for x in args.checkpoints.split(",") if x.strip()]
    args.pick_budget = [int(x) for x in args.pick_budget.split(",")] if args.pick_budget else None
    args = common.smoke_sizes(args, SMOKE)
    if any(c >= args.steps for c in args.checkpoints):
        p.error(f"--checkpoints must be below --steps {args.steps}")
    if args.eval_max_tokens <= args.max_tokens:
        p.error("--eval-max-tokens (the test budget) must be above --max-tokens (the train budget)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    return common.one_writer(args.out, lambda: measure(args), "ordering")


def measure(args) -> int:
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # one torch thread a process (see learning_proof)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.pick_budget:
        pick_budget(args)
        return 0
    rows = results(args).load(common.config_dict(args))
    fill_no_pass_steps(args.out, rows)
    if not args.analyze:
        t0 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            for f in [pool.submit(warm_and_before, seed, args) for seed in args.seeds]:
                f.result()
            todo = [(s, a) for s in args.seeds for a in args.arms
                    if not any(r["seed"] == s and r["arm"] == a for r in rows)]  # fmt: skip
            for f in [pool.submit(one_arm, s, a, args, rows) for s, a in todo]:
                f.result()
        print(f"{(time.perf_counter() - t0) / 60:.1f} minutes", file=sys.stderr)
    save(args, rows)
    paired_figure(rows, args.out / "paired.png")
    print((args.out / "results.md").read_text())
    return 0


def warm_and_before(seed: int, args) -> None:
    """The seed's warm start and its held-out evaluation at both budgets (kept for a rerun)."""
    root = args.out / f"seed{seed}"
    warm = common.warm_start(args, root / "warm", seed, root / "log.txt")
    for budget in [] if args.final_only else budgets(args):
        evaluation(warm, root / f"eval-warm-L{budget}", args, seed, budget, root / "log.txt")


if __name__ == "__main__":
    sys.exit(main())
