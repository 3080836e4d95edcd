"""The HTML report's interactive training charts: plotly.js, inlined from the ``plotly`` package
(the ``report`` extra) when the page is written, so the page stays one file that opens offline.

The panels are the PNG figures' (``bench/panels.py``: constant series as text, identical series
once, an EMA over each raw line); each panel is one chart with every run overlaid. Hover shows
every run's value at a step; drag zooms (double-click resets); a click on a run in the legend
hides or shows both its lines (they share a legend group).

The specs are plain JSON-able dicts; ``script_json`` makes them safe inside a ``<script>``.
"""

from __future__ import annotations

import json
from typing import Any

from mcoder.bench.metrics import RunMetrics
from mcoder.bench.panels import (
    HIDDEN,
    STEP_PARTS,
    Group,
    ema,
    has_step_times,
    plan,
    step_parts,
)
from mcoder.errors import EnvironmentMissing

# matplotlib's tab10, so that a run has the same colour in the PNGs and the report
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
           "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")  # fmt: skip
MARKERS_UP_TO = 30
CONFIG = {"displaylogo": False, "responsive": True, "scrollZoom": False}
FONT = {"size": 13}


def plotly_js() -> str:
    """plotly.min.js as shipped in the plotly package, ready to inline."""
    try:
        from plotly.offline import get_plotlyjs
    except ImportError:
        raise EnvironmentMissing(
            "the HTML report's training charts need the plotly package",
            hint="pip install 'mcoder[report]' (or pip install plotly)",
        ) from None
    return get_plotlyjs().replace("</script", "<\\/script")


def sections(runs: list[RunMetrics]) -> tuple[list[dict[str, Any]], list[str]]:
    """One section per metric group: {"title", "note", "charts": [{"id", "data", "layout"}]};
    and the groups that did not move at all, as lines of text."""
    groups, _ = plan(runs)
    colours = {run.label: COLOURS[i % len(COLOURS)] for i, run in enumerate(runs)}
    out, still = [], []
    for group in groups:
        if not group.panels:
            still.append(f"{group.title}: {group.constant_line()}")
            continue
        out.append(
            {"title": group.title, "note": group.constant_line(), "charts": _charts(group, runs, colours)}
        )
    timed = [r for r in runs if has_step_times(r)]
    if timed:
        charts = [_step_time(run, f"chart-step-time-{i}") for i, run in enumerate(timed)]
        out.append({"title": "Step time: sync, sampling, judging, update", "note": "", "charts": charts})
    return out, still


def _charts(group: Group, runs: list[RunMetrics], colours: dict[str, str]) -> list[dict[str, Any]]:
    charts = []
    for i, panel in enumerate(group.panels):
        data = []
        for run in runs:
            xs, ys = run.xy(panel.metric)
            if xs:
                data += _run_traces(run.label, xs, ys, colours[run.label])
        charts.append({"id": f"chart-{group.name}-{i}", "data": data, "layout": _layout(panel.title)})
    return charts


def _run_traces(label: str, xs: list[int], ys: list[float], colour: str) -> list[dict[str, Any]]:
    raw = {
        "type": "scatter", "x": xs, "y": ys, "name": label, "legendgroup": label, "showlegend": False,
        "mode": "lines+markers" if len(xs) <= MARKERS_UP_TO else "lines", "opacity": 0.35,
        "line": {"color": colour, "width": 1}, "marker": {"size": 4},
        "hovertemplate": "raw %{y:.4g}<extra>%{fullData.name}</extra>",
    }  # fmt: skip
    smooth = {
        "type": "scatter", "x": xs, "y": ema(ys), "name": label, "legendgroup": label, "mode": "lines",
        "line": {"color": colour, "width": 2.5},
        "hovertemplate": "smoothed %{y:.4g}<extra>%{fullData.name}</extra>",
    }  # fmt: skip
    return [raw, smooth]


def _layout(title: str, **extra: Any) -> dict[str, Any]:
    return {
        "title": {"text": title, "font": {"size": 15}, "x": 0.01, "xanchor": "left"},  # clear of the toolbar
        "font": FONT,
        "height": 320,
        "margin": {"l": 60, "r": 20, "t": 50, "b": 50},
        "xaxis": {"title": {"text": "step"}},
        "hovermode": "x unified",
        "showlegend": True,
        "legend": {"orientation": "h", "y": -0.22},
        **extra,
    }


def _step_time(run: RunMetrics, chart_id: str) -> dict[str, Any]:
    steps, parts = step_parts(run)
    colours = {"C7": "#7f7f7f", "C0": "#1f77b4", "C1": "#ff7f0e", "C2": "#2ca02c"}
    data = [
        {"type": "bar", "x": steps, "y": parts[m], "name": label, "marker": {"color": colours[c]},
         "hovertemplate": f"{label} %{{y:.3g}} s<extra></extra>"}
        for m, label, c in STEP_PARTS
    ]  # fmt: skip
    data.append({"type": "scatter", "mode": "lines", "x": steps, "y": parts[HIDDEN],
                 "name": "judging hidden behind sampling", "line": {"color": "#ff7f0e", "dash": "dot"},
                 "hovertemplate": "judging hidden %{y:.3g} s<extra></extra>"})  # fmt: skip
    layout = _layout(run.label, barmode="stack", yaxis={"title": {"text": "seconds"}}, height=380)
    layout["legend"] = {"orientation": "h", "y": -0.3}
    return {"id": chart_id, "data": data, "layout": layout}


def script_json(value: Any) -> str:
    """JSON that can sit inside <script>...</script>: no '<', '>', '&' or line separators raw."""
    text = json.dumps(value, allow_nan=False)
    for ch, esc in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(ch, esc)
    return text
