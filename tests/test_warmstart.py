"""The warm start's settings: one dataclass, the options of `python -m mcoder.warmstart` generated
from it (under the flags they always had), and the schedule of checks and learning rate. The pass
itself is run by test_recipes.py and test_output_guard.py."""

from __future__ import annotations

import dataclasses

import pytest
import typer.main

from mcoder.cli import warmstart as warmstart_cli
from mcoder.warmstart import Schedule, WarmStartConfig

# The flags of the command before its settings became a dataclass (callers and docs use them).
FLAGS = [
    "--problems", "--out", "--steps", "--batch", "--lr", "--weight-decay", "--layers", "--seed", "--target-pass",
    "--gate", "--check-every", "--first-check", "--check-problems", "--check-n", "--max-tokens", "--approach",
    "--approach-lr", "--fine-every", "--look-back", "--overshoot",
]  # fmt: skip


def parsed(*args: str) -> dict:
    command = typer.main.get_command(warmstart_cli.app)
    return command.make_context("warmstart", ["--problems", "p.jsonl", "--out", "w", *args]).params


def test_the_options_are_the_fields_under_the_flags_they_always_had():
    from mcoder.cli.options import given

    command = typer.main.get_command(warmstart_cli.app)
    flags = [p.opts[0] for p in command.params if p.opts[0] not in ("--help", "--no-help")]
    assert flags == FLAGS
    assert WarmStartConfig(**given(WarmStartConfig, parsed())) == WarmStartConfig()
    got = WarmStartConfig(**given(WarmStartConfig, parsed("--target-pass", "0.35", "--gate", "sampled", "--lr", "4e-3")))
    assert got == dataclasses.replace(WarmStartConfig(), target_pass=0.35, gate="sampled", lr=4e-3)


@pytest.mark.parametrize(("args", "flag"), [(["--check-every", "0"], "--check-every"), (["--gate", "often"], "--gate"),
                                            (["--target-pass", "1.5"], "--target-pass")])  # fmt: skip
def test_a_bad_setting_is_refused_naming_its_flag_before_anything_is_written(tmp_path, capsys, args, flag):
    out = tmp_path / "warm"
    code = warmstart_cli.main(["--problems", str(tmp_path / "missing.jsonl"), "--out", str(out), *args])
    err = capsys.readouterr().err
    assert code == 2 and flag in err and "error" in err, err
    assert list(tmp_path.iterdir()) == []


def test_the_schedule_checks_finer_and_slows_down_once_near_the_target():
    import torch

    config = WarmStartConfig(target_pass=0.4, check_every=5, first_check=10, fine_every=2, approach=0.5,
                             approach_lr=0.25, lr=2e-3, look_back=3)  # fmt: skip
    optimizer = torch.optim.AdamW(torch.nn.Linear(1, 1).parameters(), lr=config.lr)
    schedule = Schedule(config)
    assert [s for s in range(1, 21) if schedule.checks_at(s)] == [10, 15, 20]  # none before step 10
    assert [s for s in range(1, 10) if schedule.copies_at(s)] == [3, 6, 9]
    schedule.approach(0.19, optimizer)  # under 0.5 x 0.4: not yet
    assert not schedule.near and optimizer.param_groups[0]["lr"] == 2e-3
    schedule.approach(0.2, optimizer)
    assert schedule.near and optimizer.param_groups[0]["lr"] == 2e-3 * 0.25
    schedule.approach(0.9, optimizer)  # once: the learning rate is not cut again
    assert optimizer.param_groups[0]["lr"] == 2e-3 * 0.25
    assert [s for s in range(11, 17) if schedule.checks_at(s)] == [12, 14, 16]
    assert schedule.looks_back(0.51) and not schedule.looks_back(0.5)  # past target + overshoot (0.1)
    assert not Schedule(WarmStartConfig()).copies_at(3)  # no look-back: no copies
