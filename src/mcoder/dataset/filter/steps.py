"""The filter stage: from converted problems to the ones worth training on.

Steps run cheapest first, each a function over a list of problems that returns the problems it
keeps and a ``StageResult`` (counts, removals with reasons, notes): freshness, statement length,
minimum tests, special judge, duplicates, decontamination, the difficulty band, and last the cap
on tests (which removes nothing, only trims). ``run_filter`` runs the ones ``FilterConfig`` turns on.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

from mcoder.config import TEXT, ranges
from mcoder.dataset.filter.special_judge import special_judge_phrase
from mcoder.dataset.report import Removal, StageResult
from mcoder.errors import UsageError
from mcoder.records import Problem

Step = Callable[[Sequence[Problem]], tuple[list[Problem], StageResult]]
SpecialJudge = Literal["keep", "flag", "drop"]
SPECIAL_JUDGE: tuple[SpecialJudge, ...] = get_args(SpecialJudge)


@ranges(
    min_tests=">= 0", min_chars=">= 0", max_chars=">= 0", max_tests=">= 1", dedup_threshold="(0, 1]",
    ngram=">= 1", decontam_min_overlap="(0, 1]", keep_pass_rate="[0, 1]",
)  # fmt: skip
@dataclass
class FilterConfig:
    """What the filter stage removes. The defaults drop only problems without tests: a build
    without filter flags writes every problem it converted."""

    after: str | None = None
    """Keep problems dated on or after this day (YYYY-MM-DD); undated problems are removed."""
    min_tests: int = 0
    """Remove problems with fewer tests than this (problems without tests go at any setting)."""
    min_chars: int = 0
    """Remove problems whose statement is shorter than this many characters."""
    max_chars: int | None = None
    """Remove problems whose statement is longer than this many characters."""
    special_judge: SpecialJudge = "keep"
    """Problems whose statement accepts several outputs: keep them as they are, keep them flagged in
    meta ("flag"), or remove them ("drop"); counted in the report in every case."""
    max_tests: int | None = None
    """Cap each problem's tests at this many, keeping the largest inputs."""
    dedup: bool = False
    """Remove exact duplicates (statement or test set) and MinHash near-duplicates."""
    dedup_threshold: float = 0.8
    """Estimated Jaccard similarity of statement shingles at which two problems are near-duplicates."""
    decontaminate: list[Path] = field(default_factory=list)
    """Benchmark problem files (mcoder JSONL) whose problems must not be trained on."""
    ngram: int = 13
    """Word n-gram size of the decontamination overlap."""
    decontam_min_overlap: float = 0.5
    """Share of a benchmark statement's n-grams (at least 50 counted) found in a problem that marks it contaminated."""
    difficulty_from: list[Path] = field(default_factory=list)
    """Verdict files of the target model on these problems (rollout + judge)."""
    keep_pass_rate: tuple[float, float] | None = field(default=None, metadata=TEXT)
    """Keep problems whose pass rate lies in [LO, HI] (given as LO,HI); needs difficulty_from."""

    def __post_init__(self) -> None:
        if isinstance(self.keep_pass_rate, str):  # LO,HI: the command line's form
            from mcoder.dataset.difficulty.measured import parse_band

            self.keep_pass_rate = parse_band(self.keep_pass_rate)
        if self.after is not None:
            _check_date(self.after)
        if self.special_judge not in SPECIAL_JUDGE:
            raise UsageError(
                f"special_judge must be one of {', '.join(SPECIAL_JUDGE)}, got {self.special_judge!r}"
            )
        if self.max_chars is not None and self.max_chars < self.min_chars:
            raise UsageError(f"--max-chars {self.max_chars} is below --min-chars {self.min_chars}")
        if self.max_tests is not None and self.max_tests < max(1, self.min_tests):
            raise UsageError(
                f"--max-tests {self.max_tests} is below --min-tests {self.min_tests}",
                hint="a cap below the minimum would remove every capped problem",
            )
        if bool(self.difficulty_from) != (self.keep_pass_rate is not None):
            raise UsageError(
                "--difficulty-from and --keep-pass-rate go together",
                hint="e.g. --difficulty-from verdicts.jsonl --keep-pass-rate 0.1,0.9",
            )


def _check_date(text: str) -> None:
    import datetime

    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        raise UsageError(
            f"--after takes a date YYYY-MM-DD, got {text!r}", hint="e.g. --after 2024-08-01"
        ) from None


# ---------------------------------------------------------------- per-problem steps


def _per_problem(
    name: str, problems: Sequence[Problem], check: Callable[[Problem], tuple | None]
) -> tuple[list[Problem], StageResult]:
    """Keep problems for which ``check`` returns None; else it returns (reason, detail) or
    (reason, detail, text shown in the build's table)."""
    kept, removals = [], []
    for p in problems:
        verdict = check(p)
        if verdict is None:
            kept.append(p)
        else:
            removals.append(Removal(p.id, name, *verdict))
    return kept, StageResult(name, len(problems), len(kept), removals)


def freshness(problems: Sequence[Problem], after: str) -> tuple[list[Problem], StageResult]:
    def check(p: Problem):
        if not p.date:
            return "no_date", {}, "no date (--after)"
        # Dates may carry a time ("2023-08-21T00:00:00"): the day is what counts.
        if p.date[:10] >= after:
            return None
        return "too_old", {"date": p.date[:10]}, f"dated before {after} (--after)"

    kept, result = _per_problem("freshness", problems, check)
    result.params = {"after": after}
    return kept, result


def statement_length(problems: Sequence[Problem], min_chars: int, max_chars: int | None):
    def check(p: Problem):
        n = len(p.question.strip())
        if n < min_chars:
            return "statement_too_short", {"chars": n}
        if max_chars is not None and n > max_chars:
            return "statement_too_long", {"chars": n}
        return None

    return _per_problem("length", problems, check)


def min_tests(problems: Sequence[Problem], n: int, stage: str = "min_tests"):
    def check(p: Problem):
        if len(p.tests) >= n:
            return None
        text = "no tests" if not p.tests else f"fewer than {n} tests (--min-tests)"
        return "too_few_tests", {"tests": len(p.tests)}, text

    return _per_problem(stage, problems, check)


def special_judge(
    problems: Sequence[Problem], keep: bool, flag: bool = True
) -> tuple[list[Problem], StageResult]:
    """Find problems that accept several outputs; remove them unless ``keep``, else mark
    ``meta["special_judge"]`` (and the phrase) when ``flag``, or leave them as they are."""
    kept, removals, flagged = [], [], []
    for p in problems:
        phrase = special_judge_phrase(p.question)
        if phrase is None or (keep and not flag):
            kept.append(p)
            if phrase is not None:
                flagged.append({"id": p.id, "phrase": phrase})
            continue
        flagged.append({"id": p.id, "phrase": phrase})
        if keep:
            kept.append(
                dataclasses.replace(p, meta={**p.meta, "special_judge": True, "special_judge_phrase": phrase})
            )
        else:
            removals.append(Removal(p.id, "special_judge", "special_judge", {"phrase": phrase}))
    notes = {"flagged": len(flagged)}
    mode = "drop" if not keep else "flag" if flag else "keep"
    return kept, StageResult(
        "special_judge", len(problems), len(kept), removals, notes=notes, params={"special_judge": mode}
    )


def cap_tests(problems: Sequence[Problem], max_tests: int) -> tuple[list[Problem], StageResult]:
    """Keep each problem's ``max_tests`` largest-input tests, in their original order.

    Large inputs are the ones that catch slow programs; the small ones are mostly samples that
    the large ones already cover. Removes no problem.
    """
    out, capped = [], 0
    for p in problems:
        if len(p.tests) <= max_tests:
            out.append(p)
            continue
        largest = sorted(range(len(p.tests)), key=lambda i: (-len(p.tests[i].input), i))[:max_tests]
        tests = [p.tests[i] for i in sorted(largest)]
        out.append(dataclasses.replace(p, tests=tests, meta={**p.meta, "tests_capped_from": len(p.tests)}))
        capped += 1
    return out, StageResult(
        "cap_tests", len(problems), len(out), notes={"capped": capped}, params={"max_tests": max_tests}
    )


# ---------------------------------------------------------------- the stage


def filter_steps(cfg: FilterConfig) -> list[Step]:
    """The steps ``cfg`` turns on, in the order they run."""
    before, after = split_steps(cfg)
    if not cfg.dedup:
        return before + after
    from mcoder.dataset.filter.dedup import dedup

    return [*before, lambda ps: dedup(ps, cfg.dedup_threshold), *after]


def split_steps(cfg: FilterConfig) -> tuple[list[Step], list[Step]]:
    """The steps ``cfg`` turns on before dedup and after it (dedup itself in neither: a build runs
    it over the whole stream, ``refine.Refiner``)."""
    steps: list[Step] = []
    if cfg.after is not None:
        steps.append(lambda ps: freshness(ps, cfg.after))
    if cfg.min_chars or cfg.max_chars is not None:
        steps.append(lambda ps: statement_length(ps, cfg.min_chars, cfg.max_chars))
    steps.append(lambda ps: min_tests(ps, max(cfg.min_tests, 1)))  # a problem without tests never stays
    mode = cfg.special_judge
    steps.append(lambda ps: special_judge(ps, keep=mode != "drop", flag=mode == "flag"))
    after: list[Step] = []
    if cfg.decontaminate:
        after.append(_decontaminate_step(cfg))
    if cfg.keep_pass_rate is not None:
        after.append(_difficulty_step(cfg))
    if cfg.max_tests is not None:
        after.append(lambda ps: cap_tests(ps, cfg.max_tests))
    return steps, after


def _decontaminate_step(cfg: FilterConfig) -> Step:
    from mcoder.dataset.filter.decontam import BenchIndex, decontaminate, load_bench

    index = BenchIndex.build(load_bench(cfg.decontaminate), cfg.ngram)  # read before any work starts
    return lambda ps: decontaminate(ps, index, cfg.decontam_min_overlap)


def _difficulty_step(cfg: FilterConfig) -> Step:
    from mcoder.dataset.difficulty.measured import difficulty_band, read_pass_counts

    counts = read_pass_counts(cfg.difficulty_from)
    lo, hi = cfg.keep_pass_rate
    return lambda ps: difficulty_band(ps, counts, lo, hi)


def run_steps(
    problems: Sequence[Problem], steps: Sequence[Step], on_step: Callable[[StageResult], None] | None = None
) -> tuple[list[Problem], list[StageResult]]:
    """Run steps in order, timing each (``StageResult.seconds``); ``on_step`` sees each result."""
    results = []
    current = list(problems)
    for step in steps:
        start = time.perf_counter()
        current, result = step(current)
        result.seconds = time.perf_counter() - start
        results.append(result)
        if on_step is not None:
            on_step(result)
    return current, results


def run_filter(problems: Sequence[Problem], cfg: FilterConfig) -> tuple[list[Problem], list[StageResult]]:
    return run_steps(problems, filter_steps(cfg))
