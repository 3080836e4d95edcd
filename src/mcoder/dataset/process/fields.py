"""Reading the fields of a source row: required fields, JSON held as text, LiveCodeBench's
compressed tests. Every failure names the row and the field."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from mcoder.dataset.budget import OverBudget, Skip
from mcoder.dataset.collect.sources import RowRef
from mcoder.dataset.process.decoders import Malformed, inflate, json_text, unpickle

__all__ = ["OverBudget", "Skip", "json_or_compressed", "json_value", "need", "text"]

_MISSING = object()


def need(row: dict[str, Any], name: str, ref: RowRef, kind: type | tuple[type, ...] = str) -> Any:
    """``row[name]``, which must be present and of ``kind``."""
    value = row.get(name, _MISSING)
    if value is _MISSING:
        raise ref.error(f"missing field (fields: {', '.join(map(str, row))})"[:300], field=name)
    if not isinstance(value, kind) or isinstance(value, bool) and bool not in _kinds(kind):
        raise ref.error(f"expected {_names(kind)}, got {type(value).__name__}", field=name)
    return value


def text(row: dict[str, Any], name: str, ref: RowRef) -> str | None:
    """An optional text field; None when absent or null."""
    value = row.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ref.error(f"expected a string, got {type(value).__name__}", field=name)
    return value


def json_value(value: Any, ref: RowRef, field: str) -> Any:
    """A field that sources store either as JSON text or already decoded (parquet, datasets)."""
    if not isinstance(value, (str, bytes)):
        return value
    try:
        return json_text(value, ref.limits)
    except Malformed as e:
        raise ref.error(str(e), field=field) from None
    except OverBudget as e:
        raise e.at(field) from None


def json_or_compressed(value: Any, ref: RowRef, field: str) -> Any:
    """LiveCodeBench's test field: JSON text, or base64 of zlib of a pickled JSON string."""
    if not isinstance(value, (str, bytes)):
        return value
    stripped = value.strip()
    if stripped[:1] in ("[", "{", b"[", b"{"):
        return json_value(value, ref, field)
    try:
        obj = unpickle(inflate(base64.b64decode(stripped, validate=True), ref.limits), ref.limits)
    except (binascii.Error, ValueError, Malformed) as e:
        raise ref.error(
            f"neither JSON nor LiveCodeBench's compressed form (base64 + zlib + plain pickle): {e}",
            field=field,
        ) from None
    except OverBudget as e:
        raise e.at(field) from None
    return json_value(obj, ref, field) if isinstance(obj, (str, bytes)) else obj


def _kinds(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _names(kind: type | tuple[type, ...]) -> str:
    words = {str: "a string", list: "a list", dict: "an object", int: "an integer", float: "a number"}
    return " or ".join(words.get(k, k.__name__) for k in _kinds(kind))
