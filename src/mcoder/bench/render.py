"""The bench table as rich tables (stderr), markdown, JSON and a one-line summary.

Cells read ``45.0 (12)``: pass@k in percent, averaged over 12 problems; ``45.0 (10/12)`` when 2
of the 12 problems have fewer than k samples and are left out; ``n/a`` when no problem of the
cell has k samples; ``-`` for an empty cell. With a baseline, a ``Δ all`` column holds each
platform's change over all difficulties and a ``Δ`` row each difficulty's change over all
platforms, in percentage points. JSON holds fractions (0..1), every cell's delta included.
"""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table as RichTable

from mcoder.bench.table import ALL, FAILURE_STATUSES, Cell, Table, delta
from mcoder.printable import printable

DELTA = "Δ"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}"


def signed(value: float | None) -> str:
    # round first and add 0.0 so that a tie prints +0.0, never -0.0
    return "n/a" if value is None else f"{round(100 * value, 1) + 0.0:+.1f}"


def cell_text(cell: Cell, k: int) -> str:
    if cell.problems == 0:
        return "-"
    value = cell.pass_at[k]
    if value is None:
        return "n/a"
    used = cell.problems - cell.not_computable[k]
    count = str(used) if used == cell.problems else f"{used}/{cell.problems}"
    return f"{_pct(value)} ({count})"


def grid(table: Table, k: int, baseline: Table | None) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the pass@k table, delta column and row included when a baseline is given."""
    header = ["platform", *table.columns]
    deltas = delta(table, baseline) if baseline is not None else None
    if deltas is not None:
        header.append(f"{DELTA} all")
    rows = []
    for row in table.rows:
        line = [row, *(cell_text(table.cells[(row, col)], k) for col in table.columns)]
        if deltas is not None:
            line.append(signed(deltas[(row, ALL)][k]))
        rows.append(line)
    if deltas is not None:
        rows.append([DELTA, *(signed(deltas[(ALL, col)][k]) for col in table.columns), ""])
    return header, rows


def failure_grid(table: Table, baseline: Table | None) -> tuple[list[str], list[list[str]]]:
    header = ["status", "samples", "share %"]
    if baseline is not None:
        header += ["baseline %", DELTA]
    shares = table.failure_shares()
    base_shares = baseline.failure_shares() if baseline is not None else {}
    rows = []
    for s in FAILURE_STATUSES:
        line = [s, str(table.failures[s]), _pct(shares[s])]
        if baseline is not None:
            line += [_pct(base_shares[s]), signed(shares[s] - base_shares[s])]
        rows.append(line)
    return header, rows


def rich_tables(table: Table, baseline: Table | None) -> list[RichTable]:
    out = []
    for k in table.ks:
        out.append(_rich(f"pass@{k} (%, problems averaged)", *grid(table, k, baseline)))
    total = sum(table.failures.values())
    out.append(_rich(f"failures ({total} non-accepted samples)", *failure_grid(table, baseline)))
    return out


def _rich(title: str, header: list[str], rows: list[list[str]]) -> RichTable:
    t = RichTable(title=title, title_justify="left")
    for i, h in enumerate(header):
        t.add_column(h, justify="left" if i == 0 else "right")
    for r in rows:
        t.add_row(*(escape(printable(c)) for c in r), end_section=r[0] == ALL)  # names come from data
    return t


def markdown(table: Table, baseline: Table | None, notes: list[str]) -> str:
    parts = []
    for k in table.ks:
        parts.append(f"### pass@{k} (%, problems averaged)\n\n" + _md(*grid(table, k, baseline)))
    total = sum(table.failures.values())
    parts.append(f"### failures ({total} non-accepted samples)\n\n" + _md(*failure_grid(table, baseline)))
    if notes:
        parts.append("\n".join(f"- {n}" for n in notes))
    return "\n\n".join(parts) + "\n"


def _md(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def to_json(
    table: Table, baseline: Table | None, notes: list[str], bounds: tuple[float, float]
) -> dict[str, Any]:
    deltas = delta(table, baseline) if baseline is not None else None
    cells = []
    for (row, col), cell in table.cells.items():
        entry: dict[str, Any] = {
            "platform": row,
            "difficulty": col,
            "problems": cell.problems,
            "unevaluated": cell.unevaluated,
            "samples": cell.samples,
            "pass_at": {str(k): v for k, v in cell.pass_at.items()},
            "not_computable": {str(k): v for k, v in cell.not_computable.items()},
        }
        if baseline is not None and deltas is not None:
            base = baseline.cells[(row, col)]
            entry["baseline"] = {
                "problems": base.problems,
                "pass_at": {str(k): v for k, v in base.pass_at.items()},
            }
            entry["delta"] = {str(k): v for k, v in deltas[(row, col)].items()}
        cells.append(entry)
    out: dict[str, Any] = {
        "ks": list(table.ks),
        "rating_bounds": list(bounds),
        "platforms": table.rows,
        "difficulties": table.columns,
        "unevaluated": {"count": len(table.unevaluated), "ids": table.unevaluated},
        "cells": cells,
        "failures": _failures_json(table),
        "notes": notes,
    }
    if baseline is not None:
        out["baseline"] = {
            "unevaluated": {"count": len(baseline.unevaluated), "ids": baseline.unevaluated},
            "failures": _failures_json(baseline),
        }
    return out


def _failures_json(table: Table) -> dict[str, Any]:
    return {
        "non_accepted": sum(table.failures.values()),
        "counts": {s: table.failures[s] for s in FAILURE_STATUSES},
        "shares": table.failure_shares(),
    }


def summary(table: Table, baseline: Table | None) -> str:
    """One line for stdout: pass@1 over everything, and the baseline's when given."""
    cell = table.cell()
    value = cell.pass_at[1]
    shown = "n/a" if value is None else f"{_pct(value)}%"
    line = f"pass@1 all: {shown} over {cell.problems} problems ({cell.samples} samples)"
    if table.unevaluated:
        line += f", {len(table.unevaluated)} unevaluated"
    if baseline is not None:
        base = baseline.cell().pass_at[1]
        d = delta(table, baseline)[(ALL, ALL)][1]
        line += f"; baseline {'n/a' if base is None else _pct(base) + '%'} ({signed(d)} points)"
    return line
