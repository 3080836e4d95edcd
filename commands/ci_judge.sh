#!/usr/bin/env bash
# A CI judging job: judge a folder of solution files against a problem set and fail on a
# regression against saved baseline verdicts.
#
#   ci_judge.sh --problems problems.jsonl --solutions DIR --baseline baseline.jsonl [--out DIR]
#
# DIR holds one file per problem, <problem_id>.py (its whole text is the candidate program).
# A regression is a problem whose baseline verdict passed and whose current one does not (or
# that has no solution file any more); the job prints each one and exits 1. New passes are
# reported and never fail the job. --update-baseline writes the current verdicts as the baseline.
#
# Exit codes, so that CI can tell a worse solution from a broken job:
#   0  no regression
#   1  regression (each one printed)
#   2  usage: unknown or missing arguments (or mcoder judge refused its flags)
#   3  bad input: no <problem_id>.py files in DIR, no baseline file, unreadable problems or verdicts
#   4  missing environment (e.g. no sandbox for mcoder judge)
#   5  internal error: mcoder or this script failed in a way that is a bug, not a verdict
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage() {
  cat <<USAGE
usage: $(basename "$0") --problems FILE --solutions DIR --baseline FILE [--out DIR] [--update-baseline]
       $(basename "$0") --smoke [--out DIR]

  --problems FILE    problems JSONL (mcoder records)
  --solutions DIR    <problem_id>.py files
  --baseline FILE    verdicts JSONL of an earlier, accepted run
  --out DIR          where rollouts.jsonl and verdicts.jsonl go (default runs/ci-judge)
  --update-baseline  copy the current verdicts over the baseline and exit 0
  --smoke            self-check on examples/problems: a clean run passes, a broken solution fails
Exit: 0 no regression, 1 regression, 2 usage, 3 bad input (no solution files, no baseline,
bad data), 4 missing environment, 5 internal error.
Calls \$MCODER (default: mcoder on PATH).
USAGE
}

PROBLEMS="" SOLUTIONS="" BASELINE="" OUT=runs/ci-judge UPDATE=0 SMOKE=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --problems) PROBLEMS="$2"; shift 2 ;;
    --solutions) SOLUTIONS="$2"; shift 2 ;;
    --baseline) BASELINE="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --update-baseline) UPDATE=1; shift ;;
    --smoke) SMOKE=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument $1" ;;
  esac
done

EXIT_REGRESSION=1 EXIT_BAD_INPUT=3 EXIT_INTERNAL=5
bad_input() { printf 'error: %s\n' "$*" >&2; exit $EXIT_BAD_INPUT; }

# passthrough RC: exit with mcoder's code where it means usage, data or environment; else internal.
passthrough() {
  case "$1" in
    2|3|4) exit "$1" ;;
    130) exit 130 ;;
    *) printf 'error: internal error (exit %s); see the messages above\n' "$1" >&2; exit $EXIT_INTERNAL ;;
  esac
}

# judge_folder PROBLEMS SOLUTIONS OUT: solution files -> rollouts.jsonl -> verdicts.jsonl
judge_folder() {
  local problems="$1" solutions="$2" out="$3" rc=0
  mkdir -p "$out"
  python3 - "$solutions" "$out/rollouts.jsonl" <<'PY' || passthrough $?
import json, pathlib, sys
folder, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
files = sorted(folder.glob("*.py"))
if not files:
    print(f"error: no <problem_id>.py files in {folder}", file=sys.stderr)
    sys.exit(3)
with out.open("w") as f:
    for p in files:
        pid = p.stem
        f.write(json.dumps({"id": f"{pid}/ci/0", "problem_id": pid, "completion": p.read_text()}) + "\n")
print(f"{len(files)} solution files", file=sys.stderr)
PY
  "${MC[@]}" judge --problems "$problems" --rollouts "$out/rollouts.jsonl" --out "$out/verdicts.jsonl" \
    --overwrite -q || rc=$?
  [[ $rc == 0 ]] || passthrough "$rc"
}

# compare BASELINE CURRENT: print pass counts, regressions and new passes; returns 1 on a
# regression, exits 3 on an unreadable verdicts file and 5 when the comparison itself fails.
compare() {
  local rc=0
  python3 - "$1" "$2" <<'PY' || rc=$?
import json, sys
def passed(path):
    out = {}
    try:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                if line.strip():
                    v = json.loads(line)
                    out[v["problem_id"]] = (bool(v["passed"]), v.get("status", "?"))
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"error: {path}:{n if 'n' in locals() else 0}: not a verdicts file ({e!r})", file=sys.stderr)
        sys.exit(3)
    return out
base, now = passed(sys.argv[1]), passed(sys.argv[2])
was = {p for p, (ok, _) in base.items() if ok}
nowp = {p for p, (ok, _) in now.items() if ok}
regressed = sorted(was - nowp)
print(f"passed: {len(nowp)} of {len(now)} now, {len(was)} of {len(base)} in the baseline")
for p in sorted(nowp - was):
    print(f"  new pass   {p}")
for p in regressed:
    print(f"  REGRESSION {p}: {now[p][1] if p in now else 'no solution file'}")
sys.exit(10 if regressed else 0)
PY
  case "$rc" in
    0) return 0 ;;
    10) return $EXIT_REGRESSION ;;
    3) exit $EXIT_BAD_INPUT ;;
    *) printf 'error: internal error comparing verdicts (exit %s)\n' "$rc" >&2; exit $EXIT_INTERNAL ;;
  esac
}

if [[ $SMOKE == 1 ]]; then
  # Reference solutions of six bundled problems as the solution folder; baseline from them;
  # then one solution broken on purpose must make the job fail and name that problem.
  SRC="$REPO_DIR/examples/problems"
  mkdir -p "$OUT/solutions"
  rm -f "$OUT/solutions/"*.py
  python3 - "$SRC" "$OUT/solutions" <<'PY'
import json, pathlib, sys
src, dst = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
for name in ("stdin.jsonl", "call.jsonl"):
    for line in (src / name).read_text().splitlines()[:3]:
        p = json.loads(line)
        (dst / f"{p['id']}.py").write_text(p["reference_solutions"][0])
PY
  "${MC[@]}" dataset build "$SRC" --out "$OUT/problems.jsonl" --overwrite -q >/dev/null
  say "baseline from reference solutions"
  judge_folder "$OUT/problems.jsonl" "$OUT/solutions" "$OUT/baseline"
  say "same solutions: expect no regression"
  judge_folder "$OUT/problems.jsonl" "$OUT/solutions" "$OUT/current"
  compare "$OUT/baseline/verdicts.jsonl" "$OUT/current/verdicts.jsonl"
  say "one solution broken: expect a regression"
  broken="$(ls "$OUT/solutions"/mc-stdin-*.py | head -1)"
  printf 'print("wrong")\n' >"$broken"
  judge_folder "$OUT/problems.jsonl" "$OUT/solutions" "$OUT/broken"
  if compare "$OUT/baseline/verdicts.jsonl" "$OUT/broken/verdicts.jsonl"; then
    die "smoke: the broken solution was not reported as a regression"
  fi
  echo "smoke ok: regression of $(basename "$broken" .py) detected"
  echo "$OUT/baseline/verdicts.jsonl"
  exit 0
fi

[[ -n "$PROBLEMS" && -n "$SOLUTIONS" && -n "$BASELINE" ]] || { usage >&2; die "--problems, --solutions and --baseline are required"; }
[[ -d "$SOLUTIONS" ]] || bad_input "no solutions folder $SOLUTIONS"
[[ $UPDATE == 1 || -f "$BASELINE" ]] || bad_input "no baseline $BASELINE (create one with --update-baseline)"
judge_folder "$PROBLEMS" "$SOLUTIONS" "$OUT"
if [[ $UPDATE == 1 ]]; then
  cp "$OUT/verdicts.jsonl" "$BASELINE"
  echo "$BASELINE"
  exit 0
fi
compare "$BASELINE" "$OUT/verdicts.jsonl"
