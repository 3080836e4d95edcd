#!/usr/bin/env bash
# DAPO as an `mcoder train --loop` run: clip-higher (ε 0.2, ε_high 0.28), no KL, token-level
# loss, every truncated output masked, dynamic sampling of zero-variance groups, T = 1.0
# (the `dapo` preset of src/mcoder/train/config.py; add `-- --overlong-penalty` for the soft
# overlong punishment instead of masking, or override any other knob after `--`).
#
# Sizes. The paper compares the three algorithms over runs of about 300 training steps (its
# abstract) on Qwen3-scale models with long completions. The full-size defaults below are a
# one-GPU-node starting point in that spirit, not numbers copied from the paper's setup table:
#   steps 300, 32 problems/step x G = 8, mini-batch 8 groups, L_max 8192, lr 1e-6.
# --smoke: 2 steps, 2 problems x G = 2, L_max 24 on the tiny model (CI, under a minute).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
FULL_STEPS=300 FULL_N=8 FULL_BATCH=32 FULL_MINI=8 FULL_MAXTOK=8192 FULL_LR=1e-6
run_loop dapo "$@"
