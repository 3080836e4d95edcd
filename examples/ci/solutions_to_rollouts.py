"""A folder of solution files as an mcoder rollouts file, for judging them in CI.

    python solutions_to_rollouts.py SOLUTIONS_DIR ROLLOUTS.jsonl

Each ``<problem_id>.py`` becomes one rollout (id ``<problem_id>/ci/0``) whose completion is the
file's whole text: the judge runs it as the candidate program. Exit 3 (mcoder's "bad input")
when the folder holds no such file, 2 on wrong arguments.
"""

import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    folder, out = Path(argv[0]), Path(argv[1])
    files = sorted(folder.glob("*.py")) if folder.is_dir() else []
    if not files:
        print(f"error: no <problem_id>.py files in {folder}", file=sys.stderr)
        return 3
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w") as f:
        for path in files:
            row = {"id": f"{path.stem}/ci/0", "problem_id": path.stem, "completion": path.read_text()}
            f.write(json.dumps(row) + "\n")
    print(f"{len(files)} solution files -> {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
