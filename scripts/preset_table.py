"""The table of the presets in docs/algorithm.md, made from the recipe files (src/mcoder/recipes,
each algorithm's preset): a preset's value is written once, in its recipe.

    python scripts/preset_table.py           # rewrite the table in docs/algorithm.md
    python scripts/preset_table.py --check   # exit 1 when the table there is not current

tests/train/test_preset_values.py checks that the table is current.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from mcoder.config import flag
from mcoder.train.config import ALGOS, TrainConfig, preset_temperature, presets, resolve

DOC = Path(__file__).resolve().parents[1] / "docs" / "algorithm.md"
BEGIN = "<!-- the presets' values: made by scripts/preset_table.py from the recipe files; not edited by hand -->"
END = "<!-- end of the presets' values -->"


def shown(value: object) -> str:
    return "on" if value is True else "off" if value is False else str(value)


def table() -> str:
    """Markdown: one row per setting a preset sets (in the fields' order; a preset that leaves
    it shows the value it runs with, the field's default, in parentheses), then the loop's
    sampling temperature."""
    sets = presets()
    names = {name for values in sets.values() for name in values}
    configs = {algo: resolve(algo) for algo in ALGOS}
    rows = [
        "| setting | " + " | ".join(f"`{a}`" for a in ALGOS) + " |",
        "|---" * (len(ALGOS) + 1) + "|",
    ]
    for f in dataclasses.fields(TrainConfig):
        if f.name in names:
            values = (
                shown(getattr(configs[a], f.name)) if f.name in sets[a] else f"({shown(getattr(configs[a], f.name))})"
                for a in ALGOS
            )
            rows.append(f"| `{flag(f.name)}` | " + " | ".join(values) + " |")
    rows.append("| `--temperature` (the loop's sampling) | " + " | ".join(preset_temperature(a) for a in ALGOS) + " |")
    return "\n".join(rows) + "\n"


def current(text: str) -> str:
    """``text`` (docs/algorithm.md) with the table between its markers made again."""
    head, sep, rest = text.partition(BEGIN + "\n")
    _, sep2, tail = rest.partition(END)
    if not (sep and sep2):
        raise SystemExit(f"{DOC}: the markers of the presets' table are missing")
    return head + BEGIN + "\n" + table() + END + tail


def main(argv: list[str]) -> int:
    text = DOC.read_text(encoding="utf-8")
    if "--check" in argv:
        if current(text) != text:
            print(f"{DOC}: the presets' table is not current: python scripts/preset_table.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(current(text), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
