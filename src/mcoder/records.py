"""The data contract between stages: Problem, Rollout and Verdict records.

Each record is one JSON object on one line of a JSONL file and carries ``schema`` (the version of
this contract). Parsing is strict: an unknown field, a missing required field or a value of the
wrong type raises ``DataError`` naming the field; the JSONL reader adds the file and the line.
Records join on ids, never on line order.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from mcoder.errors import DataError

SCHEMA_VERSION = 1

TestKind = Literal["stdin", "call", "functional"]
FinishReason = Literal["stop", "length"]
Status = Literal[
    "accepted",
    "wrong_answer",
    "runtime_error",
    "time_limit",
    "memory_limit",
    "compile_error",
    "no_code",
    "judge_refused",  # the judge could not read or compare what the program sent: a failure
]
STATUSES: tuple[str, ...] = typing.get_args(Status)


@dataclass(slots=True)
class Test:
    """One test of a problem.

    kind ``stdin``: ``input`` is fed to the program's standard input and ``output`` is the
    expected standard output.
    kind ``call``: ``input`` holds the positional arguments as JSON values, one per line (the
    LiveCodeBench convention), ``output`` the expected return value as JSON; the function is the
    problem's ``fn_name``.
    kind ``functional``: ``input`` is Python source defining ``check(candidate)`` (asserts, as in
    HumanEval and LeetCode sets), ``output`` is empty; the test passes when ``check`` returns.
    """

    input: str
    output: str
    kind: TestKind = "stdin"

    __test__: ClassVar[bool] = False  # not a pytest class


@dataclass(slots=True)
class Problem:
    id: str
    source: str
    question: str
    tests: list[Test]
    platform: str | None = None
    difficulty: str | None = None
    date: str | None = None
    starter_code: str = ""
    fn_name: str | None = None
    reference_solutions: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    schema: int = SCHEMA_VERSION

    KEY: ClassVar[str] = "id"

    @property
    def test_kinds(self) -> set[str]:
        return {t.kind for t in self.tests}


@dataclass(slots=True)
class Rollout:
    id: str
    problem_id: str
    completion: str
    sample_index: int = 0
    prompt: str | None = None
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    sampling_logprobs: list[float] | None = None
    finish_reason: FinishReason | None = None
    temperature: float | None = None
    model: str | None = None
    policy_version: int | None = None
    seed: int | None = None
    schema: int = SCHEMA_VERSION

    KEY: ClassVar[str] = "id"


@dataclass(slots=True)
class Verdict:
    rollout_id: str
    problem_id: str
    reward: float
    passed: bool
    status: Status
    tests_passed: int
    tests_total: int
    first_failure: dict[str, Any] | None = None
    matched_by: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    cached: bool = False
    schema: int = SCHEMA_VERSION

    KEY: ClassVar[str] = "rollout_id"


Record = Problem | Rollout | Verdict


def to_dict(record: Any) -> dict[str, Any]:
    """A record as plain JSON-ready data (nested Tests included), in field order.

    Shallow on purpose: lists such as token ids and log-probs are shared, not copied
    (``dataclasses.asdict`` deep-copies them, which used to cost more than a stage's own work).
    """
    data = {name: getattr(record, name) for name in _field_names(type(record))}
    if isinstance(record, Problem):
        data["tests"] = [{"input": t.input, "output": t.output, "kind": t.kind} for t in record.tests]
    return data


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


def record_key(record: Any) -> str:
    return getattr(record, type(record).KEY)


# ---------------------------------------------------------------- strict parsing


def from_dict(cls: type, data: Any) -> Any:
    """Build ``cls`` from ``data``, strictly. Raises DataError naming the offending field."""
    return _parse_dataclass(cls, data, prefix="")


_HINTS_CACHE: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    hints = _HINTS_CACHE.get(cls)
    if hints is None:
        hints = typing.get_type_hints(cls)
        _HINTS_CACHE[cls] = hints
    return hints


def _parse_dataclass(cls: type, data: Any, prefix: str) -> Any:
    if not isinstance(data, dict):
        raise DataError(f"expected an object for {cls.__name__}, got {_kind(data)}", field=prefix or None)
    hints = _hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = [k for k in data if k not in fields]
    if unknown:
        raise DataError(
            f"unknown field in {cls.__name__} (known: {', '.join(fields)})",
            field=prefix + unknown[0],
            hint="check the spelling, or the mcoder version that wrote this file",
        )
    kwargs = {}
    for name, f in fields.items():
        path = prefix + name
        if name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise DataError(f"missing required field of {cls.__name__}", field=path)
            continue
        kwargs[name] = _parse_value(hints[name], data[name], path)
    if kwargs.get("schema", SCHEMA_VERSION) > SCHEMA_VERSION:
        raise DataError(
            f"schema {kwargs['schema']} is newer than this mcoder's ({SCHEMA_VERSION})",
            field=prefix + "schema",
            hint="upgrade mcoder",
        )
    return cls(**kwargs)


def _parse_value(tp: Any, value: Any, path: str) -> Any:
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _parse_value(inner[0], value, path)
    if origin is Literal:
        allowed = typing.get_args(tp)
        if value not in allowed:
            raise DataError(f"{value!r} is not one of {', '.join(map(repr, allowed))}", field=path)
        return value
    if origin is list:
        if not isinstance(value, list):
            raise DataError(f"expected a list, got {_kind(value)}", field=path)
        (item_tp,) = typing.get_args(tp)
        if item_tp in (int, float, str) and all(_is(item_tp, v) for v in value):
            return value  # fast path for token ids and log-probs
        return [_parse_value(item_tp, v, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise DataError(f"expected an object, got {_kind(value)}", field=path)
        return value
    if dataclasses.is_dataclass(tp):
        return _parse_dataclass(tp, value, prefix=path + ".")
    if tp is Any:
        return value
    if not _is(tp, value):
        raise DataError(f"expected {tp.__name__}, got {_kind(value)}", field=path)
    return float(value) if tp is float else value


def _is(tp: type, value: Any) -> bool:
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, tp)


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), type(value).__name__
    )
