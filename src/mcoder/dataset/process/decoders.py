"""Decoders of the encoded fields sources hold, each counting what it builds against ``Limits``.

- ``inflate``: zlib with a bound on the decompressed size.
- ``unpickle``: a decoder of the plain-data subset of pickle (strings, bytes, numbers, None,
  booleans, lists, tuples, dicts; protocols 2 to 5), which is what LiveCodeBench (a pickled JSON
  string) and SandboxFusion (a pickled dict of strings) write. It is not ``pickle``: no class is
  ever looked up, what a memo reference repeats can no longer change (so no cycle, and no
  repetition grows after it was counted), and every value is counted at its expanded size each time it is
  used, so that a "billion laughs" of references stops at the budget instead of the machine's
  memory, as the writer would have to write each repetition out.
- ``json_text``: JSON held as text, with integers bounded in digits, nesting in depth, NaN and
  Infinity refused (they are not JSON), and the result counted like the above.

Errors are ``DataError``s about the row (malformed data) or ``OverBudget`` (too big); nothing
else leaves these functions.
"""

from __future__ import annotations

import json
import math
import pickletools
import struct
import zlib
from typing import Any

from mcoder.dataset.budget import Limits, OverBudget


class Malformed(Exception):
    """Data that is not what the decoder reads; the caller turns it into the row's DataError."""


# ------------------------------------------------------------------ zlib


def inflate(data: bytes, limits: Limits) -> bytes:
    """``zlib.decompress(data)``, never producing more than ``limits.decompressed_bytes``."""
    d = zlib.decompressobj()
    try:
        out = d.decompress(data, limits.decompressed_bytes + 1)
    except zlib.error as e:
        raise Malformed(f"not zlib data: {e}") from None
    if len(out) > limits.decompressed_bytes:
        raise OverBudget("decompressed_bytes", limits.decompressed_bytes, None)
    if not d.eof:
        raise Malformed("zlib data ends early")
    return out


# ------------------------------------------------------------------ pickle

class _Counter:
    """The running expanded size of one field."""

    def __init__(self, limits: Limits):
        self.limits, self.used = limits, 0

    def add(self, size: int) -> None:
        self.used += size
        if self.used > self.limits.decoded_size:
            raise OverBudget("decoded_size", self.limits.decoded_size, None)

    def depth(self, depth: int) -> None:
        if depth > self.limits.depth:
            raise OverBudget("depth", self.limits.depth, None)


class _Item:
    """A value on the unpickler's stack: the value, its expanded size and its nesting depth;
    ``frozen`` once a memo reference repeated it: it may not change any more (every repetition
    would change with it, and a list appended to itself would be a cycle)."""

    __slots__ = ("depth", "frozen", "size", "value")

    def __init__(self, value: Any, size: int, depth: int = 0, frozen: bool = False):
        self.value, self.size, self.depth, self.frozen = value, size, depth, frozen


_MARK = _Item(None, 0)  # the MARK opcode's place on the stack


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise Malformed("pickle data ends early")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def uint(self, n: int) -> int:
        return int.from_bytes(self.take(n), "little")


def unpickle(data: bytes, limits: Limits) -> Any:
    """The plain value pickled in ``data``; raises Malformed or OverBudget."""
    r, count = _Reader(data), _Counter(limits)
    stack: list[_Item] = []
    memo: dict[int, _Item] = {}
    while True:
        op = r.take(1)[0]
        handler = _OPS.get(op)
        if handler is None:
            name = getattr(pickletools.code2op.get(chr(op)), "name", repr(bytes([op])))
            raise Malformed(f"refusing pickle opcode {name} at byte {r.pos - 1}: only plain data is allowed")
        if handler(r, stack, memo, count):
            break
    if len(stack) != 1 or stack[0] is _MARK:
        raise Malformed("pickle data does not end with one value")
    return stack[0].value


def _pop(stack: list[_Item]) -> _Item:
    if not stack or stack[-1] is _MARK:
        raise Malformed("pickle stack underflow")
    return stack.pop()


def _pop_mark(stack: list[_Item]) -> list[_Item]:
    for i in range(len(stack) - 1, -1, -1):
        if stack[i] is _MARK:
            items = stack[i + 1 :]
            del stack[i:]
            return items
    raise Malformed("pickle data without the MARK it needs")


def _push_leaf(stack: list[_Item], count: _Counter, value: Any, size: int) -> None:
    count.add(size)
    stack.append(_Item(value, size))


def _text(r: _Reader, stack, count: _Counter, n: int) -> None:
    if n > count.limits.decoded_size:
        raise OverBudget("decoded_size", count.limits.decoded_size, n)
    raw = r.take(n)
    try:
        value = raw.decode("utf-8", "surrogatepass")  # as pickle itself reads it
    except UnicodeDecodeError as e:
        raise Malformed(f"pickled text is not UTF-8 ({e.reason})") from None
    _push_leaf(stack, count, value, max(1, n))


def _bytes(r: _Reader, stack, count: _Counter, n: int) -> None:
    if n > count.limits.decoded_size:
        raise OverBudget("decoded_size", count.limits.decoded_size, n)
    _push_leaf(stack, count, r.take(n), max(1, n))


def _long(r: _Reader, stack, count: _Counter, n: int) -> None:
    digits = math.ceil(n * 8 * math.log10(2))
    if digits > count.limits.int_digits:
        raise OverBudget("int_digits", count.limits.int_digits, digits)
    value = int.from_bytes(r.take(n), "little", signed=True)
    _push_leaf(stack, count, value, max(1, n))


def _container(stack, count: _Counter, value: Any) -> None:
    count.add(1)
    stack.append(_Item(value, 1, 1))


def _add_to(target: _Item, items: list[_Item], count: _Counter) -> None:
    for it in items:
        target.size += it.size
        target.depth = max(target.depth, it.depth + 1)
    count.depth(target.depth)


def _append(stack, items: list[_Item], count: _Counter) -> None:
    target = stack[-1] if stack and stack[-1] is not _MARK else None
    if target is None or not isinstance(target.value, list) or target.frozen:
        raise Malformed("pickle APPEND to something that is not a new list")
    target.value.extend(it.value for it in items)
    _add_to(target, items, count)


def _setitems(stack, items: list[_Item], count: _Counter) -> None:
    target = stack[-1] if stack and stack[-1] is not _MARK else None
    if target is None or not isinstance(target.value, dict) or target.frozen or len(items) % 2:
        raise Malformed("pickle SETITEM on something that is not a new dict")
    for k, v in zip(items[::2], items[1::2]):
        if not isinstance(k.value, (str, int, float, bool, type(None))):
            raise Malformed(f"a dict key of type {type(k.value).__name__} is not plain data")
        target.value[k.value] = v.value
    _add_to(target, items, count)


def _tuple(stack, items: list[_Item], count: _Counter) -> None:
    t = _Item(tuple(it.value for it in items), 1, 1)
    _add_to(t, items, count)
    stack.append(t)


def _get(memo: dict[int, _Item], stack, count: _Counter, key: int) -> None:
    item = memo.get(key)
    if item is None:
        raise Malformed(f"pickle memo reference {key} to nothing")
    item.frozen = True  # repeated: from now on it may not change (so no cycle, and sizes stay true)
    count.add(item.size)  # a repeated value costs its whole size again, as it will when written
    stack.append(_Item(item.value, item.size, item.depth, frozen=True))


def _put(memo: dict[int, _Item], stack, key: int) -> None:
    if not stack or stack[-1] is _MARK:
        raise Malformed("pickle memo of nothing")
    memo[key] = stack[-1]


def _frame(r: _Reader) -> None:
    r.uint(8)  # a frame's length: a hint for buffered reading, nothing to check here


def _ops() -> dict[int, Any]:
    u = _Reader.uint
    ops = {
        b"\x80": lambda r, s, m, c: (r.take(1), None)[1],  # PROTO
        b"\x95": lambda r, s, m, c: _frame(r),  # FRAME
        b".": lambda r, s, m, c: True,  # STOP
        b"(": lambda r, s, m, c: s.append(_MARK),  # MARK
        b"0": lambda r, s, m, c: (_pop(s), None)[1],  # POP
        b"N": lambda r, s, m, c: _push_leaf(s, c, None, 1),
        b"\x88": lambda r, s, m, c: _push_leaf(s, c, True, 1),
        b"\x89": lambda r, s, m, c: _push_leaf(s, c, False, 1),
        b"J": lambda r, s, m, c: _push_leaf(s, c, int.from_bytes(r.take(4), "little", signed=True), 1),
        b"K": lambda r, s, m, c: _push_leaf(s, c, u(r, 1), 1),
        b"M": lambda r, s, m, c: _push_leaf(s, c, u(r, 2), 1),
        b"\x8a": lambda r, s, m, c: _long(r, s, c, u(r, 1)),  # LONG1
        b"\x8b": lambda r, s, m, c: _long(r, s, c, u(r, 4)),  # LONG4
        b"G": lambda r, s, m, c: _push_leaf(s, c, struct.unpack(">d", r.take(8))[0], 1),
        b"\x8c": lambda r, s, m, c: _text(r, s, c, u(r, 1)),  # SHORT_BINUNICODE
        b"X": lambda r, s, m, c: _text(r, s, c, u(r, 4)),  # BINUNICODE
        b"\x8d": lambda r, s, m, c: _text(r, s, c, u(r, 8)),  # BINUNICODE8
        b"C": lambda r, s, m, c: _bytes(r, s, c, u(r, 1)),  # SHORT_BINBYTES
        b"B": lambda r, s, m, c: _bytes(r, s, c, u(r, 4)),  # BINBYTES
        b"\x8e": lambda r, s, m, c: _bytes(r, s, c, u(r, 8)),  # BINBYTES8
        b"]": lambda r, s, m, c: _container(s, c, []),
        b"}": lambda r, s, m, c: _container(s, c, {}),
        b"a": lambda r, s, m, c: _append(s, [_pop(s)], c),
        b"e": lambda r, s, m, c: _append(s, _pop_mark(s), c),
        b"s": lambda r, s, m, c: _setitems(s, [*reversed([_pop(s), _pop(s)])], c),
        b"u": lambda r, s, m, c: _setitems(s, _pop_mark(s), c),
        b")": lambda r, s, m, c: _tuple(s, [], c),
        b"t": lambda r, s, m, c: _tuple(s, _pop_mark(s), c),
        b"\x85": lambda r, s, m, c: _tuple(s, [_pop(s)], c),
        b"\x86": lambda r, s, m, c: _tuple(s, [*reversed([_pop(s), _pop(s)])], c),
        b"\x87": lambda r, s, m, c: _tuple(s, [*reversed([_pop(s), _pop(s), _pop(s)])], c),
        b"\x94": lambda r, s, m, c: _put(m, s, len(m)),  # MEMOIZE
        b"q": lambda r, s, m, c: _put(m, s, u(r, 1)),  # BINPUT
        b"r": lambda r, s, m, c: _put(m, s, u(r, 4)),  # LONG_BINPUT
        b"h": lambda r, s, m, c: _get(m, s, c, u(r, 1)),  # BINGET
        b"j": lambda r, s, m, c: _get(m, s, c, u(r, 4)),  # LONG_BINGET
    }
    return {k[0]: v for k, v in ops.items()}


_OPS = _ops()


# ------------------------------------------------------------------ JSON text


def json_text(text: str | bytes, limits: Limits) -> Any:
    """The value of JSON ``text``; raises Malformed or OverBudget."""
    if len(text) > limits.decoded_size:
        raise OverBudget("decoded_size", limits.decoded_size, len(text))

    def integer(digits: str) -> int:
        if len(digits.lstrip("-")) > limits.int_digits:
            raise OverBudget("int_digits", limits.int_digits, len(digits.lstrip("-")))
        return int(digits)

    def number(digits: str) -> float:
        value = float(digits)
        if not math.isfinite(value):
            raise Malformed(f"the number {digits[:40]} is out of range")
        return value

    def constant(name: str) -> Any:
        raise Malformed(f"{name} is not JSON")

    try:
        value = json.loads(text, parse_int=integer, parse_float=number, parse_constant=constant)
    except json.JSONDecodeError as e:
        raise Malformed(f"invalid JSON text ({e.msg} at char {e.pos})") from None
    except UnicodeDecodeError as e:
        raise Malformed(f"JSON text is not UTF-8 ({e.reason})") from None
    except RecursionError:
        raise OverBudget("depth", limits.depth, None) from None
    measure(value, limits)
    return value


def measure(value: Any, limits: Limits) -> int:
    """The expanded size of decoded ``value`` (checked against depth and size), iteratively."""
    count = _Counter(limits)
    todo: list[tuple[Any, int]] = [(value, 1)]
    while todo:
        v, depth = todo.pop()
        if isinstance(v, (list, tuple, dict)):
            count.depth(depth)
            count.add(1)
            items = v.values() if isinstance(v, dict) else v
            todo.extend((x, depth + 1) for x in items)
            if isinstance(v, dict):
                todo.extend((k, depth + 1) for k in v)
        elif isinstance(v, (str, bytes)):
            count.add(max(1, len(v)))
        else:
            count.add(1)
    return count.used
