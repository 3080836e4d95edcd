"""Strict parsing of the records: unknown, missing and mistyped fields are named."""

import dataclasses

import pytest

from mcoder.errors import DataError
from mcoder.records import SCHEMA_VERSION, Problem, Rollout, Test, Verdict, from_dict, record_key, to_dict


def _problem(**over):
    data = {
        "id": "p1",
        "source": "unit",
        "question": "Add two numbers.",
        "tests": [{"input": "1 2\n", "output": "3\n", "kind": "stdin"}],
    }
    data.update(over)
    return data


def test_round_trip_keeps_every_field():
    p = from_dict(Problem, _problem(fn_name=None, meta={"k": [1, 2]}))
    again = from_dict(Problem, to_dict(p))
    assert again == p
    assert again.schema == SCHEMA_VERSION
    assert isinstance(again.tests[0], Test)
    assert record_key(p) == "p1"


def test_unknown_field_is_named():
    with pytest.raises(DataError) as e:
        from_dict(Problem, _problem(questoin="typo"))
    assert e.value.field == "questoin"
    assert "unknown field" in e.value.message


def test_missing_required_field_is_named():
    data = _problem()
    del data["question"]
    with pytest.raises(DataError) as e:
        from_dict(Problem, data)
    assert e.value.field == "question"


def test_nested_test_field_is_named_with_its_index():
    with pytest.raises(DataError) as e:
        from_dict(Problem, _problem(tests=[{"input": "", "output": "", "kind": "stdin"}, {"input": 5, "output": ""}]))
    assert e.value.field == "tests[1].input"


def test_literal_fields_reject_other_values():
    with pytest.raises(DataError) as e:
        from_dict(Problem, _problem(tests=[{"input": "", "output": "", "kind": "stdout"}]))
    assert e.value.field == "tests[0].kind"
    with pytest.raises(DataError):
        from_dict(Verdict, {"rollout_id": "r", "problem_id": "p", "reward": 1, "passed": True,
                            "status": "ok", "tests_passed": 1, "tests_total": 1})


def test_booleans_are_not_numbers():
    with pytest.raises(DataError) as e:
        from_dict(Rollout, {"id": "r", "problem_id": "p", "completion": "x", "sample_index": True})
    assert e.value.field == "sample_index"


def test_rollout_needs_only_id_problem_and_completion():
    r = from_dict(Rollout, {"id": "r", "problem_id": "p", "completion": "print(1)"})
    assert r.completion_token_ids is None and r.sample_index == 0


def test_integer_reward_becomes_float():
    v = from_dict(Verdict, {"rollout_id": "r", "problem_id": "p", "reward": 1, "passed": True,
                            "status": "accepted", "tests_passed": 1, "tests_total": 1})
    assert isinstance(v.reward, float)


def test_newer_schema_is_refused_with_a_hint():
    with pytest.raises(DataError) as e:
        from_dict(Problem, _problem(schema=SCHEMA_VERSION + 1))
    assert e.value.field == "schema" and "upgrade" in e.value.hint


def test_to_dict_shares_token_lists_and_keeps_field_order():
    ids = list(range(1000))
    r = Rollout(id="r", problem_id="p", completion="x", completion_token_ids=ids)
    d = to_dict(r)
    assert d["completion_token_ids"] is ids  # no deep copy of long token lists
    assert list(d) == [f.name for f in dataclasses.fields(Rollout)]
    p = from_dict(Problem, _problem())
    assert to_dict(p)["tests"] == [{"input": "1 2\n", "output": "3\n", "kind": "stdin"}]
