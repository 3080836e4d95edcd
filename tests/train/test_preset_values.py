"""A preset's value is written once: in its recipe file (src/mcoder/recipes/ALGO.toml). The docs'
table of the presets is made from those files (scripts/preset_table.py), and no other source,
doc or field docstring states a preset's value again."""

from __future__ import annotations

import importlib.util
import re
import subprocess
from pathlib import Path

from mcoder.train.config import presets

ROOT = Path(__file__).resolve().parents[2]


def preset_table():
    spec = importlib.util.spec_from_file_location("preset_table", ROOT / "scripts" / "preset_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_docs_table_of_the_presets_is_made_from_the_recipe_files():
    gen = preset_table()
    text = gen.DOC.read_text(encoding="utf-8")
    assert gen.current(text) == text, "docs/algorithm.md's table is stale: python scripts/preset_table.py"
    for algo, values in presets().items():
        assert f"`{algo}`" in gen.table()
        for value in values.values():
            assert gen.shown(value) in gen.table()


# How the docs and the code name a setting besides its field name (test knowledge, not a setting).
SYMBOLS = {
    "eps_low": ("ε", "epsilon"),
    "eps_high": ("ε_high", "clip-higher", "epsilon_high"),
    "beta": ("β",),
    "mask_rho": ("ρ", "rho"),
    "mask_repeat_m": ("m",),
}
# The files that state what mcoder's presets are: the package's code and docs, and the pages of
# docs/. Not scanned: tests (values given as inputs), benchmarks and examples/ (the settings of
# runs that were measured), commands/ (the demo's own settings).
SCANNED = ("src/", "docs/", "README.md", "ARCHITECTURE.md")
# Statements of another setting that has a preset's number, each with what it is.
OTHER_SETTINGS = {
    ("README.md", "β 0.04"): "the demo's KL to its warm start (commands/demo.sh --beta), its own setting",
    ("docs/measurements.md", "β 0.04"): "as README.md: the demo's KL to its warm start",
}


def statements(name: str, value: object) -> re.Pattern[str]:
    """``name`` bound to ``value``: ``eps_high = 0.28``, ``eps_high: float = 0.28``,
    ``"eps_high": 0.28``, ``--eps-high 0.28``, ``ε_high 0.28``, ``ε_high = 0.28``."""
    names = (name, "--" + name.replace("_", "-"), *SYMBOLS.get(name, ()))
    spelled = "|".join(re.escape(n) for n in names)
    return re.compile(
        rf"(?<![\w-])({spelled})['\"]?\s*(?::\s*[A-Za-z_][\w\[\], |]*)?\s*(?:=|:|\s)\s*{re.escape(repr(value))}(?![\d.])"
    )


def scanned_files() -> dict[str, str]:
    listed = subprocess.run(["git", "ls-files", *SCANNED], cwd=ROOT, capture_output=True, text=True, check=True)
    out = {}
    for rel in listed.stdout.split():
        path = ROOT / rel
        if path.suffix not in (".py", ".md", ".toml") or (rel.startswith("src/mcoder/recipes/") and path.suffix == ".toml"):
            continue  # a recipe file is where its preset's values are written
        text = path.read_text(encoding="utf-8")
        if rel == "docs/algorithm.md":  # the table made from the recipe files
            gen = preset_table()
            head, _, rest = text.partition(gen.BEGIN)
            text = head + rest.partition(gen.END)[2]
        out[rel] = text
    return out


def test_a_preset_value_is_written_once_in_its_recipe_file():
    files = scanned_files()
    assert "src/mcoder/train/config.py" in files and "docs/usage.md" in files
    found = []
    for algo, values in presets().items():
        for name, value in values.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value == 0:
                continue  # on/off and zero (no KL, no clip) say what a setting does, not a chosen number
            pattern = statements(name, value)
            for rel, text in files.items():
                for number, line in enumerate(text.splitlines(), start=1):
                    for m in pattern.finditer(line):
                        if (rel, m.group(0).strip()) not in OTHER_SETTINGS:
                            found.append(f"{rel}:{number}: {m.group(0).strip()!r} ({algo}'s {name})")
    assert not found, "a preset's value written again (write it in its recipe only):\n" + "\n".join(sorted(set(found)))


def test_the_scan_finds_a_value_written_again():
    """The scan itself: each way a value is stated is found; other numbers are not."""
    pattern = statements("eps_high", 0.28)
    for line in ('eps_high: float = 0.28', '"eps_high": 0.28,', "eps_high=0.28", "--eps-high 0.28",
                 "DAPO: clip-higher 0.28", "ε_high = 0.28", "| ε_high 0.28 |"):  # fmt: skip
        assert pattern.search(line), line
    for line in ("eps_high: float = 0.285", "eps_low = 0.28", "from 0.28 to 0.42", "eps_high = 10.28"):
        assert not pattern.search(line), line
