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
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
FULL_STEPS=300 FULL_N=8 FULL_BATCH=32 FULL_MINI=8 FULL_MAXTOK=8192 FULL_LR=1e-6 FULL_STAGE=100
run_loop microcoder-grpo "$@"
