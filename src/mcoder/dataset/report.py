"""The build report: what every stage took in, let out, and why it removed each problem.

Stages hand back a ``StageResult``; ``build_report`` turns the list into one JSON-ready dict
(histograms of the problems before and after, test counts, time per stage) and
``write_report`` writes it as markdown plus a JSON twin. Everything emitted is sorted, so the
same inputs give the same bytes; the only measured values are the stage times (``seconds``).
"""

from __future__ import annotations

import itertools
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcoder.records import Problem

# Buckets of the tests-per-problem histogram: (label, lowest count in it).
TEST_BUCKETS = (("0", 0), ("1", 1), ("2-4", 2), ("5-9", 5), ("10-49", 10), ("50-99", 50), ("100+", 100))


@dataclass(slots=True)
class Removal:
    """One problem a stage removed, and why (``detail`` names what it matched, if anything).
    ``problem_id`` is the row's place (``file:line``) for a row that gave no problem; ``text`` is
    the reason as the build's "skipped" table shows it (default: "stage: reason")."""

    problem_id: str
    stage: str
    reason: str
    detail: dict[str, Any] = field(default_factory=dict)
    text: str | None = None

    @property
    def label(self) -> str:
        return self.text or f"{self.stage}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.problem_id, "stage": self.stage, "reason": self.reason, "detail": self.detail}


@dataclass(slots=True)
class StageResult:
    """Counts in and out of one stage, its removals, its time, its settings (``params``) and
    what it found (``notes``: counts, histograms, lists; they add up when results merge)."""

    name: str
    n_in: int
    n_out: int
    removals: list[Removal] = field(default_factory=list)
    seconds: float = 0.0
    notes: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)

    def reasons(self) -> dict[str, int]:
        return dict(sorted(Counter(r.reason for r in self.removals).items()))

    def merge(self, other: StageResult) -> None:
        """Add ``other`` (the same stage on the next chunk of problems) into this result."""
        self.n_in += other.n_in
        self.n_out += other.n_out
        self.removals += other.removals
        self.seconds += other.seconds
        self.notes = _merged(self.notes, other.notes)
        self.params = {**other.params, **self.params}


def _merged(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for k, v in b.items():
        if k not in out:
            out[k] = v
        elif isinstance(v, dict):
            out[k] = {kk: out[k].get(kk, 0) + vv for kk, vv in v.items()} | {
                kk: vv for kk, vv in out[k].items() if kk not in v
            }
            out[k] = dict(sorted(out[k].items()))
        else:
            out[k] = out[k] + v  # numbers add, lists concatenate
    return out


class Histograms:
    """Counts of problems by source, platform, difficulty, test kind and tests per problem."""

    def __init__(self) -> None:
        self.problems = self.tests = 0
        self.counters = {
            k: Counter() for k in ("source", "platform", "difficulty", "test_kind", "tests_per_problem")
        }

    def add(self, p: Problem) -> None:
        c = self.counters
        self.problems += 1
        self.tests += len(p.tests)
        c["source"][p.source] += 1
        c["platform"][p.platform or "unknown"] += 1
        c["difficulty"][str(p.difficulty) if p.difficulty is not None else "unknown"] += 1
        c["test_kind"].update(t.kind for t in p.tests)
        c["tests_per_problem"][_bucket(len(p.tests))] += 1

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"problems": self.problems, "tests": self.tests}
        for k, c in self.counters.items():
            out[k] = dict(sorted(c.items()))
        order = [name for name, _ in TEST_BUCKETS]
        out["tests_per_problem"] = {
            b: self.counters["tests_per_problem"][b] for b in order if self.counters["tests_per_problem"][b]
        }
        return out


def _bucket(n: int) -> str:
    label = TEST_BUCKETS[0][0]
    for name, low in TEST_BUCKETS:
        if n >= low:
            label = name
    return label


def summarize(problems: Iterable[Problem]) -> dict[str, Any]:
    """Histograms of a problem list: source, platform, difficulty, test kinds and counts."""
    h = Histograms()
    for p in problems:
        h.add(p)
    return h.to_dict()


def build_report(
    inputs: Sequence[str], stages: Sequence[StageResult], before: dict[str, Any], after: dict[str, Any]
) -> dict[str, Any]:
    """The whole report as JSON-ready data.

    ``before`` and ``after`` are ``summarize`` of the problems entering the first problem-level
    stage and of the output. ``accounted`` checks the chain: each stage lets out what it took in
    minus what it removed, each stage takes in what the one before let out, and the last lets out
    the output; so every input problem is either in the output or listed as a removal.
    """
    removed = sum(len(s.removals) for s in stages)
    problems_in = stages[0].n_in if stages else before["problems"]
    chain_ok = all(s.n_in - len(s.removals) == s.n_out for s in stages)
    linked = all(a.n_out == b.n_in for a, b in itertools.pairwise(stages))
    return {
        "inputs": [str(i) for i in inputs],
        "problems_in": problems_in,
        "problems_out": after["problems"],
        "removed": removed,
        "accounted": chain_ok and linked and problems_in - removed == after["problems"],
        "stages": [
            {
                "name": s.name,
                "in": s.n_in,
                "out": s.n_out,
                "removed": len(s.removals),
                "reasons": s.reasons(),
                "seconds": round(s.seconds, 3),
                "params": s.params,
                "notes": s.notes,
            }
            for s in stages
        ],
        "removals": [r.to_dict() for s in stages for r in sorted(s.removals, key=lambda r: r.problem_id)],
        "before": before,
        "after": after,
    }


def report_paths(path: str | Path) -> tuple[Path, ...]:
    """The markdown report at ``path`` and its JSON twin beside it (same name, ``.json``); ``-``:
    the markdown alone, on stdout."""
    if str(path) == "-":
        return (Path("-"),)
    md_path = Path(path)
    json_path = (
        md_path.with_suffix(".json") if md_path.suffix != ".json" else md_path.with_suffix(".json.json")
    )
    return md_path, json_path


def write_report(path: str | Path, report: dict[str, Any], inputs: dict | None = None) -> tuple[Path, ...]:
    """Write ``report`` as markdown at ``path`` and as JSON beside it, through the output guard
    (``-``: the markdown on stdout)."""
    from mcoder.outputs import write_document

    paths = report_paths(path)
    doc = {"stage": "dataset build", "flag": "--report", "inputs": inputs}
    write_document(paths[0], render_markdown(report), **doc)
    if len(paths) > 1:
        text = json.dumps(report, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        write_document(paths[1], text, **doc)
    return paths


# ---------------------------------------------------------------- markdown


def _md_table(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    def cell(x: Any) -> str:
        return str(x).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(x) for x in r) + " |" for r in rows]
    return lines + [""]


def _histogram_rows(before: dict[str, int], after: dict[str, int]) -> list[tuple[str, int, int]]:
    keys = [*before, *(k for k in after if k not in before)]  # summarize's order: sorted, or by bucket
    return [(k, before.get(k, 0), after.get(k, 0)) for k in keys]


def _detail_text(detail: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(detail.items()) if not isinstance(v, (list, dict)))


def render_markdown(report: dict[str, Any]) -> str:
    before, after = report["before"], report["after"]
    lines = ["# Dataset build report", ""]
    lines += [f"Inputs: {', '.join(report['inputs']) or '(none)'}", ""]
    account = "every input problem accounted for" if report["accounted"] else "COUNTS DO NOT ADD UP"
    lines += [
        (
            f"Problems in: **{report['problems_in']}**, out: **{report['problems_out']}**, "
            f"removed: **{report['removed']}** ({account})."
        ),
        f"Tests in: {before['tests']}, out: {after['tests']}.",
        "",
        "## Stages",
        "",
    ]
    rows = [
        (
            s["name"],
            s["in"],
            s["out"],
            s["removed"],
            ", ".join(f"{k}: {v}" for k, v in s["reasons"].items()),
            f"{s['seconds']:.2f}",
        )
        for s in report["stages"]
    ]
    lines += _md_table(("stage", "in", "out", "removed", "reasons", "seconds"), rows)
    for key, title in (
        ("platform", "Platform"),
        ("difficulty", "Difficulty"),
        ("source", "Source"),
        ("tests_per_problem", "Tests per problem"),
        ("test_kind", "Test kinds"),
    ):
        lines += [f"## {title}", ""]
        lines += _md_table((key, "before", "after"), _histogram_rows(before[key], after[key]))
    lines += _notes_markdown(report["stages"])
    lines += ["## Removed problems", ""]
    rows = [(r["id"], r["stage"], r["reason"], _detail_text(r["detail"])) for r in report["removals"]]
    lines += _md_table(("problem", "stage", "reason", "detail"), rows) if rows else ["(none)", ""]
    return "\n".join(lines)


def _notes_markdown(stages: Sequence[dict[str, Any]]) -> list[str]:
    """Stage notes: scalars as a line each, lists (clusters, matches, flags) as short tables."""
    lines: list[str] = []
    for s in stages:
        if not s["notes"] and not s["params"]:
            continue
        lines += [f"## Stage: {s['name']}", ""]
        if s["params"]:
            lines += ["settings: " + ", ".join(f"{k}={_cell(v)}" for k, v in sorted(s["params"].items())), ""]
        for key, value in sorted(s["notes"].items()):
            if isinstance(value, list) and value and isinstance(value[0], dict):
                columns = sorted({k for v in value for k in v})
                lines += [f"{key}:", ""]
                lines += _md_table(columns, ([_cell(v.get(c, "")) for c in columns] for v in value))
            else:
                lines += [f"- {key}: {_cell(value)}", ""]
    return lines


def _cell(value: Any) -> str:
    if isinstance(value, (list, tuple, dict)) and not value:
        return "(none)"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}: {v}" for k, v in sorted(value.items()))
    return str(value)
