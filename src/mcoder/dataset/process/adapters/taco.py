"""TACO and APPS: ``question``, ``input_output`` (JSON ``{inputs, outputs, fn_name?}``),
``solutions`` (a JSON list of Python programs), ``starter_code``, ``difficulty``; TACO adds
``source``, ``tags`` and limits, APPS ``problem_id`` and ``url``.

With ``fn_name`` each input is the list of arguments and each output the return value, which both
sets usually wrap in a one-element list (their harness accepts either form); when every output
of a problem is such a one-element list it is unwrapped, as the harness would compare it.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlparse

from mcoder.dataset.collect.sources import RowRef
from mcoder.dataset.process.adapters.base import (
    Adapter,
    ident,
    json_arguments,
    json_dump,
    keep_references,
    provenance,
    stdin_tests,
    test_count,
)
from mcoder.dataset.process.fields import Skip, json_value, need, text
from mcoder.dataset.process.statement import day, difficulty_label
from mcoder.records import Problem, Test

_NUMBER = re.compile(r"([\d.]+)")


def detect_taco(row: dict[str, Any]) -> bool:
    return "input_output" in row and "question" in row and "problem_id" not in row


def detect_apps(row: dict[str, Any]) -> bool:
    return "input_output" in row and "question" in row and "problem_id" in row


def convert_taco(row: dict[str, Any], ref: RowRef) -> Problem:
    problem = _convert(row, ref, source="taco", pid=ref.derived_id(), platform=text(row, "source", ref))
    problem.date = day(row.get("date"))
    problem.meta.update(_limits(row))
    if isinstance(row.get("tags"), list) and row["tags"]:
        problem.meta["tags"] = row["tags"]
    return problem


def convert_apps(row: dict[str, Any], ref: RowRef) -> Problem:
    url = text(row, "url", ref) or ""
    try:
        host = urlparse(url).netloc.lower().split(".")
    except ValueError as e:
        raise ref.error(f"not a URL ({e})", field="url") from None
    platform = (host[-2] if len(host) >= 2 else None) if url else None
    problem = _convert(
        row,
        ref,
        source="apps",
        pid=ident(need(row, "problem_id", ref, (int, str)), ref, "problem_id"),
        platform=platform,
    )
    if url:
        problem.meta["url"] = url
    return problem


def _convert(row: dict[str, Any], ref: RowRef, *, source: str, pid: str, platform: str | None) -> Problem:
    io = json_value(row.get("input_output") or "{}", ref, "input_output")
    if not isinstance(io, dict):
        raise ref.error("expected {inputs, outputs, fn_name?}", field="input_output")
    fn_name = io.get("fn_name") or None
    if fn_name is not None and not isinstance(fn_name, str):
        raise ref.error(
            f"expected a function name, got {type(fn_name).__name__}", field="input_output.fn_name"
        )
    inputs, outputs = io.get("inputs", []), io.get("outputs", [])
    tests = (
        _call_tests(inputs, outputs, ref) if fn_name else stdin_tests(inputs, outputs, ref, "input_output")
    )
    if not tests:
        raise Skip("no tests")
    solutions = json_value(row.get("solutions") or "[]", ref, "solutions")
    return Problem(
        id=pid,
        source=source,
        question=need(row, "question", ref),
        tests=tests,
        platform=platform.lower() if platform else None,
        difficulty=difficulty_label(row.get("difficulty")),
        starter_code=text(row, "starter_code", ref) or "",
        fn_name=fn_name,
        reference_solutions=keep_references(solutions if isinstance(solutions, list) else []),
        meta=provenance(ref),
    )


def _call_tests(inputs: Any, outputs: Any, ref: RowRef) -> list[Test]:
    if not isinstance(inputs, list) or not isinstance(outputs, list):
        raise ref.error("expected lists of inputs and outputs", field="input_output")
    test_count(len(inputs), ref, "input_output")
    if len(inputs) != len(outputs):
        raise Skip("inputs and outputs differ in count")
    wrapped = all(isinstance(o, list) and len(o) == 1 for o in outputs)
    tests = []
    for i, (args, out) in enumerate(zip(inputs, outputs)):
        if not isinstance(args, list):
            raise ref.error("expected the list of arguments of a call", field=f"input_output.inputs[{i}]")
        tests.append(
            Test(
                input=json_arguments(args, ref, f"input_output.inputs[{i}]"),
                output=json_dump(out[0] if wrapped else out, ref, f"input_output.outputs[{i}]"),
                kind="call",
            )
        )
    return tests


def _limits(row: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for field, key in (("time_limit", "time_limit_s"), ("memory_limit", "memory_limit_mb")):
        value = row.get(field)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(float(value)) if abs(value) < 1e18 else None
        m = _NUMBER.search(value) if isinstance(value, str) else None
        if m:
            try:
                meta[key] = float(m.group(1))
            except ValueError:
                pass
    return meta


TACO = Adapter("taco", "TACO rows (input_output JSON with fn_name; solutions)", detect_taco, convert_taco)
APPS = Adapter(
    "apps", "APPS rows (problem_id, input_output JSON with fn_name; solutions)", detect_apps, convert_apps
)
