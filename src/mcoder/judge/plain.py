"""Plain data across a process boundary: the only thing a candidate and the judge's side exchange.

A value is None, bool, int, float, str, bytes, or a list, tuple, dict, set or frozenset of values.
It travels as JSON in which every container is a one-key object naming its kind (``{"l": [...]}``
a list, ``{"t": [...]}`` a tuple, ``{"d": [[k, v], ...]}`` a dict, ``{"s": [...]}`` a set,
``{"f": [...]}`` a frozenset, ``{"b": "hex"}`` bytes); a bare JSON number, string, true, false or
null is itself. ``decode`` rebuilds exactly these types and refuses anything else, so no object
of the sender's making (a custom ``__eq__``, a frame, a function, a module) can reach the
receiver: whatever the candidate sends, the receiver holds builtin values it compares itself.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 200


class NotPlain(ValueError):
    """A value (or a message) that is not plain data."""


def encode(value: Any, lenient: bool = False) -> bytes:
    """The JSON bytes of ``value``; NotPlain for anything that is not plain data. ``lenient``
    (the candidate's side) also takes subclasses of the plain types, as the types they extend
    (an IntEnum, a ``defaultdict``, a ``Counter``, a namedtuple): what is sent is still checked
    by ``decode`` on the other side."""
    try:
        return json.dumps(_wrap(value, 0, lenient), separators=(",", ":")).encode("utf-8", "surrogatepass")
    except (ValueError, RecursionError, OverflowError) as e:
        raise NotPlain(str(e)[:200]) from None


def decode(data: bytes) -> Any:
    """The value ``data`` stands for; NotPlain when it is anything but ``encode``'s output."""
    try:
        raw = json.loads(data.decode("utf-8", "surrogatepass"))
        return _unwrap(raw, 0)
    except NotPlain:
        raise
    except (ValueError, RecursionError, TypeError, MemoryError) as e:
        raise NotPlain(f"{type(e).__name__}: {str(e)[:200]}") from None


_TAGS = {list: "l", tuple: "t", set: "s", frozenset: "f"}


def _wrap(v: Any, depth: int, lenient: bool = False) -> Any:
    if depth > MAX_DEPTH:
        raise NotPlain("nested too deep")
    t = type(v)
    if v is None or t is bool or t is int or t is float or t is str:
        return v
    if t is bytes:
        return {"b": v.hex()}
    tag = _TAGS.get(t)
    if tag is not None:
        return {tag: [_wrap(x, depth + 1, lenient) for x in v]}
    if t is dict:
        return {"d": [[_wrap(k, depth + 1, lenient), _wrap(x, depth + 1, lenient)] for k, x in v.items()]}
    if lenient:
        for base in (bool, int, float, str, bytes, dict, tuple, frozenset, set, list):
            if isinstance(v, base):
                return _wrap(base(v.items()) if base is dict else base(v), depth, lenient)
    raise NotPlain(f"a {t.__name__} is not plain data")


def _unwrap(v: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise NotPlain("nested too deep")
    t = type(v)
    if v is None or t is bool or t is int or t is float or t is str:
        return v
    if t is not dict or len(v) != 1:
        raise NotPlain("not a tagged value")
    ((tag, body),) = v.items()
    if tag == "b" and type(body) is str:
        return bytes.fromhex(body)
    if type(body) is not list:
        raise NotPlain("not a tagged value")
    items = [_unwrap(x, depth + 1) for x in body] if tag != "d" else None
    if tag == "l":
        return items
    if tag == "t":
        return tuple(items)
    if tag == "s":
        return set(items)
    if tag == "f":
        return frozenset(items)
    if tag == "d":
        out = {}
        for pair in body:
            if type(pair) is not list or len(pair) != 2:
                raise NotPlain("not a dict item")
            out[_unwrap(pair[0], depth + 1)] = _unwrap(pair[1], depth + 1)
        return out
    raise NotPlain(f"unknown tag {tag!r}")
