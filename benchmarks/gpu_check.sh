#!/usr/bin/env bash
# The paper's regime on one GPU, in under 10 minutes: a Qwen3-1.7B-shaped model with random weights
# (python -m mcoder.testing --shape qwen3-1.7b), then benchmarks/loop_speed.py on it:
#   - vLLM sampling alone: 8 prompts x G=4 up to 4,096 tokens each (tokens/s);
#   - three full-parameter `mcoder loop --engine vllm` steps (4 problems x G=4, 1,024 tokens), the
#     new weights streamed into the running engine before each rollout: the step broken down
#     into sample / judge / update / sync;
#   - the sync alone: seconds for the 2.0B parameters and vLLM's log-probs against the trainer's
#     after it (bfloat16 on both sides: differences around 1e-2 are rounding);
# and the peak GPU memory (nvidia-smi, sampled each second), then one summary of it all.
# Without vllm in PY's environment it measures what the machine has instead (benchmarks/gpu_bench.py):
# does the paper's regime fit one GPU and how fast is it: sampling with the transformers engine
# (bfloat16), the full-parameter update at L = 1K, 4K and 8K tokens at recipes/microcoder-grpo.toml's
# own settings (bf16 compute over float32 masters, micro-batches of 4 sequences: tokens/s, MFU
# against the chip's peak, peak and resident GPU memory beside benchmarks/memory_model.py's figures,
# which it measures first on the CPU), the same update under FSDP2 in the trainer's own one-GPU
# process group (cpu:gloo,cuda:nccl), and the hf loop's step breakdown. No checkpoint is written
# (GPU_BENCH_ARGS=--save times the 21 GB write too).
#
#   bash benchmarks/gpu_check.sh [--out DIR]     # on the GPU machine, with or without vllm
#   bash benchmarks/gpu_check.sh --smoke         # the same steps on the tiny model, on a CPU (CI)
#   bash benchmarks/gpu_check.sh --wheels DIR    # first install DIR's wheels (--no-index) and use
#                                                # this source tree: scripts/gpu_carry.sh makes DIR
#
# PY: the Python with mcoder (and vllm) (default: .venv-vllm/bin/python if present, else python3).
# ENGINE=hf skips vLLM even where it is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PY:-$( [[ -x .venv-vllm/bin/python ]] && echo .venv-vllm/bin/python || echo python3 )}"
out="gpu-check" smoke=0 wheels=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --smoke) smoke=1; shift ;;
    --wheels) wheels="$2"; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
source commands/common.sh
claim_folder "$out" .mcoder-gpu_bench  # a new folder or an earlier check's (gpu_bench.py's marker)
if [[ -n "$wheels" ]]; then
  # what the image lacks, from the carried folder only (no network); mcoder itself from src/
  "$PY" -m pip install -q --no-index --find-links "$wheels" -r "$wheels/requirements.txt"
  export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
fi
if [[ "${ENGINE:-auto}" == hf ]] || ! "$PY" -c "import vllm" >/dev/null 2>&1; then
  echo "vllm is not installed for $PY: measuring the transformers engine, the update and FSDP2" >&2
  smoke_arg=(); [[ $smoke == 1 ]] && smoke_arg=(--smoke)
  model_args=(); [[ $smoke == 1 ]] && model_args=(--layers 2 --hidden 128 --vocab 1024 --tokens 32 64 --chunks 8 16)
  start=$(date +%s)
  status=0
  # the memory model's constants (measured on this machine's CPU), for gpu_bench's "model" columns
  "$PY" benchmarks/memory_model.py "${model_args[@]}" --json "$out/memory_model.json" >"$out/memory_model.txt" || status=$?
  # shellcheck disable=SC2086 # GPU_BENCH_ARGS: extra options, split as words
  "$PY" benchmarks/gpu_bench.py --out "$out" "${smoke_arg[@]}" ${GPU_BENCH_ARGS:-} | tee "$out/report.txt" || status=$?
  echo "wall time    : $(( $(date +%s) - start ))s" | tee -a "$out/report.txt"
  exit "$status"
fi

if [[ $smoke == 1 ]]; then
  args=(--shape tiny --sync-models tiny --sample-tokens 32 --sample-prompts 2 --n 2 --max-tokens 12
        --problems 2 --steps 3 --sync-repeats 1 --judge-workers 1)
else
  args=(--shape qwen3-1.7b --layers 28 --sync-models qwen3-1.7b:28 --sample-tokens 4096 --sample-prompts 8
        --n 4 --max-tokens 1024 --problems 4 --steps 3 --sync-repeats 2 --judge-workers 8)
fi

# peak GPU memory of the whole run (trainer and engine together), when there is a GPU
peak_file="$out/gpu_mem_mib.txt"; : >"$peak_file"
watcher=""
if command -v nvidia-smi >/dev/null 2>&1; then
  (while true; do nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1 >>"$peak_file"; sleep 1; done) &
  watcher=$!
fi
stop_watcher() { [[ -n "$watcher" ]] && kill "$watcher" 2>/dev/null || true; }
trap stop_watcher EXIT

start=$(date +%s)
# the judge's sandbox is not what is measured here, and random text never runs long
"$PY" benchmarks/loop_speed.py "${args[@]}" --cases vllm-full --unsafe-no-sandbox --save-every 0 \
  --models-dir "$out/models" | tee "$out/report.txt"
stop_watcher
elapsed=$(( $(date +%s) - start ))

peak="n/a (no nvidia-smi)"
if [[ -s "$peak_file" ]]; then peak="$(sort -n "$peak_file" | tail -1) MiB"; fi
{
  echo
  echo "gpu_check summary"
  echo "-----------------"
  echo "device       : $("$PY" -c 'import torch; print(torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu")')"
  echo "model        : ${args[1]} (random weights, real shape)"
  echo "peak GPU mem : $peak"
  echo "wall time    : ${elapsed}s"
} | tee -a "$out/report.txt"
