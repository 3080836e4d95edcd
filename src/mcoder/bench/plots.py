"""Training-dynamics figures: one PNG per metric group, several runs on the same axes.

What each figure holds is decided in ``bench/panels.py`` (shared with the HTML report's charts):
a panel per moving metric, identical series drawn once, constant ones as a line of text under
the panels. Every run is one colour across panels: its raw values faint, an EMA-smoothed line
over them, and one legend inside the figure naming the runs. Panels are sized and lettered to
be read at about 1000 pixels wide (2 panels a row, 11-13 pt text at 100 dpi). Figures are
built with matplotlib's object API on the Agg canvas (no pyplot, no global state, no display).
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from mcoder.bench.metrics import RunMetrics
from mcoder.bench.panels import (
    GROUPS,
    HIDDEN,
    SMOOTHING_NOTE,
    STEP_PARTS,
    Group,
    ema,
    group_metrics,
    has_step_times,
    plan,
    step_parts,
)

__all__ = ["GROUPS", "build_figures", "group_metrics", "save_figures", "step_time_figure"]

MAX_COLUMNS = 2
PANEL_SIZE = (5.0, 3.3)  # inches: at 100 dpi two panels fill a 1000-pixel row
DPI = 100
TITLE_PT, PANEL_PT, LABEL_PT, TICK_PT, NOTE_PT = 14, 12, 11, 10, 10
MIN_WIDTH = 6.4  # inches: a one-panel figure still holds its footer lines
CHARS_PER_INCH = 11  # of NOTE_PT text, with room to spare: footer lines wrap at the figure's width
STEP_TIME_MIN_WIDTH = 8.0  # inches: the two-column legend of the step parts fits inside
MARKERS_UP_TO = 30  # points: a short run stays visible as dots


def build_figures(runs: list[RunMetrics]) -> tuple[dict[str, Figure], list[str]]:
    """Figures by group file name, and notes on what was skipped or collapsed into text."""
    groups, notes = plan(runs)
    figures: dict[str, Figure] = {}
    for group in groups:
        if group.panels:
            figures[group.name] = _figure(group, runs)
        else:
            notes.append(f"{group.name}: no figure, nothing moved ({group.constant_line()})")
    step_time = step_time_figure(runs)
    if step_time is not None:
        figures["step_time"] = step_time
    return figures, notes


def _grid(n: int, extra_height: float, min_width: float = 0.0) -> tuple[Figure, list]:
    cols = min(MAX_COLUMNS, n)
    rows = -(-n // cols)
    width = max(PANEL_SIZE[0] * cols, min_width)
    fig = Figure(figsize=(width, PANEL_SIZE[1] * rows + extra_height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, list(fig.subplots(rows, cols, squeeze=False).ravel())


def _figure(group: Group, runs: list[RunMetrics]) -> Figure:
    fig, axes = _grid(len(group.panels), 1.2, min_width=MIN_WIDTH)
    colours = {run.label: f"C{i % 10}" for i, run in enumerate(runs)}
    handles = {}
    for ax, panel in zip(axes, group.panels, strict=False):
        for run in runs:
            xs, ys = run.xy(panel.metric)
            if not xs:
                continue
            colour = colours[run.label]
            marker = "o" if len(xs) <= MARKERS_UP_TO else None
            ax.plot(xs, ys, color=colour, alpha=0.3, linewidth=1, marker=marker, markersize=3,
                    label="_raw", gid=f"raw:{run.label}")  # fmt: skip
            (line,) = ax.plot(xs, ema(ys), color=colour, linewidth=2, label=run.label, gid=f"ema:{run.label}")
            handles.setdefault(run.label, line)
        ax.set_title(panel.title, fontsize=PANEL_PT)
        ax.set_xlabel("step", fontsize=LABEL_PT)
        ax.tick_params(labelsize=TICK_PT)
        ax.grid(True, alpha=0.3)
    for ax in axes[len(group.panels) :]:
        ax.set_visible(False)
    fig.suptitle(group.title, fontsize=TITLE_PT)
    labels = [r.label for r in runs if r.label in handles]
    # one block under the panels: the runs, then what is not drawn and how lines are smoothed
    width = fig.get_figwidth() * CHARS_PER_INCH
    footer = "\n".join(
        textwrap.fill(line, int(width)) for line in (group.constant_line(), SMOOTHING_NOTE) if line
    )
    legend = fig.legend([handles[lb] for lb in labels], labels, loc="outside lower center",
                        ncols=min(len(labels), 3), fontsize=LABEL_PT, frameon=False,
                        title=footer, title_fontsize=NOTE_PT)  # fmt: skip
    legend.get_title().set_color("0.3")
    return fig


def save_figures(figures: dict[str, Figure], out_dir: Path) -> list[Path]:
    """Write each figure as OUT_DIR/<group>.png (through a temp file, so a kill leaves no half PNG)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, fig in figures.items():
        path = out_dir / f"{name}.png"
        tmp = out_dir / f".{name}.png.part"
        fig.savefig(tmp, format="png", dpi=DPI)
        os.replace(tmp, path)
        written.append(path)
    return written


def step_time_figure(runs: list[RunMetrics]) -> Figure | None:
    """Where each step's time goes, a panel per run: stacked bars of sync, sampling, the judging
    left once sampling ended, and the update; the judging that ran while the engine still
    sampled is hatched inside the sampling bar. None when no run logged the loop's stage times."""
    runs = [r for r in runs if has_step_times(r)]
    if not runs:
        return None
    fig, axes = _grid(len(runs), 1.3, min_width=STEP_TIME_MIN_WIDTH)
    for ax, run in zip(axes, runs, strict=False):
        steps, parts = step_parts(run)
        bottom = [0.0] * len(steps)
        for metric, label, colour in STEP_PARTS:
            ax.bar(steps, parts[metric], bottom=bottom, color=colour, label=label)
            if metric == "time/rollout":
                ax.bar(steps, parts[HIDDEN], bottom=bottom, fill=False, hatch="//", edgecolor="C1", linewidth=0,
                       label="judging hidden behind sampling")  # fmt: skip
            bottom = [b + v for b, v in zip(bottom, parts[metric], strict=True)]
        ax.set_title(run.label, fontsize=PANEL_PT)
        ax.set_xlabel("step", fontsize=LABEL_PT)
        ax.set_ylabel("seconds", fontsize=LABEL_PT)
        ax.tick_params(labelsize=TICK_PT)
        ax.grid(True, axis="y", alpha=0.3)
    for ax in axes[len(runs) :]:
        ax.set_visible(False)
    fig.suptitle("Step time: sync, sampling, judging, update", fontsize=TITLE_PT)
    handles, labels = axes[0].get_legend_handles_labels()
    # two columns: five long labels in one row are wider than a one-run figure and were cut off
    fig.legend(handles, labels, loc="outside lower center", ncols=2, fontsize=LABEL_PT, frameon=False)
    return fig
