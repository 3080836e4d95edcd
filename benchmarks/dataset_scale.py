"""`mcoder dataset build` at scale: wall time and peak memory with dedup, decontamination and the
difficulty band, at several sizes, to see what grows faster than the number of problems.

Inputs are the real problem sets of ../shared/data (about 800 problems: Codeforces, CodeContests,
LeetCode), repeated with variations up to N rows: each copy of a real problem has about 30% of
its statement's words changed (so copies are distinct problems to the 0.8 near-duplicate
threshold and share almost no 13-gram with the original) and a copy-specific line in each test
input (so test sets differ; a LeetCode copy gets one more call test, tagged with the copy number,
which no solution passes: nothing is verified here). Planted among them, as a real crawl would have: 3% exact copies of
another row (removed as duplicate_statement), 3% light rewordings (2% of words; near_duplicate),
and 1% light rewordings of benchmark problems (decontaminate). The benchmark file for
``--decontaminate`` is the real sets as they are (mcoder problems, converted once).

The difficulty stage reads pass rates from verdict files (``--difficulty-from``, band 0.1-0.9):
the verdicts are generated, 8 per problem, passed with a per-problem probability drawn from a
seeded uniform distribution; no model runs. Each size runs in a fresh process
(``python -m mcoder dataset build ... --report``); peak RSS is that process's ``ru_maxrss``, the
stage seconds come from the report.

Usage: ``python benchmarks/dataset_scale.py [--sizes 2000,5000,20000] [--data DIR] [--keep DIR]
[--no-stages]``. Each size also runs the same build without ``--dedup``, for the peak memory that
dedup adds.

Measured on a 2-core machine shared with other work (wall time is mostly waiting; CPU time is the
figure to compare) with ``--sizes 20000 --no-stages``: 20,000 rows -> 14,291 problems (320 rows
set aside, 1,096 duplicates, 155 contaminated, 4,138 outside the pass-rate band):

    problems   CPU s  peak RSS MiB  without --dedup: CPU s  peak RSS MiB   ratio
       20000    30.7           295                    21.1           214    1.38

Dedup keeps per problem its digests and a 512-byte MinHash signature (``filter/dedup.py`` Keys),
the problems themselves in a temporary file, and finds candidate pairs by sorting band hashes.
Before, it held every problem with its tests (and imported datasketch with scipy, 65 MB alone):
401 MiB at 20,000 in an earlier run of this script (whose figures by size and stage were, at 2,000
/ 5,000 / 20,000 problems, 9.0 / 17.0 / 58.5 CPU s and 161 / 201 / 401 MiB), and 369 MiB against
215 without dedup (1.72, the same command) before the signatures moved to numpy.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__:  # python -m benchmarks.dataset_scale, or imported
    from benchmarks import common
else:  # python benchmarks/dataset_scale.py: this folder is first on sys.path
    import common

DATA = common.shared_data()
SEED = 0
SAMPLES = 8  # verdicts per problem
CHANGE, LIGHT = 0.30, 0.02  # share of statement words changed: a distinct copy, a near-duplicate
EXACT_SHARE, NEAR_SHARE, BENCH_SHARE = 0.03, 0.03, 0.01


def real_rows(data: Path) -> dict[str, list[dict]]:
    """The real rows by shape: rLLM Codeforces, CodeContests and LeetCode."""
    return {
        "cf": json.loads((data / "rllm_codeforces.json").read_text()),
        "cc": json.loads((data / "rllm_code_contests.json").read_text()),
        "lc": json.loads((data / "rllm_leetcode_test.json").read_text()),
    }


def vary_text(text: str, share: float, rng: random.Random, tag: str) -> str:
    """``text`` with about ``share`` of its words changed (a suffix: the word stays readable)."""
    words = text.split(" ")
    return " ".join(w + tag if w and rng.random() < share else w for w in words)


def vary_row(shape: str, row: dict, copy: int, share: float, rng: random.Random) -> dict:
    tag = f"q{copy % 97}"
    statement, starter = row["problem"], ""
    if shape == "lc":  # the starter code after this line stays as it is
        cut = statement.find("Please complete the following python code")
        statement, starter = statement[:cut], statement[cut:]
    out = dict(row, problem=vary_text(statement, share, rng, tag) + starter)
    if shape == "cf":
        out["tests"] = [{"input": t["input"] + f"\n{copy}", "output": t["output"]} for t in row["tests"]]
    elif shape == "cc":
        tests = row["tests"]
        out["tests"] = {"inputs": [i + f"\n{copy}" for i in tests["inputs"]], "outputs": tests["outputs"]}
    elif shape == "lc":  # one more call test, tagged with the copy (no solution passes it; not verified here)
        check = row["tests"]["functional"]
        m = _FIRST_ASSERT.search(check)
        if m:
            head, _, tail = check.rpartition("\n\n")
            check = f"{head}\n    assert candidate({m.group(1)}) == 'copy {copy}'\n\n{tail}"
        out["tests"] = {"functional": check}
    return out


_FIRST_ASSERT = re.compile(r"assert candidate\((.*)\) == ")


def write_sources(data: Path, n: int, folder: Path) -> tuple[list[Path], list[str]]:
    """About ``n`` source rows in three files (by shape), and the problem ids the build will give them."""
    rng = random.Random(SEED)
    real = real_rows(data)
    shapes = [(shape, row) for shape, rows in real.items() for row in rows]
    files = {shape: (folder / f"{shape}.jsonl").open("w") for shape in real}
    counts = dict.fromkeys(real, 0)
    written: list[tuple[str, dict]] = []
    ids = []
    for i in range(n):
        roll = rng.random()
        if written and roll < EXACT_SHARE:
            shape, row = rng.choice(written)  # the same row again: an exact duplicate statement
        elif written and roll < EXACT_SHARE + NEAR_SHARE:
            shape, base = rng.choice(written)
            row = vary_row(shape, base, i, LIGHT, rng)
        elif roll < EXACT_SHARE + NEAR_SHARE + BENCH_SHARE:
            shape, base = rng.choice(shapes)  # a benchmark problem, lightly reworded
            row = vary_row(shape, base, i, LIGHT, rng)
        else:
            shape, base = shapes[i % len(shapes)]
            row = vary_row(shape, base, i, CHANGE, rng)
        files[shape].write(json.dumps(row) + "\n")
        written.append((shape, row))
        ids.append(f"{shape}/{counts[shape]}")
        counts[shape] += 1
    for f in files.values():
        f.close()
    return [folder / f"{shape}.jsonl" for shape in real], ids


def write_bench(data: Path, folder: Path) -> Path:
    """The real sets as they are, converted to mcoder problems (the decontamination benchmark)."""
    bench = folder / "bench.jsonl"
    srcs = [
        str(data / f) for f in ("rllm_codeforces.json", "rllm_code_contests.json", "rllm_leetcode_test.json")
    ]
    run([*srcs, "--out", str(bench), "--quiet"])
    return bench


def write_verdicts(ids: list[str], folder: Path) -> Path:
    """``SAMPLES`` generated verdicts per problem, passed with a seeded per-problem rate."""
    rng = random.Random(SEED + 1)
    path = folder / "verdicts.jsonl"
    with path.open("w") as f:
        for pid in ids:
            rate = rng.random()
            for s in range(SAMPLES):
                passed = rng.random() < rate
                record = {
                    "rollout_id": f"{pid}#{s}",
                    "problem_id": pid,
                    "reward": float(passed),
                    "passed": passed,
                    "status": "accepted" if passed else "wrong_answer",
                    "tests_passed": 1 if passed else 0,
                    "tests_total": 1,
                    "schema": 1,
                }
                f.write(json.dumps(record) + "\n")
    return path


def run(args: list[str]) -> tuple[float, float, float]:
    """``mcoder dataset build ARGS`` in a fresh process: (wall seconds, CPU seconds, peak RSS MiB).
    CPU time (user + system) hardly depends on what else the machine runs; wall time does."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcoder", "dataset", "build", *args], stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"dataset build failed:\n{stderr}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def measure(data: Path, n: int, folder: Path, stages: bool = True) -> dict:
    sources, ids = write_sources(data, n, folder)
    bench = folder / "bench.jsonl"
    if not bench.exists():
        write_bench(data, folder)
    verdicts = write_verdicts(ids, folder)
    out, report = folder / f"problems-{n}.jsonl", folder / f"report-{n}.md"
    flags = ["--dedup", "--decontaminate", str(bench), "--difficulty-from", str(verdicts)]
    flags += ["--keep-pass-rate", "0.1,0.9", "--report", str(report), "--overwrite", "--quiet"]
    wall, cpu, rss = run([*(str(s) for s in sources), "--out", str(out), *flags])
    rep = json.loads(report.with_suffix(".json").read_text())
    # The same build without --dedup: what dedup adds to the peak memory.
    plain = [f for f in flags if f != "--dedup"]
    _, cpu_plain, rss_plain = run([*(str(s) for s in sources), "--out", str(folder / f"plain-{n}.jsonl"), *plain])
    cpu_by_stage = {}
    if stages:
        stage_args = [str(x) for x in (bench, verdicts, *sources)]
        cpu_by_stage = json.loads(
            subprocess.run(
                [sys.executable, __file__, "--stage-cpu", *stage_args], check=True, capture_output=True, text=True
            ).stdout
        )
    return {
        "n": n,
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "peak_rss_mib": round(rss),
        "cpu_s_no_dedup": round(cpu_plain, 1),
        "peak_rss_mib_no_dedup": round(rss_plain),
        "out": rep["problems_out"],
        "removed": {s["name"]: s["removed"] for s in rep["stages"]},
        "stage_cpu_s": cpu_by_stage,
    }


def stage_cpu(bench: str, verdicts: str, sources: list[str]) -> dict[str, float]:
    """CPU seconds of each stage, run as the build runs them, in this (fresh) process."""
    from mcoder.console import set_quiet
    from mcoder.dataset.collect.step import collect, find_sources
    from mcoder.dataset.filter.steps import FilterConfig, filter_steps
    from mcoder.dataset.process.step import process
    from mcoder.dataset.report import Removal
    from mcoder.dataset.tally import Tally

    set_quiet(True)
    clock = time.process_time
    out: dict[str, float] = {}
    start = clock()
    problems = [
        p
        for _, p in process(collect(find_sources(sources, Tally()), "auto", Tally()))
        if not isinstance(p, Removal)
    ]
    out["convert"] = clock() - start
    start = clock()
    cfg = FilterConfig(
        dedup=True, decontaminate=[Path(bench)], difficulty_from=[Path(verdicts)], keep_pass_rate=(0.1, 0.9)
    )
    steps = filter_steps(cfg)
    out["read benchmark + verdicts"] = clock() - start
    for step in steps:
        start = clock()
        problems, result = step(problems)
        out[result.name] = clock() - start
    return {k: round(v, 2) for k, v in out.items()}


def main() -> None:
    if sys.argv[1:2] == ["--stage-cpu"]:
        bench, verdicts, *sources = sys.argv[2:]
        print(json.dumps(stage_cpu(bench, verdicts, sources)))
        return
    ap = common.parser(__doc__)
    ap.add_argument("--sizes", default="2000,5000,20000", help="problem counts, comma-separated")
    ap.add_argument("--data", type=Path, default=DATA, help="the third-party sets (../shared/data)")
    ap.add_argument("--keep", type=Path, help="write the inputs and outputs here (default: a temp folder)")
    ap.add_argument("--no-stages", action="store_true", help="skip the per-stage CPU run")
    args = ap.parse_args()
    if not (args.data / "rllm_codeforces.json").is_file():
        sys.exit(f"the real problem sets are not at {args.data} (give --data or set MCODER_SHARED_DATA)")
    sizes = [int(x) for x in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        common.claim_out(folder, "dataset_scale", "--keep")  # it writes files of its own names there
        results = [measure(args.data, n, folder, stages=not args.no_stages) for n in sizes]
    show(results)


def show(results: list[dict]) -> None:
    stages = list(results[-1]["stage_cpu_s"])
    print("dataset build --dedup --decontaminate --difficulty-from (whole command, a fresh process each):")
    print(
        f"{'problems':>8} {'out':>6} {'wall s':>7} {'CPU s':>7} {'CPU ms/problem':>14} {'peak RSS MiB':>12}"
        f" {'without --dedup':>15} {'ratio':>6}"
    )
    for r in results:
        per = 1000 * r["cpu_s"] / r["n"]
        ratio = r["peak_rss_mib"] / r["peak_rss_mib_no_dedup"]
        print(
            f"{r['n']:>8} {r['out']:>6} {r['wall_s']:>7.1f} {r['cpu_s']:>7.1f} {per:>14.2f} {r['peak_rss_mib']:>12}"
            f" {r['peak_rss_mib_no_dedup']:>15} {ratio:>6.2f}"
        )
    if stages:
        print("\nCPU ms per problem by stage (the same inputs, stages run one by one in a fresh process):")
        print(f"{'problems':>8} " + " ".join(f"{k[:14]:>14}" for k in stages))
        for r in results:
            cells = " ".join(f"{1000 * r['stage_cpu_s'].get(k, 0) / r['n']:>14.3f}" for k in stages)
            print(f"{r['n']:>8} {cells}")
    first, last = results[0], results[-1]
    print(
        f"\n{first['n']} -> {last['n']} problems (x{last['n'] / first['n']:g}): CPU x{last['cpu_s'] / first['cpu_s']:.2f}, "
        f"wall x{last['wall_s'] / first['wall_s']:.2f} (wall follows the machine's load), "
        f"peak RSS x{last['peak_rss_mib'] / first['peak_rss_mib']:.2f}"
    )
    print(json.dumps(results))


if __name__ == "__main__":
    main()
