"""A comparison rule is one registered function (ARCHITECTURE.md, "How to add a comparison rule").

The rule here is registered by this test alone, the way the page says to add one to
``judge/compare.py``: from that one function, ``JudgeConfig``, ``mcoder judge --compare`` and the
judge's verdicts know it, by the name written once in ``@rule(...)``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import sandbox_or_skip
from mcoder.cli.app import app
from mcoder.errors import UsageError
from mcoder.judge import compare
from mcoder.judge.compare import Compared, rule
from mcoder.judge.config import JudgeConfig

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def divisor_rule():
    """A problem with many right answers ("print a divisor of n other than 1 and n") cannot be
    graded against one expected text: this rule reads the test's input instead."""

    @rule("divisor")
    def divisor(c: Compared) -> str | None:
        n, got = c.input.split(), c.got.split() if c.kind == "stdin" else []
        if len(n) != 1 or len(got) != 1 or not (n[0].isdecimal() and got[0].isdecimal()) or len(got[0]) > 18:
            return None
        return "divisor" if 1 < int(got[0]) < int(n[0]) and int(n[0]) % int(got[0]) == 0 else None

    yield divisor
    del compare.RULES["divisor"]


def test_a_registered_rule_is_a_choice_and_compares_with_the_tests_input(divisor_rule):
    assert JudgeConfig(compare="divisor").compare == "divisor"
    assert compare.compare_output("2\n", "3\n", "divisor", test_input="12\n") == "divisor"
    assert compare.compare_output("2\n", "5\n", "divisor", test_input="12\n") is None
    assert compare.compare_output("2\n", "3\n", test_input="12\n") is None  # microcoder: not the expected text
    assert compare.compare_value(2, 3, "divisor", test_input="12") is None  # a call test: not its business


def test_an_unregistered_name_is_refused_and_a_name_is_registered_once(divisor_rule):
    with pytest.raises(UsageError, match="unknown --compare 'divisr'") as e:
        JudgeConfig(compare="divisr")
    assert e.value.hint == "choose one of microcoder, strict, divisor"
    with pytest.raises(ValueError, match="registered twice"):
        rule("divisor")(divisor_rule)


def test_the_command_line_judges_with_a_registered_rule(divisor_rule, tmp_path):
    sandbox_or_skip()
    problem = {"id": "div", "source": "t", "question": "", "tests": [
        {"input": "12\n", "output": "2\n"}, {"input": "35\n", "output": "5\n"},
    ]}  # fmt: skip
    largest = "n = int(input())\nprint(max(d for d in range(2, n) if n % d == 0))"
    rollouts = [
        {"id": "largest", "problem_id": "div", "completion": f"```python\n{largest}\n```"},
        {"id": "one", "problem_id": "div", "completion": "```python\ninput()\nprint(1)\n```"},
    ]
    (tmp_path / "p.jsonl").write_text(json.dumps(problem) + "\n")
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rollouts))
    out = tmp_path / "v.jsonl"
    args = ["judge", "-p", str(tmp_path / "p.jsonl"), "-r", str(tmp_path / "r.jsonl"), "-o", str(out)]
    r = CliRunner().invoke(app, [*args, "--compare", "divisor", "-w", "1", "-q"])
    assert r.exit_code == 0, r.output
    verdicts = {v["rollout_id"]: v for v in map(json.loads, out.read_text().splitlines()) if "rollout_id" in v}
    assert verdicts["largest"]["status"] == "accepted" and verdicts["largest"]["matched_by"] == ["divisor"] * 2
    assert verdicts["one"]["status"] == "wrong_answer"


def test_the_how_to_lists_files_that_exist_and_three_edits_at_most():
    page = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = page.split("**A comparison rule.**", 1)[1].split("\n\n**", 1)[0]
    steps = re.findall(r"^\d+\. (.+?)(?=^\d+\. |\Z)", section, re.MULTILINE | re.DOTALL)
    edited = [re.match(r"`([^`]+)`", s).group(1) for s in steps]
    assert 1 <= len(edited) <= 3, edited
    assert all((ROOT / f).is_file() for f in edited), edited
    assert "src/mcoder/judge/compare.py" in edited
