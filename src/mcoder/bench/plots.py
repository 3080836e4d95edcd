"""Training-dynamics figures: one PNG per metric group, several runs on the same axes.

Each group is one figure with a panel per metric; every run is one line in each panel, with the
same colour across panels and one figure legend naming the runs. Metrics a run did not log are
skipped with a note; a group no run logged is not drawn. Figures are built with matplotlib's
object API on the Agg canvas (no pyplot, no global state, no display needed).
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from mcoder.bench.metrics import RunMetrics

# (file name, title, metric patterns); '*' patterns expand to every matching metric logged.
GROUPS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("reward", "Reward and pass rate", ("reward/mean", "reward/std", "pass_rate")),
    ("status", "Verdict status rates", ("status/*",)),
    ("length", "Response length (tokens)", ("length/mean", "length/max")),
    ("truncation", "Truncated share and masked outputs", ("truncated_rate", "masked_*")),
    ("diversity", "Diversity and sampling temperature", ("diversity/*", "temperature")),
    ("clip", "Clip fractions and importance ratio", ("clip/low", "clip/high", "ratio/mean")),
    ("entropy_kl", "Entropy and k3 KL (to the reference; to the old policy if beta = 0)", ("entropy", "kl")),
    ("optim", "Loss, gradient norm and learning rate", ("loss", "grad_norm", "lr")),
    ("throughput", "Throughput and stage times", ("tokens_per_s", "time/*")),
)
MAX_COLUMNS = 3


def group_metrics(patterns: tuple[str, ...], runs: list[RunMetrics]) -> list[str]:
    """The metrics of a group that at least one run logged, in pattern order."""
    logged = sorted({m for r in runs for m in r.series})
    out: list[str] = []
    for pattern in patterns:
        out += [m for m in fnmatch.filter(logged, pattern) if m not in out]
    return out


def build_figures(runs: list[RunMetrics]) -> tuple[dict[str, Figure], list[str]]:
    """Figures by group file name, and notes on what was skipped."""
    figures: dict[str, Figure] = {}
    notes: list[str] = []
    for name, title, patterns in GROUPS:
        metrics = group_metrics(patterns, runs)
        if not metrics:
            notes.append(f"{name}: no run logged {', '.join(patterns)}; figure skipped")
            continue
        for run in runs:
            missing = [m for m in metrics if m not in run.series]
            if missing:
                notes.append(f"{name}: run {run.label} has no {', '.join(missing)}")
        figures[name] = _figure(title, metrics, runs)
    step_time = step_time_figure(runs)
    if step_time is not None:
        figures["step_time"] = step_time
    return figures, notes


def _figure(title: str, metrics: list[str], runs: list[RunMetrics]) -> Figure:
    cols = min(MAX_COLUMNS, len(metrics))
    rows = -(-len(metrics) // cols)
    fig = Figure(figsize=(4.2 * cols, 3.2 * rows + 0.8), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    colours = {run.label: f"C{i % 10}" for i, run in enumerate(runs)}
    handles = {}
    for ax, metric in zip(axes, metrics, strict=False):
        for run in runs:
            xs, ys = run.xy(metric)
            if not xs:
                continue
            marker = "o" if len(xs) <= 30 else None  # a short run stays visible as points
            (line,) = ax.plot(xs, ys, label=run.label, color=colours[run.label], marker=marker, markersize=3)
            handles.setdefault(run.label, line)
        ax.set_title(metric, fontsize=10)
        ax.set_xlabel("step")
        ax.grid(True, alpha=0.3)
    for ax in axes[len(metrics) :]:
        ax.set_visible(False)
    fig.suptitle(title)
    labels = [r.label for r in runs if r.label in handles]
    fig.legend([handles[lb] for lb in labels], labels, loc="outside lower center", ncols=min(len(labels), 4))
    return fig


def save_figures(figures: dict[str, Figure], out_dir: Path) -> list[Path]:
    """Write each figure as OUT_DIR/<group>.png (through a temp file, so a kill leaves no half PNG)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, fig in figures.items():
        path = out_dir / f"{name}.png"
        tmp = out_dir / f".{name}.png.part"
        fig.savefig(tmp, format="png", dpi=100)
        os.replace(tmp, path)
        written.append(path)
    return written


# The loop's step, in the order it happens: (metric, label, colour). Judging overlaps sampling:
# only its part after sampling ended adds to the step (time/judge - time/judge_hidden).
STEP_PARTS = (
    ("time/sync", "sync (weights to the engine)", "C7"),
    ("time/rollout", "sampling", "C0"),
    ("judge_exposed", "judging after sampling", "C1"),
    ("time/update", "update", "C2"),
)


def step_time_figure(runs: list[RunMetrics]) -> Figure | None:
    """Where each step's time goes, a panel per run: stacked bars of sync, sampling, the judging
    left once sampling ended, and the update; the judging that ran while the engine still
    sampled is hatched inside the sampling bar. None when no run logged the loop's stage times."""
    runs = [r for r in runs if "time/update" in r.series and "time/rollout" in r.series]
    if not runs:
        return None
    cols = min(MAX_COLUMNS, len(runs))
    rows = -(-len(runs) // cols)
    fig = Figure(figsize=(4.6 * cols, 3.4 * rows + 0.9), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax, run in zip(axes, runs, strict=False):
        steps = sorted(run.series["time/update"])

        def at(metric: str, step: int, run: RunMetrics = run) -> float:
            return run.series.get(metric, {}).get(step, 0.0)

        parts = {m: [at(m, s) for s in steps] for m, _, _ in STEP_PARTS if m != "judge_exposed"}
        parts["judge_exposed"] = [max(0.0, at("time/judge", s) - at("time/judge_hidden", s)) for s in steps]
        bottom = [0.0] * len(steps)
        for metric, label, colour in STEP_PARTS:
            ax.bar(steps, parts[metric], bottom=bottom, color=colour, label=label)
            if metric == "time/rollout":
                hidden = [at("time/judge_hidden", s) for s in steps]
                ax.bar(steps, hidden, bottom=bottom, fill=False, hatch="//", edgecolor="C1", linewidth=0,
                       label="judging hidden behind sampling")  # fmt: skip
            bottom = [b + v for b, v in zip(bottom, parts[metric], strict=True)]
        ax.set_title(run.label, fontsize=10)
        ax.set_xlabel("step")
        ax.set_ylabel("seconds")
        ax.grid(True, axis="y", alpha=0.3)
    for ax in axes[len(runs) :]:
        ax.set_visible(False)
    fig.suptitle("Step time: sync, sampling, judging, update")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=3)
    return fig
