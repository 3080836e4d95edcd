#!/usr/bin/env bash
# The wheels a GPU machine without network needs to run benchmarks/gpu_check.sh, in one folder
# (default gpu-carry/, at most 64 MiB). Such a machine's image is taken to have torch (a CUDA
# build), transformers, peft, accelerate, typer, rich, matplotlib and tensorboard (what
# scripts/gpu_rehearse.sh builds); the check runs mcoder from src/ (PYTHONPATH), so what must
# travel is what mcoder imports at run time beyond those: CARRY below. Prints the folder's size and
# fails over the limit.
#
#   bash scripts/gpu_carry.sh [DIR]
#   then on the GPU machine:  bash benchmarks/gpu_check.sh --wheels DIR
set -euo pipefail
cd "$(dirname "$0")/.."
DIR="${1:-gpu-carry}"
LIMIT_MIB=64
# orjson: every JSONL read and write. Manylinux wheels for CPython 3.10-3.13 so that the image's
# Python, whichever it is, finds one; pure-Python wheels are the same for all.
CARRY=(orjson)
PYTHONS=(3.10 3.11 3.12 3.13)
source commands/common.sh
claim_folder "$DIR" .mcoder-gpu-carry DIR  # a new folder or one this script made: never someone else's
rm -f "$DIR"/*.whl "$DIR/requirements.txt"
for v in "${PYTHONS[@]}"; do
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$v" \
    --platform manylinux_2_17_x86_64 --dest "$DIR" "${CARRY[@]}"
done
printf '%s\n' "${CARRY[@]}" >"$DIR/requirements.txt"  # what gpu_check.sh --wheels installs
size_kib=$(du -sk "$DIR" | cut -f1)
echo "$DIR: $(ls "$DIR"/*.whl | wc -l) wheels, $((size_kib / 1024)) MiB ($size_kib KiB; the limit is $LIMIT_MIB MiB)"
ls "$DIR"
if (( size_kib > LIMIT_MIB * 1024 )); then
  echo "over the $LIMIT_MIB MiB a run may carry" >&2
  exit 1
fi
