"""Which part of mcoder may import which: the layers, lowest first (ARCHITECTURE.md explains them).

A package or top-level module of src/mcoder imports only from its own package and from lower
layers; the base layer's modules may also import each other (test_structure.py keeps every
import acyclic). Imports inside functions count: a late import is still a dependency. New code
must be placed: a package or module in no layer fails the test, and so does one in two.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

# (layer, its packages and top-level modules; "__init__" is mcoder/__init__.py itself)
LAYERS: list[tuple[str, set[str]]] = [
    (
        "base",
        {
            "__init__",
            "errors",
            "console",
            "printable",
            "config",
            "records",
            "jsonl",
            "outputs",
            "safe_ast",
            "prompts",
            "extract",
            "models",
            "reporting",
            "testing",
        },
    ),
    ("shared", {"formats", "engines"}),
    ("stages", {"judge", "rollout"}),
    ("stages built on stages", {"dataset", "train", "warmstart"}),
    ("integrations", {"integrations"}),
    ("loop", {"loop"}),
    ("after training", {"bench", "export"}),
    ("viewer", {"show"}),
    ("command line", {"cli"}),
    ("python -m mcoder", {"__main__"}),
]
PEERS_ALLOWED = {"base"}


def _units(package: Path) -> set[str]:
    """The top-level packages and modules of a package folder."""
    return {
        p.stem if p.is_file() else p.name
        for p in package.iterdir()
        if p.is_file() and p.suffix == ".py" or p.is_dir() and (p / "__init__.py").is_file()
    }


def _module_name(src: Path, path: Path) -> str:
    return ".".join(path.relative_to(src).with_suffix("").parts).removesuffix(".__init__")


def _imports(src: Path, path: Path) -> list[str]:
    """Every module name an mcoder file imports (``from a import b`` gives ``a.b``), at any depth."""
    name = _module_name(src, path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            found += [f"{base}.{a.name}" for a in node.names]
    return [f for f in found if f == "mcoder" or f.startswith("mcoder.")]


def _unit(src: Path, name: str) -> str:
    """The layer table's entry a module name falls in (``mcoder.judge.core`` -> ``judge``)."""
    parts = name.split(".")
    if parts[-1] == "__main__":  # an entry point (python -m mcoder, python -m mcoder.warmstart): the top
        return "__main__"
    if len(parts) == 1 or parts[1] not in _units(src / "mcoder"):
        return "__init__"  # `import mcoder` or `from mcoder import __version__`
    return parts[1]


def _violations(src: Path, layers: list[tuple[str, set[str]]], peers: set[str]) -> list[str]:
    """``a.b imports c.d`` for each import of a higher layer, or of a same-layer peer where the
    layer does not allow it."""
    rank = {u: (i, layer) for i, (layer, units) in enumerate(layers) for u in units}
    out = []
    for path in sorted((src / "mcoder").rglob("*.py")):
        me = _module_name(src, path)
        mine = _unit(src, me)
        for target in _imports(src, path):
            theirs = _unit(src, target)
            if theirs == mine:
                continue
            (i, layer), (j, _) = rank[mine], rank[theirs]
            if j > i or j == i and layer not in peers:
                out.append(f"{me} imports {target}")
    return out


def test_every_package_and_module_is_in_exactly_one_layer():
    placed = [u for _, units in LAYERS for u in units]
    twice = sorted({u for u in placed if placed.count(u) > 1})
    assert twice == [], f"in more than one layer: {twice}"
    units = _units(SRC / "mcoder")
    assert len(units) > 20, "the packages were found"
    assert sorted(units - set(placed)) == [], "place these in a layer of LAYERS (ARCHITECTURE.md)"
    assert sorted(set(placed) - units) == [], "these are in LAYERS but no longer in src/mcoder"


def test_no_import_reaches_up_a_layer():
    assert _violations(SRC, LAYERS, PEERS_ALLOWED) == []


def _documented_layers(page: str) -> list[tuple[str, set[str], str]]:
    """ARCHITECTURE.md's layer table: (layer, its packages, what it may import) per row, in order."""
    rows = []
    section = page.split("\n## Layers", 1)[1].split("\n## ", 1)[0]
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].isdigit():
            rows.append((cells[1], {n for code in re.findall(r"`([^`]+)`", cells[2]) for n in code.split()}, cells[3]))
    return rows


def test_architecture_md_shows_the_layers_this_test_enforces():
    rows = _documented_layers((SRC.parent / "ARCHITECTURE.md").read_text(encoding="utf-8"))
    documented = [(layer, units) for layer, units, _ in rows]
    # mcoder/__init__.py (the version only) is in the base layer; the page says so in its prose
    enforced = [(layer, units - {"__init__"}) for layer, units in LAYERS]
    assert documented == enforced, "ARCHITECTURE.md's layer table and LAYERS differ: change both"
    assert [layer for layer, _, may in rows if may == "each other"] == sorted(PEERS_ALLOWED)


def test_the_layer_table_reader_reads_a_table(tmp_path):
    page = (
        "# A\n\n## Layers: what may import what\n\n| # | layer | packages | may import |\n|---|---|---|---|\n"
        "| 1 | base | `errors console` | each other |\n| 2 | top | `cli` | everything |\n\n## Next\n| 3 | x | `y` | z |\n"
    )
    assert _documented_layers(page) == [
        ("base", {"errors", "console"}, "each other"),
        ("top", {"cli"}, "everything"),
    ]  # the next section's table is not read


def test_the_checker_finds_imports_up_a_layer_and_across_a_layer(tmp_path):
    pkg = tmp_path / "mcoder"
    for folder in ("low", "high", "side"):
        (pkg / folder).mkdir(parents=True)
        (pkg / folder / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("__version__ = '0'\n")
    (pkg / "base.py").write_text("from mcoder import __version__\n")
    (pkg / "low" / "a.py").write_text(
        "from mcoder import base\nfrom . import b\n\ndef f():\n    from mcoder.high.c import g\n"
    )
    (pkg / "low" / "b.py").write_text("import mcoder.side.d\n")
    (pkg / "high" / "c.py").write_text("from ..low import a\nfrom mcoder.side import d\n")
    (pkg / "side" / "d.py").write_text("")
    layers = [("base", {"__init__", "base"}), ("low", {"low", "side"}), ("high", {"high"})]
    assert _violations(tmp_path, layers, {"base"}) == [
        "mcoder.low.a imports mcoder.high.c.g",  # inside a function, and up a layer
        "mcoder.low.b imports mcoder.side.d",  # a peer of its layer
    ]
    assert _violations(tmp_path, layers, {"base", "low"}) == ["mcoder.low.a imports mcoder.high.c.g"]
