"""LeetCode problems with assert-based tests and reference solutions (rLLM's shape):
``problem`` (statement ending with 'Please complete the following python code precisely:' and
the starter code block), ``solutions`` (a reference ``class Solution``) and ``tests.functional``
(``def check(candidate): assert candidate(...) == ...`` then ``check(Solution().fn)``).

Asserts with literal arguments become call tests of ``fn``; otherwise the whole check is kept as
one functional test (see ``mcoder.dataset.process.asserts``)."""

from __future__ import annotations

from typing import Any

from mcoder.dataset.collect.sources import RowRef
from mcoder.dataset.process.adapters.base import Adapter, ident, keep_references, provenance
from mcoder.dataset.process.asserts import check_tests, signature_params, split_invocation
from mcoder.dataset.process.fields import need
from mcoder.dataset.process.statement import difficulty_label, leetcode_prompt_parts
from mcoder.records import Problem

SOURCE = "leetcode"


def detect(row: dict[str, Any]) -> bool:
    tests = row.get("tests")
    return "problem" in row and isinstance(tests, dict) and "functional" in tests


def convert(row: dict[str, Any], ref: RowRef) -> Problem:
    field = "tests.functional"
    source = need(row, "tests", ref, dict).get("functional")
    if not isinstance(source, str):
        raise ref.error("expected the check() source as text", field=field)
    try:
        check_source, fn_name = split_invocation(source)
    except SyntaxError as e:
        raise ref.error(f"not Python: {e.msg} (line {e.lineno})", field=field) from None
    except ValueError as e:  # a null byte
        raise ref.error(f"not Python: {e}", field=field) from None
    if not fn_name:
        raise ref.error("no trailing check(Solution().name) call to tell the function", field=field)
    question, starter = leetcode_prompt_parts(need(row, "problem", ref))
    try:
        tests = check_tests(check_source, signature_params(starter, fn_name))
    except (ValueError, SyntaxError) as e:
        raise ref.error(str(e), field=field) from None
    solutions = row.get("solutions")
    return Problem(
        id=ident(row["id"], ref, "id") if row.get("id") else ref.derived_id(),
        source=SOURCE,
        question=question,
        tests=tests,
        platform="leetcode",
        difficulty=difficulty_label(row.get("difficulty")),
        starter_code=starter,
        fn_name=fn_name,
        reference_solutions=keep_references(solutions if isinstance(solutions, list) else [solutions]),
        meta=provenance(ref),
    )


ADAPTER = Adapter(
    "leetcode", "LeetCode with check() asserts and reference solutions (rLLM shape)", detect, convert
)
