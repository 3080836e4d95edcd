"""``mcoder dataset difficulty calibrate``: map the predicted difficulty score to a pass rate.

The weighted score of ``predict`` is a number on a 1..10 scale, not a pass rate. Calibration fits
a monotone (non-increasing: harder, fewer passes) function from it to the pass rate a reference
model measured (verdicts of ``mcoder rollout`` + ``mcoder judge``) on a subset of the problems:
isotonic regression by pool-adjacent-violators, each problem weighted by its judged samples.
Between the fitted points the function is linear; beyond them it is flat (the ends' values), as
scikit-learn's ``IsotonicRegression(out_of_bounds="clip")``.

A share of the measured problems (``--heldout-share``, chosen by a hash of the id and the seed,
so the same on every run) is kept out of the fit, and the fit is measured on it: Spearman's rank
correlation between predicted and measured pass rate (ties get their mean rank), the mean
absolute error and the root mean square error; beside them the error of a constant prediction
(the fit set's mean pass rate), which any useful fit beats.

The output is one JSON line (``points`` are the fit, ``heldout`` and ``train`` its figures).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from mcoder import console
from mcoder.config import output_settings
from mcoder.dataset.config import CalibrateConfig
from mcoder.errors import DataError

MIN_PROBLEMS = 4  # below this, neither a fit nor a held-out figure means anything


# ----------------------------------------------------------------------------- the maths


def isotonic_decreasing(
    x: Sequence[float], y: Sequence[float], w: Sequence[float] | None = None
) -> list[tuple[float, float]]:
    """The weighted least-squares non-increasing fit of y on x, as (x, fitted y) at each distinct x.

    Equal x are pooled first (weighted mean), then adjacent violators are pooled until the values
    no longer increase."""
    w = [1.0] * len(x) if w is None else list(w)
    pooled: dict[float, list[float]] = {}
    for xi, yi, wi in zip(x, y, w, strict=True):
        s = pooled.setdefault(float(xi), [0.0, 0.0])
        s[0] += wi * yi
        s[1] += wi
    xs = sorted(pooled)
    blocks: list[list[float]] = []  # [sum w*y, sum w, number of distinct x]
    for xi in xs:
        blocks.append([pooled[xi][0], pooled[xi][1], 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] < blocks[-1][0] / blocks[-1][1]:
            wy, ww, k = blocks.pop()
            blocks[-1][0] += wy
            blocks[-1][1] += ww
            blocks[-1][2] += k
    fitted = [b[0] / b[1] for b in blocks for _ in range(int(b[2]))]
    return list(zip(xs, fitted, strict=True))


def interpolate(points: Sequence[tuple[float, float]], x: float) -> float:
    """The fit at ``x``: linear between points, flat beyond the ends."""
    if x <= points[0][0]:
        return points[0][1]
    if x >= points[-1][0]:
        return points[-1][1]
    for (x0, y0), (x1, y1) in itertools.pairwise(points):
        if x0 <= x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    raise AssertionError("unreachable: x within the points")


def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties given their mean rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Spearman's rank correlation (Pearson's on mean ranks); None when either side is constant."""
    ra, rb = ranks(a), ranks(b)
    n = len(ra)
    if n < 2:
        return None
    ma, mb = sum(ra) / n, sum(rb) / n
    cov = sum((p - ma) * (q - mb) for p, q in zip(ra, rb))
    va, vb = sum((p - ma) ** 2 for p in ra), sum((q - mb) ** 2 for q in rb)
    if va == 0 or vb == 0:
        return None
    return cov / math.sqrt(va * vb)


def figures(pred: Sequence[float], measured: Sequence[float], baseline: float) -> dict:
    """How well ``pred`` matches ``measured``: spearman, mae, rmse, and the mae of ``baseline``."""
    n = len(pred)
    if n == 0:
        return {"problems": 0, "spearman": None, "mae": None, "rmse": None, "mae_constant": None}
    err = [p - m for p, m in zip(pred, measured)]
    return {
        "problems": n,
        "spearman": _round(spearman(pred, measured)),
        "mae": _round(sum(abs(e) for e in err) / n),
        "rmse": _round(math.sqrt(sum(e * e for e in err) / n)),
        "mae_constant": _round(sum(abs(baseline - m) for m in measured) / n),
    }


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 6)


def heldout_ids(ids: Sequence[str], share: float, seed: int) -> set[str]:
    """The ``round(share * n)`` ids whose hash with ``seed`` is smallest (at least 1 when share > 0)."""
    from mcoder.engines.base import derive_seed

    if share <= 0:
        return set()
    count = min(len(ids) - 1, max(1, round(share * len(ids))))
    return set(sorted(ids, key=lambda i: (derive_seed("heldout", seed, i), i))[:count])


# ----------------------------------------------------------------------------- the stage


@dataclass
class Calibration:
    points: list[tuple[float, float]]
    dimensions: list[str]

    def predict(self, score: float) -> float:
        return round(interpolate(self.points, score), 6)

    @classmethod
    def read(cls, path: str) -> Calibration:
        from mcoder.jsonl import iter_objects

        objs = list(iter_objects(path))
        if len(objs) != 1:
            raise DataError(f"expected one JSON line (a calibration), found {len(objs)}", path=path)
        line, obj = objs[0]
        pts = obj.get("points")
        ok = (
            isinstance(pts, list)
            and pts
            and all(
                isinstance(p, list) and len(p) == 2 and all(_number(v) for v in p) and 0 <= p[1] <= 1
                for p in pts
            )
        )
        if not ok:
            raise DataError(
                "points must be a non-empty list of [score, pass rate] pairs, finite numbers with each "
                "pass rate in [0, 1]", path=path, line=line, field="points",
                hint="pass the file `mcoder dataset difficulty calibrate` wrote",
            )  # fmt: skip
        return cls([(float(a), float(b)) for a, b in pts], obj.get("dimensions", []))


def _number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def calibrate(cfg: CalibrateConfig) -> dict:
    """Fit, measure on the held-out problems, write ``cfg.out``; returns what was written."""
    from mcoder.outputs import Job, execute

    cfg.validate()
    inputs = {"scores": cfg.scores} | {f"verdicts {i}": v for i, v in enumerate(cfg.verdicts)}
    job = Job(out=cfg.out, inputs=inputs, settings=output_settings(cfg), overwrite=cfg.overwrite)
    result, made = execute(CalibrateStage(cfg), job)
    if made:
        show(result, cfg.out)
    return result


@dataclass
class CalibrateStage:
    """``mcoder dataset difficulty calibrate`` as a stage (``mcoder.outputs.Stage``): what the
    file holds, and whether this run made it."""

    cfg: CalibrateConfig
    name = "dataset difficulty calibrate"
    kind = "jsonl"
    expect = ("points", "heldout")

    def finished(self, job, claim) -> tuple[dict, bool]:
        from mcoder.jsonl import iter_objects

        console.info(claim.finished_message)
        return next(iter_objects(self.cfg.out))[1], False

    def run(self, job, claim) -> tuple[dict, bool]:
        from mcoder.dataset.difficulty.measured import read_pass_counts
        from mcoder.dataset.difficulty.predict import read_scores

        cfg = self.cfg
        scores = read_scores(cfg.scores)
        counts = read_pass_counts(cfg.verdicts)
        result = fit(scores, counts, cfg)
        result["dimensions"] = _dimensions(cfg.scores)
        _write_line(cfg.out, result)
        return result, True


def fit(scores: dict[str, float | None], counts: dict[str, tuple[int, int]], cfg: CalibrateConfig) -> dict:
    """The fit on the measured, scored problems outside the held-out set, and its figures."""
    joined = {
        pid: (s, counts[pid][0] / counts[pid][1], counts[pid][1])
        for pid, s in scores.items()
        if s is not None and pid in counts and counts[pid][1] >= cfg.min_samples
    }
    if len(joined) < MIN_PROBLEMS:
        raise DataError(
            f"only {len(joined)} problems have both a score in {cfg.scores} and at least {cfg.min_samples} "
            f"judged samples in {', '.join(cfg.verdicts)}; a calibration needs {MIN_PROBLEMS}",
            hint="measure pass rates (mcoder rollout + mcoder judge) on more of the scored problems",
        )
    held = heldout_ids(sorted(joined), cfg.heldout_share, cfg.seed)
    train = sorted(set(joined) - held)
    points = isotonic_decreasing(
        [joined[i][0] for i in train], [joined[i][1] for i in train], [joined[i][2] for i in train]
    )
    mean = sum(joined[i][1] * joined[i][2] for i in train) / sum(joined[i][2] for i in train)

    def measure(ids: list[str]) -> dict:
        pred = [interpolate(points, joined[i][0]) for i in ids]
        out = figures(pred, [joined[i][1] for i in ids], mean)
        raw = spearman([-joined[i][0] for i in ids], [joined[i][1] for i in ids])
        return out | {"spearman_raw_score": _round(raw)}

    return {
        "schema": 1,
        "points": [[x, round(y, 6)] for x, y in points],
        "heldout": measure(sorted(held)),
        "train": measure(train),
        "unmeasured_scored": sum(1 for pid, s in scores.items() if s is not None and pid not in joined),
        "measured_unscored": sum(1 for pid in counts if scores.get(pid) is None),
        "seed": cfg.seed,
        "heldout_share": cfg.heldout_share,
    }


def _dimensions(scores_path: str) -> list[str]:
    """The dimensions of the first rated record (for the record: what the score weighs)."""
    from mcoder.jsonl import iter_objects

    for _, obj in iter_objects(scores_path):
        if obj.get("status") == "ok" and isinstance(obj.get("scores"), dict):
            return list(obj["scores"])
    return []


def _write_line(out: str, result: dict) -> None:
    """One JSON line, put in place atomically ('-': stdout)."""
    import os

    from mcoder.jsonl import STDIO, dumps

    if out == STDIO:
        console.document(dumps(result).decode())
        return
    part = out + ".part"
    with open(part, "wb") as f:
        f.write(dumps(result))
        f.flush()
        os.fsync(f.fileno())
    os.replace(part, out)


def show(result: dict, out: str) -> None:
    def fmt(v) -> str:
        return "-" if v is None else f"{v:.3f}"

    rows = []
    for part in ("heldout", "train"):
        f = result[part]
        rows.append((part, f["problems"], fmt(f["spearman"]), fmt(f["spearman_raw_score"]), fmt(f["mae"]),
                     fmt(f["rmse"]), fmt(f["mae_constant"])))  # fmt: skip
    console.show(
        console.table(
            f"difficulty calibrate -> {out} ({len(result['points'])} fitted points)",
            ["problems", "n", "spearman", "spearman (raw score)", "MAE", "RMSE", "MAE (constant)"],
            rows,
        )
    )
