"""Dataset step 4 of 4, verify: run the reference solutions through the judge and trust only what they pass.

Each reference runs on each test alone (a one-test copy of the problem), ``runs`` times, in
separate judge calls with the execution cache off, so every run really executes. Then per problem:

- a test that some reference passes in every run is kept; a test no reference passes is dropped
  (wrong expected output in the source, usually); a test whose verdict changes between runs of
  one reference is flaky and dropped too;
- the problem is kept when one reference passes every kept test; when more than
  ``max_drop_fraction`` of the tests would go, the reference is the likelier culprit (or the
  harness does not fit it), so the problem is removed instead;
- references that pass different tests are flagged (``meta["references_disagree"]``);
- ``meta["ref_time_s"]`` holds, per kept test, the time of the fastest passing reference (the
  median of its runs), rounded up to a 1-2-5 step of at least 0.2 s so that reruns give the
  same bytes (unless a slow reference sits right at a step); a time limit of
  max(1 s, 3 x that) is then safe.

A reference that runs past the judge's time limit is stopped by the judge (``time_limit``),
reported in the notes, and not run on that test again; nothing waits on it. Problems without reference solutions pass through
unverified (``meta["verified"] = False``) unless ``require_reference`` is set.

Problems are judged a batch at a time and handed on as each batch is decided
(``verify_batches``), so that a build writes them as they finish: a kill loses at most one batch.
Problems an earlier run already wrote (``done``) pass through without running again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import statistics
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field

from mcoder.config import not_setting, ranges
from mcoder.dataset.report import Removal, StageResult
from mcoder.records import Problem, Rollout, Verdict

REF_TIME_FLOOR_S = 0.2
BATCH = 16  # problems judged together: what a kill can lose; bounds memory, keeps the bar moving


@ranges(
    runs=">= 1", timeout_s="(0, 3600]", memory_mb=">= 64", workers=">= 0", max_drop_fraction="[0, 1]",
    min_tests=">= 0", max_references=">= 1", flag_prefix="verify-",
)  # fmt: skip
@dataclass
class VerifyConfig:
    """How references are run and what their results remove."""

    runs: int = 3
    """Runs of each reference on each test; a verdict that changes between runs marks the test flaky."""
    timeout_s: float = 10.0
    """Time limit of one reference on one test, in seconds."""
    memory_mb: int = 2048
    """Memory limit of a reference process, in MiB."""
    workers: int = field(default=0, metadata=not_setting("how many references run at once"))
    """Judge workers (0 = one per core)."""
    max_drop_fraction: float = 0.5
    """Remove a problem, rather than drop its tests, when more than this share of its tests fail."""
    min_tests: int = 1
    """Remove a problem left with fewer tests than this after dropping."""
    max_references: int = 4
    """References run per problem (the first ones); sources with dozens per problem would cost too much."""
    require_reference: bool = False
    """Remove problems that have no reference solution (default: keep them, marked unverified)."""
    unsafe_no_sandbox: bool = False
    """Run references without the judge's sandbox (only where something else isolates them)."""
    allow_packages: tuple[str, ...] = ()
    """Third-party packages references may import (the judge shows the standard library only)."""

    def judge_config(self):
        from mcoder.judge.config import JudgeConfig

        return JudgeConfig(
            workers=self.workers,
            timeout_s=self.timeout_s,
            memory_mb=self.memory_mb,
            early_exit=True,
            cache_size=0,
            unsafe_no_sandbox=self.unsafe_no_sandbox,
            allow_packages=tuple(self.allow_packages),
        )


@dataclass
class _Cell:
    """One reference on one test, over the runs."""

    passed: list[bool] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)


def fenced(code: str) -> str:
    """A reference as a completion the judge extracts unchanged."""
    return code if "```" in code else f"```python\n{code}\n```"


def _jobs(problems: Sequence[Problem]) -> tuple[dict[str, Problem], list[Rollout]]:
    """One-test copies of each problem, and a rollout per (reference, test)."""
    subs: dict[str, Problem] = {}
    rollouts = []
    for p in problems:
        for j, test in enumerate(p.tests):
            sub_id = f"{p.id}#t{j}"
            subs[sub_id] = dataclasses.replace(p, id=sub_id, tests=[test])
            for r, code in enumerate(p.reference_solutions):
                rollouts.append(Rollout(id=f"{p.id}#r{r}#t{j}", problem_id=sub_id, completion=fenced(code)))
    return subs, rollouts


def step_up(seconds: float) -> float:
    """The smallest 1-2-5 step (0.2, 0.5, 1, 2, 5, ...) at or above ``seconds``.

    The floor is 0.2 s: below a third of a second the limit is the 1 s minimum anyway, and
    measured times that small jitter across steps from run to run.
    """
    if seconds <= REF_TIME_FLOOR_S:
        return REF_TIME_FLOOR_S
    exp = math.floor(math.log10(seconds))
    for m in (1, 2, 5, 10):
        step = round(m * 10.0**exp, 6)
        if step >= seconds - 1e-12:
            return step
    return round(10.0 ** (exp + 1), 6)


# ---------------------------------------------------------------- deciding, per problem


@dataclass
class Decision:
    """What the reference runs say about one problem."""

    problem: Problem | None  # the kept problem (tests dropped, meta filled), or None
    removal: Removal | None
    dropped: list[dict] = field(default_factory=list)  # {"id", "test", "why"}
    timeouts: list[dict] = field(default_factory=list)  # {"id", "reference", "test", "runs"}
    disagree: bool = False


def decide(p: Problem, cells: dict[tuple[int, int], _Cell], cfg: VerifyConfig) -> Decision:
    """Keep, trim or remove ``p`` given ``cells[(reference, test)]``."""
    refs, tests = range(len(p.reference_solutions)), range(len(p.tests))
    timeouts = [
        {"id": p.id, "reference": r, "test": t, "runs": cells[r, t].statuses.count("time_limit")}
        for r in refs
        for t in tests
        if "time_limit" in cells[r, t].statuses
    ]
    flaky = {t for t in tests if any(len(set(cells[r, t].passed)) > 1 for r in refs)}
    good = [t for t in tests if t not in flaky and any(all(cells[r, t].passed) for r in refs)]
    dropped = [
        {"id": p.id, "test": t, "why": "flaky" if t in flaky else "no_reference_passes"}
        for t in tests
        if t not in good
    ]
    out = Decision(None, None, dropped, timeouts)
    patterns = {tuple(all(cells[r, t].passed) for t in tests) for r in refs}
    out.disagree = len(patterns) > 1
    statuses = sorted({s for r in refs for t in tests for s in cells[r, t].statuses if s != "accepted"})
    if not good:
        out.removal = Removal(p.id, "verify", "reference_fails_all_tests", {"statuses": statuses})
    elif len(tests) - len(good) > cfg.max_drop_fraction * len(tests):
        detail = {"tests": len(tests), "failing": len(tests) - len(good), "statuses": statuses}
        out.removal = Removal(p.id, "verify", "reference_fails_most_tests", detail)
    elif not any(all(all(cells[r, t].passed) for t in good) for r in refs):
        out.removal = Removal(p.id, "verify", "no_reference_passes_all", {"statuses": statuses})
    elif len(good) < cfg.min_tests:
        out.removal = Removal(p.id, "verify", "too_few_tests_after_verify", {"tests": len(good)})
    else:
        out.problem = _trimmed(p, cells, good, out)
    return out


def _trimmed(p: Problem, cells: dict[tuple[int, int], _Cell], good: list[int], d: Decision) -> Problem:
    refs = range(len(p.reference_solutions))
    passing = [r for r in refs if all(all(cells[r, t].passed) for t in good)]
    # The fastest passing reference bounds what a time limit must allow. Of its runs the (low)
    # median counts: the first job of a fresh judge worker pays for imports, once.
    ref_time = [step_up(min(statistics.median_low(cells[r, t].seconds) for r in passing)) for t in good]
    meta = {**p.meta, "verified": True, "ref_time_s": ref_time}
    if d.dropped:
        meta["verify_dropped_tests"] = [{"test": x["test"], "why": x["why"]} for x in d.dropped]
    if d.disagree:
        meta["references_disagree"] = True
    return dataclasses.replace(p, tests=[p.tests[t] for t in good], meta=meta)


# ---------------------------------------------------------------- running


def _run_chunk(judge, chunk: Sequence[Problem], cfg: VerifyConfig, advance) -> dict[str, dict]:
    """cells[problem id][(reference, test)] over ``cfg.runs`` separate judge calls. A reference
    that ran past the time limit on a test is not run on it again: its cell fails, whatever the
    later runs would say (a slow reference cost the limit ``runs`` times over, for nothing)."""
    subs, rollouts = _jobs(chunk)
    cells: dict[str, dict[tuple[int, int], _Cell]] = {p.id: {} for p in chunk}
    timed_out: set[str] = set()
    for run in range(cfg.runs):
        todo = [r for r in rollouts if r.id not in timed_out]
        for r, v in zip(todo, judge.judge(subs, todo, lambda i, v: advance()), strict=True):
            pid, ref, test = r.id.rsplit("#", 2)
            cell = cells[pid].setdefault((int(ref[1:]), int(test[1:])), _Cell())
            _record(cell, v)
            if v.status == "time_limit":
                timed_out.add(r.id)
                for _ in range(cfg.runs - run - 1):  # the runs it will not take: off the bar too
                    advance()
    return cells


def _record(cell: _Cell, v: Verdict) -> None:
    cell.passed.append(v.passed)
    cell.statuses.append(v.status)
    cell.seconds.append(v.elapsed_s)


def verify(
    problems: Sequence[Problem], cfg: VerifyConfig, judge=None, bar=None
) -> tuple[list[Problem], StageResult]:
    """Verify ``problems`` with their references. ``judge``: an open ``Judge`` (one is made and
    closed if None); ``bar``: a (rich Progress, task id) to advance (its own bar if None)."""
    kept: list[Problem] = []
    result = StageResult("verify", 0, 0)
    for batch_kept, batch_result in verify_batches(problems, cfg, judge, bar):
        kept += batch_kept
        result.merge(batch_result)
    return kept, result


def verify_batches(
    problems: Sequence[Problem], cfg: VerifyConfig, judge=None, bar=None, done: Collection[str] = ()
) -> Iterator[tuple[list[Problem], StageResult]]:
    """``verify`` a batch of ``BATCH`` problems at a time, in order: the kept problems and the
    result of each batch as soon as it is decided. Problems whose id is in ``done`` are passed
    on as they are, without running (an earlier run verified and wrote them)."""

    def checked(batch: Sequence[Problem]) -> list[Problem]:
        return [
            dataclasses.replace(p, reference_solutions=p.reference_solutions[: cfg.max_references])
            for p in batch
            if p.reference_solutions and p.tests and p.id not in done
        ]

    total = cfg.runs * sum(len(p.tests) * len(p.reference_solutions) for p in checked(problems))
    with _open_judge(judge, cfg) as j, _progress(bar, total) as (progress, task):
        for start in range(0, max(len(problems), 1), BATCH):
            batch = problems[start : start + BATCH]
            todo = checked(batch)
            cells = _run_chunk(j, todo, cfg, lambda: progress.advance(task)) if todo else {}
            yield _collect(batch, {p.id: decide(p, cells[p.id], cfg) for p in todo}, cfg, done)


@contextlib.contextmanager
def _progress(bar, total: int):
    if bar is not None:
        progress, task = bar
        known = next(t.total for t in progress.tasks if t.id == task) or 0
        progress.update(task, total=known + total)
        yield progress, task
        return
    from mcoder.console import progress as make_progress

    with make_progress() as progress:
        yield progress, progress.add_task("verify", total=total)


@contextlib.contextmanager
def _open_judge(judge, cfg: VerifyConfig):
    """The given judge as is, or a new one closed afterwards."""
    if judge is not None:
        yield judge
        return
    from mcoder.judge.core import Judge

    with Judge(cfg.judge_config()) as made:
        try:
            yield made
        except KeyboardInterrupt:
            made.abort()  # Ctrl-C: the running references are killed, not waited for
            raise


def _collect(
    problems: Sequence[Problem], decisions: dict[str, Decision], cfg: VerifyConfig, done: Collection[str]
):
    kept, removals, unverified, resumed = [], [], 0, 0
    for p in problems:
        d = decisions.get(p.id)
        if p.id in done:
            resumed += 1
            kept.append(p)
        elif d is not None:
            if d.removal is not None:
                removals.append(d.removal)
            else:  # with every reference it came with, run or not
                kept.append(dataclasses.replace(d.problem, reference_solutions=p.reference_solutions))
        elif not p.tests:
            removals.append(Removal(p.id, "verify", "no_tests"))
        elif cfg.require_reference:
            removals.append(Removal(p.id, "verify", "no_reference"))
        else:
            unverified += 1
            kept.append(dataclasses.replace(p, meta={**p.meta, "verified": False}))
    ds = [decisions[k] for k in sorted(decisions)]
    notes = {
        "verified": sum(d.problem is not None for d in ds),
        "unverified_no_reference": unverified,
        "resumed": resumed,
        "tests_dropped": sum(len(d.dropped) for d in ds if d.problem is not None),
        "flaky_tests": sum(x["why"] == "flaky" for d in ds for x in d.dropped),
        "dropped_tests": [x for d in ds if d.problem is not None for x in d.dropped],
        "references_disagree": [k for k in sorted(decisions) if decisions[k].disagree],
        "reference_timeouts": [x for d in ds for x in d.timeouts],
    }
    params = {"runs": cfg.runs, "timeout_s": cfg.timeout_s, "max_drop_fraction": cfg.max_drop_fraction}
    return kept, StageResult("verify", len(problems), len(kept), removals, notes=notes, params=params)
