"""Read problems and verdicts for the bench table, joined on problem_id; or LiveCodeBench
results files (``mcoder.formats.lcb_results``) in their place.

Problems files can be large (many tests per problem): they are streamed and only the id,
platform and difficulty of each problem are kept.
"""

from __future__ import annotations

import os

from mcoder.bench.table import ProblemTally
from mcoder.errors import DataError
from mcoder.formats import lcb_results
from mcoder.formats.buckets import difficulty_bucket, platform_name
from mcoder.jsonl import display_name, iter_objects
from mcoder.records import Problem, Verdict, from_dict


def load_problems(path: str | os.PathLike, bounds: tuple[float, float]) -> dict[str, ProblemTally]:
    """An empty tally per problem, by id; a repeated id is a DataError."""
    out: dict[str, ProblemTally] = {}
    name = display_name(path)
    for lineno, obj in iter_objects(path):
        try:
            problem: Problem = from_dict(Problem, obj)
        except DataError as e:
            raise DataError(e.reason, path=name, line=lineno, field=e.field, hint=e.hint) from None
        if problem.id in out:
            raise DataError(f"duplicate problem id {problem.id!r}", path=name, line=lineno, field="id")
        out[problem.id] = ProblemTally(
            id=problem.id,
            platform=platform_name(problem.platform),
            difficulty=difficulty_bucket(problem.difficulty, bounds),
        )
    return out


def fresh_tallies(problems: dict[str, ProblemTally]) -> dict[str, ProblemTally]:
    """Copies with zero counts, to tally a second verdicts file (the baseline) on the same problems."""
    return {pid: ProblemTally(t.id, t.platform, t.difficulty) for pid, t in problems.items()}


def tally_verdicts(path: str | os.PathLike, tallies: dict[str, ProblemTally], problems_path: str) -> int:
    """Count each verdict into its problem's tally; returns the number of verdicts read.

    A verdict whose problem is not in the problems file, or a rollout judged twice, is a
    DataError naming the verdicts file and line.
    """
    name = display_name(path)
    seen: set[str] = set()
    for lineno, obj in iter_objects(path):
        try:
            verdict: Verdict = from_dict(Verdict, obj)
        except DataError as e:
            raise DataError(e.reason, path=name, line=lineno, field=e.field, hint=e.hint) from None
        tally = tallies.get(verdict.problem_id)
        if tally is None:
            raise DataError(
                f"verdict for problem {verdict.problem_id!r}, which is not in {problems_path}",
                path=name,
                line=lineno,
                field="problem_id",
                hint="bench the verdicts against the problems file they were judged on",
            )
        if verdict.rollout_id in seen:
            raise DataError(
                f"rollout {verdict.rollout_id!r} has a second verdict",
                path=name,
                line=lineno,
                field="rollout_id",
                hint="a sample counted twice would skew pass@k; remove the duplicate line",
            )
        seen.add(verdict.rollout_id)
        tally.add(verdict)
    return len(seen)


def lcb_problems(path: str | os.PathLike, bounds: tuple[float, float]) -> dict[str, ProblemTally]:
    """An empty tally per problem of a results file: its platform and difficulty, for tabling a
    submission without the problems file it was run on."""
    return {
        e.question_id: ProblemTally(
            e.question_id, platform_name(e.platform), difficulty_bucket(e.difficulty, bounds)
        )
        for e in lcb_results.read_entries(path)
    }


def tally_lcb(path: str | os.PathLike, tallies: dict[str, ProblemTally]) -> list[str]:
    """Count an LCB results file into the bench's tallies, like a verdicts file. Problems that
    are not in the problems file are left out (a published file covers a whole release; a bench
    often a part of it); the returned notes say how many."""
    outside = []
    for _, v in lcb_results.as_verdicts(path):
        t = tallies.get(v.problem_id)
        if t is None:
            outside.append(v.problem_id)
            continue
        t.add(v)
    if not outside:
        return []
    count = len(set(outside))
    return [f"{display_name(path)}: {count} problems are not in the problems file and are left out"]
