#!/usr/bin/env bash
# MicroCoder-GRPO as an `mcoder train --loop` run: clip-higher (ε 0.2, ε_high 0.28), no KL,
# token-level loss, conditional truncation masking (ρ = 0.1, repetition window m = 128), and the
# sampling temperature chosen from measured output diversity (`--temperature auto`), measured
# again every 100 steps at full size (`--temperature-stage-steps`: T changes only between stages;
# pass `--temperature 'T@STEP,...'` for a fixed schedule). The `microcoder-grpo` preset of
# src/mcoder/train/config.py; any knob can be overridden after `--`.
#
# Sizes. The paper reports its gains over runs of about 300 training steps (its abstract) on
# Qwen3-scale models whose completions grow long; ρ = 0.1 and m = 128 are the paper's. The other
# full-size defaults below are a one-GPU-node starting point, not numbers copied from its setup table:
#   steps 300, 32 problems/step x G = 8, mini-batch 8 groups, L_max 8192, lr 1e-6.
# --smoke: 2 steps, 2 problems x G = 2, L_max 24, T fixed at 1.0 on the tiny model (CI, under a minute).
#
# Engine. The paper's regime is the default: full-parameter training with vLLM sampling
# (`--engine vllm`; before each rollout the trainer's new weights are streamed into the running
# engine, no restart; one process, one GPU). `--lora R` trains a rank-R LoRA adapter instead (the
# adapter is handed to vLLM each step); `--engine hf` samples with transformers (no vLLM needed).
# --smoke keeps `--engine hf` unless --engine is given: CI runs it where vLLM is not installed.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
FULL_STEPS=300 FULL_N=8 FULL_BATCH=32 FULL_MINI=8 FULL_MAXTOK=8192 FULL_LR=1e-6 FULL_STAGE=100

engine="" lora="" args=() extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --engine) engine="$2"; shift 2 ;;
    --lora) lora="$2"; shift 2 ;;
    --smoke) args+=("$1"); engine="${engine:-smoke}"; shift ;;
    -h|--help)
      (run_loop microcoder-grpo --help)
      echo "  --engine E     vllm (default: full weights streamed into vLLM each step) or hf (default with --smoke)"
      echo "  --lora R       train a rank-R LoRA adapter instead of all weights"
      exit 0 ;;
    --) extra=("${@:2}"); break ;;
    *) args+=("$1"); shift ;;
  esac
done
[[ -z "$engine" ]] && engine=vllm
[[ "$engine" == smoke ]] && engine=hf
flags=(--engine "$engine")
[[ -n "$lora" ]] && flags+=(--lora-rank "$lora")
run_loop microcoder-grpo "${args[@]}" -- "${flags[@]}" "${extra[@]}"
