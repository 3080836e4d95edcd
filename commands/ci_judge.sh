#!/usr/bin/env bash
# A CI judging job: judge a folder of solution files against a problem set and fail on a
# regression against saved baseline verdicts. A thin example over mcoder's own CI gates
# (`mcoder bench --baseline B --fail-on-regression --junit FILE`); examples/ci/ holds the same
# job as a GitHub Actions workflow and a GitLab job.
#
#   ci_judge.sh --problems problems.jsonl --solutions DIR --baseline baseline.jsonl [--out DIR]
#
# DIR holds one file per problem, <problem_id>.py (its whole text is the candidate program).
# A regression is a problem whose baseline verdict passed and whose current one does not (or
# that has no solution file any more); mcoder bench names each one and the job exits 5. New
# passes are reported and never fail the job. --update-baseline writes the current verdicts as
# the baseline.
#
# Exit codes are mcoder's, so that CI can tell a worse solution from a broken job:
#   0  no regression
#   5  regression (each one named on stderr; JUnit XML in OUT/junit.xml)
#   2  usage: unknown or missing arguments (or mcoder refused its flags)
#   3  bad input: no <problem_id>.py files in DIR, no baseline file, unreadable problems or verdicts
#   4  missing environment (e.g. no sandbox for mcoder judge)
#   1  internal error: mcoder or this script failed in a way that is a bug, not a verdict
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage() {
  cat <<USAGE
usage: $(basename "$0") --problems FILE --solutions DIR --baseline FILE [--out DIR] [--update-baseline]
       $(basename "$0") --smoke [--out DIR]

  --problems FILE    problems JSONL (mcoder records)
  --solutions DIR    <problem_id>.py files
  --baseline FILE    verdicts JSONL of an earlier, accepted run
  --out DIR          where rollouts.jsonl, verdicts.jsonl and junit.xml go (default runs/ci-judge)
  --update-baseline  copy the current verdicts over the baseline and exit 0
  --smoke            self-check on examples/ci: a clean run passes, a broken solution fails
Exit: 0 no regression, 5 regression, 2 usage, 3 bad input (no solution files, no baseline,
bad data), 4 missing environment, 1 internal error.
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

EXIT_REGRESSION=5 EXIT_BAD_INPUT=3 EXIT_INTERNAL=1
bad_input() { printf 'error: %s\n' "$*" >&2; exit $EXIT_BAD_INPUT; }

# passthrough RC: exit with mcoder's code where it means usage, data, environment or a failed
# gate; anything else (a crash, a command that is not mcoder) is an internal error.
passthrough() {
  case "$1" in
    2|3|4|5|130) exit "$1" ;;
    *) printf 'error: internal error (exit %s); see the messages above\n' "$1" >&2; exit $EXIT_INTERNAL ;;
  esac
}

# judge_folder PROBLEMS SOLUTIONS OUT: solution files -> rollouts.jsonl -> verdicts.jsonl
judge_folder() {
  local problems="$1" solutions="$2" out="$3" rc=0
  "$PY" "$REPO_DIR/examples/ci/solutions_to_rollouts.py" "$solutions" "$out/rollouts.jsonl" || passthrough $?
  "${MC[@]}" judge --problems "$problems" --rollouts "$out/rollouts.jsonl" --out "$out/verdicts.jsonl" \
    --overwrite -q || rc=$?
  [[ $rc == 0 ]] || passthrough "$rc"
}

# gate PROBLEMS BASELINE OUT: mcoder bench's regression gate; returns 5 on a regression,
# exits on anything that is not a verdict about the solutions.
gate() {
  local rc=0
  "${MC[@]}" bench --problems "$1" --verdicts "$3/verdicts.jsonl" --baseline "$2" \
    --fail-on-regression --junit "$3/junit.xml" || rc=$?
  [[ $rc == 0 || $rc == "$EXIT_REGRESSION" ]] || passthrough "$rc"
  return "$rc"
}

if [[ $SMOKE == 1 ]]; then
  # The bundled solutions of examples/ci judged as the baseline and again (no regression); then
  # one solution broken on purpose must make the gate fail and name that problem. It replaces the
  # .py files of OUT/solutions: only in a folder it made (common.sh claim_folder).
  claim_folder "$OUT" .mcoder-ci-judge-smoke
  mkdir -p "$OUT/solutions"
  rm -f "$OUT/solutions/"*.py
  cp "$REPO_DIR/examples/ci/solutions/"*.py "$OUT/solutions/"
  problems="$REPO_DIR/examples/ci/problems.jsonl"
  say "baseline from the bundled solutions"
  judge_folder "$problems" "$OUT/solutions" "$OUT/baseline"
  say "same solutions: expect no regression"
  judge_folder "$problems" "$OUT/solutions" "$OUT/current"
  gate "$problems" "$OUT/baseline/verdicts.jsonl" "$OUT/current"
  say "one solution broken: expect a regression (exit 5)"
  broken="$(ls "$OUT/solutions"/mc-stdin-*.py | head -1)"
  printf 'print("wrong")\n' >"$broken"
  judge_folder "$problems" "$OUT/solutions" "$OUT/broken"
  if gate "$problems" "$OUT/baseline/verdicts.jsonl" "$OUT/broken"; then
    die "smoke: the broken solution was not reported as a regression"
  fi
  echo "smoke ok: regression of $(basename "$broken" .py) detected"
  echo "$OUT/baseline/verdicts.jsonl"
  exit 0
fi

[[ -n "$PROBLEMS" && -n "$SOLUTIONS" && -n "$BASELINE" ]] || { usage >&2; die "--problems, --solutions and --baseline are required"; }
[[ -d "$SOLUTIONS" ]] || bad_input "no solutions folder $SOLUTIONS"
[[ $UPDATE == 1 || -f "$BASELINE" ]] || bad_input "no baseline $BASELINE (create one with --update-baseline)"
mkdir -p "$OUT"
judge_folder "$PROBLEMS" "$SOLUTIONS" "$OUT"
if [[ $UPDATE == 1 ]]; then
  cp "$OUT/verdicts.jsonl" "$BASELINE"
  echo "$BASELINE"
  exit 0
fi
gate "$PROBLEMS" "$BASELINE" "$OUT"
