"""A problem far larger than the examples (one stdin test of about 1 MiB), and what a run of
calls with it leaves behind in this process's Python heap, for the tests that a trainer's reward
calls, one fresh problem object per call, keep the judge's memory flat."""

from __future__ import annotations

import gc
import json
import tracemalloc
from collections.abc import Callable

PROGRAM = "import sys\nprint(len(sys.stdin.buffer.read()))\n"
ANSWER = f"```python\n{PROGRAM}```"


def large_record(mib: float = 1.0, name: str = "large") -> dict:
    """A problem record with one stdin test of ``mib`` MiB; ``ANSWER`` solves it."""
    line = " ".join(str(i % 1000) for i in range(2000)) + "\n"
    text = line * max(1, int(mib * (1 << 20)) // len(line))
    return {"id": name, "source": "test", "question": "print the length of the input",
            "tests": [{"input": text, "output": f"{len(text.encode())}\n", "kind": "stdin"}]}  # fmt: skip


def large_json(mib: float = 1.0) -> str:
    return json.dumps(large_record(mib))


def retained_bytes(call: Callable[[int], object], n: int) -> int:
    """Bytes of Python objects still allocated after ``call(1..n)`` that were not before them
    (``call(0)`` first, so that what the first call sets up once is not counted)."""
    call(0)
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for i in range(1, n + 1):
            call(i)
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
