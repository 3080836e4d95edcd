#!/usr/bin/env bash
# Judge one rollouts file as N shards (N machines, a SLURM array, Ray or Kubernetes jobs), then
# join the parts with `mcoder judge --merge`, which fails when a rollout is missing or judged twice.
#
#   judge_sharded.sh --problems P --rollouts R --out V [--shards N] [--workers W]   # all here, then merge
#   judge_sharded.sh --problems P --rollouts R --out V --shards N --task I          # shard I only
#   judge_sharded.sh --rollouts R --out V --shards N --merge-only                   # join the N parts
#   judge_sharded.sh --smoke                                                         # CI: 3 shards == 1 run
#
# Shard I of N writes V.shard-I-of-N.jsonl. `--shard I/N` picks the rollouts whose id hashes
# (sha1) to I mod N: the split is the same on every machine, and a shard killed midway resumes
# when its command is run again. All parts must see the same rollouts file (a shared disk).
#
# As a SLURM array (one task per shard, then one merge job that waits for all of them):
#
#   #SBATCH --array=0-15 --cpus-per-task=32 --mem=64G --time=02:00:00
#   judge_sharded.sh --problems P --rollouts R --out V --shards 16 --task "$SLURM_ARRAY_TASK_ID" --workers 32
#   # then: sbatch --dependency=afterok:$ARRAY_JOB_ID --wrap "judge_sharded.sh --rollouts R --out V --shards 16 --merge-only"
#
# Sizes (estimates, not measured at this scale): a verdict costs about 0.2-2 CPU-seconds
# (most programs finish in milliseconds per test; time-outs cost the --timeout-s, default 6 s,
# per candidate, since a candidate stops at its first failing test). One training step of the
# paper's shape, 32 problems x G=8 = 256 programs, is then about 1-8 minutes of one core: 16-32
# judge workers keep it under the rollout time. Judging "hundreds of thousands of programs a day"
# (300k x ~1 s = ~3.5 core-days a day) needs about 4-8 cores busy all day; 16 shards x 32 cores
# judge 300k in roughly 10-20 minutes. Memory: --memory-mb (1024) per worker, plus ~100 MB each.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

PROBLEMS="" ROLLOUTS="" OUT="" SHARDS=4 WORKERS=0 TASK="" MERGE_ONLY=0 SMOKE=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --problems) PROBLEMS="$2"; shift 2 ;;
    --rollouts) ROLLOUTS="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --shards) SHARDS="$2"; shift 2 ;;
    --workers) WORKERS="$2"; shift 2 ;;
    --task) TASK="$2"; shift 2 ;;
    --merge-only) MERGE_ONLY=1; shift ;;
    --smoke) SMOKE=1; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done

part() { echo "${OUT%.jsonl}.shard-$1-of-$SHARDS.jsonl"; }

judge_shard() {
  say "judge shard $1/$SHARDS -> $(part "$1")"
  "${MC[@]}" judge --problems "$PROBLEMS" --rollouts "$ROLLOUTS" --out "$(part "$1")" \
    --shard "$1/$SHARDS" --workers "$WORKERS" -q
}

merge() {
  local parts=()
  for ((i = 0; i < SHARDS; i++)); do parts+=("$(part "$i")"); done
  say "merge $SHARDS parts -> $OUT"
  "${MC[@]}" judge --merge "${parts[@]}" --rollouts "$ROLLOUTS" --out "$OUT" -q
}

if [[ $SMOKE == 1 ]]; then
  # The bundled problems' reference solutions as rollouts: 3 shards merged == one unsharded run.
  dir=runs/judge-sharded; mkdir -p "$dir"
  "${PY}" - "$REPO_DIR/examples/problems/stdin.jsonl" "$dir/rollouts.jsonl" <<'PY'
import json, sys
with open(sys.argv[1]) as f, open(sys.argv[2], "w") as out:
    for line in list(f)[:8]:
        p = json.loads(line)
        for j, src in enumerate(p["reference_solutions"] + ["print(42)\n"]):
            out.write(json.dumps({"id": f"{p['id']}/{j}", "problem_id": p["id"], "completion": src}) + "\n")
PY
  PROBLEMS="$REPO_DIR/examples/problems/stdin.jsonl" ROLLOUTS="$dir/rollouts.jsonl" OUT="$dir/verdicts.jsonl" SHARDS=3
  WORKERS=2
  for ((i = 0; i < SHARDS; i++)); do judge_shard "$i"; done
  merge
  "${MC[@]}" judge --problems "$PROBLEMS" --rollouts "$ROLLOUTS" --out "$dir/whole.jsonl" --workers 2 -q --overwrite
  "${PY}" - "$OUT" "$dir/whole.jsonl" <<'PY'
import json, sys
def load(p):
    keep = lambda v: {k: x for k, x in v.items() if k not in ("elapsed_s", "cached")}
    return {v["rollout_id"]: keep(v) for v in map(json.loads, open(p))}
a, b = load(sys.argv[1]), load(sys.argv[2])
assert a == b, "merged shards differ from the unsharded run"
print(f"{len(a)} verdicts: 3 shards merged == one run")
PY
  exit 0
fi

[[ -n "$ROLLOUTS" && -n "$OUT" ]] || die "--rollouts and --out are needed (see --help)"
if [[ $MERGE_ONLY == 1 ]]; then merge; exit 0; fi
[[ -n "$PROBLEMS" ]] || die "--problems is needed to judge"
if [[ -n "$TASK" ]]; then judge_shard "$TASK"; exit 0; fi
for ((i = 0; i < SHARDS; i++)); do judge_shard "$i"; done  # one machine: the shards in turn
merge
