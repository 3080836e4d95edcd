"""``mcoder judge --explain ROLLOUT_ID``: one rollout judged again and read by a person.

Every test is run (no early exit) and none comes from the cache; for each, what went in, what was
expected, what the program gave, the rule that accepted it (or the status that failed it), and
what it cost: wall time, and where the worker measured them CPU time and peak memory. Printed on
stdout; nothing is written.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from mcoder.errors import DataError
from mcoder.jsonl import display_name, index_records
from mcoder.judge.config import JudgeConfig
from mcoder.judge.core import Judge, first_difference
from mcoder.judge.stage import numbered_rollouts
from mcoder.printable import printable
from mcoder.records import Problem, Rollout, Verdict

SHOWN_CHARS = 2000  # of each input, expected and actual text


def explain_files(
    cfg: JudgeConfig, problems_path: Path | str, rollouts_path: Path | str, rollout_id: str
) -> Verdict:
    """Find ``rollout_id`` in the rollouts file, judge it again against its problem, print each
    test; the new verdict."""
    problems = index_records(problems_path, Problem, key=lambda p: p.id)
    rollout = next((r for _, r in numbered_rollouts(rollouts_path) if r.id == rollout_id), None)
    if rollout is None:
        raise DataError(f"no rollout with id {rollout_id!r}", path=display_name(rollouts_path), field="id",
                        hint="give an id from the file (mcoder show lists them)")  # fmt: skip
    problem = problems.get(rollout.problem_id)
    if problem is None:
        raise DataError(f"no problem with id {rollout.problem_id!r}", path=display_name(problems_path),
                        field="problem_id", hint="pass the problems file these rollouts were made from")  # fmt: skip
    with Judge(dataclasses.replace(cfg, workers=1)) as judge:
        verdict, reports = judge.explain(problem, rollout.completion)
    print_explanation(rollout, verdict, reports, Console(file=sys.stdout, highlight=False, soft_wrap=True))
    return verdict


def print_explanation(rollout: Rollout, v: Verdict, reports: list[dict[str, Any]], con: Console) -> None:
    con.print(Text(f"rollout {printable(rollout.id)} | problem {printable(rollout.problem_id)}", style="bold"))
    line = f"{v.status}: {v.tests_passed}/{v.tests_total} tests passed, every test run again, none cached"
    con.print(Text(line, style="bold green" if v.passed else "bold red"))
    if not reports and v.first_failure:
        con.print(Text("  " + printable(str(v.first_failure.get("reason") or v.first_failure.get("detail") or ""))))
    for r in reports:
        con.print()
        ok = r["status"] == "ok"
        head = f"test #{r['index']} ({r['kind']}): " + (f"passed, rule {r['rule']}" if ok else r["status"])
        if r.get("detail"):
            head += f" ({printable(str(r['detail']))})"
        con.print(Text(head, style="green" if ok else "red") + Text(" | " + _costs(r), style="dim"))
        if r["kind"] == "functional":
            con.print(_field("check", r["input"]))
        else:
            con.print(_field("input", r["input"]))
            con.print(_field("expected", r["expected"]))
        if r.get("got") is not None and r["kind"] != "functional":
            con.print(_field("actual", r["got"]))
            diff = first_difference(r["expected"], r["got"]) if not ok else None
            if diff is not None:
                con.print(Text(f"  first difference: line {diff['line']}, column {diff['column']} "
                               f"(token {diff['token']})", style="yellow"))  # fmt: skip
        if r.get("stderr", "").strip():
            con.print(_field("stderr", r["stderr"].strip(), style="red"))


def _costs(r: dict[str, Any]) -> str:
    parts = []
    if r.get("wall_s") is not None:
        parts.append(f"wall {1000 * r['wall_s']:.1f} ms")
    if r.get("cpu_s") is not None:
        parts.append(f"cpu {1000 * r['cpu_s']:.1f} ms")
    if r.get("mem_kb"):
        parts.append(f"memory {r['mem_kb'] / 1024:.1f} MiB")
    return ", ".join(parts) or "not run"


def _field(name: str, text: str, style: str = "") -> Text:
    shown = text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + f"... ({len(text)} chars)"
    body = "\n".join("    " + printable(x) for x in shown.rstrip("\n").split("\n")) if shown.strip() else "    (empty)"
    return Text(f"  {name}:\n", style="bold") + Text(body, style=style)
