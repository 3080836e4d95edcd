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

import hashlib
import threading
from collections import OrderedDict
from typing import Any

from mcoder.judge.config import JudgeConfig


def limits_key(cfg: JudgeConfig) -> str:
    return repr(
        (
            cfg.timeout_s,
            cfg.memory_mb,
            cfg.max_processes,
            cfg.max_output_mb,
            cfg.max_disk_mb,
            cfg.compare,
            cfg.early_exit,
            cfg.unsafe_no_sandbox,
            cfg.wall_factor,
            tuple(cfg.allow_packages),
        )
    )


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
