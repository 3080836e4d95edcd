"""Budgets on what a source file decides: how much a row may expand to, once decoded.

A downloaded file is untrusted: a 1 KB row can hold a compressed or pickled bomb that expands
to gigabytes, a structure nested thousands deep, or an integer of millions of digits. Every
decoder of row data (``process/decoders.py``) and the final check of each problem (``process/check.py``) count
what they build against these limits; a row over one is skipped with a warning naming the file,
line, field and budget (``OverBudget``), and counted in the build report. The defaults hold
every real set we know of (LiveCodeBench's largest private tests included) with room to spare.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from mcoder.errors import UsageError

MiB = 1 << 20


@dataclass(frozen=True)
class Limits:
    """The budgets of one build (``--limit NAME=VALUE`` changes one)."""

    row_bytes: int = 512 * MiB
    """Bytes of one JSONL line (read in bounded pieces; a longer line is skipped unread)."""
    json_file_bytes: int = 2048 * MiB
    """Bytes of a whole .json file (read at once; a larger one, gzip included, is an error)."""
    decompressed_bytes: int = 256 * MiB
    """Bytes one compressed field (LiveCodeBench's base64 + zlib) may decompress to."""
    decoded_size: int = 256 * MiB
    """Characters plus items one pickled or JSON-text field may expand to (shared references
    counted each time they are used)."""
    depth: int = 64
    """Nesting depth of lists and objects in a field."""
    int_digits: int = 4300
    """Digits of one integer (Python's own limit for converting text to int)."""
    tests: int = 20_000
    """Tests of one problem."""
    test_bytes: int = 64 * MiB
    """Characters of one test (input plus output)."""
    problem_bytes: int = 512 * MiB
    """Characters of one problem (statement, tests, code and meta together)."""

    @classmethod
    def parse(cls, items: list[str]) -> Limits:
        """``NAME=VALUE`` items over the defaults; a usage error names the known budgets."""
        names = [f.name for f in dataclasses.fields(cls)]
        values: dict[str, int] = {}
        for item in items:
            name, eq, value = item.partition("=")
            name = name.strip().replace("-", "_")
            if not eq or name not in names or not value.strip().isdigit() or int(value) < 1:
                raise UsageError(
                    f"--limit takes NAME=N with N >= 1, got {item!r}",
                    hint=f"budgets: {', '.join(names)} (e.g. --limit tests=50000)",
                )
            values[name] = int(value)
        return cls(**values)


DEFAULT = Limits()


class Skip(Exception):
    """A row that is well formed but gives no usable problem; ``reason`` is counted and shown."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class OverBudget(Skip):
    """A row whose data would exceed a budget: skipped, warned about and counted."""

    def __init__(self, budget: str, limit: int, got: int | None, field: str | None = None):
        self.budget, self.limit, self.got, self.field = budget, limit, got, field
        amount = f" ({got:,})" if got is not None else ""
        super().__init__(f"over the {budget} budget of {limit:,}{amount}")

    def at(self, field: str) -> OverBudget:
        """The same excess, placed in ``field`` unless a deeper field was already named."""
        if self.field is None:
            self.field = field
        return self
