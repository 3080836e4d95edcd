#!/usr/bin/env bash
# Every stage's outputs on the bundled problems, written into OUT, so that two versions of mcoder can
# be compared file by file (scripts/compare_outputs.py A B): a change meant to keep behaviour shows
# that it did. A short warm start first (so that rewards differ and the updates move weights), then:
# dataset build, rollout, judge (and its cache on a rerun), train (each preset), bench, a loop of each
# recipe with the diversity probe, show, show --html, export.
#
#   MCODER=.venv/bin/mcoder bash scripts/record_outputs.sh OUT
set -euo pipefail
source "$(dirname "$0")/../commands/common.sh"
OUT="${1:-}"
[[ $# -eq 1 && -n "$OUT" ]] || die "usage: record_outputs.sh OUT"
claim_folder "$OUT" .mcoder-record-outputs
export OMP_NUM_THREADS=1
mc() { "${MC[@]}" "$@"; }
L="$REPO_DIR/examples/learn"

say "warm start (200 steps, no gate) -> $OUT/model"
[[ -f "$OUT/model/config.json" ]] || "$PY" -m mcoder.warmstart --problems "$L/train.jsonl" --out "$OUT/model" \
  --steps 200 --seed 0 --target-pass 0 >/dev/null 2>&1

say "dataset build"
mc dataset build "$L/heldout.jsonl" "$REPO_DIR/examples/problems" --out "$OUT/problems.jsonl" --report "$OUT/report.md" --overwrite -q

say "rollout, judge, bench"
mc rollout -p "$OUT/problems.jsonl" -m "$OUT/model" -o "$OUT/rollouts.jsonl" --n 4 --max-tokens 40 -t 1.0 \
  --seed 3 --limit 24 --overwrite -q
mc judge -p "$OUT/problems.jsonl" -r "$OUT/rollouts.jsonl" -o "$OUT/verdicts.jsonl" --overwrite -q
mc judge -p "$OUT/problems.jsonl" -r "$OUT/rollouts.jsonl" -o "$OUT/verdicts-strict.jsonl" --compare strict \
  --reward fraction --overwrite -q
mc bench -p "$OUT/problems.jsonl" --verdicts "$OUT/verdicts.jsonl" --k 1,4 --baseline "$OUT/verdicts-strict.jsonl" \
  --markdown "$OUT/bench.md" --json "$OUT/bench.json" > "$OUT/bench.out"

say "train, each preset"
for algo in grpo dapo microcoder-grpo; do
  mc train -m "$OUT/model" -r "$OUT/rollouts.jsonl" --verdicts "$OUT/verdicts.jsonl" -o "$OUT/train-$algo" \
    --algo "$algo" --lr 1e-4 --overwrite -q > "$OUT/train-$algo.out"
done

say "loop, each recipe (2 steps)"
for recipe in grpo dapo microcoder-grpo; do
  [[ -f "$OUT/loop-$recipe/checkpoint/config.json" ]] || mc loop --config "$REPO_DIR/recipes/$recipe.toml" \
    --config "$REPO_DIR/recipes/smoke.toml" -m "$OUT/model" -p "$L/train.jsonl" --run-dir "$OUT/loop-$recipe" \
    --steps 2 --probe-problems 4 -q > "$OUT/loop-$recipe.out"
done

say "show, export"
mc show "$OUT/loop-microcoder-grpo" > "$OUT/show.txt"
mc show "$OUT/loop-microcoder-grpo" --full --limit 3 > "$OUT/show-full.txt"
mc show "$OUT/rollouts.jsonl" --verdicts "$OUT/verdicts.jsonl" -p "$OUT/problems.jsonl" > "$OUT/show-batch.txt"
mc export "$OUT/train-grpo" --out "$OUT/export" --overwrite -q > "$OUT/export.out"
say "done: $OUT"
