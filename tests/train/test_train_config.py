"""Presets, overrides and validation of the training configuration."""

from __future__ import annotations

import pytest

from mcoder.errors import UsageError
from mcoder.train.config import TrainConfig, preset_temperature, resolve


def test_presets_hold_each_papers_settings():
    grpo, dapo, mc = resolve("grpo"), resolve("dapo"), resolve("microcoder-grpo")
    assert (grpo.eps_low, grpo.eps_high, grpo.beta, grpo.loss_agg, grpo.truncation) == (
        0.2,
        0.2,
        0.04,
        "sequence",
        "none",
    )
    assert (dapo.eps_high, dapo.beta, dapo.loss_agg, dapo.truncation, dapo.dynamic_sampling) == (
        0.28,
        0.0,
        "token",
        "all",
        True,
    )
    assert (
        mc.eps_high,
        mc.beta,
        mc.truncation,
        mc.mask_rho,
        mc.mask_repeat_m,
        preset_temperature("microcoder-grpo"),
    ) == (
        0.28,
        0.0,
        "conditional",
        0.1,
        128,
        "auto",
    )


def test_every_knob_overrides_and_none_means_not_given():
    cfg = resolve("grpo", {"beta": 0.0, "eps_high": 0.3, "loss_agg": "constant", "lr": None})
    assert (cfg.beta, cfg.eps_high, cfg.loss_agg, cfg.lr) == (0.0, 0.3, "constant", TrainConfig.lr)


def test_resolved_config_round_trips(tmp_path):
    cfg = resolve("dapo", {"lora_rank": 8, "seed": 3})
    (tmp_path / "c.json").write_text(cfg.to_json())
    assert TrainConfig.load(tmp_path / "c.json") == cfg


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"loss_agg": "mean"}, "unknown --loss-agg 'mean'"),
        ({"truncation": "some"}, "unknown --truncation 'some'"),
        ({"mask_rho": 1.5}, r"--mask-rho 1.5: is out of range: it must be in \[0, 1\]"),
        ({"micro_batch_size": 0}, "--micro-batch-size 0: is out of range: it must be >= 1"),
        ({"lr": float("inf")}, "--lr inf: is not a finite number"),
        ({"lr": float("nan")}, "--lr nan: is not a finite number"),
        ({"lr": -1e-6}, "--lr -1e-06: is out of range: it must be > 0"),
        ({"mask_non_incorrect": "no_code"}, "unknown --mask-non-incorrect"),
        ({"wrong_knob": 1}, "unknown training option"),
    ],
)
def test_bad_values_are_usage_errors_with_a_reason(overrides, message):
    with pytest.raises(UsageError, match=message):
        resolve("microcoder-grpo", overrides)


def test_unknown_algo_names_the_choices():
    with pytest.raises(UsageError) as e:
        resolve("ppo")
    assert "grpo, dapo, microcoder-grpo" in e.value.hint
