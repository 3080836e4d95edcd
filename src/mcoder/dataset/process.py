"""Stage 2, process: each collected row as a Problem, or as the reason it gives none.

The adapter converts the row (``Skip`` for a row without a usable problem, ``DataError`` for a
malformed one); then problems without a statement, interactive problems (judged by an
interactor, not by stdin tests) and repeated ids are set aside. The first row with an id keeps it.
"""

from __future__ import annotations

from collections.abc import Iterator

from mcoder.dataset.collect import Row
from mcoder.dataset.fields import Skip
from mcoder.dataset.report import Removal
from mcoder.dataset.statement import is_interactive
from mcoder.records import Problem

STAGE = "convert"


def process(rows: Iterator[Row]) -> Iterator[tuple[Row, Problem | Removal]]:
    """Each row with its Problem, or with the ``Removal`` naming the row and the reason."""
    first_seen: dict[str, str] = {}  # problem id -> where its first row was read
    for row in rows:
        try:
            problem = row.adapter.convert(row.data, row.ref)
        except Skip as s:
            yield row, _removal(row, s.reason)
            continue
        if not problem.question.strip():
            yield row, _removal(row, "empty statement")
        elif problem.test_kinds == {"stdin"} and is_interactive(problem.question, problem.meta.get("tags")):
            yield row, _removal(row, "interactive (judged by an interactor, not by stdin tests)")
        elif problem.id in first_seen:
            yield row, _removal(row, "duplicate id", id=problem.id, first=first_seen[problem.id])
        else:
            first_seen[problem.id] = row.ref.where()
            yield row, problem


def _removal(row: Row, reason: str, **detail: str) -> Removal:
    return Removal(row.ref.where(), STAGE, reason, detail, text=reason)
