"""``mcoder dataset build``: source rows in, one clean problems.jsonl out, in one pipeline.

The paper's four stages, this stage's four steps (a folder each), chained over a stream of
rows and problems:

    collect  (collect/: find files, read rows, pick each file's format)
      -> process  (process/: row -> Problem; statement, interactive and unique-id checks)
      -> filter   (filter/: --min-tests, --after, special judge, dedup, decontamination, ...)
      -> verify   (verify/: reference solutions against the tests, with --verify)
      -> RecordWriter (resumable, in input order, so the same inputs give the same bytes)

Every row that gives no problem and every problem a stage removes is counted once
(``tally.Tally``), shown in the tables and, with ``--report``, listed in the report; the
report never changes what is written.

The output is claimed first (``mcoder.outputs``): one writer at a time, and ``OUT.meta.json``
records the settings (``BuildConfig.settings``) and a fingerprint of each input. A rerun continues
an unfinished output only when both match, exits 2 listing what changed otherwise
(``--overwrite`` starts over), and does nothing for a finished one.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from mcoder.console import info, progress
from mcoder.dataset.collect.sources import Source
from mcoder.dataset.collect.step import collect, find_sources
from mcoder.dataset.config import BuildConfig
from mcoder.dataset.process.step import STAGE, process
from mcoder.dataset.refine import Refiner
from mcoder.dataset.report import Removal, StageResult, report_paths, write_report
from mcoder.dataset.tally import Tally, render
from mcoder.errors import DataError
from mcoder.jsonl import RecordWriter
from mcoder.outputs import Claim, Job, check_document, execute, sidecar_path
from mcoder.records import Problem

PROBLEM_FIELDS = ("id", "source", "question", "tests")  # what an earlier output's first record has


def build(config: BuildConfig) -> Tally:
    """Run the stages and write ``config.out``; returns the counts (also shown as tables)."""
    tally = Tally()
    sources = find_sources(config.sources, tally, config.limits)
    for doc in report_paths(config.report) if config.report else ():  # refused before any work
        check_document(doc, stage="dataset build", flag="--report", inputs={"out": config.out, **_inputs(config, sources)})
    job = Job(out=config.out, inputs=_inputs(config, sources), settings=config.settings(), overwrite=config.overwrite)
    return execute(BuildStage(config, sources, tally), job)


@dataclass
class BuildStage:
    """``mcoder dataset build`` as a stage (``mcoder.outputs.Stage``): the counts."""

    config: BuildConfig
    sources: list[Source]
    tally: Tally
    name = "dataset build"
    kind = "jsonl"
    expect = PROBLEM_FIELDS

    def finished(self, job: Job, claim: Claim) -> Tally:
        config, tally = self.config, self.tally
        with open(config.out, "rb") as f:
            tally.problems = sum(1 for line in f if line.strip())
        info(f"{claim.finished_message}; {tally.problems} problems")
        if config.report:
            info(f"{config.report} is left as it is: nothing was built")
        return tally

    def run(self, job: Job, claim: Claim) -> Tally:
        try:
            _run(self.config, self.sources, self.tally, resume=claim.resume)
        except BaseException:  # bad data, a bug or an interrupt: an output holding nothing goes
            _forget(self.config.out)
            raise
        return self.tally


def _inputs(config: BuildConfig, sources: list[Source]) -> dict[str, str]:
    """Every file the output depends on, by what it is to this build."""
    named = {f"source {s.path}": s.path for s in sources}
    named |= {f"decontaminate {p}": str(p) for p in config.filter.decontaminate}
    return named | {f"difficulty_from {p}": str(p) for p in config.filter.difficulty_from}


def _run(config: BuildConfig, sources: list[Source], tally: Tally, resume: bool) -> None:
    convert = StageResult(STAGE, 0, 0)
    with (
        RecordWriter(config.out, Problem.KEY, resume=resume) as writer,
        progress() as bar,
        Refiner(config.filter, config.verify, bar, done=writer.done) as refiner,
    ):
        for p in refiner.run(_converted(sources, config.format, tally, convert, bar)):
            writer.write(p)
            tally.kept(p)
        tally.problems = writer.resumed + writer.written
        tally.close([convert, *refiner.stages()])
        if writer.resumed:
            info(f"resumed: {writer.resumed} problems were already in {config.out}, {writer.written} added")
        render(tally)
        if config.report:
            _write_report(config.report, refiner.report([s.path for s in sources], [convert]))
        if not tally.problems:
            raise _no_problems(sources, convert)


def _converted(sources, fmt: str, tally: Tally, convert: StageResult, bar) -> Iterator[Problem]:
    """Collect and process: the problems, with every row counted in ``convert``."""
    items = process(collect(sources, fmt, tally, bar))
    while True:
        start = time.perf_counter()
        row, item = next(items, (None, None))
        convert.seconds += time.perf_counter() - start  # reading and converting, not the stages after
        if row is None:
            return
        convert.n_in += 1
        if isinstance(item, Removal):
            tally.set_aside(row.file, item)
            convert.removals.append(item)
            continue
        convert.n_out += 1
        tally.origin[item.id] = row.file
        yield item


def _write_report(path: str, report: dict) -> None:
    written = " and ".join("stdout" if str(p) == "-" else str(p) for p in write_report(path, report))
    info(
        f"report: {written} ({report['problems_in']} in, {report['problems_out']} out, "
        f"{report['removed']} removed{'' if report['accounted'] else ', COUNTS DO NOT ADD UP'})"
    )


def _no_problems(sources: list[Source], convert: StageResult) -> DataError:
    """An empty problem set is bad input (exit 3), as every later stage would say."""
    names = ", ".join(s.path for s in sources)
    if not convert.n_in:
        return DataError(f"no problems: no rows in {names}", hint="check that the SOURCE files hold data")
    return DataError(
        f"no problems: all {convert.n_in} rows of {names} were skipped or removed (see the tables above)",
        hint="loosen the filters (--min-tests, --after, ...) or check the sources",
    )


def _forget(out: str) -> None:
    """After a failed build: an output that holds nothing goes, with its settings record (one that
    holds records stays, to be continued once the input is fixed, or started over)."""
    part = Path(out + ".part")
    if out == "-" or (part.exists() and part.stat().st_size):
        return
    part.unlink(missing_ok=True)
    sidecar_path(out).unlink(missing_ok=True)
