"""LiveCodeBench's per-problem evaluation file, written and read.

LiveCodeBench (``lcb_runner``) saves a code-generation run as ``Scenario.codegeneration_{n}_{T}
_eval_all.json``: one JSON list, one object per problem, sorted by ``question_id``::

    question_title, question_content, platform, question_id, contest_id, contest_date (ISO
    datetime), starter_code, difficulty (easy | medium | hard), output_list (the model's raw
    outputs), code_list (the program extracted from each), graded_list (one bool per output),
    pass@1 (share of True in graded_list), metadata (per output, a JSON *string* of a dict:
    {"execution time": s} when it passed, else error_code -2 wrong answer, -3 time limit,
    -4 runtime error, with inputs, expected and output)

The published submissions of its leaderboard are such files, and its ``compute_scores`` reads
them (``contest_date``, ``platform``, ``difficulty``, ``graded_list``, ``pass@1``). mcoder writes
one from a bench (problems, rollouts, verdicts) so that a run sits beside the published ones,
and reads one as rollouts (``code_list``, to be judged again) or as verdicts (``graded_list``,
to be tabled or used as a baseline). The format was matched by reading LiveCodeBench's code
(``lcb_runner/benchmarks/code_generation.py``, ``evaluation/compute_scores.py``,
``evaluation/testing_util.py``); nothing of it is copied here.

mcoder adds one key inside each metadata string, ``mcoder_status`` (the verdict's status), so
that reading its own file back keeps statuses LiveCodeBench folds together (compile errors and
memory limits are runtime errors there). LiveCodeBench's readers never look inside metadata.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from mcoder.errors import DataError
from mcoder.formats.buckets import UNKNOWN, difficulty_bucket
from mcoder.jsonl import display_name, iter_objects
from mcoder.records import STATUSES, Problem, Rollout, Verdict, from_dict

SCENARIO = "codegeneration"
# lcb_runner's error codes in metadata (testing_util.py), and the mcoder statuses they stand for
ERROR_CODES = {"wrong_answer": -2, "time_limit": -3}
ERROR_MESSAGES = {-2: "Wrong Answer", -3: "Time Limit Exceeded", -4: "Runtime Error"}
STATUS_OF_CODE = {-2: "wrong_answer", -3: "time_limit", -4: "runtime_error"}
REQUIRED = ("question_id", "code_list", "graded_list")


def file_name(n: int, temperature: float) -> str:
    """The name lcb_runner gives the file (``Scenario.codegeneration_10_0.2_eval_all.json``)."""
    return f"Scenario.{SCENARIO}_{n}_{temperature}_eval_all.json"


# ------------------------------------------------------------------ reading


@dataclass(slots=True)
class Entry:
    """One problem of an LCB results file, checked."""

    question_id: str
    code_list: list[str]
    graded_list: list[bool]
    output_list: list[str]
    metadata: list[dict[str, Any]]
    platform: str | None
    difficulty: str | None


def is_results_file(path: str | os.PathLike) -> bool:
    """Whether ``path`` looks like an LCB results file: a .json file holding a JSON list (not
    JSONL), whose first object has question_id, code_list and graded_list."""
    p = Path(path)
    if str(path) == "-" or p.suffix != ".json" or not p.is_file():
        return False
    with open(p, "rb") as f:
        head = f.read(1 << 16).lstrip()
    if not head.startswith(b"["):
        return False
    return all(f'"{key}"'.encode() in head for key in REQUIRED) or _first_has_keys(p)


def _first_has_keys(p: Path) -> bool:
    try:
        data = orjson.loads(p.read_bytes())
    except orjson.JSONDecodeError:
        return False
    return bool(data) and isinstance(data[0], dict) and all(k in data[0] for k in REQUIRED)


def read_entries(path: str | os.PathLike) -> list[Entry]:
    """The entries of an LCB results file, each checked; a malformed one is a DataError that
    names the file, the entry (as ``line``: its 1-based position in the list) and the field."""
    name = display_name(path)
    try:
        data = orjson.loads(Path(path).read_bytes())
    except orjson.JSONDecodeError as e:
        raise DataError(f"not JSON: {e}", path=name, hint="an LCB results file is one JSON list") from None
    if not isinstance(data, list):
        raise DataError(
            "expected a JSON list of problems", path=name, hint="is this an *_eval_all.json file?"
        )
    out, seen = [], set()
    for i, obj in enumerate(data, start=1):
        item = entry(obj, name, i)
        if item.question_id in seen:
            raise DataError(
                f"question {item.question_id!r} appears twice", path=name, line=i, field="question_id"
            )
        seen.add(item.question_id)
        out.append(item)
    return out


def entry(obj: Any, name: str, i: int) -> Entry:
    """One problem (object) of a results file, checked; ``i`` is its 1-based position."""

    def bad(reason: str, field: str | None = None) -> DataError:
        return DataError(
            reason, path=name, line=i, field=field, hint="LCB's *_eval_all.json has these per problem"
        )

    if not isinstance(obj, dict):
        raise bad("expected an object per problem")
    missing = [k for k in REQUIRED if k not in obj]
    if missing:
        raise bad("missing field", missing[0])
    qid = obj["question_id"]
    if not isinstance(qid, (str, int)) or isinstance(qid, bool):
        raise bad("expected text", "question_id")
    codes, graded = obj["code_list"], obj["graded_list"]
    if not isinstance(codes, list) or not all(isinstance(c, str) for c in codes):
        raise bad("expected a list of programs (text)", "code_list")
    if not isinstance(graded, list) or not all(isinstance(g, bool) for g in graded):
        raise bad("expected a list of true/false", "graded_list")
    if len(graded) != len(codes):
        raise bad(f"{len(graded)} grades for {len(codes)} programs", "graded_list")
    outputs = obj.get("output_list") or list(codes)
    if not isinstance(outputs, list) or len(outputs) != len(codes):
        raise bad("expected one output per program", "output_list")
    metadata = [_metadata(m) for m in obj.get("metadata") or []]
    return Entry(
        question_id=str(qid),
        code_list=codes,
        graded_list=graded,
        output_list=[o if isinstance(o, str) else "" for o in outputs],
        metadata=metadata if len(metadata) == len(codes) else [{} for _ in codes],
        platform=obj.get("platform"),
        difficulty=obj.get("difficulty"),
    )


def _metadata(value: Any) -> dict[str, Any]:
    """LCB stores each output's metadata as a JSON string of a dict."""
    if isinstance(value, dict):
        return value
    try:
        parsed = json.loads(value) if isinstance(value, str) else {}
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def rollout_id(question_id: str, index: int) -> str:
    return f"{question_id}/lcb/{index}"


def as_rollouts(path: str | os.PathLike) -> Iterator[tuple[int, Rollout]]:
    """(entry position, Rollout) for each program of each problem, to be judged by mcoder.

    The completion is the program LCB extracted (``code_list``), fenced so that mcoder's judge
    runs exactly that program; an empty program stays empty (``no_code``)."""
    model = Path(path).name
    for i, e in enumerate(read_entries(path), start=1):
        for j, code in enumerate(e.code_list):
            yield (
                i,
                Rollout(
                    id=rollout_id(e.question_id, j),
                    problem_id=e.question_id,
                    completion=fenced(code),
                    sample_index=j,
                    model=model,
                ),
            )


def fenced(code: str) -> str:
    """``code`` in a python block whose fence is longer than any backtick run inside it."""
    if not code.strip():
        return ""
    longest = max((len(run) for run in code.split("\n") if set(run.strip()) == {"`"}), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}python\n{code.rstrip(chr(10))}\n{fence}\n"


def status_of(graded: bool, metadata: dict[str, Any]) -> str:
    if graded:
        return "accepted"
    status = metadata.get("mcoder_status")
    if status in STATUSES:
        return status
    return STATUS_OF_CODE.get(metadata.get("error_code"), "wrong_answer")


def as_verdicts(path: str | os.PathLike) -> Iterator[tuple[int, Verdict]]:
    """(entry position, Verdict) for each graded output: LCB's grade, as mcoder verdicts."""
    for i, e in enumerate(read_entries(path), start=1):
        for j, (graded, meta) in enumerate(zip(e.graded_list, e.metadata, strict=True)):
            yield (
                i,
                Verdict(
                    rollout_id=rollout_id(e.question_id, j),
                    problem_id=e.question_id,
                    reward=1.0 if graded else 0.0,
                    passed=graded,
                    status=status_of(graded, meta),  # type: ignore[arg-type]
                    tests_passed=0,
                    tests_total=0,
                ),
            )


# ------------------------------------------------------------------ writing


@dataclass(slots=True)
class _Sample:
    index: int
    rollout_id: str
    completion: str | None = None
    verdict: Verdict | None = None


def build(
    problems_path: str | os.PathLike,
    rollouts_path: str | os.PathLike,
    verdicts_path: str | os.PathLike,
    rating_bounds: tuple[float, float],
) -> tuple[list[dict[str, Any]], list[str]]:
    """The LCB results of a bench: one entry per problem with verdicts, sorted by question id,
    and notes (problems without a date, which LCB's ``compute_scores`` cannot read)."""
    from mcoder.extract import extract_code

    verdicts: dict[str, Verdict] = {}
    for lineno, obj in iter_objects(verdicts_path):
        v = _parse(Verdict, obj, verdicts_path, lineno)
        verdicts[v.rollout_id] = v
    groups: dict[str, list[_Sample]] = {}
    for lineno, obj in iter_objects(rollouts_path):
        r = _parse(Rollout, obj, rollouts_path, lineno)
        v = verdicts.pop(r.id, None)
        if v is not None:
            groups.setdefault(r.problem_id, []).append(_Sample(r.sample_index, r.id, r.completion, v))
    if verdicts:
        raise DataError(
            f"{len(verdicts)} verdicts have no rollout, e.g. {next(iter(verdicts))!r}",
            path=display_name(rollouts_path),
            hint="pass the rollouts file the verdicts were judged from",
        )
    entries, undated = [], []
    for lineno, obj in iter_objects(problems_path):
        if obj.get("id") not in groups:
            continue  # a problem without samples: LCB's files list only evaluated problems
        p = _parse(Problem, obj, problems_path, lineno)
        samples = sorted(groups.pop(p.id), key=lambda s: (s.index, s.rollout_id))
        entries.append(_entry_of(p, samples, rating_bounds, extract_code))
        if p.date is None:
            undated.append(p.id)
    if groups:
        raise DataError(
            f"verdicts for problems not in the problems file, e.g. {next(iter(groups))!r}",
            path=display_name(problems_path),
            hint="bench the verdicts against the problems file they were judged on",
        )
    entries.sort(key=lambda e: e["question_id"])
    notes = []
    if undated:
        notes.append(
            f"{len(undated)} problems have no date (contest_date null): LiveCodeBench's compute_scores "
            f"reads a date for every problem, e.g. {undated[0]}"
        )
    return entries, notes


def _parse(cls: type, obj: dict, path: str | os.PathLike, lineno: int) -> Any:
    try:
        return from_dict(cls, obj)
    except DataError as e:
        raise DataError(e.reason, path=display_name(path), line=lineno, field=e.field, hint=e.hint) from None


def _entry_of(p: Problem, samples: list[_Sample], bounds: tuple[float, float], extract) -> dict[str, Any]:
    graded = [bool(s.verdict.passed) for s in samples]
    difficulty = difficulty_bucket(p.difficulty, bounds)
    return {
        "question_title": str(p.meta.get("title") or ""),
        "question_content": p.question,
        "platform": (p.platform or UNKNOWN).lower(),
        "question_id": p.id,
        "contest_id": str(p.meta.get("contest_id") or ""),
        "contest_date": f"{p.date[:10]}T00:00:00" if p.date else None,
        "starter_code": p.starter_code,
        "difficulty": difficulty,
        "output_list": [s.completion or "" for s in samples],
        "code_list": [extract(s.completion or "") or "" for s in samples],
        "graded_list": graded,
        "pass@1": graded.count(True) / len(graded),
        "metadata": [json.dumps(sample_metadata(s.verdict)) for s in samples],
    }


def sample_metadata(v: Verdict) -> dict[str, Any]:
    """One output's metadata in lcb_runner's shape, from an mcoder verdict."""
    if v.passed:
        return {"execution time": v.elapsed_s, "mcoder_status": v.status}
    ff = v.first_failure or {}
    code = ERROR_CODES.get(v.status, -4)
    meta: dict[str, Any] = {}
    if code == -2:
        meta["output"] = ff.get("got") or ""
    else:
        meta["error"] = (ff.get("stderr") or ff.get("detail") or v.status).strip()
    meta |= {
        "inputs": ff.get("input", ""),
        "expected": ff.get("expected", ""),
        "error_code": code,
        "error_message": ERROR_MESSAGES[code],
        "mcoder_status": v.status,
    }
    return meta


def dumps(entries: list[dict[str, Any]]) -> str:
    """The file's text as lcb_runner writes it (``json.dump`` with indent 4)."""
    return json.dumps(entries, indent=4) + "\n"
