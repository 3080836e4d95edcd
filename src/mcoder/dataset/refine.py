"""Dataset steps 3 and 4, filter and verify, over a stream of problems, keeping what the report needs.

``Refiner`` runs the filter steps (and verify) over the problems a build converted, a chunk at a
time so that a large set never sits in memory whole. Dedup must see every problem before it can
say which of a cluster stays, so with dedup on the steps before it run chunk by chunk while the
problems they keep go to a temporary file and only their keys (``dedup.Keys``: digests and a
MinHash signature, a few hundred bytes each) stay in memory; then dedup decides over the keys,
and the file is read back through the steps after it. Verify hands its problems on a batch at a time,
as they are decided. The stage results of the chunks add up into one per stage, and the
histograms of the problems going in and coming out are kept for the report.

    with Refiner(filter_cfg, verify_cfg) as refiner:
        for problem in refiner.run(problems):
            writer.write(problem)
    write_report("report.md", refiner.report(inputs, upstream=[convert_stage]))
"""

from __future__ import annotations

import itertools
import tempfile
import time
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import Any

import orjson

from mcoder.dataset.filter.steps import FilterConfig, filter_steps, run_steps, split_steps
from mcoder.dataset.report import Histograms, StageResult, build_report
from mcoder.dataset.verify.step import VerifyConfig, verify_batches
from mcoder.jsonl import dumps
from mcoder.records import Problem, from_dict

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
        self._before_dedup, self._after_dedup = split_steps(filter_cfg) if filter_cfg.dedup else ([], [])
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
            if exc[0] is not None and issubclass(exc[0], KeyboardInterrupt):
                self._judge.abort()  # Ctrl-C: the running references are killed, not waited for
            self._judge.__exit__(*exc)

    def run(self, problems: Iterable[Problem]) -> Iterator[Problem]:
        """The problems that pass every step, in input order."""
        if not self.filter_cfg.dedup:
            yield from self._refine(problems, self.steps)
            return
        with tempfile.TemporaryFile(prefix="mcoder-dedup-") as spill:
            removed = self._dedup(problems, spill)
            spill.seek(0)
            survivors = (p for i, p in enumerate(_read_back(spill)) if i not in removed)
            yield from self._refine(survivors, self._after_dedup, counted=True)

    def _dedup(self, problems: Iterable[Problem], spill) -> Collection[int]:
        """Run the steps before dedup, spill what they keep, and return the positions dedup removes."""
        from mcoder.dataset.filter.dedup import Signer, plan, result

        signer, keys, seconds = Signer(), [], 0.0
        for chunk in _chunks(problems, CHUNK):
            for p in chunk:
                self.before.add(p)
            kept, results = run_steps(chunk, self._before_dedup, self._advance)
            for r in results:
                self._add(r)
            start = time.perf_counter()
            for p in kept:
                keys.append(signer.keys(p))
                spill.write(dumps(p))
            seconds += time.perf_counter() - start
        start = time.perf_counter()
        threshold = self.filter_cfg.dedup_threshold
        removed, notes = plan(keys, threshold)
        stage = result(len(keys), removed, notes, threshold, signer.shingle_words)
        stage.seconds = seconds + time.perf_counter() - start
        self._add(stage)
        self._advance(stage)
        return removed

    def _refine(self, problems: Iterable[Problem], steps, counted: bool = False) -> Iterator[Problem]:
        for chunk in _chunks(problems, CHUNK):
            if not counted:
                for p in chunk:
                    self.before.add(p)
            kept, results = run_steps(chunk, steps, self._advance)
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


def _read_back(spill) -> Iterator[Problem]:
    for line in spill:
        yield from_dict(Problem, orjson.loads(line))


def _chunks(items: Iterable[Problem], size: int) -> Iterator[list[Problem]]:
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
