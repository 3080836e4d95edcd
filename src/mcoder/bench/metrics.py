"""Read a training run's metrics.jsonl: one JSON object per step, ``step`` plus namespaced metrics.

Nested objects are flattened with '/' ({"reward": {"mean": 1}} is ``reward/mean``), so both
spellings plot the same. Values that are null are gaps; strings and booleans are not metrics and
are ignored. A step logged twice (a run resumed after a kill repeats its last step) keeps the
later value, and steps out of order are drawn in step order; both are reported as warnings, so
that a figure never hides a run that went back on itself. The last line may be torn by a run killed mid-write: it is skipped with a warning;
any other unreadable line is a DataError naming the file and line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from mcoder.errors import DataError, McoderError

METRICS_FILE = "metrics.jsonl"


@dataclass(slots=True)
class RunMetrics:
    label: str
    """The legend name: the run folder's name (with its parent when two runs share a name)."""
    path: Path
    series: dict[str, dict[int, float]] = field(default_factory=dict)
    """metric -> step -> value."""
    warnings: list[str] = field(default_factory=list)

    def xy(self, metric: str) -> tuple[list[int], list[float]]:
        points = sorted(self.series.get(metric, {}).items())
        return [s for s, _ in points], [v for _, v in points]


def read_run(run_dir: Path, label: str) -> RunMetrics:
    path = run_dir / METRICS_FILE
    if not path.is_file():
        raise McoderError(
            f"no {METRICS_FILE} in {run_dir}",
            hint="pass the --run-dir of a `mcoder loop` run",
            exit_code=2,
        )
    run = RunMetrics(label=label, path=path)
    steps: dict[int, list[int]] = {}  # step -> the lines that logged it
    lines = path.read_bytes().split(b"\n")
    # A file ending in a newline splits into a last empty piece; anything else there is a torn line.
    for lineno, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        torn_candidate = lineno == len(lines)
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            if torn_candidate:
                run.warnings.append(
                    f"{path}:{lineno}: last line is incomplete (run killed mid-write?); skipped"
                )
                continue
            raise DataError(f"invalid JSON ({e})", path=str(path), line=lineno) from None
        step = _add_step(run, obj, str(path), lineno)
        if steps and step < max(steps):
            run.warnings.append(f"{path}:{lineno}: step {step} comes after step {max(steps)}; drawn in step order")
        steps.setdefault(step, []).append(lineno)
    run.warnings += [
        f"{path}: step {step} is logged {len(at)} times (lines {', '.join(map(str, at))}); the last is drawn"
        for step, at in sorted(steps.items())
        if len(at) > 1
    ]
    return run


def _add_step(run: RunMetrics, obj: Any, path: str, lineno: int) -> int:
    """Add one line's metrics; its step."""
    if not isinstance(obj, dict):
        raise DataError("expected a JSON object on each line", path=path, line=lineno)
    step = obj.get("step")
    if isinstance(step, float) and step.is_integer():
        step = int(step)
    if not isinstance(step, int) or isinstance(step, bool):
        raise DataError(f"expected an integer step, got {step!r}", path=path, line=lineno, field="step")
    for name, value in _flatten(obj):
        if name == "step" or value is None or isinstance(value, (bool, str)):
            continue
        if not isinstance(value, (int, float)):
            raise DataError(
                f"expected a number, got {type(value).__name__}", path=path, line=lineno, field=name
            )
        if math.isfinite(value):
            run.series.setdefault(name, {})[step] = float(value)
    return step


def _flatten(obj: dict[str, Any], prefix: str = ""):
    for key, value in obj.items():
        if isinstance(value, dict):
            yield from _flatten(value, f"{prefix}{key}/")
        else:
            yield f"{prefix}{key}", value


def run_labels(run_dirs: list[Path]) -> list[str]:
    """Folder names, or parent/name where two runs share a folder name; control characters
    escaped (``mcoder.printable``): a label is drawn in figures and printed in notes."""
    from mcoder.printable import printable

    names = [d.resolve().name or str(d) for d in run_dirs]
    return [
        printable(f"{d.resolve().parent.name}/{name}" if names.count(name) > 1 else name)
        for d, name in zip(run_dirs, names, strict=True)
    ]
