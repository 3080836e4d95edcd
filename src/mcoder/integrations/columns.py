"""Problems and completions as outside trainers hand them over: dataset columns, whole records
(a dict or its JSON text), ids of a loaded problems file, chat messages.

This is where a trainer's data enters mcoder's judge: everything here either returns a strict
``Problem`` (parsed by ``records.from_dict``) or raises a ``DataError`` naming the column.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcoder.errors import DataError
from mcoder.jsonl import index_records
from mcoder.records import Problem, from_dict

PROBLEM_FIELDS = tuple(f.name for f in dataclasses.fields(Problem))


def load_problems(source: str | Path | Mapping[str, Problem] | list[Problem] | None) -> dict[str, Problem]:
    """Problems by id from a problems JSONL path, a list of ``Problem``s or a dict of them."""
    if source is None:
        return {}
    if isinstance(source, (str, Path)):
        return index_records(source, Problem, key=lambda p: p.id)
    if isinstance(source, Mapping):
        return dict(source)
    return {p.id: p for p in source}


def problem_from_row(row: Mapping[str, Any], known: Mapping[str, Problem]) -> Problem:
    """The problem a dataset row stands for, tried in this order:

    - a ``problem`` column: a whole mcoder problem record (a dict or its JSON text);
    - a ``tests`` column: the record's own columns (``tests`` and, where present, ``id``,
      ``fn_name``, ``question``...; missing required fields get neutral values);
    - a ``problem_id`` column naming a problem of ``known`` (the problems file given to the reward).
    """
    if row.get("problem") is not None:
        return record(row["problem"], "problem")
    if row.get("tests") is not None:
        data = {k: row[k] for k in PROBLEM_FIELDS if k in row and row[k] is not None}
        return record(data, "tests")
    pid = row.get("problem_id")
    if pid is not None:
        problem = known.get(str(pid))
        if problem is None:
            raise DataError(
                f"no problem with id {pid!r} among the {len(known)} loaded problems",
                field="problem_id",
                hint="pass the problems file the dataset was made from (problems=...)",
            )
        return problem
    raise DataError(
        "the row names no problem: it needs a `problem` column (a record), the record's own "
        "columns (`tests` at least) or a `problem_id` column",
        field="problem_id",
        hint="keep the mcoder problem columns in the dataset, or pass problems=... and a problem_id column",
    )


def record(value: Any, column: str) -> Problem:
    """A ``Problem`` from a record dict or its JSON text; required fields a dataset may lack
    (``id``, ``source``, ``question``) get neutral values, the id a digest of the tests."""
    if isinstance(value, (str, bytes)):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError) as e:
            raise DataError(f"column {column!r} is not JSON ({e})", field=column) from None
    value = plain(value)
    if not isinstance(value, Mapping):
        raise DataError(f"column {column!r} is not a problem record", field=column)
    if not all(isinstance(k, str) for k in value):
        raise DataError(f"column {column!r} has a key that is not text", field=column)
    data = dict(value)
    if isinstance(data.get("tests"), (str, bytes)):
        try:
            data["tests"] = json.loads(data["tests"])
        except (ValueError, RecursionError) as e:
            raise DataError(f"the tests are not JSON ({e})", field="tests") from None
    data.setdefault("source", "dataset")
    data.setdefault("question", "")
    if "id" not in data:
        blob = repr(data.get("tests")).encode("utf-8", "surrogatepass")
        data["id"] = "tests-" + hashlib.sha256(blob).hexdigest()[:16]
    return from_dict(Problem, data)


def plain(value: Any, depth: int = 0) -> Any:
    """``value`` with numpy arrays and scalars (anything with ``tolist``) made lists and numbers,
    recursively (datasets and parquet readers hand columns over so); too deep: left as it is."""
    if depth > 100:
        return value
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    if isinstance(value, Mapping):
        return {k: plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v, depth + 1) for v in value]
    return value


def completion_text(completion: Any) -> str:
    """The text of a completion: a string, or chat messages (TRL's conversational format) whose
    assistant contents are joined; content given as parts keeps its text parts."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Mapping):
        completion = [completion]
    if not isinstance(completion, list):
        raise DataError(f"a completion is a string or chat messages, not {type(completion).__name__}")
    texts = []
    for message in completion:
        if not isinstance(message, Mapping) or message.get("role", "assistant") != "assistant":
            continue
        content = message.get("content")
        if isinstance(content, list):  # [{"type": "text", "text": ...}, ...]
            content = "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
        if isinstance(content, str):
            texts.append(content)
    return "\n".join(texts)
