"""``mcoder bench``: the pass@k table of a verdicts file, and the figures of training runs.

Tables and notes go to stderr; the one-line summary and the paths written go to stdout.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from mcoder import console
from mcoder.bench import gates, render
from mcoder.bench.config import DEFAULT_KS, DEFAULT_RATING_BOUNDS, BenchConfig
from mcoder.bench.gates import Change
from mcoder.bench.load import fresh_tallies, lcb_problems, load_problems, tally_lcb, tally_verdicts
from mcoder.bench.table import ALL, UNKNOWN, ProblemTally, Table, build_table
from mcoder.errors import GateFailed
from mcoder.formats import lcb_results
from mcoder.jsonl import display_name

SHOWN_IDS = 10
SHOWN_CHANGES = 20  # problems named as regressed or improved against the baseline


@dataclass(slots=True)
class BenchResult:
    table: Table | None = None
    baseline: Table | None = None
    notes: list[str] = field(default_factory=list)
    summary: str | None = None
    written: list[Path] = field(default_factory=list)
    tallies: dict[str, ProblemTally] = field(default_factory=dict)
    base_tallies: dict[str, ProblemTally] | None = None
    regressions: list[Change] = field(default_factory=list)
    """Problems whose pass@1 is lower than the baseline's, or that have no verdict now (bench/gates.py)."""
    improvements: list[Change] = field(default_factory=list)
    gate_results: list[gates.GateResult] = field(default_factory=list)
    """Each gate that is on, and whether it failed (set before any output is written)."""


def run(cfg: BenchConfig) -> BenchResult:
    """Everything the command was asked for, in order: the table, then the plots."""
    check_outputs(cfg)
    result = BenchResult()
    if cfg.wants_table:
        result = score(cfg.problems, cfg.verdicts, cfg.ks, cfg.baseline, cfg.rating_bounds)
        gates.check_inputs(cfg.gates, result.tallies, result.base_tallies, str(cfg.baseline))
        result.gate_results = gates.check(cfg.gates, result.tallies, result.base_tallies, result.regressions)
        publish(cfg, result)
        if cfg.lcb_out is not None:
            write_lcb(cfg, result)
        if cfg.junit is not None:
            write_junit(cfg, result)
    if cfg.plots:
        result.written += plot_runs(cfg.run_dirs, cfg.plots_dir)
    if cfg.wants_table:
        enforce_gates(cfg, result)  # last: every output is written before a gate fails the job
    return result


def enforce_gates(cfg: BenchConfig, result: BenchResult) -> None:
    """Name each problem that got worse or better; GateFailed (exit 5) when a gate fails."""
    assert result.table is not None
    for word, changes, say in (("regressed", result.regressions, console.warn),
                               ("improved", result.improvements, console.info)):  # fmt: skip
        for r in changes[:SHOWN_CHANGES]:
            say(f"{word} {r.text()}")
        if len(changes) > SHOWN_CHANGES:
            say(f"{word}: {len(changes) - SHOWN_CHANGES} more problems (--junit FILE lists every one)")
    failed = [g.failure for g in result.gate_results if g.failure is not None]
    if failed:
        raise GateFailed(
            "gate failed: " + "; ".join(failed),
            hint="the job ran and the results are worse than the gate allows (exit 5); "
            "a broken job exits 1-4",
        )
    if cfg.gates.any:
        console.info("every gate passed")


def write_junit(cfg: BenchConfig, result: BenchResult) -> None:
    """JUnit XML of the bench (bench/junit.py): a test case per problem."""
    from mcoder.bench import junit

    assert cfg.junit is not None and cfg.verdicts is not None
    text = junit.document(
        list(result.tallies.values()),
        result.regressions,
        source=display_name(cfg.verdicts),
        gate_regressions=cfg.gates.fail_on_regression,
        gates=result.gate_results,
    )
    _write(cfg.junit, text, result, "--junit", _inputs(cfg))


DOCUMENTS = (
    ("markdown", "--markdown"), ("json_out", "--json"), ("lcb_out", "--lcb-out"), ("junit", "--junit"),
)  # fmt: skip


def check_outputs(cfg: BenchConfig) -> None:
    """Every file this bench will write, refused before any work when it may not be written
    (``mcoder.outputs``: an input, a file mcoder did not write, a device, a link)."""
    from mcoder.outputs import check_document, check_target, refuse_input_as_output

    for name, flag in DOCUMENTS:
        if getattr(cfg, name) is not None:
            check_document(getattr(cfg, name), stage="bench", flag=flag, inputs=_inputs(cfg))
    if cfg.plots:
        refuse_input_as_output(cfg.plots_dir, {f"--run-dir {d}": d for d in cfg.run_dirs}, flag="--out-dir")
        check_target(cfg.plots_dir, flag="--out-dir", kind="dir")


def _inputs(cfg: BenchConfig) -> dict:
    runs = {f"run {i}": Path(d) / "metrics.jsonl" for i, d in enumerate(cfg.run_dirs)}
    return {"problems": cfg.problems, "verdicts": cfg.verdicts, "rollouts": cfg.rollouts,
            "baseline": cfg.baseline, **runs}  # fmt: skip


def score(
    problems_path: str | os.PathLike,
    verdicts_path: str | os.PathLike,
    ks: tuple[int, ...] = DEFAULT_KS,
    baseline_path: str | os.PathLike | None = None,
    rating_bounds: tuple[float, float] = DEFAULT_RATING_BOUNDS,
) -> BenchResult:
    """The tables and notes without printing anything: for scripts (benchmarks, the demo)."""
    result = BenchResult()
    if lcb_results.is_results_file(problems_path):  # a submission tabled on its own problems
        problems = lcb_problems(problems_path, rating_bounds)
    else:
        problems = load_problems(problems_path, rating_bounds)
    tallies = fresh_tallies(problems)
    lcb_notes = _tally(verdicts_path, tallies, problems_path)
    result.table = build_table(tallies.values(), ks)
    base_tallies = None
    if baseline_path is not None:
        base_tallies = fresh_tallies(problems)
        lcb_notes += _tally(baseline_path, base_tallies, problems_path)
        result.baseline = build_table(base_tallies.values(), ks)
    result.notes = table_notes(result.table, tallies, base_tallies) + lcb_notes
    result.tallies, result.base_tallies = tallies, base_tallies
    if base_tallies is not None:
        result.regressions, result.improvements = gates.changes(tallies, base_tallies)
    result.summary = render.summary(result.table, result.baseline)
    return result


def publish(cfg: BenchConfig, result: BenchResult) -> None:
    """Tables and notes on stderr, the summary on stdout, markdown and JSON files when asked."""
    for t in render.rich_tables(result.table, result.baseline):
        console.show(t)
    for note in result.notes:
        console.warn(note)  # printed as written: ids and paths come from data
    documents = [p for p in (cfg.markdown, cfg.json_out, cfg.lcb_out, cfg.junit) if p is not None]
    if any(str(p) == "-" for p in documents):
        console.info(result.summary)  # stdout carries the document; keep it parseable
    else:
        console.emit(result.summary)
    if cfg.markdown is not None:
        text = render.markdown(result.table, result.baseline, result.notes)
        _write(cfg.markdown, text, result, "--markdown", _inputs(cfg))
    if cfg.json_out is not None:
        doc = render.to_json(result.table, result.baseline, result.notes, cfg.rating_bounds)
        text = orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n"
        _write(cfg.json_out, text, result, "--json", _inputs(cfg))


def _tally(
    path: str | os.PathLike, tallies: dict[str, ProblemTally], problems_path: str | os.PathLike
) -> list[str]:
    """Count a verdicts file, or a LiveCodeBench results file (*_eval_all.json), into tallies."""
    if lcb_results.is_results_file(path):
        return tally_lcb(path, tallies)
    tally_verdicts(path, tallies, display_name(problems_path))
    return []


def write_lcb(cfg: BenchConfig, result: BenchResult) -> None:
    """LiveCodeBench's per-problem results file of this bench (``formats/lcb_results.py``)."""
    assert cfg.lcb_out is not None and cfg.rollouts is not None and cfg.problems and cfg.verdicts
    entries, notes = lcb_results.build(cfg.problems, cfg.rollouts, cfg.verdicts, cfg.rating_bounds)
    for note in notes:
        console.warn(note)
    _write(cfg.lcb_out, lcb_results.dumps(entries), result, "--lcb-out", _inputs(cfg))


def table_notes(
    table: Table, tallies: dict[str, ProblemTally], base_tallies: dict[str, ProblemTally] | None
) -> list[str]:
    """What a reader of the table must know: left-out problems and mismatched comparisons."""
    notes = []
    evaluated = [t for t in tallies.values() if t.n > 0]
    for k in table.ks:
        short = [t for t in evaluated if t.n < k]
        if short:
            notes.append(
                f"pass@{k} is not computable for {len(short)} of {len(evaluated)} evaluated problems "
                f"(fewer than {k} samples, smallest n = {min(t.n for t in short)}); "
                f"they are left out of the pass@{k} averages: " + _ids(sorted(t.id for t in short))
            )
    if table.unevaluated:
        notes.append(
            f"unevaluated (no verdicts, not counted): {len(table.unevaluated)} of {len(tallies)} problems: "
            + _ids(table.unevaluated)
        )
    unknown = sum(1 for t in tallies.values() if t.difficulty == UNKNOWN)
    if unknown:
        notes.append(
            f"difficulty not easy/medium/hard or a rating: {unknown} problems, in column '{UNKNOWN}'"
        )
    if base_tallies is not None:
        ours = {t.id for t in evaluated}
        theirs = {t.id for t in base_tallies.values() if t.n > 0}
        if ours != theirs:
            notes.append(
                f"the baseline evaluated a different set of problems ({len(theirs)} vs {len(ours)}, "
                f"{len(ours ^ theirs)} differ): deltas compare different problems"
            )
    if table.cell(ALL, ALL).problems == 0:
        notes.append("no verdict matched any problem: the table is empty")
    return notes


def _ids(ids: list[str]) -> str:
    shown = ", ".join(ids[:SHOWN_IDS])
    return shown + (f", ... ({len(ids) - SHOWN_IDS} more)" if len(ids) > SHOWN_IDS else "")


def _write(path: Path, text: str, result: BenchResult, flag: str, inputs: dict) -> None:
    """Write a whole file through the output guard and print its path; '-' writes the text to stdout."""
    from mcoder.outputs import write_document

    if str(path) == "-":
        console.document(text)
        return
    write_document(path, text, stage="bench", flag=flag, inputs=inputs)
    result.written.append(path)
    console.emit(str(path))


def plot_runs(run_dirs: list[Path], out_dir: Path) -> list[Path]:
    """Read each run's metrics.jsonl, draw the figures, write the PNGs, print their paths."""
    from mcoder.bench.metrics import read_run, run_labels
    from mcoder.bench.plots import build_figures

    runs = [read_run(d, label) for d, label in zip(run_dirs, run_labels(run_dirs), strict=True)]
    for run_ in runs:
        for w in run_.warnings:
            console.warn(w)
    figures, notes = build_figures(runs)
    for note in notes:
        console.info(f"note: {note}")
    written = _save_figures(figures, out_dir, {r.label: Path(d) / "metrics.jsonl" for r, d in zip(runs, run_dirs, strict=True)})
    return written


def _save_figures(figures: dict, out_dir: Path, inputs: dict) -> list[Path]:
    """Each figure as OUT_DIR/<group>.png, through the output guard: a PNG of the user's there
    (one mcoder did not write, or changed since) is refused, not replaced."""
    import io

    from mcoder.outputs import check_document, write_document

    paths = {name: out_dir / f"{name}.png" for name in figures}
    for path in paths.values():  # all refused before the first is written
        check_document(path, stage="bench", flag="--out-dir", inputs=inputs)
    for name, fig in figures.items():
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=100)
        write_document(paths[name], buf.getvalue(), stage="bench", flag="--out-dir", inputs=inputs)
        console.emit(str(paths[name]))
    return list(paths.values())
