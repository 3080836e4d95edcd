"""Dataset step 2 of 4, process: each collected row as a Problem, or as the reason it gives none.

The adapter converts the row (``Skip`` for a row without a usable problem, ``OverBudget`` for
one whose data exceeds a budget, ``DataError`` for a malformed one); ``check_problem`` makes
sure the problem can be written exactly; then problems without a statement, problems whose every
test expects no output (any silent program would pass them) and interactive problems (judged by
an interactor, not by stdin tests) are set aside. Ids: the first row with an
id keeps it; a later row with the same id and the same problem (statement, starter code,
function and tests) is set aside as a duplicate, and one with a different problem is an error:
two problems never share an id, and neither is dropped silently.

Every exception while reading a row ends here as something about that row: a skip, or a
DataError naming the row (``UnreadableRow`` for an error the adapter did not foresee, which the
fuzzing suite checks never happens).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import orjson

from mcoder.console import warn
from mcoder.dataset.budget import OverBudget, Skip
from mcoder.dataset.collect.sources import Unread
from mcoder.dataset.collect.step import Row
from mcoder.dataset.process.check import check_problem
from mcoder.dataset.process.statement import is_interactive
from mcoder.dataset.report import Removal
from mcoder.errors import DataError
from mcoder.records import Problem

STAGE = "convert"


class UnreadableRow(DataError):
    """A row whose reading raised an error no adapter check names (a gap in the adapter)."""


def process(rows: Iterator[Row]) -> Iterator[tuple[Row, Problem | Removal]]:
    """Each row with its Problem, or with the ``Removal`` naming the row and the reason."""
    first_seen: dict[str, tuple[str, bytes]] = {}  # problem id -> (where its first row was, content digest)
    for row in rows:
        try:
            problem = convert(row)
        except OverBudget as e:
            yield row, _over_budget(row, e)
            continue
        except Skip as s:
            yield row, _removal(row, s.reason)
            continue
        if not problem.question.strip():
            yield row, _removal(row, "empty statement")
        elif problem.tests and all(t.kind == "stdin" and not t.output.strip() for t in problem.tests):
            yield row, _removal(row, "every test expects no output (a program that prints nothing would pass)")
        elif problem.test_kinds == {"stdin"} and is_interactive(problem.question, problem.meta.get("tags")):
            yield row, _removal(row, "interactive (judged by an interactor, not by stdin tests)")
        elif problem.id in first_seen:
            where, digest = first_seen[problem.id]
            if digest != content_digest(problem):
                raise row.ref.error(
                    f"id {problem.id!r} was given to a different problem at {where}",
                    field="id",
                    hint="two problems cannot share an id: fix the source's ids, or build the sources separately",
                )
            yield row, _removal(row, "duplicate id", id=problem.id, first=where)
        else:
            first_seen[problem.id] = (row.ref.where(), content_digest(problem))
            yield row, problem


def convert(row: Row) -> Problem:
    """The row's checked Problem; raises Skip, OverBudget or the row's DataError, nothing else."""
    if isinstance(row.data, Unread):
        raise row.data.skip
    try:
        problem = row.adapter.convert(row.data, row.ref)
        check_problem(problem, row.ref)
    except (Skip, DataError):
        raise
    except RecursionError:
        raise OverBudget("depth", row.ref.limits.depth, None) from None
    except MemoryError:
        raise row.ref.error("not enough memory to convert this row", hint="run with more memory") from None
    except Exception as e:  # a gap in the adapter: still about this row, never the run's crash
        detail = f"{type(e).__name__}: {e}"[:300]
        ref = row.ref
        raise UnreadableRow(
            f"cannot read this row ({detail})",
            path=ref.path if ref.line is not None else ref.where(),
            line=ref.line,
            hint="the row does not have the shape its format expects; fix or drop it",
        ) from e
    return problem


def content_digest(p: Problem) -> bytes:
    """What makes two problems the same problem (their provenance aside)."""
    data = orjson.dumps(
        [p.question, p.starter_code, p.fn_name, [[t.input, t.output, t.kind] for t in p.tests]]
    )
    return hashlib.blake2b(data, digest_size=16).digest()


def _over_budget(row: Row, e: OverBudget) -> Removal:
    field = f", field '{e.field}'" if e.field else ""
    warn(f"{row.ref.where()}{field}: skipped, {e.reason} (--limit {e.budget}=N raises it)")
    detail = {"budget": e.budget, "limit": e.limit}
    if e.field:
        detail["field"] = e.field
    if e.got is not None:
        detail["got"] = e.got
    return Removal(
        row.ref.where(), STAGE, f"over budget: {e.budget}", detail, text=f"over the {e.budget} budget"
    )


def _removal(row: Row, reason: str, **detail: str) -> Removal:
    return Removal(row.ref.where(), STAGE, reason, detail, text=reason)
