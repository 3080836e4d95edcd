"""The platform x difficulty table of pass@k, its delta against a baseline, and failure shares.

Rows are platforms as ``Problem.platform`` names them (lowercased; ``unknown`` when absent) plus
an ``all`` row; columns are difficulty buckets easy / medium / hard (plus ``unknown`` when some
problem's difficulty cannot be bucketed) and ``all``. A cell averages per-problem pass@k over the
problems in it that have verdicts; problems without verdicts are counted apart (unevaluated),
never as zeros.

The buckets (``difficulty_bucket``, ``platform_name``) are in ``mcoder.formats.buckets``:
LiveCodeBench's results file names problems the same way.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from mcoder.bench.passk import mean_pass_at_k
from mcoder.formats.buckets import DIFFICULTIES, UNKNOWN
from mcoder.records import STATUSES, Verdict

ALL = "all"
FAILURE_STATUSES = tuple(s for s in STATUSES if s != "accepted")


@dataclass(slots=True)
class ProblemTally:
    """One problem's place in the table and its verdict counts."""

    id: str
    platform: str
    difficulty: str
    n: int = 0
    """Samples (verdicts) of this problem."""
    c: int = 0
    """Samples that passed."""
    statuses: Counter = field(default_factory=Counter)
    failed: dict | None = None
    """Its first non-accepted sample: rollout_id, status, first_failure (for JUnit reports)."""
    elapsed: float = 0.0
    """Seconds its samples ran, summed over the verdicts."""

    def add(self, verdict: Verdict) -> None:
        """Count one verdict of this problem."""
        self.n += 1
        self.c += bool(verdict.passed)
        self.statuses[verdict.status] += 1
        self.elapsed += verdict.elapsed_s
        if not verdict.passed and self.failed is None:
            self.failed = {
                "rollout_id": verdict.rollout_id,
                "status": verdict.status,
                "first_failure": verdict.first_failure,
            }


@dataclass(slots=True)
class Cell:
    problems: int
    """Problems with verdicts in this cell."""
    unevaluated: int
    """Problems of this cell without any verdict (not in the averages)."""
    samples: int
    pass_at: dict[int, float | None]
    """Mean pass@k over the problems with at least k samples; None when none has."""
    not_computable: dict[int, int]
    """Problems left out of pass@k because they have fewer than k samples."""


@dataclass(slots=True)
class Table:
    ks: tuple[int, ...]
    rows: list[str]
    """Platforms in order, then 'all'."""
    columns: list[str]
    """Difficulty buckets in order, then 'all'."""
    cells: dict[tuple[str, str], Cell]
    unevaluated: list[str]
    """Ids of problems that have no verdict."""
    failures: Counter
    """Non-accepted samples by status."""

    def cell(self, row: str = ALL, column: str = ALL) -> Cell:
        return self.cells[(row, column)]

    def failure_shares(self) -> dict[str, float]:
        """Share of each failure status among the non-accepted samples (all 0 when there are none)."""
        total = sum(self.failures.values())
        return {s: (self.failures[s] / total if total else 0.0) for s in FAILURE_STATUSES}


def build_table(tallies: Iterable[ProblemTally], ks: tuple[int, ...]) -> Table:
    tallies = list(tallies)
    platforms = sorted({t.platform for t in tallies} - {UNKNOWN})
    if any(t.platform == UNKNOWN for t in tallies):
        platforms.append(UNKNOWN)
    buckets = list(DIFFICULTIES)
    if any(t.difficulty == UNKNOWN for t in tallies):
        buckets.append(UNKNOWN)
    rows, columns = [*platforms, ALL], [*buckets, ALL]
    cells = {
        (row, col): _cell([t for t in tallies if row in (ALL, t.platform) and col in (ALL, t.difficulty)], ks)
        for row in rows
        for col in columns
    }
    failures: Counter = Counter()
    for t in tallies:
        failures.update({s: n for s, n in t.statuses.items() if s != "accepted"})
    unevaluated = sorted(t.id for t in tallies if t.n == 0)
    return Table(ks, rows, columns, cells, unevaluated, failures)


def _cell(tallies: list[ProblemTally], ks: tuple[int, ...]) -> Cell:
    evaluated = [(t.n, t.c) for t in tallies if t.n > 0]
    pass_at: dict[int, float | None] = {}
    not_computable: dict[int, int] = {}
    for k in ks:
        pass_at[k], _, not_computable[k] = mean_pass_at_k(evaluated, k)
    return Cell(
        problems=len(evaluated),
        unevaluated=len(tallies) - len(evaluated),
        samples=sum(n for n, _ in evaluated),
        pass_at=pass_at,
        not_computable=not_computable,
    )


def delta(table: Table, baseline: Table) -> dict[tuple[str, str], dict[int, float | None]]:
    """Cell-by-cell pass@k minus the baseline's; None where either side has no value."""
    out: dict[tuple[str, str], dict[int, float | None]] = {}
    for key, cell in table.cells.items():
        base = baseline.cells.get(key)
        out[key] = {
            k: (
                v - base.pass_at[k]
                if v is not None and base is not None and base.pass_at[k] is not None
                else None
            )
            for k, v in cell.pass_at.items()
        }
    return out
