"""Compare two folders written by scripts/record_outputs.sh (two versions of mcoder, one machine):
every file must be the same, byte for byte, except for what records when and how fast something ran.

    python scripts/compare_outputs.py BEFORE AFTER

JSON and JSONL files are compared as data with those values left out (wall and CPU times, rates,
timestamps, the folder's own path); every other file byte for byte. Prints each difference and
exits 1 if there is one, 0 if none.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

# Keys whose values say when or how fast, not what: left out of the comparison.
VOLATILE = re.compile(
    r"^(time/.*|.*_s|.*seconds.*|elapsed.*|tokens_per_s|rollout_tokens_per_s|created(_at)?|started(_at)?|"
    r"finished(_at)?|written(_at)?|mtime.*|date|timestamp|host|pid|mcoder_version)$"
)
SKIP = re.compile(r"(\.lock$|/\.mcoder-|/tensorboard/|/wandb/|\.log$)")


def scrub(value, root: str):
    if isinstance(value, dict):
        return {k: scrub(v, root) for k, v in value.items() if not VOLATILE.match(k)}
    if isinstance(value, list):
        return [scrub(v, root) for v in value]
    if isinstance(value, str):
        return value.replace(root, "<OUT>")
    return value


def load(path: Path, root: str):
    text = path.read_text(errors="replace")
    try:
        if path.suffix == ".jsonl":
            return [scrub(json.loads(line), root) for line in text.splitlines() if line.strip()]
        return scrub(json.loads(text), root)
    except json.JSONDecodeError:
        return text.replace(root, "<OUT>")


def same(a: Path, b: Path, ra: str, rb: str) -> bool:
    if a.suffix in (".json", ".jsonl", ".md", ".txt", ".out", ".html"):
        return load(a, ra) == load(b, rb)
    return a.read_bytes() == b.read_bytes()


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    before, after = (Path(x).resolve() for x in argv)
    files = {p.relative_to(before) for p in before.rglob("*") if p.is_file() and not SKIP.search(str(p))}
    files |= {p.relative_to(after) for p in after.rglob("*") if p.is_file() and not SKIP.search(str(p))}
    differ = []
    for rel in sorted(files):
        a, b = before / rel, after / rel
        if not a.exists() or not b.exists():
            differ.append(f"only in {'AFTER' if not a.exists() else 'BEFORE'}: {rel}")
        elif not same(a, b, str(before), str(after)):
            differ.append(f"differs: {rel}")
    for line in differ:
        print(line)
    print(f"{len(files)} files, {len(differ)} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
