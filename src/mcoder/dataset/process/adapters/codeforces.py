"""Codeforces problems with their statement samples (rLLM's shape): ``problem`` (statement with
'Time Limit: N ms', 'Memory Limit: N MB' and 'Tags:' trailer lines) and ``tests``, a list of
``{input, output}``. The rows have no id; it is derived from the file name and row index."""

from __future__ import annotations

from typing import Any

from mcoder.dataset.collect.sources import RowRef
from mcoder.dataset.process.adapters.base import Adapter, ident, provenance, test_count
from mcoder.dataset.process.fields import Skip, need
from mcoder.dataset.process.statement import limits
from mcoder.records import Problem, Test

SOURCE = "codeforces"


def detect(row: dict[str, Any]) -> bool:
    return "problem" in row and isinstance(row.get("tests"), list)


def convert(row: dict[str, Any], ref: RowRef) -> Problem:
    cases = need(row, "tests", ref, list)
    test_count(len(cases), ref, "tests")
    tests = []
    for i, case in enumerate(cases):
        if not (
            isinstance(case, dict)
            and isinstance(case.get("input"), str)
            and isinstance(case.get("output"), str)
        ):
            raise ref.error("expected {input, output} with text values", field=f"tests[{i}]")
        tests.append(Test(input=case["input"], output=case["output"]))
    if not tests:
        raise Skip("no tests")
    question = need(row, "problem", ref).strip()
    return Problem(
        id=ident(row["id"], ref, "id") if row.get("id") else ref.derived_id(),
        source=SOURCE,
        question=question,
        tests=tests,
        platform="codeforces",
        meta=provenance(ref, samples_only=True, **limits(question)),
    )


ADAPTER = Adapter("codeforces", "Codeforces statements with sample tests (rLLM shape)", detect, convert)
