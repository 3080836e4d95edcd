"""The one door through which a candidate's data enters the judge process.

Everything a candidate controls reaches the judge inside a result record that a worker sends:
its standard output and error, the report line it can forge on fd 3, the reply frames of the
call channel, a functional check's report about it (whose tracebacks and error names carry the
candidate's text), and the names of its exceptions. ``admit`` is the only reader of such a
record: it keeps the known fields, each of its own type, capped in length, and text cleaned of
what cannot be encoded (a lone surrogate such as ``"\\ud800"`` is written out as ``\\ud800``),
so that nothing downstream (comparators, first_failure, the JSONL writer) can fail on it. A
record it cannot read raises ``Refused``, which the grader turns into the candidate's verdict
(``judge_refused``), never the run's exit.

A call test's return value stays bytes here: ``plain.decode(data, hashfree=True)`` rebuilds it
with bounded depth and without hashing any of it (sets and dicts come back as lists of items),
so that a set of integers that all hash alike costs the judge linear time, not quadratic.

``record_safe`` is the last step before a verdict leaves the judge: every string in it is
encodable and every container is a plain dict or list, so the verdict writer cannot fail on it.
"""

from __future__ import annotations

import math
from typing import Any

# Statuses a worker or a functional check may send for one test (anything else is refused).
RESULT_STATUSES = frozenset(
    ("ok", "wrong_answer", "runtime_error", "time_limit", "memory_limit", "gone", "check_failed")
)
DETAIL_CHARS = 300
STDERR_CHARS = 4000
MAX_DEPTH = 8  # of a verdict's first_failure (it holds flat fields)


class Refused(Exception):
    """A result record the judge cannot read: the candidate's verdict says so."""


def text(value: Any, limit: int, *, tail: bool = False) -> str:
    """``value`` as clean text of at most about ``limit`` characters (the head, or with ``tail``
    the end); bytes are decoded as UTF-8 with replacement; anything else is empty."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        raw = raw[-4 * limit :] if tail else raw[: 4 * limit]
        value = raw.decode("utf-8", "replace")
    elif not isinstance(value, str):
        return ""
    if len(value) > limit:
        value = value[-limit:] if tail else value[:limit]
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: written out, so they can be seen and stored
        value = value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


def admit(res: Any, n_results: int | None, max_stdout: int) -> dict:
    """A worker's (or a check's) result record, read once: known fields only, each checked,
    capped and cleaned. ``n_results`` bounds the test position ``i`` when the record has one."""
    if not isinstance(res, dict):
        raise Refused("a result that is not a record")
    status = res.get("status")
    if not isinstance(status, str) or status not in RESULT_STATUSES:
        raise Refused(f"a result with an unknown status {text(status, 40)!r}")
    out: dict[str, Any] = {"status": status}
    if "i" in res:
        i = res["i"]
        if type(i) is not int or n_results is None or not 0 <= i < n_results:
            raise Refused("a result for a test that does not exist")
        out["i"] = i
    for key, limit, tail in (("detail", DETAIL_CHARS, False), ("stderr", STDERR_CHARS, True)):
        if res.get(key) is not None:
            out[key] = text(res[key], limit, tail=tail)
    if res.get("stdout") is not None:
        out["stdout"] = text(res["stdout"], max_stdout)
    value = res.get("value")
    if isinstance(value, (bytes, bytearray)):
        if len(value) > max_stdout + 4096:
            raise Refused("a return value longer than the output cap")
        out["value"] = bytes(value)
    for key in ("t", "cpu"):  # seconds the test took (the worker's measures)
        t = res.get(key)
        if isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t):
            out[key] = float(t)
    mem = res.get("mem_kb")
    if type(mem) is int and mem >= 0:
        out["mem_kb"] = mem
    return out


def record_safe(value: Any, depth: int = 0) -> Any:
    """``value`` with every string encodable and only dicts, lists and JSON scalars inside (a
    verdict's first_failure before it is written)."""
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return text(value, max(len(value), 1))
    if depth >= MAX_DEPTH:
        return "<nested too deep>"
    if isinstance(value, dict):
        return {text(str(k), 200): record_safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [record_safe(v, depth + 1) for v in value]
    return text(type(value).__name__, 100)
