"""How different the G completions of one group are from each other, as a number in [0, 1].

- lexical: distinct n-grams across the group. For each completion take the set of its word
  n-grams; D = (|union| / sum of set sizes - 1/G) / (1 - 1/G), averaged over n = 1..4. G copies of
  one text give 0, texts that share no n-gram give 1. Sets (not counts) keep a completion that
  repeats itself from looking diverse: only differences *between* samples count.
- program: distinct programs after normalising the extracted code's AST (names renamed in order
  of first use, docstrings dropped, formatting and comments gone): D = (distinct - 1) / (G - 1).
  (n-gram orders longer than every completion are left out of the lexical mean.)
  Text that does not parse counts as the program of its whitespace-collapsed text.

A group of fewer than two completions has no diversity to measure (0).
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from statistics import fmean

from mcoder import safe_ast

NGRAM_ORDERS = (1, 2, 3, 4)
_WORD = re.compile(r"\w+|[^\w\s]")
_FENCE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL | re.IGNORECASE)


def lexical_diversity(texts: Sequence[str], orders: Sequence[int] = NGRAM_ORDERS) -> float:
    if len(texts) < 2:
        return 0.0
    words = [_WORD.findall(t) for t in texts]
    ratios = [_distinct_ratio(sets) for n in orders if any(sets := [_ngrams(w, n) for w in words])]
    return fmean(ratios) if ratios else 0.0  # orders longer than every text are left out


def _ngrams(words: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def _distinct_ratio(sets: list[set]) -> float:
    g = len(sets)
    total = sum(len(s) for s in sets)
    union = len(set().union(*sets))
    return max(0.0, (union / total - 1 / g) / (1 - 1 / g))


def program_diversity(texts: Sequence[str]) -> float:
    if len(texts) < 2:
        return 0.0
    distinct = len({normalized_program(t) for t in texts})
    return (distinct - 1) / (len(texts) - 1)


def extract_code(text: str) -> str:
    """The last fenced code block, or the whole text when there is none."""
    blocks = _FENCE.findall(text)
    return blocks[-1] if blocks else text


def normalized_program(text: str) -> str:
    """A canonical form of the program in ``text``: equal for programs that differ only in names,
    comments, docstrings and layout."""
    code = extract_code(text)
    try:
        tree = safe_ast.parse(code)
    except (SyntaxError, ValueError):
        return "unparsed:" + " ".join(code.split())
    tree = _Canonical().visit(tree)
    return ast.dump(tree, annotate_fields=False, include_attributes=False)


class _Canonical(ast.NodeTransformer):
    """Rename variables, arguments and defined functions to v0, v1, ... in order of first use,
    and drop docstrings. Attribute names and calls to builtins keep their names (they matter)."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.defined: set[str] = set()

    def _rename(self, name: str) -> str:
        return self.names.setdefault(name, f"v{len(self.names)}")

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if isinstance(node.ctx, ast.Store) or node.id in self.names:
            node.id = self._rename(node.id)
        return node

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.arg = self._rename(node.arg)
        node.annotation = None
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.name = self._rename(node.name)
        _drop_docstring(node)
        self.generic_visit(node)
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        _drop_docstring(node)
        self.generic_visit(node)
        return node


def _drop_docstring(node: ast.AST) -> None:
    body = getattr(node, "body", None)
    if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)):
        node.body = body[1:] or [ast.Pass()]


MEASURES = {"lexical": lexical_diversity, "program": program_diversity}


def group_texts(rollouts: Iterable) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = defaultdict(list)
    for r in rollouts:
        groups[r.problem_id].append(r.completion)
    return groups


def batch_diversity(rollouts: Iterable) -> dict[str, float]:
    """Mean diversity over the groups (rollouts sharing a problem_id) of one batch."""
    groups = [g for g in group_texts(rollouts).values() if len(g) >= 2]
    if not groups:
        return {f"diversity/{name}": 0.0 for name in MEASURES}
    return {f"diversity/{name}": fmean(fn(g) for g in groups) for name, fn in MEASURES.items()}
