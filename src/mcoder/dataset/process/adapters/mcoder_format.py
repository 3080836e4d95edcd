"""mcoder's own format: Problem records (see mcoder.records), parsed strictly."""

from __future__ import annotations

from typing import Any

from mcoder.dataset.collect.sources import RowRef
from mcoder.dataset.process.adapters.base import Adapter
from mcoder.errors import DataError
from mcoder.records import Problem, from_dict


def detect(row: dict[str, Any]) -> bool:
    return all(k in row for k in ("id", "source", "question", "tests")) and "schema" in row


def convert(row: dict[str, Any], ref: RowRef) -> Problem:
    try:
        return from_dict(Problem, row)
    except DataError as e:
        raise ref.error(e.reason, field=e.field, hint=e.hint) from None


ADAPTER = Adapter("mcoder", "mcoder Problem records", detect, convert)
