"""verl's custom reward contract, without verl: the file is loaded by path the way verl loads
``custom_reward_function.path`` (a fresh module from the file, the function looked up by name,
``reward_kwargs`` bound with functools.partial), and called as verl's reward managers call it."""

from __future__ import annotations

import functools
import importlib.util
import inspect
import json
from pathlib import Path

import pytest

from conftest import sandbox_or_skip
from helpers.large import ANSWER, large_json, retained_bytes
from mcoder.errors import DataError
from mcoder.integrations import verl_reward
from mcoder.records import Problem, from_dict, to_dict

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "problems"


@pytest.fixture(autouse=True)
def _sandbox():
    sandbox_or_skip()


@pytest.fixture
def loaded():
    """The module as verl gets it: spec_from_file_location on the path, exec_module."""
    spec = importlib.util.spec_from_file_location("custom_module", verl_reward.__file__)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    module.close()


def _first(name: str) -> Problem:
    return from_dict(Problem, json.loads((EXAMPLES / name).read_text().splitlines()[0]))


def _fenced(code: str) -> str:
    return f"Reasoning...\n```python\n{code}```"


def test_the_signature_is_the_one_verl_calls(loaded):
    params = list(inspect.signature(loaded.compute_score).parameters)
    assert params[:4] == ["data_source", "solution_str", "ground_truth", "extra_info"]
    batch = list(inspect.signature(loaded.compute_score_batch).parameters)
    assert batch[:4] == ["data_sources", "solution_strs", "ground_truths", "extra_infos"]


def test_every_ground_truth_form_scores_like_the_judge(loaded, tmp_path):
    stdin, call = _first("stdin.jsonl"), _first("call.jsonl")
    right, wrong = _fenced(stdin.reference_solutions[0]), _fenced("print(0)\n")
    fn_right = _fenced(call.reference_solutions[0])
    cases_stdin = {"inputs": [t.input for t in stdin.tests], "outputs": [t.output for t in stdin.tests]}
    cases_call = {
        "inputs": [[json.loads(x) for x in t.input.split("\n")] for t in call.tests],
        "outputs": [json.loads(t.output) for t in call.tests],
        "fn_name": call.fn_name,
    }
    score = functools.partial(loaded.compute_score, workers=2)  # verl binds reward_kwargs so
    for truth in (to_dict(stdin), json.dumps(to_dict(stdin)), cases_stdin, json.dumps(cases_stdin)):
        assert score("mcoder", right, truth, None) == 1.0
        assert score("mcoder", wrong, truth, None) == 0.0
    assert score("lcb", fn_right, cases_call, {}) == 1.0
    assert score("lcb", _fenced("def add(a, b):\n    return a - b\n"), cases_call, {}) == 0.0
    assert len(loaded._JUDGES) == 1  # one judge for these settings, its workers started once

    pfile = tmp_path / "p.jsonl"
    pfile.write_text(json.dumps(to_dict(stdin)) + "\n")
    by_id = functools.partial(loaded.compute_score, problems=str(pfile), workers=2)
    assert by_id("mcoder", right, stdin.id, None) == 1.0
    assert by_id("mcoder", right, "", {"problem_id": stdin.id}) == 1.0
    fraction = functools.partial(loaded.compute_score, workers=2, reward="fraction")
    half = _fenced("a, b = map(int, input().split())\nprint(a + b if a >= 0 else 0)\n")
    passed = sum((int(a) + int(b) if int(a) >= 0 else 0) == int(t.output) for t in stdin.tests
                 for a, b in [t.input.split()])  # fmt: skip
    assert fraction("mcoder", half, cases_stdin, None) == pytest.approx(passed / len(stdin.tests))
    assert 0 < passed < len(stdin.tests)


def test_the_batch_function_gives_the_single_scores(loaded):
    stdin = _first("stdin.jsonl")
    solutions = [_fenced(stdin.reference_solutions[0]), _fenced("print(0)\n"), "no code"]
    truths = [to_dict(stdin)] * 3
    batch = loaded.compute_score_batch(
        data_sources=["x"] * 3, solution_strs=solutions, ground_truths=truths, extra_infos=None, workers=2
    )
    assert batch == [loaded.compute_score("x", s, t, None, workers=2) for s, t in zip(solutions, truths)]
    assert batch == [1.0, 0.0, 0.0]


@pytest.mark.parametrize("truth", ["not-an-id", "{}", 7, {"inputs": [1], "outputs": []}, {"tests": "[oops"}])
def test_a_ground_truth_that_names_no_problem_is_a_data_error(loaded, truth):
    with pytest.raises(DataError):
        loaded.compute_score("x", "print(1)", truth, None)


def test_a_large_problem_scored_call_after_call_is_held_once(loaded):
    """verl scores each sample in a call of its own, and each call parses its ground truth into a
    fresh problem object: the judge kept every one it met (by object, up to 10,000), +2 MiB a
    call with a 1 MiB test, ~20 GiB at the cap."""
    truth = large_json(1.0)
    score = lambda i: loaded.compute_score("bench", ANSWER, truth, None, workers=1)
    assert score(0) == 1.0
    assert retained_bytes(score, 20) < 4 << 20
