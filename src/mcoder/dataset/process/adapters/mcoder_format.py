"""mcoder's own format: Problem records (see mcoder.records), parsed strictly."""

from __future__ import annotations

import dataclasses
from typing import Any

from mcoder.dataset.collect.sources import RowRef
from mcoder.dataset.process.adapters.base import Adapter
from mcoder.errors import DataError
from mcoder.records import Problem, from_dict


def detect(row: dict[str, Any]) -> bool:
    """mcoder's own records: the four fields a Problem needs, and a ``schema`` or no field a Problem
    does not have (a minimal ``id, source, question, tests`` row, as ``mcoder judge`` reads it)."""
    needed = all(k in row for k in ("id", "source", "question", "tests"))
    return needed and ("schema" in row or set(row) <= _PROBLEM_FIELDS)


_PROBLEM_FIELDS = frozenset(f.name for f in dataclasses.fields(Problem))


def convert(row: dict[str, Any], ref: RowRef) -> Problem:
    try:
        return from_dict(Problem, row)
    except DataError as e:
        raise ref.error(e.reason, field=e.field, hint=e.hint) from None


ADAPTER = Adapter("mcoder", "mcoder Problem records", detect, convert)
