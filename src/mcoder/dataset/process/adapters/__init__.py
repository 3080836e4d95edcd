"""Source formats, in the order ``--format auto`` tries them on a file's first row."""

from __future__ import annotations

from typing import Any

from mcoder.dataset.process.adapters import (
    codecontests,
    codeforces,
    humaneval,
    lcb,
    lcb_results,
    leetcode,
    mcoder_format,
    taco,
)
from mcoder.dataset.process.adapters.base import Adapter

# Most specific first: each detect() looks at field names only.
ADAPTERS: dict[str, Adapter] = {
    a.name: a
    for a in (
        mcoder_format.ADAPTER,
        humaneval.ADAPTER,
        lcb.ADAPTER,
        lcb_results.ADAPTER,
        leetcode.ADAPTER,
        codecontests.ADAPTER,
        codeforces.ADAPTER,
        taco.APPS,
        taco.TACO,
    )
}
FORMATS: tuple[str, ...] = ("auto", *ADAPTERS)


def detect(row: dict[str, Any]) -> Adapter | None:
    """The first format whose shape ``row`` has, or None."""
    return next((a for a in ADAPTERS.values() if a.detect(row)), None)
