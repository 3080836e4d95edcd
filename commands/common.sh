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

# claim_folder DIR MARKER [FLAG]: make DIR this script's output folder, or stop with exit 2. A script that
# removes or replaces files under its --out must not do so in someone else's folder: DIR is refused
# where mcoder's stages refuse an output (a link, a device, a FIFO, a file, a path under a file or
# where nothing can be written) and when it is a non-empty folder without MARKER, the file this
# leaves in every folder it accepts (mcoder.outputs.claim_folder). FLAG (default --out) is how the
# messages name DIR. Runs from the source tree too.
claim_folder() {
  PYTHONPATH="$REPO_DIR/src${PYTHONPATH:+:$PYTHONPATH}" "${PY:-python3}" - "$1" "$2" "${3:---out}" <<'PY' || exit 2
import sys

from mcoder.errors import McoderError
from mcoder.outputs import claim_folder

try:
    claim_folder(sys.argv[1], sys.argv[2], flag=sys.argv[3])
except McoderError as e:
    print(e.plain(), file=sys.stderr)
    sys.exit(2)
except OSError as e:
    print(f"error: {sys.argv[3]} {sys.argv[1]}: {e.strerror or e}", file=sys.stderr)
    sys.exit(2)
PY
}
