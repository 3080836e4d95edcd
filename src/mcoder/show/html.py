"""``mcoder show --html``: one self-contained page for a run or a bench.

The page holds the pass@k tables (bench's own grid, per platform x difficulty), the training
figures of a run (bench's plots, embedded as PNG data URIs), and the samples, each a
``<details>`` with the same facts as the terminal view: the problem, the completion with its
program highlighted (pygments, inline styles), the verdict, the first failing test with a diff,
stderr, and the training decision. A few lines of inline script filter the list by status,
problem or text (also from the link: ``report.html#status=wrong_answer&q=ID``); nothing is
fetched, so it opens from disk in any browser.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Iterable
from html import escape
from pathlib import Path

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from mcoder import __version__
from mcoder.bench import render
from mcoder.bench.table import ProblemTally, Table, build_table, difficulty_bucket, platform_name
from mcoder.show import details
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
.plots figure { display: inline-block; width: 49%; margin: 0 0 .5em; vertical-align: top; }
.plots img { width: 100%; border: 1px solid #eee; }
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

SCRIPT = """
function filterSamples() {
  const text = document.getElementById('filter-text').value.toLowerCase();
  const status = document.getElementById('filter-status').value;
  let shown = 0;
  for (const el of document.querySelectorAll('details.sample')) {
    const ok = (!status || el.dataset.status === status) &&
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
  filterSamples();
});
"""


def report(batch: Batch, samples: list[Shown], ks: tuple[int, ...], bounds: tuple[float, float]) -> str:
    """The whole page as text."""
    table = pass_table(samples, ks, bounds)
    body = [
        f"<h1>mcoder report: {escape(batch.target.name or str(batch.target))}</h1>",
        (
            f"<p>{KINDS.get(batch.kind, batch.kind)} <code>{escape(str(batch.target))}</code>: {len(samples)} samples in "
            f"{len(groups(samples))} groups; written by mcoder {escape(__version__)}.</p>"
        ),
        _notes(batch.notes),
        '<section id="passk"><h2>pass@k</h2>',
        _tables(table),
        "</section>",
        _plots(batch),
        _samples(samples),
    ]
    return (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        f"<title>mcoder report: {escape(str(batch.target))}</title><style>{CSS}</style></head>\n<body>\n"
        + "\n".join(part for part in body if part)
        + f"\n<script>{SCRIPT}</script>\n</body></html>\n"
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
        t.n += 1
        t.c += bool(s.verdict.passed)
        t.statuses[s.verdict.status] += 1
    return build_table(tallies.values(), ks)


def _tables(table: Table) -> str:
    out = []
    for k in table.ks:
        out.append(_html_table(f"pass@{k} (%, problems averaged)", *render.grid(table, k, None)))
    total = sum(table.failures.values())
    out.append(_html_table(f"failures ({total} non-accepted samples)", *render.failure_grid(table, None)))
    return "\n".join(out)


def _html_table(title: str, header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    lines = [f'<table class="passk"><caption>{escape(title)}</caption><tr>{head}</tr>']
    for r in rows:
        cls = ' class="all"' if r[0] == "all" else ""
        lines.append(f"<tr{cls}>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>")
    lines.append("</table>")
    return "\n".join(lines)


def _plots(batch: Batch) -> str:
    if batch.run_dir is None or not (batch.run_dir / "metrics.jsonl").is_file():
        return ""
    from mcoder.bench.metrics import read_run
    from mcoder.bench.plots import build_figures

    figures, _ = build_figures([read_run(batch.run_dir, batch.run_dir.name)])
    imgs = []
    for name, fig in figures.items():
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=80)
        data = base64.b64encode(buf.getvalue()).decode("ascii")
        imgs.append(f'<figure><img alt="{escape(name)}" src="data:image/png;base64,{data}"></figure>')
    return '<section id="plots" class="plots"><h2>Training</h2>\n' + "\n".join(imgs) + "\n</section>"


def _notes(notes: list[str]) -> str:
    if not notes:
        return ""
    return '<ul class="notes">' + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>"


def _samples(samples: list[Shown]) -> str:
    statuses = sorted({s.status for s in samples})
    options = "".join(f'<option value="{escape(s)}">{escape(s)}</option>' for s in statuses)
    parts = [
        '<section id="samples"><h2>Samples</h2>',
        (
            '<div class="controls"><input id="filter-text" type="search" placeholder="problem or rollout id, text" '
            'oninput="filterSamples()"> <select id="filter-status" onchange="filterSamples()">'
            f'<option value="">every status</option>{options}</select> '
            f'<span id="shown-count">{len(samples)}</span> shown</div>'
        ),
    ]
    for g in groups(samples):
        parts.append(f'<p class="group">{escape(details.summary_line(g))}</p>')
        parts += [_sample(s) for s in g.samples]
    parts.append("</section>")
    return "\n".join(parts)


def _sample(s: Shown) -> str:
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
        f'<details class="sample" data-status="{escape(s.status)}" data-search="{escape(search)}">'
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
