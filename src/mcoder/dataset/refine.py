"""Stages 3 and 4, filter and verify, over a stream of problems, keeping what the report needs.

``Refiner`` runs the filter steps (and verify) over the problems a build converted, a chunk at a
time so that a large set never sits in memory whole, except when dedup is on: duplicates can be
anywhere, so dedup sees every problem at once. Verify hands its problems on a batch at a time,
as they are decided. The stage results of the chunks add up into one per stage, and the
histograms of the problems going in and coming out are kept for the report.

    with Refiner(filter_cfg, verify_cfg) as refiner:
        for problem in refiner.run(problems):
            writer.write(problem)
    write_report("report.md", refiner.report(inputs, upstream=[convert_stage]))
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import Any

from mcoder.dataset.filter.steps import FilterConfig, filter_steps, run_steps
from mcoder.dataset.report import Histograms, StageResult, build_report
from mcoder.dataset.verify import VerifyConfig, verify_batches
from mcoder.records import Problem

CHUNK = 512  # problems filtered and verified together when no step needs the whole set


class Refiner:
    """The filter steps and verify over a stream of problems; ``progress``: a rich Progress to add
    the verify bar to (one live display at a time), or None for a bar of its own. ``done``: ids
    of problems already written by an earlier run (verify passes them on without running)."""

    def __init__(
        self,
        filter_cfg: FilterConfig,
        verify_cfg: VerifyConfig | None = None,
        progress=None,
        done: Collection[str] = (),
    ):
        self.filter_cfg, self.verify_cfg, self.done = filter_cfg, verify_cfg, done
        self.steps = filter_steps(filter_cfg)  # benchmark and verdict files are read here, up front
        self.results: dict[str, StageResult] = {}
        self.before, self.after = Histograms(), Histograms()
        self._judge = None
        self._progress, self._own_progress = progress, None
        self._tasks: dict[str, Any] = {}
        self._bar = None

    def __enter__(self) -> Refiner:  # noqa: PYI034 (no subclasses)
        if self.verify_cfg is not None:
            from mcoder.judge.core import Judge

            self._judge = Judge(self.verify_cfg.judge_config()).__enter__()
            if self._progress is None:
                from mcoder.console import progress

                self._progress = self._own_progress = progress().__enter__()
            self._bar = (self._progress, self._progress.add_task("verify", total=0))
        return self

    def __exit__(self, *exc) -> None:
        if self._own_progress is not None:
            self._own_progress.__exit__(*exc)
        if self._judge is not None:
            self._judge.__exit__(*exc)

    def run(self, problems: Iterable[Problem]) -> Iterator[Problem]:
        """The problems that pass every step, in input order."""
        for chunk in _chunks(problems, None if self.filter_cfg.dedup else CHUNK):
            for p in chunk:
                self.before.add(p)
            kept, results = run_steps(chunk, self.steps, self._advance)
            for r in results:
                self._add(r)
            batches = [(kept, None)]
            if self.verify_cfg is not None:
                batches = verify_batches(kept, self.verify_cfg, self._judge, self._bar, self.done)
            for batch, verified in batches:
                if verified is not None:
                    self._add(verified)
                for p in batch:
                    self.after.add(p)
                    yield p

    def _add(self, result: StageResult) -> None:
        if result.name in self.results:
            self.results[result.name].merge(result)
        else:
            self.results[result.name] = result

    def _advance(self, result: StageResult) -> None:
        """A bar per filter step, moved by the problems it has seen (verify has its own, per run)."""
        if self._progress is None:
            return
        if result.name not in self._tasks:
            self._tasks[result.name] = self._progress.add_task(result.name, total=None)
        self._progress.advance(self._tasks[result.name], result.n_in)

    def stages(self) -> list[StageResult]:
        return list(self.results.values())

    def report(self, inputs: Sequence[str], upstream: Sequence[StageResult] = ()) -> dict[str, Any]:
        """The build report; ``upstream`` are the stages before this one (e.g. conversion)."""
        return build_report(inputs, [*upstream, *self.stages()], self.before.to_dict(), self.after.to_dict())


def _chunks(items: Iterable[Problem], size: int | None) -> Iterator[list[Problem]]:
    if size is None:
        chunk = list(items)
        if chunk:
            yield chunk
        return
    it = iter(items)
    while True:
        chunk: list[Problem] = []
        try:
            chunk.extend(itertools.islice(it, size))
        except Exception:
            # Bad data upstream: what came before it is still filtered and written (a rerun
            # continues from there), then the error goes on.
            if chunk:
                yield chunk
            raise
        if not chunk:
            return
        yield chunk


def run_filter_verify(
    problems: Iterable[Problem], filter_cfg: FilterConfig, verify_cfg: VerifyConfig | None = None
) -> tuple[list[Problem], list[StageResult]]:
    """The kept problems and the stage results, in one call (for scripts and tests)."""
    with Refiner(filter_cfg, verify_cfg) as refiner:
        kept = list(refiner.run(problems))
    return kept, refiner.stages()
