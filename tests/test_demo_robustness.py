"""benchmarks/demo_robustness.py: the weight perturbation that stands in for another CPU's rounding,
and the runs it plans (each run's demo arguments)."""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from benchmarks import demo_robustness as robust
from safetensors.torch import load_file, save_file

ROOT = Path(__file__).resolve().parents[1]


def test_perturb_moves_every_float_weight_by_about_the_scale_and_nothing_else(tmp_path):
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.mkdir()
    weights = {"w": torch.randn(64, 32), "b": torch.randn(32) + 3, "ids": torch.arange(10)}
    save_file(weights, src / "model.safetensors")
    (src / "config.json").write_text("{}")
    robust.perturb(src, dst, 1e-6, seed=1)
    after = load_file(dst / "model.safetensors")
    assert (dst / "config.json").read_text() == "{}"
    assert torch.equal(load_file(src / "model.safetensors")["w"], weights["w"])  # the source stays
    assert torch.equal(after["ids"], weights["ids"])  # not a float: untouched
    for k in ("w", "b"):
        rel = ((after[k] - weights[k]) / weights[k]).abs()
        assert (after[k] != weights[k]).float().mean() > 0.9  # nearly every weight moved
        assert rel.max() < 1e-5 and rel.max() > 1e-7  # by about the scale
    again = tmp_path / "again"
    robust.perturb(src, again, 1e-6, seed=1)
    assert torch.equal(load_file(again / "model.safetensors")["w"], after["w"])  # the seed decides it
    robust.perturb(src, again, 1e-6, seed=2)
    assert not torch.equal(load_file(again / "model.safetensors")["w"], after["w"])


def test_plan_runs_the_first_seed_then_each_perturbation_then_the_seeds():
    a = argparse.Namespace(
        seeds=[0, 1, 2], weight_noise=2, rl_seeds=[101], smoke=False, demo_args=["--steps", "9"]
    )
    runs = robust.plan(a)
    names = [name for name, _, _ in runs]
    assert names == [
        "seed 0",
        "seed 0, noise 1",
        "seed 0, rl-seed 101",
        "seed 0, noise 2",
        "seed 1",
        "seed 2",
    ]
    assert len(set(names)) == len(names)
    for name, args, prep in runs:
        assert args[-2:] == ["--steps", "9"]
        seed = int(name.split(",")[0].split()[1])
        assert args[args.index("--seed") + 1] == str(seed)
        assert ("--rl-seed" in args) == ("rl-seed" in name)
        assert ("noise" in prep) == ("noise" in name)
        assert bool(prep) == ("," in name)  # every perturbed run starts from seed 0's warm start


def test_demo_reports_the_cpu_seconds_of_the_run_and_its_children(tmp_path, monkeypatch):
    """The CPU time stands for a quiet machine's wall time, so it must count the processes the demo
    starts (its Python stages), not only the bash script, and a sleeping run must show little."""
    (tmp_path / "commands").mkdir()
    script = tmp_path / "commands" / "demo.sh"
    script.write_text(
        'set -e\n"$PY" -c "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.6: pass"\n'
        "sleep 0.5\n"
    )
    monkeypatch.setattr(robust, "ROOT", tmp_path)
    wall, cpu = robust.demo(tmp_path / "out", [], tmp_path / "log")
    assert 0.5 <= cpu < wall  # the child Python's busy loop counted, the sleep did not
    assert wall >= 1.0
    script.write_text("exit 3\n")
    try:
        robust.demo(tmp_path / "out", [], tmp_path / "log")
    except SystemExit as e:
        assert "demo failed (3)" in str(e)
    else:
        raise AssertionError("a failed demo must stop the benchmark")
