#!/usr/bin/env bash
# One full GRPO step as a pipeline of the single-stage commands, every file kept:
#   dataset build -> rollout -> judge -> train -> bench
# Each stage reads the previous stage's JSONL, so any of them can be rerun or swapped alone.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage() {
  cat <<USAGE
usage: $(basename "$0") [--smoke] [--run DIR] [--source PATH] [--model DIR] [--algo A]
                     [--n G] [--max-tokens L] [--limit N] [-- EXTRA TRAIN FLAGS]

One rollout -> judge -> update step with mcoder's stages, then the bench table.
  --run DIR        run folder (default runs/grpo-step); everything is written there
  --source PATH    problem source for 'mcoder dataset build' (default examples/problems)
  --model DIR      model folder (default RUN/model: the tiny random model, built when missing)
  --algo A         grpo | dapo | microcoder-grpo (default grpo)
  --n G            samples per problem (default 8)
  --max-tokens L   completion limit (default 1024)
  --limit N        problems used (default: all)
  --smoke          CI size: 4 problems, G=2, 32 tokens (well under a minute on the tiny model)
Writes RUN/problems.jsonl, rollouts.jsonl, verdicts.jsonl, checkpoint/, train_metrics.json,
bench.md, bench.json.
Calls \$MCODER (default: mcoder on PATH).
USAGE
}

RUN=runs/grpo-step SOURCE="$REPO_DIR/examples/problems" MODEL="" ALGO=grpo N=8 MAXTOK=1024 LIMIT=""
EXTRA=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --run) RUN="$2"; shift 2 ;;
    --source) SOURCE="$2"; shift 2 ;;
    --model) MODEL="$2"; shift 2 ;;
    --algo) ALGO="$2"; shift 2 ;;
    --n) N="$2"; shift 2 ;;
    --max-tokens) MAXTOK="$2"; shift 2 ;;
    --limit) LIMIT="$2"; shift 2 ;;
    --smoke) N=2 MAXTOK=32 LIMIT=4; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; EXTRA=("$@"); break ;;
    *) usage >&2; die "unknown argument $1" ;;
  esac
done
mkdir -p "$RUN"
if [[ -z "$MODEL" ]]; then MODEL="$RUN/model"; ensure_model "$MODEL"; fi
LIMIT_FLAG=(); [[ -n "$LIMIT" ]] && LIMIT_FLAG=(--limit "$LIMIT")

say "1/5 dataset build $SOURCE -> $RUN/problems.jsonl"
"${MC[@]}" dataset build "$SOURCE" --out "$RUN/problems.jsonl" --overwrite -q

say "2/5 rollout: G=$N, L_max=$MAXTOK"
"${MC[@]}" rollout --problems "$RUN/problems.jsonl" --model "$MODEL" --out "$RUN/rollouts.jsonl" \
  --n "$N" --max-tokens "$MAXTOK" --temperature 1.0 "${LIMIT_FLAG[@]}" --overwrite -q

say "3/5 judge"
"${MC[@]}" judge --problems "$RUN/problems.jsonl" --rollouts "$RUN/rollouts.jsonl" \
  --out "$RUN/verdicts.jsonl" --overwrite -q

say "4/5 train ($ALGO)"
# stdout: the update's metrics as one JSON line, then the checkpoint path
TRAIN_OUT="$("${MC[@]}" train --model "$MODEL" --rollouts "$RUN/rollouts.jsonl" --verdicts "$RUN/verdicts.jsonl" \
  --out "$RUN/checkpoint" --algo "$ALGO" --overwrite -q "${EXTRA[@]}")"
printf '%s\n' "${TRAIN_OUT%%$'\n'*}" >"$RUN/train_metrics.json"

say "5/5 bench"
"${MC[@]}" bench --problems "$RUN/problems.jsonl" --verdicts "$RUN/verdicts.jsonl" \
  --markdown "$RUN/bench.md" --json "$RUN/bench.json"

printf '%s\n' "$RUN/problems.jsonl" "$RUN/rollouts.jsonl" "$RUN/verdicts.jsonl" "$RUN/checkpoint"
