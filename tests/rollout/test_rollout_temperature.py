"""Temperature: selection from measured diversity picks a higher T for a less diverse model, and
staged schedules change T only at their boundaries."""

from __future__ import annotations

import pytest
from tests.rollout_models import one_torch_thread, peaky, problems

from mcoder.engines import HFEngine
from mcoder.errors import UsageError
from mcoder.models import load_model, load_tokenizer
from mcoder.rollout.temperature_rules import (
    DEFAULT_CANDIDATES,
    TemperatureSchedule,
    parse_candidates,
    temperature_from_diversity,
)

_one_thread = pytest.fixture(autouse=True, scope="module")(one_torch_thread)


def test_default_candidates_are_0_6_to_1_8_by_0_2():
    assert DEFAULT_CANDIDATES == (0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8)


def test_a_less_diverse_model_gets_a_higher_temperature(tiny_model):
    tok = load_tokenizer(tiny_model)
    kw = {"n": 4, "max_tokens": 12, "seed": 0, "target": 0.5}
    base_t, base_rows = temperature_from_diversity(HFEngine(load_model(tiny_model), tok), tok, problems(3), **kw)
    # Logits x8: the same model made peaky, i.e. sampling it at T is sampling the original at T/8.
    peaky_t, peaky_rows = temperature_from_diversity(HFEngine(peaky(load_model(tiny_model), 8.0), tok), tok, problems(3), **kw)
    assert [t for t, _ in base_rows] == list(DEFAULT_CANDIDATES)
    assert base_t == 0.6 and base_rows[0][1] >= 0.5
    assert peaky_t > base_t
    d = dict(peaky_rows)
    assert d[peaky_t] >= 0.5  # reaches the target ...
    assert all(d[t] < 0.5 for t in DEFAULT_CANDIDATES if t < peaky_t)  # ... and nothing cooler does
    assert d[0.6] < base_rows[0][1]  # and it really is less diverse


def test_when_no_candidate_reaches_the_target_the_hottest_is_used(tiny_model):
    tok = load_tokenizer(tiny_model)
    engine = HFEngine(peaky(load_model(tiny_model), 50.0), tok)
    t, rows = temperature_from_diversity(engine, tok, problems(1), candidates=[0.6, 0.9], n=3, max_tokens=6, seed=0, target=0.99)
    assert t == 0.9 and all(d < 0.99 for _, d in rows)


def test_selection_rejects_groups_of_one(tiny_model):
    with pytest.raises(UsageError, match="at least 2"):
        temperature_from_diversity(None, None, problems(1), n=1, max_tokens=8, seed=0)


def test_schedule_switches_only_at_its_boundaries():
    s = TemperatureSchedule.parse("1.2@140, 0.6@0")
    assert [s.at(k) for k in (0, 1, 139, 140, 141, 10_000)] == [0.6, 0.6, 0.6, 1.2, 1.2, 1.2]
    assert [k for k in range(300) if s.is_boundary(k)] == [0, 140]
    changes = [k for k in range(1, 300) if s.at(k) != s.at(k - 1)]
    assert changes == [140]
    assert str(s) == "0.6@0,1.2@140"


@pytest.mark.parametrize("text", ["0.6", "0.6@10", "a@0", "0.6@0,1.0@0", "0.6@-1", ""])
def test_bad_schedules_are_usage_errors(text):
    with pytest.raises(UsageError):
        TemperatureSchedule.parse(text)


def test_candidates_parse_ranges_and_lists():
    assert parse_candidates("0.6:1.0:0.2") == (0.6, 0.8, 1.0)
    assert parse_candidates("0.7,1.1") == (0.7, 1.1)
    with pytest.raises(UsageError):
        parse_candidates("0,1")
