"""Reading the fields of a source row: required fields, JSON held as text, LiveCodeBench's
compressed tests. Every failure names the row and the field."""

from __future__ import annotations

import base64
import binascii
import io
import json
import pickle
import zlib
from typing import Any

from mcoder.dataset.sources import RowRef

_MISSING = object()


class Skip(Exception):
    """A row that is well formed but gives no usable problem; ``reason`` is counted and shown."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def need(row: dict[str, Any], name: str, ref: RowRef, kind: type | tuple[type, ...] = str) -> Any:
    """``row[name]``, which must be present and of ``kind``."""
    value = row.get(name, _MISSING)
    if value is _MISSING:
        raise ref.error(f"missing field (fields: {', '.join(row)})", field=name)
    if not isinstance(value, kind):
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
        return json.loads(value)
    except json.JSONDecodeError as e:
        raise ref.error(f"invalid JSON text ({e.msg} at char {e.pos})", field=field) from None


def json_or_compressed(value: Any, ref: RowRef, field: str) -> Any:
    """LiveCodeBench's test field: JSON text, or base64 of zlib of a pickled JSON string."""
    if not isinstance(value, (str, bytes)):
        return value
    stripped = value.strip()
    if stripped[:1] in ("[", "{", b"[", b"{"):
        return json_value(value, ref, field)
    try:
        raw = zlib.decompress(base64.b64decode(stripped, validate=True))
        obj = _PlainUnpickler(io.BytesIO(raw)).load()
    except (binascii.Error, zlib.error, pickle.UnpicklingError, EOFError, ValueError) as e:
        raise ref.error(
            f"neither JSON nor LiveCodeBench's compressed form (base64 + zlib + pickle): {e}", field=field
        ) from None
    return json_value(obj, ref, field) if isinstance(obj, (str, bytes)) else obj


class _PlainUnpickler(pickle.Unpickler):
    """Unpickles plain data only. LiveCodeBench pickles a JSON string (SandboxFusion a dict of
    strings); refusing every class keeps a hostile file from running code."""

    def find_class(self, module: str, name: str):
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}: only plain data is allowed")


def _names(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    words = {str: "a string", list: "a list", dict: "an object", int: "an integer", float: "a number"}
    return " or ".join(words.get(k, k.__name__) for k in kinds)
