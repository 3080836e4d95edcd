"""The diversity-determined temperature's rule on scripted D(T) tables, and D(T) measured on the
tiny model: it rises with T, and the rule picks inside the grid where the curve rises."""

from __future__ import annotations

import pytest
from tests.rollout_models import one_torch_thread, peaky, problems

from mcoder.engines import HFEngine
from mcoder.errors import UsageError
from mcoder.models import load_model, load_tokenizer
from mcoder.rollout.sampling import SamplingConfig
from mcoder.rollout.temperature_rules import (
    DEFAULT_CANDIDATES,
    apply_temperature_rule,
    by_spread,
    diversity_table,
    pass_guard_cap,
    probe_temperatures,
    reward_spread,
)

_one_thread = pytest.fixture(autouse=True, scope="module")(one_torch_thread)

TS = (0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8)


def table(*ds: float) -> list[tuple[float, float]]:
    return list(zip(TS, ds, strict=True))


# The warm-started model of issue 17: short answers that share their boilerplate never reach the
# absolute target 0.5, so the old rule took the hottest candidate.
LOW_CURVE = table(0.10, 0.14, 0.19, 0.26, 0.31, 0.36, 0.40)


# D(T) of the warm-started model of examples/learn/ (seed 0, 4 probe problems x G = 8, measured by
# `make demo`): flat, then taking off at T >= 1.4, where the samples are noise.
WARM_CURVE = table(0.010, 0.021, 0.039, 0.077, 0.231, 0.439, 0.662)
# A peaky model (the tiny model's logits x 8): rises late, then saturates.
SATURATING = table(0.0, 0.0, 0.0, 0.667, 1.0, 0.959, 0.946)


def test_knee_of_a_curve_that_takes_off_is_the_hottest_t_before_it():
    c = apply_temperature_rule(WARM_CURVE)
    assert (c.temperature, c.rule, c.at_edge) == (1.2, "knee", False)
    assert apply_temperature_rule(WARM_CURVE, rule="rise").temperature == 1.6  # halfway is in the noise


def test_knee_of_a_saturating_curve_is_the_coolest_t_near_the_top():
    c = apply_temperature_rule(SATURATING)
    assert (c.temperature, c.rule, c.at_edge) == (1.4, "knee", False)


def test_an_even_curve_has_no_knee_and_falls_back_to_the_rise_rule():
    c = apply_temperature_rule(LOW_CURVE)  # D(0.6) 0.10, top 0.40: halfway is 0.25
    assert (c.temperature, c.rule, c.at_edge) == (1.2, "rise", False)
    assert c.threshold == pytest.approx(0.25)
    assert apply_temperature_rule(LOW_CURVE, rule="rise", rise=0.1).temperature == 0.8  # threshold 0.13
    assert apply_temperature_rule(LOW_CURVE, rule="rise", rise=1.0).temperature == 1.8  # the top itself ...
    assert apply_temperature_rule(LOW_CURVE, rule="rise", rise=1.0).at_edge  # ... said to be at the edge


def test_relative_rules_ignore_a_shift_of_the_whole_curve():
    for curve in (LOW_CURVE, WARM_CURVE, SATURATING):
        shifted = [(t, d + 0.3) for t, d in curve]
        assert apply_temperature_rule(shifted).temperature == apply_temperature_rule(curve).temperature


def test_a_flat_curve_keeps_the_coolest_and_says_so():
    c = apply_temperature_rule(table(0.96, 0.957, 0.959, 0.959, 0.958, 0.96, 0.958))
    assert c.temperature == 0.6 and c.at_edge and "flat" in c.note


def test_absolute_target_stays_available_and_reports_its_edges():
    c = apply_temperature_rule(LOW_CURVE, target=0.5)
    assert (c.temperature, c.rule, c.at_edge) == (1.8, "target", True)
    assert "no candidate reaches" in c.note
    c = apply_temperature_rule(LOW_CURVE, target=0.05)
    assert c.temperature == 0.6 and c.at_edge and "lower candidates" in c.note
    c = apply_temperature_rule(LOW_CURVE, target=0.3)
    assert (c.temperature, c.at_edge, c.note) == (1.4, False, "")


def test_a_curve_that_rises_only_at_the_hottest_candidate_is_an_edge():
    c = apply_temperature_rule(table(0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.5), rule="rise")
    assert c.temperature == 1.8 and c.at_edge and "higher candidates" in c.note
    c = apply_temperature_rule(table(0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.5))  # knee: just before it
    assert c.temperature == 1.6 and not c.at_edge


# The probe's pass rates (8 train problems x G = 8, judged) on the approach-gated warm start of
# examples/learn/ seed 0, beside its D(T): the knee (1.2) is where the pass rate has begun to fall,
# and RL there learnt +8.0 held-out points against +31.4 at T 1.0 (examples/learn/README.md).
GATED_CURVE = table(0.032, 0.033, 0.037, 0.054, 0.201, 0.364, 0.586)
GATED_PASS = [0.422, 0.438, 0.422, 0.344, 0.109, 0.0, 0.0]


def test_pass_guard_lowers_the_knee_to_the_hottest_t_that_keeps_the_pass_rate():
    assert apply_temperature_rule(GATED_CURVE).temperature == 1.2  # diversity alone
    c = apply_temperature_rule(GATED_CURVE, pass_rates=GATED_PASS, guard=0.9)
    assert (c.temperature, c.rule, c.by_diversity, c.at_edge) == (1.0, "knee+guard", 1.2, False)
    assert c.pass_rates == GATED_PASS and "1.2" in c.note and "0.34" in c.note
    # a looser guard lets 1.2 through (0.344 >= 0.7 x 0.438); guard 0 is diversity alone
    assert apply_temperature_rule(GATED_CURVE, pass_rates=GATED_PASS, guard=0.7).temperature == 1.2
    assert apply_temperature_rule(GATED_CURVE, pass_rates=GATED_PASS, guard=0.0).temperature == 1.2
    assert apply_temperature_rule(GATED_CURVE, pass_rates=GATED_PASS, guard=0.0).by_diversity is None


def test_pass_guard_leaves_alone_what_it_cannot_judge_or_need_not_lower():
    zeros = [0.0] * len(TS)  # nothing passes at any T: nothing to keep, diversity decides
    c = apply_temperature_rule(GATED_CURVE, pass_rates=zeros, guard=0.9)
    assert (c.temperature, c.rule, c.by_diversity) == (1.2, "knee", None)
    even = [0.5] * len(TS)  # the pass rate holds everywhere: no cap
    assert apply_temperature_rule(WARM_CURVE, pass_rates=even, guard=0.9).temperature == 1.2
    # diversity's choice already cooler than the cap: kept
    late_fall = [0.5, 0.5, 0.5, 0.5, 0.5, 0.2, 0.0]
    assert apply_temperature_rule(WARM_CURVE, pass_rates=late_fall, guard=0.9).temperature == 1.2
    # off by default: the pass rates are recorded, diversity decides
    c = apply_temperature_rule(GATED_CURVE, pass_rates=GATED_PASS)
    assert (c.temperature, c.rule, c.pass_rates) == (1.2, "knee", GATED_PASS)
    with pytest.raises(ValueError, match="3 pass rates for 7"):
        apply_temperature_rule(WARM_CURVE, pass_rates=[0.1, 0.2, 0.3])


def test_pass_guard_cap_walks_up_from_the_best_and_stops_at_the_first_fall():
    ts = list(TS)
    assert pass_guard_cap(ts, [0.1, 0.5, 0.48, 0.3, 0.5, 0.5, 0.5], 0.9) == 1.0  # a recovery is not trusted
    assert pass_guard_cap(ts, [0.5, 0.2, 0.5, 0.5, 0.5, 0.5, 0.5], 0.9) == 0.6
    assert pass_guard_cap(ts, [0.4] * 7, 0.9) is None  # every T allowed
    assert (
        pass_guard_cap(ts, [0.0, 0.0, 0.1, 0.0, 0.0, 0.0, 0.0], 0.9) == 1.0
    )  # best is the coolest of its rate
    assert pass_guard_cap(ts, [0.3, 0.2, 0.1, 0, 0, 0, 0], 0.0) is None


def test_rule_settings_are_checked():
    with pytest.raises(UsageError, match="diversity-rise"):
        SamplingConfig(temperature="auto", diversity_rise=0.0).validate()
    assert SamplingConfig().diversity_target is None  # the relative rules by default
    assert SamplingConfig().temperature_rule == "spread"  # the loop's: 10 seeds of examples/learn
    with pytest.raises(UsageError):
        SamplingConfig(temperature="auto", temperature_rule="middle").validate()
    with pytest.raises(UsageError):
        apply_temperature_rule([])
    with pytest.raises(UsageError, match="pass-guard"):
        SamplingConfig(temperature="auto", pass_guard=1.5).validate()
    assert SamplingConfig().pass_guard == 0.0  # off: measured worse than the knee alone over 3 seeds


def test_diversity_rises_with_temperature_on_the_tiny_model(tiny_model):
    """The random tiny model is near-uniform (D saturates at every T); made peaky (logits x 8, as a
    model sharpened by training), its D(T) rises from 0 to near 1 across the default grid, and the
    knee rule picks a T inside it."""
    tok = load_tokenizer(tiny_model)
    kw = {"n": 4, "max_tokens": 12, "seed": 0}
    flat = diversity_table(
        HFEngine(load_model(tiny_model), tok), tok, problems(3), candidates=(0.6, 1.8), **kw
    )
    rising = diversity_table(HFEngine(peaky(load_model(tiny_model), 8.0), tok), tok, problems(3), **kw)
    assert [t for t, _ in rising] == list(DEFAULT_CANDIDATES)
    d = [x for _, x in rising]
    assert d[0] < 0.2 and d[-1] > 0.8  # it rises ...
    assert all(b >= a - 0.1 for i, a in enumerate(d) for b in d[i + 1 :])  # ... and never falls far
    assert min(x for _, x in flat) > 0.8  # the random model: already diverse at 0.6
    c = apply_temperature_rule(rising)
    assert not c.at_edge and 0.6 < c.temperature < 1.8
    assert apply_temperature_rule(flat).temperature == 0.6


@pytest.mark.slow
def test_diversity_rises_with_temperature_on_a_warm_started_model(tmp_path):
    """A warm start of examples/learn/ (the learning proof's, gated at 35 %): its answers share
    their boilerplate, so D is low at every T, but D(T) still rises from the coolest candidate to
    the hottest, and the knee rule picks a T inside the grid. The gate, not a fixed step count,
    places the model: 300 steps without it passed 4 % of the probe at T 0.6 on one machine and far
    more on another (the pass is a phase change, and machines round differently)."""
    import subprocess
    import sys
    from pathlib import Path

    from mcoder.jsonl import read_records
    from mcoder.judge.config import JudgeConfig
    from mcoder.judge.core import Judge
    from mcoder.records import Problem

    root = Path(__file__).resolve().parents[2]
    learn = root / "examples" / "learn"
    warm = tmp_path / "warm"
    cmd = [sys.executable, str(learn / "warm_start.py"), "--problems", str(learn / "train.jsonl")]
    cmd += ["--out", str(warm), "--steps", "1500", "--target-pass", "0.35", "--seed", "0"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    tok = load_tokenizer(warm)
    probe = list(read_records(learn / "heldout.jsonl", Problem))[:6]
    with Judge(JudgeConfig()) as judge:
        rows, rates, spreads = probe_temperatures(
            HFEngine(load_model(warm), tok),
            tok,
            probe,
            candidates=(0.6, 1.0, 1.4, 1.8),
            n=8,
            max_tokens=64,
            seed=0,
            judge=judge,
        )
    d = [x for _, x in rows]
    assert d[0] < d[1] < d[2] < d[3], rows  # it rises with T
    assert d[-1] - d[0] > 0.1, rows
    c = apply_temperature_rule(rows)
    assert not c.at_edge, (c, rows)
    # the judged probe: programs that pass at 0.6, noise at 1.8; the guard never picks hotter
    assert rates[0] > 0.1 and rates[-1] < rates[0] / 2, (rows, rates)
    guarded = apply_temperature_rule(rows, pass_rates=rates, guard=0.9)
    assert guarded.temperature <= c.temperature and rates[
        [t for t, _ in rows].index(guarded.temperature)
    ] >= 0.9 * max(rates)
    # the spread rule: groups that disagree exist below 1.8, none at 1.8 where nothing passes
    assert spreads[-1] < max(spreads) and max(spreads) > 0, (rows, spreads)
    s = apply_temperature_rule(rows, rule="spread", pass_rates=rates, spreads=spreads)
    assert s.rule == "spread" and s.temperature < 1.8 and s.spreads == spreads


# The loop's judged probe on the likelihood-gated warm starts of examples/learn/ (32 train problems
# x G = 8, T 0.6..1.8): mean within-group std of the pass/fail reward. Seeds 0 and 3.
SPREAD_SEED0 = [0.329, 0.358, 0.388, 0.375, 0.235, 0.031, 0.0]
SPREAD_SEED3 = [0.345, 0.375, 0.394, 0.407, 0.365, 0.212, 0.021]


def test_reward_spread_is_the_mean_within_group_std():
    assert reward_spread([[1, 0, 1, 0]]) == 0.5  # half pass: sqrt(0.5 x 0.5)
    assert reward_spread([[1, 1, 1], [0, 0, 0]]) == 0.0  # agreeing groups carry no GRPO signal
    assert reward_spread([[1, 0, 0, 0], [1]]) == pytest.approx((0.25 * 0.75) ** 0.5)  # a group of one is left out
    assert reward_spread([]) == 0.0


def test_spread_rule_takes_the_largest_reward_spread_hottest_on_a_tie():
    c = apply_temperature_rule(WARM_CURVE, rule="spread", spreads=SPREAD_SEED0)
    assert (c.temperature, c.rule, c.at_edge) == (1.0, "spread", False)
    assert c.spreads == SPREAD_SEED0
    assert apply_temperature_rule(WARM_CURVE, rule="spread", spreads=SPREAD_SEED3).temperature == 1.2
    tie = [0.1, 0.322, 0.3216, 0.2, 0.1, 0.0, 0.0]  # seed 2's 0.8 and 1.0
    assert by_spread(WARM_CURVE, tie).temperature == 1.0
    assert by_spread(WARM_CURVE, [0.1, 0.33, 0.3, 0.2, 0.1, 0.0, 0.0]).temperature == 0.8  # not a tie
    edge = apply_temperature_rule(WARM_CURVE, rule="spread", spreads=[0.4, 0.3, 0.2, 0.1, 0.0, 0.0, 0.0])
    assert edge.temperature == 0.6 and edge.at_edge  # said: a cooler T may do too


def test_spread_rule_without_any_spread_falls_back_to_the_knee_and_says_so():
    c = apply_temperature_rule(WARM_CURVE, rule="spread", spreads=[0.0] * 7)
    assert c.temperature == apply_temperature_rule(WARM_CURVE).temperature
    assert c.rule == "spread->knee" and "no probe group has a reward spread" in c.note


def test_spread_rule_needs_a_judged_probe_and_a_target_still_wins():
    with pytest.raises(UsageError, match="judge"):
        apply_temperature_rule(WARM_CURVE, rule="spread")
    with pytest.raises(ValueError, match="3 reward spreads"):
        apply_temperature_rule(WARM_CURVE, rule="spread", spreads=[0.1, 0.2, 0.3])
    assert apply_temperature_rule(LOW_CURVE, rule="spread", target=0.3, spreads=SPREAD_SEED0).rule == "target"


def test_probe_size_defaults_by_rule_and_rollout_refuses_the_spread_rule():
    from mcoder.rollout.config import RolloutConfig

    assert SamplingConfig().validate().probe_size == 32  # the loop's default rule is spread
    assert SamplingConfig(temperature_rule="knee").validate().probe_size == 8
    assert SamplingConfig(temperature_rule="spread", probe_problems=5).validate().probe_size == 5
    with pytest.raises(UsageError, match="probe-problems"):
        SamplingConfig(probe_problems=-1).validate()
    rollout = RolloutConfig(problems="p.jsonl", model="m", out="o.jsonl", temperature="auto").validate()
    assert rollout.temperature_rule == "knee"  # rollout's own default: it has no judge
    with pytest.raises(UsageError, match="does not judge"):
        RolloutConfig(
            problems="p.jsonl", model="m", out="o.jsonl", temperature="auto", temperature_rule="spread"
        ).validate()
