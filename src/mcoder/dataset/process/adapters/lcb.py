"""LiveCodeBench: the code_generation rows, and SandboxFusion's copy of them.

LiveCodeBench rows keep tests in ``public_test_cases`` (JSON text) and ``private_test_cases``
(JSON text, or base64 + zlib + pickle of a JSON string), each ``{input, output, testtype}`` where
testtype ``functional`` is a call test of ``metadata.func_name`` (JSON arguments one per line).
SandboxFusion keeps the prompt in ``content``, the tests in ``test`` (compressed the same way, to
``{input_output: JSON {inputs, outputs, fn_name}}``) and task_id, category and difficulty in
``labels``.
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
    test_count,
)
from mcoder.dataset.process.fields import Skip, json_or_compressed, json_value, need, text
from mcoder.dataset.process.statement import day, difficulty_label, lcb_prompt_parts
from mcoder.records import Problem, Test

SOURCE = "livecodebench"
_KINDS = {"stdin": "stdin", "functional": "call"}


def detect(row: dict[str, Any]) -> bool:
    return ("question_content" in row and "public_test_cases" in row) or _is_sandboxfusion(row)


def _is_sandboxfusion(row: dict[str, Any]) -> bool:
    labels = row.get("labels")
    return "content" in row and "test" in row and isinstance(labels, (str, dict)) and "task_id" in labels


def convert(row: dict[str, Any], ref: RowRef) -> Problem:
    return _convert_sandboxfusion(row, ref) if "question_content" not in row else _convert_lcb(row, ref)


def _convert_lcb(row: dict[str, Any], ref: RowRef) -> Problem:
    qid = ident(need(row, "question_id", ref, (str, int)), ref, "question_id")
    public = _cases(row.get("public_test_cases") or "[]", ref, "public_test_cases")
    private = _cases(row.get("private_test_cases") or "[]", ref, "private_test_cases")
    metadata = json_value(row.get("metadata") or "{}", ref, "metadata")
    fn_name = metadata.get("func_name") if isinstance(metadata, dict) else None
    tests = public + private
    if not tests:
        raise Skip("no tests")
    if any(t.kind == "call" for t in tests) and not fn_name:
        raise ref.error("call-based tests but no function name", field="metadata.func_name")
    return Problem(
        id=qid,
        source=SOURCE,
        question=need(row, "question_content", ref),
        tests=tests,
        platform=text(row, "platform", ref),
        difficulty=difficulty_label(row.get("difficulty")),
        date=day(row.get("contest_date")),
        starter_code=text(row, "starter_code", ref) or "",
        fn_name=fn_name or None,
        meta=provenance(
            ref, title=row.get("question_title"), contest_id=row.get("contest_id"), public_tests=len(public)
        ),
    )


def _cases(value: Any, ref: RowRef, field: str) -> list[Test]:
    cases = json_or_compressed(value, ref, field)
    if not isinstance(cases, list):
        raise ref.error("expected a list of test cases", field=field)
    test_count(len(cases), ref, field)
    tests = []
    for i, case in enumerate(cases):
        where = f"{field}[{i}]"
        if (
            not isinstance(case, dict)
            or not isinstance(case.get("input"), str)
            or not isinstance(case.get("output"), str)
        ):
            raise ref.error("expected {input, output, testtype} with text input and output", field=where)
        testtype = case.get("testtype", "stdin")
        kind = _KINDS.get(testtype) if isinstance(testtype, str) else None
        if kind is None:
            raise ref.error(
                f"unknown testtype {case.get('testtype')!r} (known: stdin, functional)", field=where
            )
        tests.append(Test(input=case["input"], output=case["output"], kind=kind))
    return tests


def _convert_sandboxfusion(row: dict[str, Any], ref: RowRef) -> Problem:
    labels = as_dict(json_value(need(row, "labels", ref, (str, dict)), ref, "labels"), ref, "labels")
    blob = json_or_compressed(need(row, "test", ref), ref, "test")
    io = json_value(blob.get("input_output"), ref, "test.input_output") if isinstance(blob, dict) else None
    if not isinstance(io, dict):
        raise ref.error("expected {input_output: {inputs, outputs, fn_name}} once decoded", field="test")
    inputs, outputs, fn_name = io.get("inputs"), io.get("outputs"), io.get("fn_name")
    if not isinstance(inputs, list) or not isinstance(outputs, list):
        raise ref.error("expected lists of inputs and outputs", field="test.input_output")
    test_count(len(inputs), ref, "test")
    if len(inputs) != len(outputs):
        raise Skip("inputs and outputs differ in count")
    if not inputs:
        raise Skip("no tests")
    kind = "call" if fn_name else "stdin"
    tests = []
    for n, (i, o) in enumerate(zip(inputs, outputs)):
        if not isinstance(i, str) or not isinstance(o, str):
            raise ref.error("expected text inputs and outputs", field=f"test.input_output[{n}]")
        tests.append(Test(input=i, output=o, kind=kind))
    question, starter = lcb_prompt_parts(need(row, "content", ref))
    return Problem(
        id=ident(labels["task_id"], ref, "labels.task_id") if labels.get("task_id") else ref.derived_id(),
        source=SOURCE,
        question=question,
        tests=tests,
        platform=labels.get("category") if isinstance(labels.get("category"), str) else None,
        difficulty=difficulty_label(labels.get("difficulty")),
        starter_code=starter,
        fn_name=fn_name or None,
        reference_solutions=keep_references([row.get("canonical_solution")]),
        meta=provenance(ref),
    )


ADAPTER = Adapter("lcb", "LiveCodeBench rows (also SandboxFusion's LCB copy)", detect, convert)
