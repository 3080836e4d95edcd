"""Real problems for the dataset-stage tests: the third-party sets converted by the adapters,
and the project's own examples (tests that need the third-party sets take the shared_data fixture)."""

from __future__ import annotations

import functools
from pathlib import Path

from mcoder.dataset.collect.sources import expand
from mcoder.dataset.process.adapters import detect
from mcoder.dataset.process.fields import Skip
from mcoder.jsonl import read_records
from mcoder.records import Problem

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "problems"


@functools.cache
def converted(path: str) -> tuple[Problem, ...]:
    """Every problem of one source file, as the adapters convert it (skipped rows left out)."""
    (source,), _ = expand([path])
    out = []
    for ref, row in source.rows():
        try:
            out.append(detect(row).convert(row, ref))
        except Skip:
            continue
    return tuple(out)


def real(shared: Path, name: str) -> list[Problem]:
    return list(converted(str(shared / name)))


def examples() -> list[Problem]:
    return [p for f in sorted(EXAMPLES.glob("*.jsonl")) for p in read_records(f, Problem)]
