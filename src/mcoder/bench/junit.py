"""The bench as JUnit XML, the report format CI systems show (GitHub Actions through a test
reporter, GitLab's ``artifacts:reports:junit``, Jenkins, Buildkite): one test case per problem.

- ``classname`` is ``platform.difficulty`` (CI groups cases by it), ``name`` the problem id,
  ``time`` the seconds its samples ran.
- A case fails when none of its samples passed, or when ``--fail-on-regression`` is on and it
  regressed against the baseline. The failure's ``type`` is the first failing sample's verdict
  status, its ``message`` that status with the failing test, and its text the first failure
  (test index, input, expected, got, stderr) as the judge recorded it.
- A problem without verdicts fails (``type="no_verdict"``) when a gate is on, as the gate
  counts it; without a gate it is ``skipped``. A case that passes with some samples failing says
  so in its ``system-out`` ("3/8 samples passed: ...").
- Each gate that is on is a case of its own (classname ``mcoder.gates``, named by its flag) that
  fails exactly when the gate does, with the gate's message: the file and the exit code agree.

Everything in a failure comes from the candidate's program or a verdicts file: ``xml_text`` is
the one place it enters the document, and it is total (any string, any JSON value): characters
XML 1.0 cannot hold become U+FFFD, and each field is cut to ``FIELD_CHARS``.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from typing import Any

from mcoder.bench.gates import Change, GateResult
from mcoder.bench.table import ProblemTally

SUITE = "mcoder bench"
GATES_CLASS = "mcoder.gates"
NO_VERDICT = "no_verdict"
FIELD_CHARS = 4000
# Characters XML 1.0 allows (its "Char" production); anything else cannot appear in a document,
# not even escaped.
XML_CHAR_RANGES = ((0x9, 0x9), (0xA, 0xA), (0xD, 0xD), (0x20, 0xD7FF), (0xE000, 0xFFFD), (0x10000, 0x10FFFF))
_NOT_XML = re.compile("[^" + "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in XML_CHAR_RANGES) + "]")
REPLACEMENT = "\ufffd"
FAILURE_FIELDS = ("input", "expected", "got", "stderr", "detail", "reason")


def xml_text(value: Any, limit: int = FIELD_CHARS) -> str:
    """Any value as text an XML document can hold: JSON for non-strings, cut to ``limit``."""
    if not isinstance(value, str):
        try:
            value = json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError):  # a circular structure: not from JSON, but stay total
            value = repr(value)
    if len(value) > limit:
        value = value[:limit] + f"... ({len(value) - limit} more characters)"
    return _NOT_XML.sub(REPLACEMENT, value)


def document(
    tallies: list[ProblemTally],
    regressions: list[Change],
    *,
    source: str,
    gate_regressions: bool,
    gates: list[GateResult] = (),
) -> str:
    """The whole JUnit XML document (one testsuite inside testsuites); ``gates``: the result of
    each gate that is on (a case each)."""
    regressed = {r.id: r for r in regressions} if gate_regressions else {}
    suite = ET.Element("testsuite", name=xml_text(f"{SUITE}: {source}"))
    counts = {"tests": 0, "failures": 0, "skipped": 0}
    elapsed = 0.0
    for t in sorted(tallies, key=lambda t: (t.platform, t.difficulty, t.id)):
        case = ET.SubElement(
            suite, "testcase", classname=xml_text(f"{t.platform}.{t.difficulty}"), name=xml_text(t.id),
            time=f"{t.elapsed:.3f}",
        )  # fmt: skip
        counts["tests"] += 1
        elapsed += t.elapsed
        if t.n == 0 and gates:  # every gate counts it as a failure
            el = ET.SubElement(case, "failure", type=NO_VERDICT, message="no verdict for this problem")
            el.text = "the verdicts hold no sample of this problem: a gate counts it as failed"
            counts["failures"] += 1
            continue
        if t.n == 0:
            ET.SubElement(case, "skipped", message="no verdicts for this problem")
            counts["skipped"] += 1
            continue
        if t.c == 0 or t.id in regressed:
            _failure(case, t, regressed.get(t.id))
            counts["failures"] += 1
        elif t.c < t.n:
            ET.SubElement(case, "system-out").text = xml_text(_samples_line(t))
    for g in gates:
        case = ET.SubElement(suite, "testcase", classname=GATES_CLASS, name=xml_text(g.flag), time="0.000")
        counts["tests"] += 1
        if g.failure is not None:
            ET.SubElement(case, "failure", type="gate", message=xml_text(g.failure))
            counts["failures"] += 1
    attrs = {k: str(v) for k, v in counts.items()} | {"errors": "0", "time": f"{elapsed:.3f}"}
    suite.attrib.update(attrs)
    root = ET.Element("testsuites", name=SUITE, **attrs)
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _samples_line(t: ProblemTally) -> str:
    statuses = ", ".join(f"{s} {n}" for s, n in t.statuses.most_common())
    return f"{t.c}/{t.n} samples passed: {statuses}"


def _failure(case: ET.Element, t: ProblemTally, regression: Change | None) -> None:
    failed = t.failed or {}
    status = xml_text(failed.get("status") or "regressed", 100)
    ff = failed.get("first_failure")
    if ff is not None and not isinstance(ff, dict):
        ff = {"detail": ff}
    where = f" on test #{xml_text(ff.get('index'), 40)}" if ff and ff.get("index") is not None else ""
    message = f"regressed {xml_text(regression.text())}" if regression is not None else f"{status}{where}"
    el = ET.SubElement(case, "failure", type=status, message=message)
    lines = [xml_text(_samples_line(t))]
    if failed.get("rollout_id") is not None:
        lines.append(f"first failing sample: {xml_text(failed['rollout_id'], 200)} ({status})")
    for key in FAILURE_FIELDS:
        if ff and ff.get(key) not in (None, ""):
            lines.append(f"--- {key}\n{xml_text(ff[key])}")
    el.text = "\n".join(lines)
