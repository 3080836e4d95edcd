"""CI gates over a bench: the checks that make ``mcoder bench`` exit 5 (``GateFailed``) when the
results are worse than allowed, so that a CI job can tell a worse model (5) from a broken job
(1 internal, 2 usage, 3 bad data, 4 missing environment).

Every problem of the problems file counts. A problem without a verdict is a failure for every
gate, never a problem left out: an empty verdicts file, or one that judged 1 of 6 problems, fails
each gate that is on.

- ``--fail-under RATE``: pass@1 over all problems (a problem's pass@1 is its passed share of
  samples; one without a verdict counts 0 and fails the gate) is below RATE (``0.6`` or ``60%``).
- ``--fail-on-regression`` (with ``--baseline``): some problem's pass@1 (c/n) is lower than in
  the baseline, or it has no verdict now. With one sample per problem (a folder of solutions):
  passed before, fails now. Compared exactly on counts (c1 * n0 < c0 * n1), never on rounded
  floats.
- ``--max-drop POINTS`` (with ``--baseline``): pass@1 over all problems fell more than POINTS
  percentage points below the baseline's: the gate for sampled models, whose per-problem shares
  are noisy; a problem without a verdict now fails it too.

With a gate on, the baseline must have judged every problem of the problems file: an empty one,
or one of another set, is a broken job (``check_baseline``: a ``DataError``, exit 3), not a gate
that quietly turns itself off.

Every gate is checked and every failure reported, not only the first; each gate's result is a
``GateResult`` (the JUnit file has a test case per gate, with the same outcome).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mcoder.bench.table import ProblemTally
from mcoder.config import TEXT, ranges
from mcoder.errors import DataError, UsageError

EPS = 1e-9  # float slack for the pass@1 comparisons: a value equal to the floor passes


@ranges(fail_under="[0, 1]", max_drop="[0, 100]")
@dataclass(frozen=True, slots=True)
class Gates:
    fail_under: float | None = field(default=None, metadata=TEXT)
    """pass@1 floor over all problems (one without a verdict fails): a fraction 0..1 or a percentage (0.6 or 60%)."""
    fail_on_regression: bool = False
    """Fail when any problem's pass@1 is lower than in the baseline, or it has no verdict now."""
    max_drop: float | None = None
    """Fail when pass@1 over all problems fell more than this many percentage points below the baseline's."""

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
        if n1 == 0 or c1 * b.n < b.c * n1:  # no verdict now: a failure, whatever the baseline had
            worse.append(Change(pid, (b.c, b.n), (c1, n1), status))
        elif n1 and c1 * b.n > b.c * n1:
            better.append(Change(pid, (b.c, b.n), (c1, n1)))
    return worse, better


@dataclass(frozen=True, slots=True)
class GateResult:
    """One gate that is on: its flag as given, and why it failed (None: it passed)."""

    flag: str
    failure: str | None = None


def pass_at_1(tallies: dict[str, ProblemTally]) -> float | None:
    """pass@1 over every problem, a problem without a verdict counting 0 (None: no problems)."""
    if not tallies:
        return None
    return sum(t.c / t.n for t in tallies.values() if t.n) / len(tallies)


def check(
    gates: Gates,
    tallies: dict[str, ProblemTally],
    base_tallies: dict[str, ProblemTally] | None,
    regressions: list[Change],
) -> list[GateResult]:
    """The result of each gate that is on, in the order of their flags."""
    results = []
    missing = sorted(t.id for t in tallies.values() if t.n == 0)
    now = pass_at_1(tallies)
    over = f"over all {len(tallies)} problems" + (f" ({_missing(missing)})" if missing else "")
    if gates.fail_under is not None:
        flag = f"--fail-under {_pct(gates.fail_under)}"
        failure = None
        if now is None or now + EPS < gates.fail_under or missing:
            shown = "n/a" if now is None else _pct(now)
            verdict = f"under the floor {_pct(gates.fail_under)}" if now is None or now + EPS < gates.fail_under else (
                "at or over the floor, but a problem without a verdict fails the gate"
            )  # fmt: skip
            failure = f"pass@1 {shown} {over} is {verdict} ({flag})"
        results.append(GateResult(flag, failure))
    if gates.fail_on_regression:
        n = len(regressions)
        failure = (
            f"{n} problem{'s' * (n != 1)} regressed against the baseline (--fail-on-regression): "
            + ", ".join(r.id for r in regressions[:10])
            + (f", ... ({n - 10} more)" if n > 10 else "")
        ) if regressions else None  # fmt: skip
        results.append(GateResult("--fail-on-regression", failure))
    if gates.max_drop is not None and base_tallies is not None:
        flag = f"--max-drop {gates.max_drop:g}"
        before = pass_at_1(base_tallies)
        failure = None
        if before is not None and now is not None:
            drop = 100 * (before - now)
            moved = f"pass@1 fell {drop:.1f} points ({_pct(before)} -> {_pct(now)}) {over}"
            if drop > gates.max_drop + EPS:
                failure = f"{moved}, more than {flag}"
            elif missing:
                failure = f"{moved}: within {flag}, but a problem without a verdict fails the gate"
        results.append(GateResult(flag, failure))
    return results


def _missing(ids: list[str]) -> str:
    shown = ", ".join(ids[:10]) + (f", ... ({len(ids) - 10} more)" if len(ids) > 10 else "")
    return f"{len(ids)} without a verdict, counted as failed: {shown}"


def check_inputs(
    gates: Gates,
    tallies: dict[str, ProblemTally],
    base_tallies: dict[str, ProblemTally] | None,
    baseline: str,
) -> None:
    """With a gate on, a job that gives the gates nothing to count is broken (exit 3): a problems
    file without problems, or a baseline that did not judge every problem (an empty file, or the
    verdicts of another set, would compare nothing and pass)."""
    if not gates.any:
        return
    if not tallies:
        raise DataError("the problems file holds no problem: the gates have nothing to count",
                        hint="give the problems file the verdicts were judged on")  # fmt: skip
    if base_tallies is None:
        return
    missing = sorted(t.id for t in base_tallies.values() if t.n == 0)
    if not missing:
        return
    what = (
        "has no verdicts (an empty baseline compares nothing)"
        if len(missing) == len(base_tallies)
        else f"has no verdict for {len(missing)} of {len(base_tallies)} problems "
        f"(it judged another set): {', '.join(missing[:10])}" + (" ..." if len(missing) > 10 else "")
    )
    raise DataError(
        f"the baseline {what}",
        path=baseline,
        hint="give the verdicts of the accepted run on this same problems file (every problem judged)",
    )


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
