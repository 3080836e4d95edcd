"""CI gates over a bench: the checks that make ``mcoder bench`` exit 5 (``GateFailed``) when the
results are worse than allowed, so that a CI job can tell a worse model (5) from a broken job
(1 internal, 2 usage, 3 bad data, 4 missing environment).

- ``--fail-under RATE``: pass@1 over all evaluated problems is below RATE (``0.6`` or ``60%``).
- ``--fail-on-regression`` (with ``--baseline``): some problem's pass@1 (its passed share of
  samples, c/n) is lower than in the baseline, or the baseline passed it and it has no verdict now.
  With one sample per problem (a folder of solutions): passed before, fails now. Compared exactly
  on counts (c1 * n0 < c0 * n1), never on rounded floats.
- ``--max-drop POINTS`` (with ``--baseline``): pass@1 over all fell more than POINTS percentage
  points below the baseline's: the gate for sampled models, whose per-problem shares are noisy.

Every gate is checked and every failure reported, not only the first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mcoder.bench.table import ProblemTally, Table
from mcoder.config import TEXT
from mcoder.errors import UsageError

EPS = 1e-9  # float slack for the pass@1 comparisons: a value equal to the floor passes


@dataclass(frozen=True, slots=True)
class Gates:
    fail_under: float | None = field(default=None, metadata=TEXT)
    """pass@1 floor over all evaluated problems: a fraction 0..1 or a percentage (0.6 or 60%)."""
    fail_on_regression: bool = False
    """Fail when any problem's pass@1 is lower than in the baseline."""
    max_drop: float | None = None
    """Fail when pass@1 over all fell more than this many percentage points below the baseline's."""

    def __post_init__(self) -> None:
        if isinstance(self.fail_under, str):  # the command line's '0.6' or '60%'
            object.__setattr__(self, "fail_under", parse_rate(self.fail_under))

    @property
    def any(self) -> bool:
        return self.fail_under is not None or self.fail_on_regression or self.max_drop is not None

    @property
    def need_baseline(self) -> bool:
        return self.fail_on_regression or self.max_drop is not None


@dataclass(frozen=True, slots=True)
class Change:
    """One problem whose passed share moved between the baseline and now."""

    id: str
    before: tuple[int, int]
    """(passed, samples) in the baseline."""
    now: tuple[int, int]
    """(passed, samples) now; (0, 0) when it has no verdict now."""
    status: str | None = None
    """A regression's first failing sample now: its status."""

    def text(self) -> str:
        (c0, n0), (c1, n1) = self.before, self.now
        now = f"{c1}/{n1} passed" if n1 else "no verdict now"
        why = f", now {self.status}" if self.status and c1 < n1 else ""
        return f"{self.id}: {c0}/{n0} -> {now}{why}"


def changes(
    tallies: dict[str, ProblemTally], base: dict[str, ProblemTally]
) -> tuple[list[Change], list[Change]]:
    """(regressions, improvements), each sorted by problem id."""
    worse, better = [], []
    for pid in sorted(base):
        b, t = base[pid], tallies.get(pid)
        c1, n1 = (t.c, t.n) if t is not None else (0, 0)
        if b.n == 0:
            continue  # the baseline never evaluated it: nothing to regress from
        status = t.failed["status"] if t is not None and t.failed else None
        if (n1 == 0 and b.c > 0) or (n1 and c1 * b.n < b.c * n1):
            worse.append(Change(pid, (b.c, b.n), (c1, n1), status))
        elif n1 and c1 * b.n > b.c * n1:
            better.append(Change(pid, (b.c, b.n), (c1, n1)))
    return worse, better


def check(gates: Gates, table: Table, baseline: Table | None, regressions: list[Change]) -> list[str]:
    """One line per failed gate (empty: every gate passed)."""
    failed = []
    now = table.cell().pass_at[1]
    if gates.fail_under is not None:
        if now is None:
            failed.append("pass@1 is n/a (no problem has a verdict), under the floor of --fail-under")
        elif now + EPS < gates.fail_under:
            failed.append(f"pass@1 {_pct(now)} is under the floor {_pct(gates.fail_under)} (--fail-under)")
    if gates.fail_on_regression and regressions:
        n = len(regressions)
        failed.append(
            f"{n} problem{'s' * (n != 1)} regressed against the baseline (--fail-on-regression): "
            + ", ".join(r.id for r in regressions[:10])
            + (f", ... ({n - 10} more)" if n > 10 else "")
        )
    if gates.max_drop is not None and baseline is not None:
        before = baseline.cell().pass_at[1]
        if before is not None and now is not None and 100 * (before - now) > gates.max_drop + EPS:
            failed.append(
                f"pass@1 fell {100 * (before - now):.1f} points ({_pct(before)} -> {_pct(now)}), "
                f"more than --max-drop {gates.max_drop:g}"
            )
    return failed


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def parse_rate(text: str) -> float:
    """'0.6' or '60%' -> 0.6; anything outside 0..1 (0..100%) is a UsageError."""
    raw = text.strip()
    percent = raw.endswith("%")
    try:
        value = float(raw[:-1] if percent else raw)
    except ValueError:
        raise UsageError(
            f"--fail-under {text!r} is not a rate", hint="e.g. --fail-under 0.6 or 60%"
        ) from None
    if percent:
        value /= 100
    if not 0 <= value <= 1:  # also refuses nan
        hint = f"did you mean {value / 100:g} ({value:g}%)?" if 1 < value <= 100 and not percent else None
        raise UsageError(
            f"--fail-under {text!r} is not between 0 and 1 (0% and 100%)",
            hint=hint or "a fraction of problems, e.g. 0.6 or 60%",
        )
    return value
