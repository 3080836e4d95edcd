#!/usr/bin/env bash
# `make test-torch`: does mcoder run on a torch other than the CPU build that constraints/cpu.txt
# pins? Builds $TORCH_VENV (default .venv-torch) with TORCH_SPEC (default torch==2.14.1, the other
# release the package index here serves: a CUDA build, which also runs on a CPU), installs mcoder
# into it with --no-deps, then its other dependencies WITHOUT the constraints file, as a user's
# `pip install mcoder` beside their own torch would, and fails if that moved torch. Then a few test
# files run on it: GRPO's losses, the trainer, the HF rollout engine, the loop, and one FSDP2
# (fully_shard) update under torchrun, the feature the range's lower bound is set by.
#
#   bash scripts/test_torch_compat.sh [pytest args...]    # TORCH_SPEC="torch==X.Y" to try another
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${TORCH_VENV:-.venv-torch}"
SPEC="${TORCH_SPEC:-torch==2.14.1}"
PY="$VENV/bin/python"
PIP=("$PY" -m pip install -q --no-compile)
source commands/common.sh
if [[ ! -f "$VENV/.installed" || "$(cat "$VENV/.installed")" != "$SPEC" ]]; then
  PY=python3 claim_folder "$VENV" .mcoder-venv TORCH_VENV  # removed below: never someone else's folder
  rm -rf "$VENV"
  python3 -m venv "$VENV" && touch "$VENV/.mcoder-venv"
  "${PIP[@]}" --upgrade pip
  "${PIP[@]}" "$SPEC"
  echo "$SPEC" >"$VENV/.installed"
fi
before="$("$PY" -c 'import torch; print(torch.__version__)')"
"${PIP[@]}" --no-deps -e .
# mcoder's own dependencies and test tools, resolved against the torch already there (no -c)
"${PIP[@]}" -e ".[test]"
after="$("$PY" -c 'import torch; print(torch.__version__)')"
if [[ "$before" != "$after" ]]; then
  echo "installing mcoder replaced torch $before with $after" >&2
  exit 1
fi
echo "torch $after kept; mcoder $("$PY" -c 'import mcoder; print(mcoder.__version__)') installed over it"
exec "$PY" -m pytest -q -p no:cacheprovider tests/train/test_grpo.py tests/train/test_train_trainer.py \
  tests/rollout/test_rollout_engine.py tests/loop/test_loop.py \
  "tests/train/test_train_distributed.py::test_two_processes_update_equals_one_full_weights" "$@"
