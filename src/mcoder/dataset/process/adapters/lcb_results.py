"""LiveCodeBench results files (``Scenario.codegeneration_*_eval_all.json``), read as problems.

A results file (a published submission, or one ``mcoder bench --lcb-out`` wrote) carries each
problem's statement, starter code, platform, difficulty, date, title and contest, and the
model's programs with LiveCodeBench's grade, but no tests. Its rows become problems without
tests, so a build sets them aside ("no tests"); they serve ``--decontaminate`` (the submission's
statements), and ``--difficulty-from`` reads the same file's grades as pass rates. The programs
LiveCodeBench graded correct become reference solutions, and ``meta`` keeps the submission's
pass@1 and sample count. The file format is described in ``formats/lcb_results.py``.
"""

from __future__ import annotations

from typing import Any

from mcoder.dataset.collect.sources import RowRef
from mcoder.dataset.process.adapters.base import Adapter, keep_references, provenance
from mcoder.dataset.process.fields import json_value, need, text
from mcoder.dataset.process.statement import day, difficulty_label
from mcoder.formats import lcb_results
from mcoder.records import Problem

SOURCE = "livecodebench"


def detect(row: dict[str, Any]) -> bool:
    return all(k in row for k in lcb_results.REQUIRED) and "question_content" in row


def convert(row: dict[str, Any], ref: RowRef) -> Problem:
    entry = lcb_results.entry(_decoded_metadata(row, ref), ref.path, ref.index + 1)
    accepted = [code for code, ok in zip(entry.code_list, entry.graded_list, strict=True) if ok]
    graded = entry.graded_list
    return Problem(
        id=entry.question_id,
        source=SOURCE,
        question=need(row, "question_content", ref),
        tests=[],
        platform=text(row, "platform", ref),
        difficulty=difficulty_label(row.get("difficulty")),
        date=day(row.get("contest_date")),
        starter_code=text(row, "starter_code", ref) or "",
        reference_solutions=keep_references(list(dict.fromkeys(accepted))),
        meta=provenance(
            ref,
            title=row.get("question_title"),
            contest_id=row.get("contest_id"),
            lcb_pass_at_1=graded.count(True) / len(graded) if graded else None,
            lcb_samples=len(graded),
        ),
    )


def _decoded_metadata(row: dict[str, Any], ref: RowRef) -> dict[str, Any]:
    """The row with each output's metadata (JSON text) decoded within the budgets, so that the
    results-file reader sees plain values only."""
    metadata = row.get("metadata")
    if metadata is None:
        return row
    if not isinstance(metadata, list):
        raise ref.error(f"expected a list, got {type(metadata).__name__}", field="metadata")
    return row | {"metadata": [json_value(m, ref, f"metadata[{i}]") for i, m in enumerate(metadata)]}


ADAPTER = Adapter(
    "lcb-results",
    "LiveCodeBench results files (*_eval_all.json): problems without tests, programs graded correct as references",
    detect,
    convert,
)
