#!/usr/bin/env bash
# MicroCoder-GRPO past one GPU: `mcoder loop` under torchrun (recipes/microcoder-grpo.toml). The policy is sharded with
# FSDP2 over all ranks; rank 0 samples with vLLM (the step's LoRA adapter handed to the running
# engine, no restart) and judges; every rank trains on its share of the prompt groups.
#
#   train_multigpu.sh --model DIR --problems FILE [--run DIR] [--gpus 8] [--tp 1] [--steps 300] [-- FLAGS]
#   train_multigpu.sh --nodes M --node-rank R --master HOST:PORT ...   # one line per node (or SLURM below)
#   train_multigpu.sh --smoke                                          # CPU: 2 processes, gloo, hf engine
#
# One node, 8 GPUs:    torchrun --standalone --nproc-per-node 8 -m mcoder loop --config recipes/microcoder-grpo.toml ...
# Several nodes:       torchrun --nnodes M --nproc-per-node 8 --node-rank R \
#                        --rdzv-backend c10d --rdzv-endpoint HOST:29500 -m mcoder loop ...
# As a SLURM job (M nodes, one torchrun per node):
#   #SBATCH --nodes=4 --ntasks-per-node=1 --gpus-per-node=8 --cpus-per-task=64 --mem=0
#   head=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)
#   srun bash commands/train_multigpu.sh --nodes "$SLURM_NNODES" --node-rank "$SLURM_NODEID" \
#        --master "$head:29500" --model Qwen3-8B --problems problems.jsonl --run runs/mc-8b
# The run folder must be on a disk every node sees (rank 0 writes it; all ranks read the checkpoint).
# Note: after torchrun, write `-n G` for the group size: torchrun's own parser reads `--n` as an
# abbreviation of its flags.
#
# Sizes for the paper's model range (estimates from parameter counts, not measured: this project
# had no GPU to run them; activations depend on L_max and --micro-batch-size):
#   model      full fine-tuning (fp32 AdamW, FSDP2)                      LoRA r=64
#   Qwen3-1.7B ~27 GB of weights+grads+moments -> 1 node, 2-8 GPUs       1 GPU (+ vLLM on it)
#   Qwen3-4B   ~64 GB -> 1 node, 8 x 40-80 GB GPUs                       1-2 GPUs
#   Qwen3-8B   ~128 GB -> 1 node, 8 x 80 GB GPUs (or 2 nodes of 40 GB)   1 node, 2-8 GPUs
#   (--dtype bfloat16 is the compute dtype: master weights and AdamW moments stay float32, so it
#   saves activation memory, not those figures; benchmarks/memory_model.py gives the full table.)
# Rollouts: vLLM on GPU 0 beside trainer rank 0, in bfloat16 (3.4 / 8 / 16 GB of weights). Under
# torchrun each rank's engine is one GPU: --tp above 1 is refused there (it works in one process). The paper's step, 32 problems x G=8 with L_max
# up to 8192, is 256 sequences: rollout time dominates; judge workers (--workers, CPU cores
# of the node running rank 0) should be 16-32 (see judge_sharded.sh for the per-verdict cost).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

MODEL="" PROBLEMS="" RUN=runs/multigpu GPUS=8 TP=1 STEPS=300 NODES=1 NODE_RANK=0 MASTER="" SMOKE=0 EXTRA=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --model) MODEL="$2"; shift 2 ;;
    --problems) PROBLEMS="$2"; shift 2 ;;
    --run) RUN="$2"; shift 2 ;;
    --gpus) GPUS="$2"; shift 2 ;;
    --tp) TP="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --nodes) NODES="$2"; shift 2 ;;
    --node-rank) NODE_RANK="$2"; shift 2 ;;
    --master) MASTER="$2"; shift 2 ;;
    --smoke) SMOKE=1; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    --) shift; EXTRA=("$@"); break ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done

if [[ $SMOKE == 1 ]]; then
  # The same command on a CPU: 2 processes over gloo, the recipe at its smoke size (hf engine:
  # vLLM needs a GPU here). Rerunning continues after the last checkpoint.
  RUN=runs/multigpu-smoke; mkdir -p "$RUN"
  ensure_model "$RUN/model"
  OMP_NUM_THREADS=1 "$PY" -m torch.distributed.run --standalone --nproc-per-node 2 -m mcoder \
    loop --config "$REPO_DIR/recipes/microcoder-grpo.toml" --config "$REPO_DIR/recipes/smoke.toml" \
    --model "$RUN/model" --problems "$REPO_DIR/examples/problems/stdin.jsonl" --run-dir "$RUN/train" \
    --lora-rank 8 --workers 2 -q
  exit 0
fi

[[ -n "$MODEL" && -n "$PROBLEMS" ]] || die "--model and --problems are needed (see --help)"
launch=(--nproc-per-node "$GPUS")
if [[ $NODES -gt 1 ]]; then
  [[ -n "$MASTER" ]] || die "--master HOST:PORT is needed with --nodes > 1"
  launch+=(--nnodes "$NODES" --node-rank "$NODE_RANK" --rdzv-backend c10d --rdzv-endpoint "$MASTER" --rdzv-id mcoder)
else
  launch+=(--standalone)
fi
say "torchrun ${launch[*]}: MicroCoder-GRPO, $STEPS steps, LoRA, vLLM rollouts (tp $TP) on rank 0"
# The recipe's sizes (32 problems x G=8, L_max 8192, T auto), here with LoRA in bfloat16.
"$PY" -m torch.distributed.run "${launch[@]}" -m mcoder loop --config "$REPO_DIR/recipes/microcoder-grpo.toml" \
  --model "$MODEL" --problems "$PROBLEMS" --run-dir "$RUN" --steps "$STEPS" \
  --lora-rank 64 --lr 1e-5 --dtype bfloat16 --tensor-parallel-size "$TP" --workers 32 "${EXTRA[@]}"
