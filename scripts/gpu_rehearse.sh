#!/usr/bin/env bash
# Rehearse the GPU check here, on a CPU: an environment made only of what the GPU machine's image
# lists (torch, transformers, peft, accelerate, typer, rich, matplotlib, tensorboard; the CPU torch
# of constraints/cpu.txt stands in for the image's CUDA build), no mcoder installed, then the
# carried wheels (scripts/gpu_carry.sh) with --no-index and `benchmarks/gpu_check.sh --smoke
# --wheels`, exactly as the GPU machine would run it without --smoke.
#
#   bash scripts/gpu_rehearse.sh [OUT]      # OUT: the check's folder (default gpu-check-rehearsal)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-gpu-check-rehearsal}"
VENV="${GPU_IMAGE_VENV:-.venv-gpu-image}"
IMAGE=(torch "transformers==5.17.*" peft accelerate typer rich matplotlib tensorboard)
source commands/common.sh
if [[ ! -f "$VENV/.installed" ]]; then
  PY=python3 claim_folder "$VENV" .mcoder-venv GPU_IMAGE_VENV  # removed below: never someone else's folder
  rm -rf "$VENV"
  python3 -m venv "$VENV" && touch "$VENV/.mcoder-venv"
  "$VENV/bin/python" -m pip install -q --no-compile -c constraints/cpu.txt "${IMAGE[@]}"
  touch "$VENV/.installed"
fi
if "$VENV/bin/python" -c "import mcoder" 2>/dev/null; then
  echo "$VENV already has mcoder: not the image's environment" >&2
  exit 1
fi
bash scripts/gpu_carry.sh gpu-carry
PY="$VENV/bin/python" bash benchmarks/gpu_check.sh --smoke --wheels gpu-carry --out "$OUT"
