"""What every adapter shares: the Adapter record and helpers that build tests and provenance."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcoder.dataset.collect.sources import RowRef
from mcoder.dataset.process.fields import OverBudget, Skip
from mcoder.records import Problem, Test


@dataclass(frozen=True)
class Adapter:
    """A source format: ``detect`` says whether a row has its shape, ``convert`` makes the
    Problem (raising ``Skip`` for a row without a usable problem, DataError for a malformed one)."""

    name: str
    summary: str
    detect: Callable[[dict[str, Any]], bool]
    convert: Callable[[dict[str, Any], RowRef], Problem]


def provenance(ref: RowRef, **extra: Any) -> dict[str, Any]:
    """Meta naming the file (by name only; a dataset by its whole name) and row a problem came
    from, then ``extra``."""
    name = ref.path if ref.path.startswith("hf:") else Path(ref.path).name
    meta: dict[str, Any] = {"source_file": name, "source_row": ref.index}
    if ref.split:
        meta["source_split"] = ref.split
    meta.update({k: v for k, v in extra.items() if v is not None})
    return meta


def test_count(n: int, ref: RowRef, field: str) -> None:
    """Stop before building more tests than the budget allows (``check_problem`` checks again)."""
    if n > ref.limits.tests:
        raise OverBudget("tests", ref.limits.tests, n, field)


def stdin_tests(inputs: Any, outputs: Any, ref: RowRef, field: str) -> list[Test]:
    """stdin tests from parallel lists of inputs and outputs (a list of lines counts as text)."""
    if not isinstance(inputs, list) or not isinstance(outputs, list):
        raise ref.error("expected lists of inputs and outputs", field=field)
    test_count(len(inputs), ref, field)
    if len(inputs) != len(outputs):
        raise Skip("inputs and outputs differ in count")
    return [
        Test(input=_text(i, ref, f"{field}.inputs[{n}]"), output=_text(o, ref, f"{field}.outputs[{n}]"))
        for n, (i, o) in enumerate(zip(inputs, outputs))
    ]


def _text(value: Any, ref: RowRef, field: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value) + "\n"
    raise ref.error(f"expected text, got {type(value).__name__}", field=field)


def json_arguments(args: list[Any], ref: RowRef, field: str) -> str:
    """Positional arguments as JSON values, one per line (the call-test input)."""
    return "\n".join(json_dump(a, ref, f"{field}[{i}]") for i, a in enumerate(args))


def json_dump(value: Any, ref: RowRef, field: str) -> str:
    """``value`` as standard JSON text (no NaN or Infinity, integers within the digit budget)."""
    try:
        return json.dumps(value, allow_nan=False)
    except ValueError as e:
        if "digits" in str(e):
            raise OverBudget("int_digits", ref.limits.int_digits, None, field) from None
        raise ref.error(f"cannot be written as JSON ({e})", field=field) from None
    except TypeError as e:
        raise ref.error(f"cannot be written as JSON ({e})", field=field) from None


def ident(value: Any, ref: RowRef, field: str) -> str:
    """A problem id from a source field: text or an integer, never empty."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ref.error(f"expected an id (text or an integer), got {type(value).__name__}", field=field)
    text = str(value)
    if not text.strip():
        raise ref.error("empty id", field=field, hint="give the row an id, or leave the field out")
    return text


def as_dict(value: Any, ref: RowRef, field: str) -> dict[str, Any]:
    """A field that must be an object once decoded (absent or null: an empty one)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ref.error(f"expected an object, got {type(value).__name__}", field=field)
    return value


def keep_references(codes: list[Any]) -> list[str]:
    """The solutions that are real code (no empty text, no placeholder)."""
    from mcoder.dataset.process.statement import is_placeholder

    return [c for c in codes if isinstance(c, str) and c.strip() and not is_placeholder(c)]
