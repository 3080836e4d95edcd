# Shared by the scripts in this folder (sourced, not run): the mcoder to call, logging, the tiny model.
# The training recipes themselves are files in ../recipes/ (mcoder loop --config FILE).
# shellcheck shell=bash

# The mcoder on PATH, or $MCODER (e.g. MCODER=".venv/bin/mcoder" or "python -m mcoder").
MCODER="${MCODER:-mcoder}"
read -r -a MC <<<"$MCODER"

COMMANDS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(dirname "$COMMANDS_DIR")"

say() { printf '\n== %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 2; }

# ensure_model DIR: build the tiny random Qwen3 there unless DIR already holds a model.
ensure_model() {
  local dir="$1"
  if [[ ! -f "$dir/config.json" ]]; then
    say "tiny model -> $dir"
    "${PY:-python3}" -m mcoder.testing "$dir" >/dev/null
  fi
}

# The Python that has mcoder importable: beside the mcoder executable when it is a path.
if [[ -z "${PY:-}" ]]; then
  if [[ "${MC[0]}" == */* && -x "$(dirname "${MC[0]}")/python" ]]; then
    PY="$(dirname "${MC[0]}")/python"
  elif [[ "${MC[0]}" == *python* ]]; then
    PY="${MC[0]}"
  else
    PY="$(dirname "$(command -v "${MC[0]}" 2>/dev/null || echo python3)")/python"
    [[ -x "$PY" ]] || PY=python3
  fi
fi
