"""Compare two folders written by scripts/record_outputs.sh (two versions of mcoder, one machine):
every file must be the same, byte for byte, except for what records when and how fast something ran.

    python scripts/compare_outputs.py BEFORE AFTER

Left out of the comparison: values that say when or how fast (wall and CPU times, rates,
timestamps), the folders the two records and their checkouts live in, and the size and sha256 a
sidecar or model card states of a file that holds such values (the file itself is compared).
JSON and JSONL files are compared as data with those values left out; a line of a text file that
is a JSON object likewise; a Markdown table's cells under a time heading are left out; every other
file byte for byte. JSONL files whose records are the same but in another order (the judge writes
verdicts in the order its workers finish them) are listed apart and are not a difference. Prints
each difference and exits 1 if there is one, 0 if none.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

# Keys whose values say when or how fast, not what: left out of the comparison.
VOLATILE = re.compile(
    r"^(time/.*|.*_s|.*seconds.*|elapsed.*|tokens_per_s|rollout_tokens_per_s|created(_at)?|started(_at)?|"
    r"finished(_at)?|written(_at)?|updated|mtime.*|date|timestamp|host|pid|mcoder_version|sha256|size)$"
)
SKIP = re.compile(r"(\.lock$|/\.mcoder-|/tensorboard/|/wandb/|\.log$)")
# A checkout's files named by absolute path (the bundled problems, the recipes): the checkout's folder.
CHECKOUT = re.compile(r"(?:/[^/\s`'\",|]+)+?/(?=examples/|src/mcoder/|recipes/)")
SHA = re.compile(r"\b[0-9a-f]{64}\b")
SIZE_BEFORE_SHA = re.compile(r"\| \d+ \| `<sha256>`")
TIME_HEADING = re.compile(r"(seconds|time|elapsed|/s\b|\(s\)|per s)", re.IGNORECASE)


def plain(text: str, root: str) -> str:
    text = CHECKOUT.sub("<CHECKOUT>/", text.replace(root, "<OUT>"))
    return SIZE_BEFORE_SHA.sub("| <size> | `<sha256>`", SHA.sub("<sha256>", text))


def scrub(value, root: str):
    if isinstance(value, dict):
        return {plain(k, root): scrub(v, root) for k, v in value.items() if not VOLATILE.match(k)}
    if isinstance(value, list):
        return [scrub(v, root) for v in value]
    if isinstance(value, str):
        return plain(value, root)
    return value


def text_lines(text: str, root: str) -> list:
    """Each line scrubbed: a JSON object as data, a table row without its time cells, else text."""
    out, heading = [], None
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                out.append(scrub(json.loads(line), root))
                continue
            except json.JSONDecodeError:
                pass
        line = plain(line, root)
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if heading is None or len(cells) != len(heading):
                heading = cells
            elif not set(line) <= set("|-: "):
                cells = ["<time>" if TIME_HEADING.search(h) else c for h, c in zip(heading, cells)]
            out.append(cells)
            continue
        heading = None
        out.append(line)
    return out


def load(path: Path, root: str):
    text = path.read_text(errors="replace")
    try:
        if path.suffix == ".jsonl":
            return [scrub(json.loads(line), root) for line in text.splitlines() if line.strip()]
        return scrub(json.loads(text), root)
    except json.JSONDecodeError:
        return text_lines(text, root)


def compared(a: Path, b: Path, ra: str, rb: str) -> str:
    """'same', 'order' (a JSONL file's records in another order) or 'differs'."""
    if a.suffix not in (".json", ".jsonl", ".md", ".txt", ".out", ".html"):
        return "same" if a.read_bytes() == b.read_bytes() else "differs"
    x, y = load(a, ra), load(b, rb)
    if x == y:
        return "same"
    if a.suffix == ".jsonl" and isinstance(x, list) and isinstance(y, list):
        key = lambda r: json.dumps(r, sort_keys=True)
        if Counter(map(key, x)) == Counter(map(key, y)):
            return "order"
    return "differs"


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    before, after = (Path(x).resolve() for x in argv)
    files = {p.relative_to(before) for p in before.rglob("*") if p.is_file() and not SKIP.search(str(p))}
    files |= {p.relative_to(after) for p in after.rglob("*") if p.is_file() and not SKIP.search(str(p))}
    differ, order = [], []
    for rel in sorted(files):
        a, b = before / rel, after / rel
        if not a.exists() or not b.exists():
            differ.append(f"only in {'AFTER' if not a.exists() else 'BEFORE'}: {rel}")
            continue
        outcome = compared(a, b, str(before), str(after))
        if outcome == "order":
            order.append(f"same records, another order: {rel}")
        elif outcome == "differs":
            differ.append(f"differs: {rel}")
    for line in order + differ:
        print(line)
    print(f"{len(files)} files, {len(differ)} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
