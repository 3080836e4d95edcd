"""CodeContests (DeepMind), in the three shapes it travels in.

- SandboxFusion: ``content`` (statement), ``test`` (JSON list of ``{input: {stdin}, output:
  {stdout}}``), ``labels`` (JSON: difficulty, name, source).
- rLLM: ``problem`` (statement, ending with time and memory limit lines) and ``tests`` ``{inputs,
  outputs}``; no id, so the id is derived from the file name and row index.
- The dataset itself (parquet on the Hub): ``name``, ``description``, ``public_tests``,
  ``private_tests``, ``generated_tests`` (each ``{input: [...], output: [...]}``), enum-coded
  ``source``, ``difficulty`` and solution ``language``, ``cf_rating``, ``time_limit``,
  ``memory_limit_bytes``.
"""

from __future__ import annotations

from typing import Any

from mcoder.dataset.collect.sources import RowRef
from mcoder.dataset.process.adapters.base import (
    Adapter,
    as_dict,
    ident,
    keep_references,
    provenance,
    stdin_tests,
    test_count,
)
from mcoder.dataset.process.fields import Skip, json_value, need
from mcoder.dataset.process.statement import difficulty_label, limits
from mcoder.records import Problem, Test

SOURCE = "code_contests"

# Enums of CodeContests' contest_problem.proto.
_SOURCES = {1: "codechef", 2: "codeforces", 3: "hackerearth", 4: "codejam", 5: "atcoder", 6: "aizu"}
_DIFFICULTIES = {1: "easy", 2: "medium", 3: "hard", 4: "harder", 5: "hardest", 6: "external"}
_PYTHON3 = 3


def detect(row: dict[str, Any]) -> bool:
    tests = row.get("tests")
    return (
        ("content" in row and "test" in row and "labels" in row and "task_id" not in str(row["labels"]))
        or ("problem" in row and isinstance(tests, dict) and "inputs" in tests and "functional" not in tests)
        or ("description" in row and "public_tests" in row)
    )


def convert(row: dict[str, Any], ref: RowRef) -> Problem:
    if "test" in row and "labels" in row:  # SandboxFusion's shape; its statement is ``content``
        return _convert_sandboxfusion(row, ref)
    if "problem" in row:
        return _convert_rllm(row, ref)
    return _convert_deepmind(row, ref)


def difficulty_of(label: Any) -> tuple[str | None, str | None]:
    """(difficulty, the source's own label when it differs).

    Codeforces problems carry their letter in the contest (A, B, ...), not a difficulty; a
    rough reading maps A-B to easy, C-D to medium and later letters to hard, keeping the letter.
    """
    text = difficulty_label(label)
    if text is None:
        return None, None
    if len(text) == 1 and text.isalpha():
        mapped = "easy" if text in "ab" else "medium" if text in "cd" else "hard"
        return mapped, label
    if text in ("harder", "hardest"):
        return "hard", label
    return text, None


def _convert_sandboxfusion(row: dict[str, Any], ref: RowRef) -> Problem:
    question = need(row, "content", ref)
    labels = as_dict(json_value(need(row, "labels", ref, (str, dict)), ref, "labels"), ref, "labels")
    cases = json_value(need(row, "test", ref, (str, list)), ref, "test")
    if not isinstance(cases, list):
        raise ref.error("expected a list of tests", field="test")
    test_count(len(cases), ref, "test")
    tests = []
    for i, case in enumerate(cases):
        try:
            tests.append(Test(input=case["input"]["stdin"], output=case["output"]["stdout"]))
        except (KeyError, TypeError):
            raise ref.error("expected {input: {stdin}, output: {stdout}}", field=f"test[{i}]") from None
    if not tests:
        raise Skip("no tests")
    difficulty, original = difficulty_of(labels.get("difficulty"))
    return Problem(
        id=ident(labels["name"], ref, "labels.name") if labels.get("name") else ref.derived_id(),
        source=SOURCE,
        question=question,
        tests=tests,
        platform=labels["source"].lower() or None if isinstance(labels.get("source"), str) else None,
        difficulty=difficulty,
        meta=provenance(ref, source_difficulty=original, **limits(question)),
    )


def _hashable(value: Any) -> bool:
    return isinstance(value, (int, str, float, type(None)))


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) < 1e18


def _convert_rllm(row: dict[str, Any], ref: RowRef) -> Problem:
    tests_field = need(row, "tests", ref, dict)
    tests = stdin_tests(tests_field.get("inputs"), tests_field.get("outputs"), ref, "tests")
    if not tests:
        raise Skip("no tests")
    question = need(row, "problem", ref).strip()
    return Problem(
        id=ref.derived_id(),
        source=SOURCE,
        question=question,
        tests=tests,
        meta=provenance(ref, **limits(question)),
    )


def _convert_deepmind(row: dict[str, Any], ref: RowRef) -> Problem:
    tests: list[Test] = []
    for field in ("public_tests", "private_tests", "generated_tests"):
        block = row.get(field) or {"input": [], "output": []}
        if not isinstance(block, dict):
            raise ref.error("expected {input: [...], output: [...]}", field=field)
        tests += stdin_tests(block.get("input"), block.get("output"), ref, field)
        test_count(len(tests), ref, field)
    if not tests:
        raise Skip("no tests")
    rating = row.get("cf_rating") or None
    if not isinstance(rating, (int, float, str, type(None))) or isinstance(rating, bool):
        raise ref.error(f"expected a rating, got {type(rating).__name__}", field="cf_rating")
    level, source = row.get("difficulty"), row.get("source")
    for name, value in (("difficulty", level), ("source", source)):
        if not _hashable(value):
            raise ref.error(f"expected an enum code or a label, got {type(value).__name__}", field=name)
    difficulty, original = difficulty_of(_DIFFICULTIES.get(level, level))
    limit = as_dict(row.get("time_limit") or None, ref, "time_limit")
    solutions = as_dict(row.get("solutions") or None, ref, "solutions")
    languages, codes = solutions.get("language") or [], solutions.get("solution") or []
    if not isinstance(languages, list) or not isinstance(codes, list):
        raise ref.error("expected {language: [...], solution: [...]}", field="solutions")
    python3 = [s for lang, s in zip(languages, codes) if lang == _PYTHON3]
    memory = row.get("memory_limit_bytes")
    seconds, nanos = limit.get("seconds", 0), limit.get("nanos", 0)
    if not all(_number(v) for v in (seconds, nanos)) or (memory and not _number(memory)):
        raise ref.error("expected numbers in time_limit and memory_limit_bytes", field="time_limit")
    return Problem(
        id=ident(need(row, "name", ref, (str, int)), ref, "name"),
        source=SOURCE,
        question=need(row, "description", ref),
        tests=tests,
        platform=_SOURCES.get(source),
        difficulty=str(rating) if rating else difficulty,
        reference_solutions=keep_references(python3),
        meta=provenance(
            ref,
            source_difficulty=original,
            public_tests=len((row.get("public_tests") or {}).get("input") or []),
            time_limit_s=(seconds + nanos / 1e9) if limit else None,
            memory_limit_mb=memory / 1e6 if memory else None,
            tags=row.get("cf_tags") or None,
        ),
    )


ADAPTER = Adapter("codecontests", "CodeContests (SandboxFusion, rLLM and Hub shapes)", detect, convert)
