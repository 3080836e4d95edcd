"""Plain data across a process boundary: the only thing a candidate and the judge's side exchange.

A value is None, bool, int, float, str, bytes, or a list, tuple, dict, set or frozenset of values.
It travels as JSON in which every container is a one-key object naming its kind (``{"l": [...]}``
a list, ``{"t": [...]}`` a tuple, ``{"d": [[k, v], ...]}`` a dict, ``{"s": [...]}`` a set,
``{"f": [...]}`` a frozenset, ``{"b": "hex"}`` bytes); a bare JSON number, string, true, false or
null is itself. ``decode`` rebuilds exactly these types and refuses anything else, so no object
of the sender's making (a custom ``__eq__``, a frame, a function, a module) can reach the
receiver: whatever the candidate sends, the receiver holds builtin values it compares itself.

The judge process decodes with ``hashfree=True``: a set or a dict then comes back as
``SetItems`` / ``DictItems``, its items in the order sent, never hashed. Building a real set of
integers that all hash alike (``k * (2**61 - 1)``) takes quadratic time, and the candidate
chooses what it sends; the judge's comparators order items by a canonical key instead
(``compare``). The check process, which must hand real sets to a check's asserts, decodes as
before (its own time limit bounds it).
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 200


class NotPlain(ValueError):
    """A value (or a message) that is not plain data."""


class SetItems:
    """A decoded set (``frozen``: a frozenset), kept as its items: nothing in it was hashed."""

    __slots__ = ("frozen", "items")

    def __init__(self, items: list, frozen: bool = False):
        self.items, self.frozen = items, frozen

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self):
        return iter(self.items)

    def __repr__(self) -> str:
        if self.frozen:
            return f"frozenset({{{', '.join(map(repr, self.items))}}})" if self.items else "frozenset()"
        return f"{{{', '.join(map(repr, self.items))}}}" if self.items else "set()"


class DictItems:
    """A decoded dict kept as its (key, value) pairs in the order sent: no key was hashed."""

    __slots__ = ("pairs",)

    def __init__(self, pairs: list):
        self.pairs = pairs

    def __len__(self) -> int:
        return len(self.pairs)

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{k!r}: {v!r}" for k, v in self.pairs) + "}"


def encode(value: Any, lenient: bool = False) -> bytes:
    """The JSON bytes of ``value``; NotPlain for anything that is not plain data. ``lenient``
    (the candidate's side) also takes subclasses of the plain types, as the types they extend
    (an IntEnum, a ``defaultdict``, a ``Counter``, a namedtuple): what is sent is still checked
    by ``decode`` on the other side."""
    try:
        return json.dumps(_wrap(value, 0, lenient), separators=(",", ":")).encode("utf-8", "surrogatepass")
    except (ValueError, RecursionError, OverflowError) as e:
        raise NotPlain(str(e)[:200]) from None


def decode(data: bytes, hashfree: bool = False) -> Any:
    """The value ``data`` stands for; NotPlain when it is anything but ``encode``'s output.
    ``hashfree``: sets and dicts as ``SetItems`` / ``DictItems`` (the judge process)."""
    try:
        raw = json.loads(data.decode("utf-8", "surrogatepass"))
        return _unwrap(raw, 0, hashfree)
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


def _unwrap(v: Any, depth: int, hashfree: bool = False) -> Any:
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
    items = [_unwrap(x, depth + 1, hashfree) for x in body] if tag != "d" else None
    if tag == "l":
        return items
    if tag == "t":
        return tuple(items)
    if tag in ("s", "f"):
        if hashfree:
            return SetItems(items, frozen=tag == "f")
        return set(items) if tag == "s" else frozenset(items)
    if tag == "d":
        pairs = []
        for pair in body:
            if type(pair) is not list or len(pair) != 2:
                raise NotPlain("not a dict item")
            pairs.append((_unwrap(pair[0], depth + 1, hashfree), _unwrap(pair[1], depth + 1, hashfree)))
        return DictItems(pairs) if hashfree else dict(pairs)
    raise NotPlain(f"unknown tag {tag!r}")
