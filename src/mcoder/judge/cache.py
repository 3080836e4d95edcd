"""The execution cache: a verdict's outcome by (program, tests, limits, comparison).

Sampling a group of completions for one problem often yields the same program several times
(the same code in different prose). The program runs once; the others reuse its outcome and are
marked ``cached``. The key covers everything that can change an outcome, so a hit is exact for
a deterministic program.

A program whose outcome varies between runs (it draws random numbers, reads the clock, races
threads) keeps the outcome of its first run for as long as the cache holds it: identical text
gets an identical reward. That is the chosen rule (an RL group then never rewards the same
completion twice differently, and judging is cheaper); ``JudgeConfig(cache=False)``
(``--no-cache``) runs every rollout instead, for users who want each run sampled.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from collections import OrderedDict
from typing import Any

from mcoder.config import is_setting
from mcoder.judge.config import NOT_AN_OUTCOME, JudgeConfig


def keyed(f: dataclasses.Field, cfg: JudgeConfig) -> bool:
    """Whether the JudgeConfig field ``f`` can change an outcome: a setting of the verdicts
    (``mcoder.config.not_setting`` marks those that are not) that is not marked as applied after
    the outcome (``NOT_AN_OUTCOME``). A field added later is keyed unless marked, with its reason."""
    return is_setting(f, cfg) and f.metadata.get(NOT_AN_OUTCOME, True)


def limits_key(cfg: JudgeConfig, libraries: str | None = None) -> str:
    """Every setting of ``cfg`` that can change an outcome, as text. ``libraries``: the profile
    a problem's programs actually see (``auto`` resolves per problem), in place of the field."""
    values = []
    for f in dataclasses.fields(cfg):
        if not keyed(f, cfg):
            continue
        value = getattr(cfg, f.name)
        if f.name == "libraries" and libraries is not None:
            value = libraries
        values.append((f.name, value))
    return repr(tuple(values))


def tests_digest(tests: list, fn_name: str | None) -> str:
    h = hashlib.sha256(repr(fn_name).encode())
    for t in tests:
        for part in (t.kind, t.input, t.output):
            data = part.encode("utf-8", "surrogatepass")
            h.update(len(data).to_bytes(8, "little"))
            h.update(data)
    return h.hexdigest()


def cache_key(code: str, tests_hash: str, limits: str) -> str:
    h = hashlib.sha256()
    for part in (code, tests_hash, limits):
        data = part.encode("utf-8", "surrogatepass")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


class BytesLRU:
    """A thread-safe LRU map of key -> value bounded by the values' sizes in bytes (as the caller
    estimates them): what is put past the bound pushes out the least recently used. A value
    larger than the whole bound is not kept."""

    def __init__(self, max_bytes: int):
        self.max_bytes, self.bytes = max_bytes, 0
        self._d: OrderedDict[str, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._d)

    def get(self, key: str) -> Any | None:
        with self._lock:
            entry = self._d.get(key)
            if entry is None:
                return None
            self._d.move_to_end(key)
            return entry[0]

    def put(self, key: str, value: Any, size: int) -> None:
        with self._lock:
            old = self._d.pop(key, None)
            if old is not None:
                self.bytes -= old[1]
            if size > self.max_bytes:
                return
            self._d[key] = (value, size)
            self.bytes += size
            while self.bytes > self.max_bytes:
                _, (_, gone) = self._d.popitem(last=False)
                self.bytes -= gone


class ResultCache:
    """A thread-safe LRU map of key -> outcome."""

    def __init__(self, size: int):
        self.size = size
        self._d: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0

    def get(self, key: str) -> Any | None:
        with self._lock:
            value = self._d.get(key)
            if value is not None:
                self._d.move_to_end(key)
                self.hits += 1
            return value

    def put(self, key: str, value: Any) -> None:
        if self.size <= 0:
            return
        with self._lock:
            self._d[key] = value
            self._d.move_to_end(key)
            while len(self._d) > self.size:
                self._d.popitem(last=False)
