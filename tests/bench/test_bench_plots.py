"""Training-dynamics figures: metrics.jsonl reading (torn last line, bad lines), figures with one
line per run and a legend naming the runs, and real PNG files from the CLI."""

import json
from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner

from mcoder.bench.metrics import read_run, run_labels
from mcoder.bench.panels import ema
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
        "status/accepted": 0.5 + 0.01 * step,
        "status/wrong_answer": 0.5 - 0.01 * step,
        "status/memory_limit": 0.0,  # zero throughout: a line of text, no panel
        "length": {"mean": 100.0 + step, "max": 256},  # nested spelling of length/mean, length/max
        "truncated_rate": 0.1 * (step % 2),
        "masked_count": step % 2,
        "diversity/lexical": 0.6 + 0.01 * step,
        "temperature": 1.0,
        "clip/low": 0.01,
        "clip/high": 0.02 * step,
        "ratio/mean": 1.0,
        "entropy": 1.5 - 0.1 * step,
        "loss": 0.02 * step,
        "grad_norm": 0.7,
        "lr": 1e-5,
        "time/rollout": 2.0,
        "tokens_per_s": 400.0 + step,
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


def _lines(ax, kind: str) -> list:
    return [line for line in ax.lines if str(line.get_gid()).startswith(kind + ":")]


def test_figures_have_a_line_per_run_and_a_legend_naming_them(runs):
    loaded = [read_run(d, d.name) for d in runs]
    figures, notes = build_figures(loaded)
    assert list(figures) == [name for name, _, _ in GROUPS]
    for name, fig in figures.items():
        legend_texts = [t.get_text() for t in fig.legends[0].get_texts()]
        # microcoder logged no diversity, and temperature is constant: no line of it to name there
        assert legend_texts == (["grpo"] if name == "diversity" else ["grpo", "microcoder"]), name
    reward_axes = [ax for ax in figures["reward"].axes if ax.get_visible()]
    # binary reward: reward/mean and pass_rate are one series, drawn once; reward/std is constant
    assert [ax.get_title() for ax in reward_axes] == ["reward/mean = pass_rate"]
    assert "constant: reward/std 0.3" in figures["reward"].legends[0].get_title().get_text()
    ax = reward_axes[0]
    assert [line.get_gid() for line in ax.lines] == [
        "raw:grpo",
        "ema:grpo",
        "raw:microcoder",
        "ema:microcoder",
    ]
    raw = _lines(ax, "raw")[1].get_ydata()
    assert list(raw) == pytest.approx([0.1 * s + 0.2 for s in range(STEPS)])
    assert list(_lines(ax, "ema")[1].get_ydata()) == pytest.approx(ema(list(raw)))
    diversity = {
        ax.get_title(): len(_lines(ax, "ema")) for ax in figures["diversity"].axes if ax.get_visible()
    }
    assert diversity == {"diversity/lexical": 1}  # microcoder did not log diversity; temperature is constant
    assert "diversity: run microcoder has no diversity/lexical" in notes
    assert not [n for n in notes if n.startswith("entropy_kl")]  # nobody logged kl: no panel, no note
    assert [ax.get_title() for ax in figures["entropy_kl"].axes if ax.get_visible()] == ["entropy"]
    status = figures["status"]
    assert "status/memory_limit" not in [ax.get_title() for ax in status.axes]
    assert "0 at every step: status/memory_limit" in status.legends[0].get_title().get_text()


def test_ema_is_tensorboards_debiased_average():
    # by hand, w = 0.6: s1 = 0.4*1 / (1-0.6) = 1; s2 = (0.6*0.4 + 0.4*0) / (1-0.36) = 0.375
    assert ema([1.0, 0.0]) == pytest.approx([1.0, 0.375])
    assert ema([5.0] * 4) == pytest.approx([5.0] * 4)  # debiased: a constant stays put from step 1
    assert ema([]) == []


def test_a_group_that_never_moves_is_a_note_not_a_figure(tmp_path):
    folder = tmp_path / "r"
    folder.mkdir()
    rows = [{"step": s, "reward/mean": 0.1 * s, "truncated_rate": 0.0, "masked_count": 0} for s in range(4)]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    figures, notes = build_figures([read_run(folder, "r")])
    assert list(figures) == ["reward"]
    assert "truncation: no figure, nothing moved (0 at every step: truncated_rate, masked_count)" in notes
    one = tmp_path / "one"  # a run of a single step: nothing is constant, every metric is drawn
    one.mkdir()
    (one / "metrics.jsonl").write_text(json.dumps(rows[0]) + "\n")
    assert set(build_figures([read_run(one, "one")])[0]) == {"reward", "truncation"}


@pytest.mark.heavy
def test_every_legend_and_text_lies_inside_its_figure(runs, tmp_path):
    """The step-time legend was cut off at the figure's edges; check every figure, drawn."""
    loaded = [read_run(d, d.name) for d in runs]
    for run in loaded:  # give each run the loop's stage times, so that the step-time figure is drawn
        for m, v in (
            ("time/update", 1.0),
            ("time/judge", 0.5),
            ("time/judge_hidden", 0.2),
            ("time/sync", 0.1),
        ):
            run.series[m] = {s: v for s in range(STEPS)}
    for runs_drawn in (loaded[:1], loaded):  # one run, and two overlaid
        figures, _ = build_figures(runs_drawn)
        assert "step_time" in figures
        for name, fig in figures.items():
            renderer = fig.canvas.get_renderer()
            fig.draw(renderer)
            box = fig.bbox
            for artist in [*fig.legends, *fig.texts, *(ax.title for ax in fig.axes if ax.get_visible())]:
                ext = artist.get_window_extent(renderer)
                assert ext.x0 >= box.x0 - 1 and ext.x1 <= box.x1 + 1, (name, len(runs_drawn), artist)
                assert ext.y0 >= box.y0 - 1 and ext.y1 <= box.y1 + 1, (name, len(runs_drawn), artist)


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
    raw, smoothed = figures["reward"].axes[0].get_lines()
    assert list(raw.get_xdata()) == list(smoothed.get_xdata()) == [1, 2, 3, 4]
    r = CliRunner().invoke(
        app, ["bench", "--run-dir", str(folder), "--plots", "--out-dir", str(tmp_path / "f")]
    )
    assert r.exit_code == 0 and "warning:" in r.stderr and "logged 3 times" in r.stderr
