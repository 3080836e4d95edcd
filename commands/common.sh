# Shared by the recipes in this folder (sourced, not run): the mcoder to call, logging, the tiny model.
# shellcheck shell=bash

# The mcoder on PATH, or $MCODER (e.g. MCODER=".venv/bin/mcoder" or "python -m mcoder").
MCODER="${MCODER:-mcoder}"
read -r -a MC <<<"$MCODER"

RECIPES_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(dirname "$RECIPES_DIR")"

say() { printf '\n== %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 2; }

# ensure_model DIR: build the tiny random Qwen3 there unless DIR already holds a model.
ensure_model() {
  local dir="$1"
  if [[ ! -f "$dir/config.json" ]]; then
    say "tiny model -> $dir"
    "${PY:-python3}" -m mcoder.testing "$dir" >/dev/null
  fi
}

# The Python that has mcoder importable: beside the mcoder executable when it is a path.
if [[ -z "${PY:-}" ]]; then
  if [[ "${MC[0]}" == */* && -x "$(dirname "${MC[0]}")/python" ]]; then
    PY="$(dirname "${MC[0]}")/python"
  elif [[ "${MC[0]}" == *python* ]]; then
    PY="${MC[0]}"
  else
    PY="$(dirname "$(command -v "${MC[0]}" 2>/dev/null || echo python3)")/python"
    [[ -x "$PY" ]] || PY=python3
  fi
fi

# run_loop ALGO ARGS...: the body of train_grpo.sh / train_dapo.sh / train_microcoder.sh.
# Full-size defaults come from the caller's FULL_* variables; --smoke swaps in CI sizes.
run_loop() {
  local algo="$1"; shift
  local run="runs/$algo" source="$REPO_DIR/examples/problems" model="" steps="$FULL_STEPS"
  local n="$FULL_N" batch="$FULL_BATCH" mini="$FULL_MINI" maxtok="$FULL_MAXTOK" lr="$FULL_LR"
  local temp="" extra=() smoke=0
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --run) run="$2"; shift 2 ;;
      --source) source="$2"; shift 2 ;;
      --model) model="$2"; shift 2 ;;
      --steps) steps="$2"; shift 2 ;;
      --n) n="$2"; shift 2 ;;
      --train-batch-size) batch="$2"; shift 2 ;;
      --max-tokens) maxtok="$2"; shift 2 ;;
      --lr) lr="$2"; shift 2 ;;
      --temperature) temp="$2"; shift 2 ;;
      --smoke) smoke=1; shift ;;
      -h|--help) loop_usage "$algo"; exit 0 ;;
      --) shift; extra=("$@"); break ;;
      *) loop_usage "$algo" >&2; die "unknown argument $1" ;;
    esac
  done
  if [[ $smoke == 1 ]]; then
    # CI size: 2 steps of 2 problems x G=2, 24 tokens; a fixed temperature because the
    # diversity probe of 'auto' alone would take longer than the whole smoke run.
    steps=2 n=2 batch=2 mini=2 maxtok=24 temp="${temp:-1.0}"
  fi
  mkdir -p "$run"
  if [[ -z "$model" ]]; then model="$run/model"; ensure_model "$model"; fi
  say "dataset build $source -> $run/problems.jsonl"
  "${MC[@]}" dataset build "$source" --out "$run/problems.jsonl" --overwrite -q
  local tflag=(); [[ -n "$temp" ]] && tflag=(--temperature "$temp")
  # With the preset's 'auto' temperature, FULL_STAGE steps per temperature stage (re-measured after each).
  [[ -z "$temp" && -n "${FULL_STAGE:-}" ]] && tflag=(--temperature-stage-steps "$FULL_STAGE")
  say "train --loop --algo $algo: $steps steps x $batch problems x G=$n, L_max $maxtok"
  # Rerun with the same flags continues after the last checkpoint (--loop resumes its run folder).
  "${MC[@]}" train --loop --algo "$algo" --model "$model" --problems "$run/problems.jsonl" \
    --run-dir "$run/train" --steps "$steps" --n "$n" --train-batch-size "$batch" \
    --mini-batch-size "$mini" --max-tokens "$maxtok" --lr "$lr" "${tflag[@]}" "${extra[@]}"
  say "bench --plots"
  "${MC[@]}" bench --run-dir "$run/train" --plots -q
  echo "$run/train/metrics.jsonl"
}

loop_usage() {
  cat <<USAGE
usage: $(basename "$0") [--smoke] [--run DIR] [--source PATH] [--model DIR] [--steps N] [--n G]
                     [--train-batch-size B] [--max-tokens L] [--lr LR] [--temperature T]
                     [-- EXTRA 'mcoder train' FLAGS]

'mcoder train --loop --algo $1' on a problem source, then the training figures.
  --run DIR      run folder (default runs/$1); the loop writes RUN/train/, figures RUN/train/plots/
  --source PATH  problems for 'mcoder dataset build' (default examples/problems)
  --model DIR    model (default RUN/model: the tiny random model, built when missing)
  --smoke        CI size: 2 steps, 2 problems x G=2, 24 tokens, T=1.0 (under a minute)
Full-size defaults: steps $FULL_STEPS, G=$FULL_N, $FULL_BATCH problems/step, mini-batch $FULL_MINI,
L_max $FULL_MAXTOK, lr $FULL_LR. Calls \$MCODER (default: mcoder on PATH).
USAGE
}
