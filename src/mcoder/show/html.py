"""``mcoder show --html``: one self-contained page for one run or bench, or several compared.

The page holds, for each target (``mcoder show A B --html``: A is the reference):
- a comparison table when there are several: pass@k over all problems and its change against A;
- the pass@k tables (bench's own grid, per platform x difficulty), each later target's with
  its change against A in every cell;
- the training charts of the runs among the targets, every run overlaid on each chart:
  interactive (plotly.js inlined at generation time, see ``show/charts.py``);
- the samples, each a ``<details>`` with the same facts as the terminal view: the problem, the
  completion with its program highlighted (pygments, inline styles), the verdict, the first
  failing test with a diff, stderr, and the training decision. A few lines of inline script
  filter the list by target, status, problem or text (also from the link:
  ``report.html#status=wrong_answer&q=ID``).

Nothing is fetched, so it opens from disk in any browser. The page counts the errors its scripts
raise in ``<html data-errors>`` and marks each drawn chart ``data-drawn``: what the browser test
reads.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from html import escape
from pathlib import Path

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from mcoder import __version__
from mcoder.bench import render
from mcoder.bench.panels import SMOOTHING_NOTE
from mcoder.bench.table import ALL, ProblemTally, Table, build_table, delta
from mcoder.formats.buckets import difficulty_bucket, platform_name
from mcoder.show import charts, details
from mcoder.show.collect import Batch, Shown, groups

KINDS = {
    "run": "training run",
    "step": "step folder",
    "rollouts": "rollouts file",
    "lcb": "LiveCodeBench results file",
}
_FORMATTER = HtmlFormatter(noclasses=True, style="friendly", nowrap=True)

CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1100px; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; } h2 { border-bottom: 1px solid #ddd; padding-bottom: .2em; margin-top: 2em; }
table.passk { border-collapse: collapse; margin: .5em 0 1.2em; }
table.passk th, table.passk td { border: 1px solid #ccc; padding: .25em .7em; text-align: right; }
table.passk th:first-child, table.passk td:first-child { text-align: left; }
table.passk tr.all td { font-weight: bold; background: #f6f6f6; }
.charts .grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(480px, 1fr)); gap: .6em; }
.charts .chart { border: 1px solid #eee; min-height: 320px; }
.charts p.constant, .charts p.how { color: #555; margin: .2em 0 .5em; }
td.up { color: #1a7f37; } td.down { color: #cf222e; }
.notes li { color: #8a5a00; }
details.sample { border: 1px solid #ddd; border-radius: 4px; margin: .35em 0; padding: .3em .6em; }
details.sample > summary { cursor: pointer; font-family: ui-monospace, monospace; font-size: 13px; }
.status { font-weight: bold; padding: 0 .35em; border-radius: 3px; color: #fff; background: #b33; }
.status.accepted { background: #2a7d2a; } .status.unjudged { background: #888; }
pre { background: #f8f8f8; border: 1px solid #eee; padding: .5em; overflow-x: auto; white-space: pre-wrap; }
pre.prose { color: #777; } pre.program { background: #fffbe6; border-color: #e6d9a8; }
.diff .add { color: #1a7f37; } .diff .del { color: #cf222e; } .diff .hunk { color: #0969da; }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: .1em 1em; margin: .4em 0; }
dl.facts dt { font-weight: bold; } dl.facts dd { margin: 0; }
.controls { margin: .5em 0; } .controls input, .controls select { margin-right: .6em; }
.group { font-family: ui-monospace, monospace; font-size: 13px; }
"""

# First in <head>: every error a script raises (or logs) is counted, so a test can see it.
ERRORS_SCRIPT = """
window.reportErrors = [];
function reportError(message) {
  window.reportErrors.push(String(message));
  document.documentElement.dataset.errors = window.reportErrors.length;
}
window.addEventListener('error', e => reportError(e.message || e));
window.addEventListener('unhandledrejection', e => reportError(e.reason));
const consoleError = console.error;
console.error = (...args) => { reportError(args.join(' ')); consoleError(...args); };
"""

SCRIPT = """
function filterSamples() {
  const text = document.getElementById('filter-text').value.toLowerCase();
  const status = document.getElementById('filter-status').value;
  const run = document.getElementById('filter-run').value;
  let shown = 0;
  for (const el of document.querySelectorAll('details.sample')) {
    const ok = (!status || el.dataset.status === status) && (!run || el.dataset.run === run) &&
               (!text || el.dataset.search.includes(text));
    el.style.display = ok ? '' : 'none';
    if (ok) shown++;
  }
  document.getElementById('shown-count').textContent = shown;
}
// a link can carry a filter: report.html#status=wrong_answer&q=add
window.addEventListener('DOMContentLoaded', () => {
  const hash = new URLSearchParams(location.hash.slice(1));
  document.getElementById('filter-status').value = hash.get('status') || '';
  document.getElementById('filter-text').value = hash.get('q') || '';
  document.getElementById('filter-run').value = hash.get('run') || '';
  filterSamples();
});
"""


@dataclass
class Part:
    """One target of the report: its label (the legend's and the tables'), what was read, the samples kept."""

    label: str
    batch: Batch
    samples: list[Shown]


def report(parts: list[Part], ks: tuple[int, ...], bounds: tuple[float, float]) -> str:
    """The whole page as text; ``parts[0]`` is the reference the others are compared with."""
    tables = [pass_table(p.samples, ks, bounds) for p in parts]
    title = " vs ".join(p.label for p in parts)
    body = [
        f"<h1>mcoder report: {escape(title)}</h1>",
        *(_intro(p) for p in parts),
        f"<p>written by mcoder {escape(__version__)}.</p>",
        _notes([f"{p.label}: {n}" if len(parts) > 1 else n for p in parts for n in p.batch.notes]),
        _comparison(parts, tables),
        '<section id="passk"><h2>pass@k</h2>',
        *(
            _part_tables(p.label if len(parts) > 1 else None, t, tables[0] if i else None, parts[0].label)
            for i, (p, t) in enumerate(zip(parts, tables, strict=True))
        ),
        "</section>",
        _charts(parts),
        _samples(parts),
    ]  # fmt: skip
    return (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        f"<title>mcoder report: {escape(title)}</title><script>{ERRORS_SCRIPT}</script>"
        f"<style>{CSS}</style></head>\n<body>\n"
        + "\n".join(part for part in body if part)
        + f"\n<script>{SCRIPT}</script>\n</body></html>\n"
    )


def _intro(p: Part) -> str:
    b = p.batch
    steps = sorted({s.step for s in p.samples if s.step is not None})
    at = (
        ""
        if not steps
        else f" at step {steps[0]}"
        if len(steps) == 1
        else f" at steps {steps[0]}-{steps[-1]}"
    )
    return (
        f"<p><b>{escape(p.label)}</b>: {KINDS.get(b.kind, b.kind)} <code>{escape(str(b.target))}</code>, "
        f"{len(p.samples)} samples{at} in {len(groups(p.samples))} groups.</p>"
    )


def pass_table(samples: list[Shown], ks: tuple[int, ...], bounds: tuple[float, float]) -> Table:
    """bench's table over the judged samples (a problem's samples pooled across steps)."""
    tallies: dict[str, ProblemTally] = {}
    for s in samples:
        if s.verdict is None:
            continue
        t = tallies.get(s.problem_id)
        if t is None:
            p = s.problem
            t = tallies[s.problem_id] = ProblemTally(
                s.problem_id,
                platform_name(p.platform if p else None),
                difficulty_bucket(p.difficulty if p else None, bounds),
            )
        t.add(s.verdict)
    return build_table(tallies.values(), ks)


def _part_tables(label: str | None, table: Table, reference: Table | None, reference_label: str) -> str:
    """A target's pass@k and failure tables; ``label`` heads them when the report has several."""
    against = f" (Δ: change against {reference_label}, points)" if reference is not None else ""
    out = [f"<h3>{escape(label)}{escape(against)}</h3>"] if label is not None else []
    for k in table.ks:
        out.append(_html_table(f"pass@{k} (%, problems averaged)", *render.grid(table, k, reference)))
    total = sum(table.failures.values())
    out.append(
        _html_table(
            f"failures ({total} non-accepted samples)", *render.failure_grid(table, reference), colour=False
        )
    )
    return "\n".join(out)


def _comparison(parts: list[Part], tables: list[Table]) -> str:
    """Several targets: one row each, pass@k over all problems and its change against the first."""
    if len(parts) < 2:
        return ""
    ks = tables[0].ks
    header = ["target", "problems", "samples"]
    for k in ks:
        header += [f"pass@{k} %", f"Δ pass@{k}"]
    rows = []
    for i, (p, t) in enumerate(zip(parts, tables, strict=True)):
        cell = t.cell()
        row = [p.label, str(cell.problems), str(cell.samples)]
        change = delta(t, tables[0])[(ALL, ALL)] if i else {}
        for k in ks:
            row += [render.cell_text(cell, k), render.signed(change.get(k)) if i else ""]
        rows.append(row)
    return (
        '<section id="compare"><h2>Compared</h2>'
        + _html_table(f"pass@k over all problems; Δ against {parts[0].label}", header, rows)
        + "</section>"
    )


def _html_table(title: str, header: list[str], rows: list[list[str]], colour: bool = True) -> str:
    """A table; with ``colour`` a signed change is green up and red down (pass rates: up is better)."""
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    lines = [f'<table class="passk"><caption>{escape(title)}</caption><tr>{head}</tr>']
    for r in rows:
        cls = ' class="all"' if r[0] == "all" else ""
        lines.append(f"<tr{cls}>" + "".join(_td(c, colour) for c in r) + "</tr>")
    lines.append("</table>")
    return "\n".join(lines)


def _td(text: str, colour: bool) -> str:
    change = colour and SIGNED.match(text)
    cls = "" if not change or not text.strip("+-0.") else ' class="up"' if text[0] == "+" else ' class="down"'
    return f"<td{cls}>{escape(text)}</td>"


SIGNED = re.compile(r"^[+-]\d+(\.\d+)?$")


def _charts(parts: list[Part]) -> str:
    """The training charts of the targets that are runs with metrics, every run on each chart."""
    from mcoder.bench.metrics import read_run

    runs = [
        read_run(p.batch.run_dir, p.label)
        for p in parts
        if p.batch.run_dir is not None and (p.batch.run_dir / "metrics.jsonl").is_file()
    ]
    if not runs:
        return ""
    sections, still = charts.sections(runs)
    html = [
        '<section id="training" class="charts"><h2>Training</h2>',
        (
            f'<p class="how">{escape(SMOOTHING_NOTE)}. Hover for values, drag to zoom (double-click '
            "resets), click a run in a legend to hide or show it.</p>"
        ),
    ]
    for sec in sections:
        html.append(f"<h3>{escape(sec['title'])}</h3>")
        if sec["note"]:
            html.append(f'<p class="constant">{escape(sec["note"])}</p>')
        html.append(
            '<div class="grid">'
            + "".join(f'<div class="chart" id="{c["id"]}"></div>' for c in sec["charts"])
            + "</div>"
        )
    if still:
        html.append('<p class="constant">Did not move: ' + escape("; ".join(still)) + "</p>")
    specs = [c for sec in sections for c in sec["charts"]]
    html += [
        f"<script>{charts.plotly_js()}</script>",
        f"<script>const CHARTS = {charts.script_json(specs)}; const CHART_CONFIG = {charts.script_json(charts.CONFIG)};",
        DRAW_SCRIPT + "</script>",
        "</section>",
    ]
    return "\n".join(html)


DRAW_SCRIPT = """
for (const c of CHARTS) {
  const el = document.getElementById(c.id);
  Plotly.newPlot(el, c.data, c.layout, CHART_CONFIG)
    .then(() => { el.dataset.drawn = el.querySelectorAll('.scatterlayer .trace, .barlayer .trace').length; })
    .catch(reportError);
}
"""


def _notes(notes: list[str]) -> str:
    if not notes:
        return ""
    return '<ul class="notes">' + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>"


def _samples(parts: list[Part]) -> str:
    every = [s for p in parts for s in p.samples]
    statuses = sorted({s.status for s in every})
    options = "".join(f'<option value="{escape(s)}">{escape(s)}</option>' for s in statuses)
    runs = "".join(f'<option value="{escape(p.label)}">{escape(p.label)}</option>' for p in parts)
    run_select = (
        f'<select id="filter-run" onchange="filterSamples()"{"" if len(parts) > 1 else " hidden"}>'
        f'<option value="">every target</option>{runs}</select> '
    )
    html = [
        '<section id="samples"><h2>Samples</h2>',
        (
            '<div class="controls"><input id="filter-text" type="search" placeholder="problem or rollout id, text" '
            f'oninput="filterSamples()"> {run_select}<select id="filter-status" onchange="filterSamples()">'
            f'<option value="">every status</option>{options}</select> '
            f'<span id="shown-count">{len(every)}</span> shown</div>'
        ),
    ]
    for p in parts:
        if len(parts) > 1:
            html.append(f"<h3>{escape(p.label)}</h3>")
        for g in groups(p.samples):
            html.append(f'<p class="group">{escape(details.summary_line(g))}</p>')
            html += [_sample(s, p.label) for s in g.samples]
    html.append("</section>")
    return "\n".join(html)


def _sample(s: Shown, run: str) -> str:
    search = f"{s.id} {s.problem_id} {s.status}".lower()
    summary = (
        f'<span class="status {escape(s.status)}">{escape(s.status)}</span> {escape(s.id)}'
        + (f" | reward {s.reward:g}" if s.reward is not None else "")
        + (" | masked" if s.masked else "")
    )
    body = [_statement(s), _completion(s), _facts(details.rollout_facts(s))]
    body.append(f"<p><b>verdict</b> {escape(details.verdict_line(s))}</p>")
    ff = details.failure(s)
    if ff is not None:
        body.append(_failure(ff))
    train = details.train_facts(s)
    if train:
        body.append("<p><b>training</b></p>" + _facts(train))
    return (
        f'<details class="sample" data-run="{escape(run)}" data-status="{escape(s.status)}" '
        f'data-search="{escape(search)}">'
        f"<summary>{summary}</summary>\n" + "\n".join(b for b in body if b) + "</details>"
    )


def _statement(s: Shown) -> str:
    stated = details.statement(s)
    if stated is None:
        return ""
    text, more = stated
    extra = f"\n(... {more} more lines)" if more else ""
    return f"<p><b>problem</b> {escape(s.problem_id)}</p><pre>{escape(text + extra)}</pre>"


def _completion(s: Shown) -> str:
    before, program, after = details.split_completion(s.rollout.completion, s.program)
    parts = [
        "<p><b>completion</b>"
        + (" (the extracted program highlighted)" if program else " (no program found)")
        + "</p>"
    ]
    if before.strip():
        parts.append(f'<pre class="prose">{escape(before.rstrip())}</pre>')
    if program:
        parts.append(f'<pre class="program">{highlight(program, PythonLexer(), _FORMATTER)}</pre>')
    if after.strip():
        parts.append(f'<pre class="prose">{escape(after.strip())}</pre>')
    return "\n".join(parts)


def _facts(facts: Iterable[tuple[str, str]]) -> str:
    items = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in facts)
    return f'<dl class="facts">{items}</dl>' if items else ""


def _failure(ff: dict[str, str | None]) -> str:
    parts = []
    if ff["index"] is not None:
        parts.append(f"<p><b>first failing test</b> #{escape(ff['index'])}</p>")
    if ff["reason"]:
        parts.append(f"<p>{escape(ff['reason'])}</p>")
    if ff["input"] is not None:
        parts.append(f"<p>input</p><pre>{escape(ff['input'])}</pre>")
    if ff["expected"] is not None:
        lines = []
        for line in details.diff_lines(ff["expected"], ff["got"]):
            cls = (
                "add"
                if line.startswith("+")
                else "del"
                if line.startswith("-")
                else "hunk"
                if line.startswith("@")
                else ""
            )
            lines.append(f'<span class="{cls}">{escape(line)}</span>')
        parts.append('<p>expected (-) vs got (+)</p><pre class="diff">' + "\n".join(lines) + "</pre>")
    if ff["stderr"]:
        parts.append(f"<p>stderr</p><pre>{escape(ff['stderr'])}</pre>")
    return "\n".join(parts)


def write(path: Path, text: str, inputs: dict | None = None) -> None:
    """The report, through the output guard (``mcoder.outputs.write_document``)."""
    from mcoder.outputs import write_document

    write_document(path, text, stage="show", flag="--html", inputs=inputs)
