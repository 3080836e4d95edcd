"""The last check of a converted problem before anything downstream sees it.

Whatever an adapter built from a row, the problem that leaves conversion is one the writer can
write exactly: a non-empty id, text that is valid Unicode (no lone surrogate, which no UTF-8
file can hold), finite numbers (JSON has no NaN or Infinity), meta no deeper than the depth
budget, and tests within the budgets on their count and size. A problem over a budget is
skipped (``OverBudget``); one that cannot be written exactly is a DataError naming its field.
"""

from __future__ import annotations

import datetime
import math
from typing import Any

from mcoder.dataset.budget import OverBudget
from mcoder.dataset.collect.sources import RowRef
from mcoder.records import Problem

_INT64 = (-(1 << 63), (1 << 64) - 1)  # what the JSON writer holds (unsigned 64 bits included)


def check_problem(problem: Problem, ref: RowRef) -> None:
    """Raise OverBudget or the row's DataError unless ``problem`` is within budget and writable."""
    limits = ref.limits
    if not isinstance(problem.id, str) or not problem.id.strip():
        raise ref.error("empty problem id", field="id", hint="give every problem a non-empty id")
    if len(problem.tests) > limits.tests:
        raise OverBudget("tests", limits.tests, len(problem.tests), "tests")
    total = 0
    for i, t in enumerate(problem.tests):
        _check_text(t.input, ref, f"tests[{i}].input")
        _check_text(t.output, ref, f"tests[{i}].output")
        size = len(t.input) + len(t.output)
        if size > limits.test_bytes:
            raise OverBudget("test_bytes", limits.test_bytes, size, f"tests[{i}]")
        total += size
    for name, value in _texts(problem):
        _check_text(value, ref, name)
        total += len(value)
    total += _check_value(problem.meta, ref, "meta", limits.depth)
    if total > limits.problem_bytes:
        raise OverBudget("problem_bytes", limits.problem_bytes, total)


def _texts(p: Problem):
    yield "id", p.id
    yield "source", p.source
    yield "question", p.question
    yield "starter_code", p.starter_code
    for name in ("platform", "difficulty", "date", "fn_name"):
        value = getattr(p, name)
        if value is not None:
            yield name, value
    for i, code in enumerate(p.reference_solutions):
        yield f"reference_solutions[{i}]", code


def _check_text(value: Any, ref: RowRef, field: str) -> None:
    if not isinstance(value, str):
        raise ref.error(f"expected text, got {type(value).__name__}", field=field)
    if value.isascii():
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ref.error(
            f"not valid Unicode: a lone surrogate \\u{ord(value[e.start]):04x} at char {e.start}",
            field=field,
            hint="the source escapes half of a UTF-16 pair; fix or drop the row",
        ) from None


def _check_value(value: Any, ref: RowRef, field: str, max_depth: int) -> int:
    """Walk a JSON-like value (iteratively); its size in characters and items."""
    size = 0
    todo: list[tuple[Any, str, int]] = [(value, field, 0)]
    while todo:
        v, where, depth = todo.pop()
        size += 1
        if isinstance(v, str):
            _check_text(v, ref, where)
            size += len(v)
        elif isinstance(v, float) and not math.isfinite(v):
            raise ref.error(f"{v} is not a JSON number", field=where)
        elif isinstance(v, int) and not isinstance(v, bool) and not _INT64[0] <= v <= _INT64[1]:
            raise ref.error("an integer outside 64 bits (JSON readers lose its digits)", field=where)
        elif isinstance(v, dict):
            if depth >= max_depth:
                raise OverBudget("depth", max_depth, None, where)
            for k, x in v.items():
                if not isinstance(k, str):
                    raise ref.error(f"a key of type {type(k).__name__} (JSON keys are text)", field=where)
                _check_text(k, ref, where)
                todo.append((x, f"{where}.{k}", depth + 1))
        elif isinstance(v, (list, tuple)):
            if depth >= max_depth:
                raise OverBudget("depth", max_depth, None, where)
            todo.extend((x, f"{where}[{i}]", depth + 1) for i, x in enumerate(v))
        elif not (v is None or isinstance(v, (bool, int, float, datetime.date, datetime.time))):
            raise ref.error(f"a value of type {type(v).__name__} cannot be written as JSON", field=where)
    return size
