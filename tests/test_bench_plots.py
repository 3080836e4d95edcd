"""Training-dynamics figures: metrics.jsonl reading (torn last line, bad lines), figures with one
line per run and a legend naming the runs, and real PNG files from the CLI."""

import json
from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner

from mcoder.bench.metrics import read_run, run_labels
from mcoder.bench.plots import GROUPS, build_figures
from mcoder.cli.app import app
from mcoder.errors import DataError

STEPS = 6


def step_metrics(step: int, offset: float) -> dict:
    return {
        "step": step,
        "reward/mean": 0.1 * step + offset,
        "reward/std": 0.3,
        "pass_rate": 0.1 * step + offset,
        "status/accepted": 0.5,
        "status/wrong_answer": 0.5,
        "length": {"mean": 100.0 + step, "max": 256},  # nested spelling of length/mean, length/max
        "truncated_rate": 0.1,
        "masked_count": 1,
        "diversity/lexical": 0.6,
        "temperature": 1.0,
        "clip/low": 0.01,
        "clip/high": 0.02,
        "ratio/mean": 1.0,
        "entropy": 1.5 - 0.1 * step,
        "loss": 0.02,
        "grad_norm": 0.7,
        "lr": 1e-5,
        "time/rollout": 2.0,
        "tokens_per_s": 400.0,
        "algo": "grpo",  # a string: not a metric, ignored
    }


def write_run(folder, offset: float, drop=(), tail: str = ""):
    folder.mkdir(parents=True)
    rows = []
    for s in range(STEPS):
        row = step_metrics(s, offset)
        for name in drop:
            row.pop(name)
        rows.append(json.dumps(row))
    (folder / "metrics.jsonl").write_text("\n".join(rows) + "\n" + tail)
    return folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    grpo = write_run(root / "grpo", 0.0, tail='{"step": 6, "reward/me')  # killed mid-write
    mc = write_run(root / "microcoder", 0.2, drop=("diversity/lexical",))
    return grpo, mc


def test_reader_skips_a_torn_last_line_and_flattens(runs):
    run = read_run(runs[0], "grpo")
    assert len(run.warnings) == 1 and "metrics.jsonl:7" in run.warnings[0]
    steps, values = run.xy("length/mean")
    assert steps == list(range(STEPS)) and values[-1] == 105.0
    assert "algo" not in run.series


def test_bad_line_in_the_middle_is_a_data_error(tmp_path):
    folder = write_run(tmp_path / "r", 0.0)
    lines = (folder / "metrics.jsonl").read_text().splitlines()
    lines[2] = lines[2][:20]
    (folder / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=r"metrics.jsonl:3"):
        read_run(folder, "r")
    lines[2] = json.dumps({"reward/mean": 1.0})
    (folder / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=r"metrics.jsonl:3.*step"):
        read_run(folder, "r")


def test_labels_are_folder_names_disambiguated_by_parent(tmp_path):
    assert run_labels([tmp_path / "a" / "run", tmp_path / "b" / "run", tmp_path / "c"]) == [
        "a/run",
        "b/run",
        "c",
    ]


def test_figures_have_a_line_per_run_and_a_legend_naming_them(runs):
    loaded = [read_run(d, d.name) for d in runs]
    figures, notes = build_figures(loaded)
    assert list(figures) == [name for name, _, _ in GROUPS]
    for name, fig in figures.items():
        legend_texts = [t.get_text() for t in fig.legends[0].get_texts()]
        assert legend_texts == ["grpo", "microcoder"], name
    reward_axes = [ax for ax in figures["reward"].axes if ax.get_visible()]
    assert [ax.get_title() for ax in reward_axes] == ["reward/mean", "reward/std", "pass_rate"]
    assert all(len(ax.lines) == 2 for ax in reward_axes)
    ys = reward_axes[0].lines[1].get_ydata()
    assert list(ys) == pytest.approx([0.1 * s + 0.2 for s in range(STEPS)])
    diversity = {ax.get_title(): len(ax.lines) for ax in figures["diversity"].axes if ax.get_visible()}
    assert diversity == {"diversity/lexical": 1, "temperature": 2}  # microcoder did not log diversity
    assert "diversity: run microcoder has no diversity/lexical" in notes
    assert not [n for n in notes if n.startswith("entropy_kl")]  # nobody logged kl: no panel, no note
    assert [ax.get_title() for ax in figures["entropy_kl"].axes if ax.get_visible()] == ["entropy"]


def test_cli_writes_valid_pngs(tmp_path):
    # Two metric groups only: rendering PNGs is the slow part, the figure test above covers all groups.
    folders = []
    for name, offset in (("grpo", 0.0), ("microcoder", 0.2)):
        folder = tmp_path / name
        folder.mkdir()
        rows = [{"step": s, "reward/mean": 0.1 * s + offset, "length/mean": 50.0 + s} for s in range(STEPS)]
        tail = '{"step": 6, "reward/me' if name == "grpo" else ""
        (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + tail)
        folders.append(folder)
    out = tmp_path / "figs"
    args = [
        "bench",
        "--run-dir",
        str(folders[0]),
        "--run-dir",
        str(folders[1]),
        "--plots",
        "--out-dir",
        str(out),
    ]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.stderr
    paths = r.stdout.split()
    assert paths == [str(out / "reward.png"), str(out / "length.png")]
    for p in paths:
        with Image.open(p) as img:
            img.verify()
        with Image.open(p) as img:
            assert img.format == "PNG" and img.size[0] > 300 and img.size[1] > 200
        # a blank canvas compresses to almost nothing; two coloured lines, titles and a legend do not
        assert Path(p).stat().st_size > 10_000
    assert f"{folders[0] / 'metrics.jsonl'}:7: last line is incomplete" in r.stderr
    assert "note: clip: no run logged" in r.stderr
    assert not list(out.glob(".*.part"))


def test_duplicated_and_out_of_order_steps_are_warned_and_each_step_drawn_once(tmp_path):
    # the metrics of a loop resumed twice after kills: steps 1,2,1,2,3,2,3,4 (issue 15, row 9)
    folder = tmp_path / "resumed"
    folder.mkdir()
    order = [1, 2, 1, 2, 3, 2, 3, 4]
    rows = [{"step": s, "reward/mean": 0.1 * s + 0.01 * i} for i, s in enumerate(order)]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = read_run(folder, "resumed")
    steps, values = run.xy("reward/mean")
    assert steps == [1, 2, 3, 4]
    assert values == pytest.approx([0.1 + 0.02, 0.2 + 0.05, 0.3 + 0.06, 0.4 + 0.07])  # the last of each
    text = "\n".join(run.warnings)
    assert "metrics.jsonl:3: step 1 comes after step 2" in text
    assert "step 2 is logged 3 times (lines 2, 4, 6)" in text and "step 3 is logged 2 times" in text
    figures, _ = build_figures([run])
    (line,) = figures["reward"].axes[0].get_lines()
    assert list(line.get_xdata()) == [1, 2, 3, 4]
    r = CliRunner().invoke(app, ["bench", "--run-dir", str(folder), "--plots", "--out-dir", str(tmp_path / "f")])
    assert r.exit_code == 0 and "warning:" in r.stderr and "logged 3 times" in r.stderr
