#!/usr/bin/env bash
# The whole loop on the embedded default, as `make demo` runs it: the bundled problems, the tiny
# random model, a few MicroCoder-GRPO steps with `mcoder train --loop`, an evaluation of the
# trained policy, and the bench table and training figures. A few minutes on 2 CPU cores.
# (The model is random, so pass rates stay at 0: the demo shows the machinery, not learning;
# benchmarks/learning_proof.py is the run that shows learning.)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage() {
  cat <<USAGE
usage: $(basename "$0") [--out DIR] [--steps N]
  --out DIR    demo folder (default demo-out)
  --steps N    MicroCoder-GRPO steps (default 3)
Calls \$MCODER (default: mcoder on PATH).
USAGE
}
OUT=demo-out STEPS=3
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) OUT="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument $1" ;;
  esac
done
mkdir -p "$OUT"
T0=$SECONDS
stage() { printf '\n[%s/6 %3ds] %s\n' "$1" "$((SECONDS - T0))" "$2" >&2; }

stage 1 "dataset build: examples/problems -> $OUT/problems.jsonl"
"${MC[@]}" dataset build "$REPO_DIR/examples/problems" --out "$OUT/problems.jsonl" --overwrite \
  --report "$OUT/dataset_report.md" >/dev/null

stage 2 "tiny model (random-weight Qwen3 + BPE tokenizer) -> $OUT/model"
ensure_model "$OUT/model"

stage 3 "mcoder train --loop --algo microcoder-grpo: $STEPS steps x 4 problems x G=4, L_max 64, T by diversity"
# A fresh run each time: the loop would otherwise resume (and skip) a finished run folder.
rm -rf "$OUT/run"
"${MC[@]}" train --loop --algo microcoder-grpo --model "$OUT/model" --problems "$OUT/problems.jsonl" \
  --run-dir "$OUT/run" --steps "$STEPS" --train-batch-size 4 --n 4 --mini-batch-size 2 \
  --max-tokens 64 --lr 1e-4 >/dev/null

stage 4 "rollout of the trained policy: every problem x 2 samples"
"${MC[@]}" rollout --problems "$OUT/problems.jsonl" --model "$OUT/run/checkpoint" \
  --out "$OUT/eval_rollouts.jsonl" --n 2 --max-tokens 64 --temperature 1.0 --overwrite >/dev/null

stage 5 "judge"
"${MC[@]}" judge --problems "$OUT/problems.jsonl" --rollouts "$OUT/eval_rollouts.jsonl" \
  --out "$OUT/eval_verdicts.jsonl" --overwrite >/dev/null

stage 6 "bench: pass@k table and training figures"
"${MC[@]}" bench --problems "$OUT/problems.jsonl" --verdicts "$OUT/eval_verdicts.jsonl" --k 1,2 \
  --markdown "$OUT/bench.md" --json "$OUT/bench.json" >/dev/null
"${MC[@]}" bench --run-dir "$OUT/run" --plots --out-dir "$OUT/plots" -q >/dev/null

printf '\ndemo done in %ds. Files written under %s/:\n' "$((SECONDS - T0))" "$OUT"
cat <<DONE
  problems.jsonl            the bundled problems as mcoder records (build report: dataset_report.md)
  model/                    the tiny random-weight model the run started from
  run/train_config.json     the resolved MicroCoder-GRPO configuration
  run/temperature.json      the sampling temperature chosen by diversity (and the table it came from)
  run/step_NNNN/            each step's rollouts.jsonl, verdicts.jsonl, samples.jsonl
  run/metrics.jsonl         one line of training metrics per step
  run/checkpoint/           the trained policy
  eval_rollouts.jsonl       samples of the trained policy on every problem
  eval_verdicts.jsonl       the judge's verdicts on them
  bench.md, bench.json      pass@1 / pass@2 by platform x difficulty, failure shares
  plots/                    $(ls "$OUT/plots" | tr '\n' ' ')
DONE
