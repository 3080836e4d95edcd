"""Does `make demo` learn wherever it runs? The demo over several seeds, and from one warm start
under the kind of difference another machine makes.

    python benchmarks/demo_robustness.py --out robust-run                  # 5 seeds + 5 perturbed
    python benchmarks/demo_robustness.py --out robust-run --seeds 0 --weight-noise 1 --rl-seeds 1
    python benchmarks/demo_robustness.py --out robust-run --smoke          # plumbing, seconds

Runs `commands/demo.sh` (the demo as `make demo` runs it), one run at a time:
  - ``seed S``: the whole demo with --seed S (its own warm start, RL run and evaluation samples);
  - ``noise K``: the first seed's warm start with every weight multiplied by (1 + e), e drawn from
    N(0, --noise-scale^2) with seed K (1e-6 by default: about ten float32 roundings, the size of
    the difference another CPU's kernels make), then the demo from it (`--warm`);
  - ``rl-seed R``: the first seed's warm start, unchanged, RL sampling with seed R (`--rl-seed`):
    another sampling path from the same start.
Each run prints held-out pass@1 before and after RL, the change, and its wall and CPU seconds as
soon as it ends; at the end a table of all runs and the least, median and mean change. The CPU
seconds (the demo and every process it waited for) stand for a quiet machine's wall time: the demo
runs one torch thread, so on a busy machine its wall time grows and its CPU time does not. Two
invocations with other --out folders and disjoint runs (e.g. `--seeds 0` beside `--seeds 1,2,3,4
--weight-noise 0 --rl-seeds ''`) use both cores of a 2-core machine. OUT/results.json keeps them all, and
a rerun skips the runs already recorded there. Held-out pass@1 is the demo's own figure: all 100
held-out problems x 8 samples at T = 1.0, the same samples' seed before and after.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

if __package__:  # python -m benchmarks.demo_robustness, or imported
    from benchmarks import common
else:  # python benchmarks/demo_robustness.py: this folder is first on sys.path
    import common

ROOT = Path(__file__).resolve().parents[1]


def pass_at_1(verdicts: Path) -> float:
    """Mean over problems of the share of passing samples, in points."""
    per: dict[str, list[bool]] = {}
    for line in verdicts.read_text().splitlines():
        v = json.loads(line)
        per.setdefault(v["problem_id"], []).append(bool(v["passed"]))
    return 100 * statistics.fmean(sum(p) / len(p) for p in per.values())


def perturb(src: Path, dst: Path, scale: float, seed: int) -> None:
    """A copy of the model folder ``src`` at ``dst`` whose float weights are each multiplied by
    (1 + e), e ~ N(0, scale^2), drawn with ``seed``."""
    import shutil

    import torch
    from safetensors.torch import load_file, save_file

    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    gen = torch.Generator().manual_seed(seed)
    for f in dst.glob("*.safetensors"):
        weights = load_file(f)
        for k, w in weights.items():
            if w.is_floating_point():
                noise = torch.randn(w.shape, generator=gen, dtype=torch.float64) * scale
                weights[k] = (w.double() * (1 + noise)).to(w.dtype).contiguous()
        save_file(weights, f, metadata={"format": "pt"})


def demo(out: Path, args: list[str], log: Path) -> tuple[float, float]:
    """One `commands/demo.sh` run into ``out``; its wall seconds and CPU seconds (user + system, of
    the demo and every process it waited for). The demo runs one torch thread, so on a quiet
    machine its wall time is about its CPU time; on a busy one the CPU time still says what a
    quiet machine would take."""
    env = {**os.environ, "PY": sys.executable}
    env.setdefault("MCODER", str(Path(sys.executable).with_name("mcoder")))
    cmd = ["bash", str(ROOT / "commands" / "demo.sh"), "--out", str(out), *args]
    print("  $ " + " ".join(cmd), file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    with open(log, "w") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(proc.pid, 0)  # the child's own rusage, not the whole benchmark's
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"demo failed ({proc.returncode}); see {log}")
    return time.perf_counter() - t0, usage.ru_utime + usage.ru_stime


def plan(a) -> list[tuple[str, list[str], dict]]:
    """(name, demo arguments, how to prepare the warm start) for each run."""
    base = list(a.demo_args)
    if a.smoke:
        base.append("--smoke")
    first = a.seeds[0]
    seeds = [(f"seed {s}", ["--seed", str(s), *base], {}) for s in a.seeds]
    noise = [(f"seed {first}, noise {k}", ["--seed", str(first), *base], {"noise": k})
             for k in range(1, a.weight_noise + 1)]  # fmt: skip
    rl = [(f"seed {first}, rl-seed {r}", ["--seed", str(first), "--rl-seed", str(r), *base], {"warm": True})
          for r in a.rl_seeds]  # fmt: skip
    # the first seed (whose warm start the others reuse), then the perturbed runs (they skip the
    # warm start, the costliest part on a busy machine), the two kinds in turn, then the seeds
    perturbed = [x for pair in itertools.zip_longest(noise, rl) for x in pair if x]
    return [seeds[0], *perturbed, *seeds[1:]]


def run_all(a) -> list[dict]:
    a.out.mkdir(parents=True, exist_ok=True)
    results_path = a.out / "results.json"
    results = json.loads(results_path.read_text()) if results_path.exists() else []
    done = {r["run"] for r in results}
    first_warm = a.out / f"seed{a.seeds[0]}" / "model"
    for name, args, prep in plan(a):
        if name in done:
            continue
        folder = a.out / name.replace(", ", "-").replace(" ", "")
        if prep:
            if not (first_warm / "config.json").exists():
                raise SystemExit(
                    f"{name}: needs the warm start of seed {a.seeds[0]} ({first_warm}); run it first"
                )
            warm = first_warm
            if "noise" in prep:
                warm = a.out / f"warm-noise{prep['noise']}"
                perturb(first_warm, warm, a.noise_scale, prep["noise"])
            args = [*args, "--warm", str(warm)]
        seconds, cpu = demo(folder, args, a.out / f"{folder.name}.log")
        before = pass_at_1(folder / "before" / "verdicts.jsonl")
        after = pass_at_1(folder / "after" / "verdicts.jsonl")
        row = {
            "run": name,
            "before": before,
            "after": after,
            "change": after - before,
            "seconds": seconds,
            "cpu_seconds": cpu,
        }
        results.append(row)
        results_path.write_text(json.dumps(results, indent=2))
        print(
            f"{name:<24} {before:6.1f}% -> {after:6.1f}%  {after - before:+6.1f}  ({seconds:.0f} s, CPU {cpu:.0f} s)",
            flush=True,
        )
    return results


def report(results: list[dict]) -> None:
    print(f"\n{'run':<24} {'before':>8} {'after':>8} {'change':>8} {'seconds':>8} {'CPU s':>8}")
    for r in results:
        cpu = f"{r['cpu_seconds']:>8.0f}" if "cpu_seconds" in r else f"{'':>8}"
        print(
            f"{r['run']:<24} {r['before']:>7.1f}% {r['after']:>7.1f}% {r['change']:>+8.1f} {r['seconds']:>8.0f} {cpu}"
        )
    changes = [r["change"] for r in results]
    if changes:
        print(
            f"{len(changes)} runs: change least {min(changes):+.1f}, median {statistics.median(changes):+.1f}, "
            f"mean {statistics.fmean(changes):+.1f}, most {max(changes):+.1f} points; "
            f"{sum(c >= 10 for c in changes)} of {len(changes)} at +10 or more"
        )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="folder of the runs and results.json")
    p.add_argument("--seeds", default="0,1,2,3,4", help="demo seeds; the first one's warm start is perturbed")
    p.add_argument(
        "--weight-noise", type=int, default=3, help="runs from the first warm start, weights perturbed"
    )
    p.add_argument("--noise-scale", type=float, default=1e-6, help="relative size of the weight perturbation")
    p.add_argument(
        "--rl-seeds", default="101,102", help="RL sampling seeds from the first warm start ('' none)"
    )
    p.add_argument("--smoke", action="store_true", help="the demo's --smoke sizes (plumbing only)")
    p.add_argument("demo_args", nargs="*", help="more arguments for commands/demo.sh (after --)")
    a = p.parse_args(argv)
    a.seeds = [int(s) for s in a.seeds.split(",") if s]
    a.rl_seeds = [int(s) for s in a.rl_seeds.split(",") if s]
    # its folder claimed and locked (OUT.lock): it replaces run folders under --out
    return common.one_writer(a.out, lambda: report(run_all(a)) or 0, "demo_robustness")


if __name__ == "__main__":
    raise SystemExit(main())
