"""benchmarks/ordering.py: the pre-registered rule applied to hand-made rows (its direction
checked against an exact count), the figures read from a run's metrics, and (slow) the whole
benchmark at 2 steps."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest
from benchmarks import ordering

ROOT = Path(__file__).resolve().parents[1]


def rows_from(table: dict[str, list[float]], key: str = "pass1_test") -> list[dict]:
    """{arm: [value per seed]} -> benchmark rows."""
    return [{"seed": s, "arm": arm, key: v} for arm, values in table.items() for s, v in enumerate(values)]


def exact_page_p(data: list[list[float]]) -> float:
    """P(L >= L_observed) over every within-seed permutation of the ranks (no ties)."""
    k = len(data[0])

    def L(ranks):
        return sum(sum((j + 1) * r[j] for j in range(k)) for r in ranks)

    observed = [[sorted(row).index(x) + 1 for x in row] for row in data]
    perms = list(itertools.permutations(range(1, k + 1)))
    hits = total = 0
    for combo in itertools.product(perms, repeat=len(data)):
        total += 1
        hits += L(combo) >= L(observed)
    return hits / total


def test_page_reads_the_trend_left_to_right_as_an_exact_count_does():
    rising = [[1.0, 2.0, 3.0], [1.0, 3.0, 2.0], [2.0, 1.0, 3.0], [1.0, 2.0, 3.0]]
    assert ordering.page(rising) == pytest.approx(exact_page_p(rising), abs=1e-9)
    falling = [list(reversed(r)) for r in rising]
    assert ordering.page(falling) == pytest.approx(exact_page_p(falling), abs=1e-9)
    assert ordering.page(rising) < 0.05 < ordering.page(falling)


def test_the_paper_s_order_with_its_margins_is_reproduced():
    grpo = [20.0 + (s % 3) for s in range(12)]
    table = {"grpo": grpo, "dapo": [g + 1.0 + 0.3 * (s % 2) for s, g in enumerate(grpo)],
             "mc": [g + 5.0 + 0.5 * (s % 4) for s, g in enumerate(grpo)]}  # fmt: skip
    out = ordering.analyze(rows_from(table))
    assert out["n"] == 12 and out["page_p"] < 0.001 and out["step2_mc_over_dapo"]
    assert out["mc_minus_dapo"]["mean"] == pytest.approx(4.0 + 0.75 - 0.15)
    assert out["verdict"] == "reproduced"


def test_a_tie_with_a_tight_interval_does_not_hold_at_the_paper_s_magnitude():
    noise = [0.5, -0.5, 0.3, -0.3, 0.2, -0.2, 0.4, -0.4, 0.1, -0.1, 0.6, -0.6]
    table = {"grpo": [30.0] * 12, "dapo": [30.0 + n for n in noise], "mc": [30.0 - n / 2 for n in noise]}
    out = ordering.analyze(rows_from(table))
    assert out["mc_minus_dapo"]["upper95"] < ordering.PAPER_OVER_DAPO
    assert out["mc_minus_grpo"]["upper95"] < ordering.PAPER_OVER_GRPO
    assert out["verdict"] == "does not hold at the paper's magnitude"


@pytest.mark.heavy
def test_the_reverse_order_does_not_hold_and_wide_noise_is_inconclusive():
    table = {"grpo": [40.0 + s for s in range(12)], "dapo": [35.0 + s + 0.1 * (s % 3) for s in range(12)],
             "mc": [30.0 + s - 0.2 * (s % 2) for s in range(12)]}  # fmt: skip
    out = ordering.analyze(rows_from(table))
    assert out["page_reverse_p"] < 0.05 and out["verdict"] == "does not hold at the paper's magnitude"
    wide = [25.0, -20.0, 18.0, -22.0, 30.0, -15.0]
    table = {"grpo": [50.0] * 6, "dapo": [50.0 + w for w in wide], "mc": [50.0 - w for w in wide]}
    assert ordering.analyze(rows_from(table))["verdict"] == "inconclusive at N"


@pytest.mark.heavy
def test_the_interim_look_stops_only_at_its_stricter_bars():
    grpo = [20.0 + (s % 3) for s in range(12)]
    table = {"grpo": grpo, "dapo": [g + 1.0 for g in grpo], "mc": [g + 2.5 + 0.5 * (s % 2) for s, g in enumerate(grpo)]}
    assert ordering.analyze(rows_from(table), interim=True)["verdict"] == "reproduced"
    table["mc"][0] = table["dapo"][0] - 6  # two seeds against: t's p rises above 0.005
    table["mc"][1] = table["dapo"][1] - 6
    interim = ordering.analyze(rows_from(table), interim=True)
    assert interim["mc_minus_dapo"]["t_p"] > 0.005 and interim["verdict"] == "continue"


def test_ablations_count_a_fixed_t_arm_equal_to_its_parent_as_zero():
    rows = rows_from({"mc": [10.0, 20.0, 30.0], "mc-no-mask": [9.0, 18.0, 27.0],
                      "mc-T1": [10.0, 15.0, 30.0], "mc-no-mask-T1": [9.0, 14.0, 27.0]})  # fmt: skip
    out = ordering.ablations(rows)
    assert out["masking"]["mean"] == pytest.approx(2.0)
    assert out["temperature"]["mean"] == pytest.approx(5 / 3) and out["temperature"]["seeds_probe_not_1"] == 1
    assert out["interaction"]["mean"] == pytest.approx(((1 - 1) + (2 - 1) + (3 - 3)) / 3)


def test_collapse_is_three_steps_in_a_row_at_90_percent_and_mcnemar_pairs_it_by_seed():
    steps = [{"step": i + 1, "truncated_rate": r} for i, r in enumerate([0.2, 0.95, 0.9, 0.5, 0.91, 0.92, 0.99, 1.0])]
    assert ordering.collapse_step(steps) == 5
    assert ordering.collapse_step(steps[:6]) is None
    rows = [{"seed": s, "arm": "mc", "collapse_step": None} for s in range(8)]
    rows += [{"seed": s, "arm": "dapo", "collapse_step": 12 if s < 7 else None} for s in range(8)]
    out = ordering.mcnemar(rows, "mc", "dapo")
    assert (out["only_dapo"], out["only_mc"]) == (7, 0) and out["p"] == pytest.approx(2 * 0.5**7)


def test_seed_ranges_and_the_options_the_rule_needs():
    assert ordering.seed_list("0,2,5-8") == [0, 2, 5, 6, 7, 8]
    args = ordering.parse(["--out", "x"])
    assert (args.max_tokens, args.eval_max_tokens, args.eval_n, args.steps) == (27, 64, 16, 150)
    assert args.truncated_reward == "zero" and args.checkpoints == [50, 100] and args.seeds == list(range(12))
    with pytest.raises(SystemExit):
        ordering.parse(["--out", "x", "--eval-max-tokens", "27"])  # the test budget must be larger


@pytest.mark.slow
def test_the_benchmark_runs_its_arms_and_applies_the_rule_at_2_steps(tmp_path):
    out = tmp_path / "o"
    cmd = [sys.executable, "benchmarks/ordering.py", "--out", str(out), "--smoke", "--seeds", "0",
           "--arms", "grpo,mc,mc-T1", "--checkpoints", "", "--jobs", "2"]  # fmt: skip
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1200, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads((out / "results.json").read_text())
    rows = {r["arm"]: r for r in data["rows"]}
    assert set(rows) == {"grpo", "mc", "mc-T1"}
    for r in rows.values():
        assert {"pass1_test", "pass1_train", "truncated", "samples_generated", "train_cpu_s"} <= set(r)
    assert rows["mc"]["probe_samples"] > 0 and rows["grpo"]["probe_samples"] == 0
    if rows["mc"]["temperature"] == 1.0:
        assert rows["mc-T1"]["same_as"] == "mc"
    else:
        assert "same_as" not in rows["mc-T1"] and rows["mc-T1"]["temperature"] == 1.0
    assert data["analysis"]["verdict"] == "too few seeds"
    assert "verdict" in (out / "results.md").read_text()


@pytest.mark.slow
def test_final_only_evaluates_the_last_checkpoint_at_the_test_budget_alone(tmp_path):
    # the ablation reruns of the temperature arms: the same runs (their checkpoint segments kept),
    # a third of the evaluations
    out = tmp_path / "o"
    cmd = [sys.executable, "benchmarks/ordering.py", "--out", str(out), "--smoke", "--seeds", "0",
           "--arms", "grpo", "--checkpoints", "1", "--final-only", "--jobs", "1"]  # fmt: skip
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1200, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    (row,) = json.loads((out / "results.json").read_text())["rows"]
    assert "pass1_test" in row and "pass1_train" not in row and not any("@" in k for k in row), row
    evaluated = sorted(p.name for p in (out / "seed0").glob("eval-*"))
    assert evaluated == ["eval-grpo-2-L24"], evaluated  # (--smoke: 2 steps, test budget 24)
    assert (out / "seed0" / "run-grpo" / "cpu_s-1").exists()  # the run still stopped at its checkpoint


def test_the_exploratory_arms_put_one_of_grpo_s_values_back_and_run_only_when_named():
    from mcoder.train.config import preset

    grpo, mc = preset("grpo"), preset("microcoder-grpo")
    for arm, field in (("mc-clip", "eps_high"), ("mc-kl", "beta"), ("mc-seq", "loss_agg")):
        assert grpo[field] != mc[field], f"{arm}: the presets differ in {field}"
        flags = ordering.EXPLORATORY[arm]["flags"]
        assert flags == ["--" + field.replace("_", "-"), str(grpo[field])]
    assert ordering.parse(["--out", "x"]).arms == list(ordering.ARMS), "the rule's arms by default"
    assert ordering.parse(["--out", "x", "--arms", "mc,mc-kl"]).arms == ["mc", "mc-kl"]
    rows = rows_from({"grpo": [50.0, 60.0, 55.0], "dapo": [45.0, 58.0, 50.0], "mc": [40.0, 50.0, 45.0],
                      "mc-kl": [44.0, 53.0, 50.0]})  # fmt: skip
    out = ordering.analyze(rows)
    assert set(out["exploratory"]) == {"mc-kl"} and out["exploratory"]["mc-kl"]["mean"] == pytest.approx(-4.0)
    assert any("exploratory, not in the rule: MC - mc-kl" in line for line in ordering.verdict_lines(out))


def test_a_policy_whose_programs_stop_passing_is_seen_though_it_still_ends_its_answers(tmp_path):
    """Seed 8's DAPO run: from step 50 no sample passed (its programs no longer compiled) while
    under 80 % were cut off, so the no-EOS collapse does not see it; the no-pass step does."""
    steps = [{"step": i + 1, "pass_rate": 0.4, "truncated_rate": 0.4} for i in range(49)]
    steps += [{"step": i + 50, "pass_rate": 0.0, "truncated_rate": 0.78} for i in range(101)]
    assert ordering.collapse_step(steps) is None and ordering.no_pass_step(steps) == 50
    assert ordering.no_pass_step(steps[:51]) is None, "two steps without a pass are not three"
    run = tmp_path / "seed8" / "run-dapo"
    run.mkdir(parents=True)
    (run / "metrics.jsonl").write_text("".join(json.dumps(s) + "\n" for s in steps))
    rows = [{"seed": 8, "arm": "dapo"}, {"seed": 8, "arm": "mc-T1", "same_as": "mc"}]
    ordering.fill_no_pass_steps(tmp_path, rows)
    assert rows[0]["no_pass_step"] == 50 and "no_pass_step" not in rows[1]
