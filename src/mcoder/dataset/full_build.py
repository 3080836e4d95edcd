"""``mcoder dataset build`` with the filter and verify stages and the build report.

``build`` hands over to ``build_refined`` when ``BuildConfig.filter`` is set (any filter, verify
or report flag was given): rows are collected and converted as in the plain build, then go
through a ``Refiner``; every row that gives no problem and every problem a stage removes is
listed in the report with its reason, and also counted in the build's tables.
"""

from __future__ import annotations

import time
from pathlib import Path

from mcoder.console import info, show, table
from mcoder.dataset.difficulty import parse_band
from mcoder.dataset.filter import FilterConfig
from mcoder.dataset.refine import Refiner
from mcoder.dataset.report import Removal, StageResult, write_report
from mcoder.dataset.verify import VerifyConfig
from mcoder.jsonl import RecordWriter
from mcoder.records import Problem


def stage_configs(
    *,
    min_tests: int = 0,
    after: str | None = None,
    dedup: bool = False,
    dedup_threshold: float = 0.8,
    decontaminate: list[Path] | None = None,
    ngram: int = 13,
    decontam_min_overlap: float = 0.5,
    min_chars: int = 0,
    max_chars: int | None = None,
    keep_special_judge: bool = False,
    max_tests: int | None = None,
    difficulty_from: list[Path] | None = None,
    keep_pass_rate: str | None = None,
    verify: bool = False,
    verify_runs: int = 3,
    verify_timeout: float = 10.0,
    unsafe_no_sandbox: bool = False,
    report: str | None = None,
) -> tuple[FilterConfig | None, VerifyConfig | None]:
    """The filter and verify configs the build flags ask for; (None, None) when none of the
    filter, verify or report flags was given (the plain, streaming build)."""
    asked = (
        dedup
        or decontaminate
        or min_chars
        or max_chars is not None
        or keep_special_judge
        or max_tests is not None
        or difficulty_from
        or keep_pass_rate
        or verify
        or report
    )
    if not asked:
        return None, None
    filter_cfg = FilterConfig(
        after=after,
        min_tests=max(min_tests, 1),
        min_chars=min_chars,
        max_chars=max_chars,
        keep_special_judge=keep_special_judge,
        max_tests=max_tests,
        dedup=dedup,
        dedup_threshold=dedup_threshold,
        decontaminate=list(decontaminate or []),
        ngram=ngram,
        decontam_min_overlap=decontam_min_overlap,
        difficulty_from=list(difficulty_from or []),
        keep_pass_rate=parse_band(keep_pass_rate) if keep_pass_rate else None,
    )
    verify_cfg = None
    if verify:
        verify_cfg = VerifyConfig(
            runs=verify_runs,
            timeout_s=verify_timeout,
            min_tests=filter_cfg.min_tests,
            unsafe_no_sandbox=unsafe_no_sandbox,
        )
    return filter_cfg, verify_cfg


def build_refined(config, sources, tally):
    """Collect, convert, filter, verify, write; then the tables and the report. Returns the tally."""
    from mcoder.console import progress
    from mcoder.dataset.build import collect, process
    from mcoder.dataset.summary import render

    files, skipped, rows, seconds = {}, [], [0], [0.0]

    def problems(bar):
        items = process(collect(sources, config.format, tally, bar))
        while True:
            start = time.perf_counter()
            row, item = next(items, (None, None))
            seconds[0] += time.perf_counter() - start  # reading and converting, not the stages after
            if row is None:
                return
            rows[0] += 1
            if isinstance(item, str):
                tally.skip(row.file, item)
                skipped.append(Removal(row.ref.where(), "convert", item))
                continue
            files[item.id] = row.file
            yield item

    with (
        progress() as bar,
        Refiner(config.filter, config.verify, bar) as refiner,
        RecordWriter(config.out, Problem.KEY, resume=not config.overwrite) as writer,
    ):
        for p in refiner.run(problems(bar)):
            writer.write(p)
            tally.convert(files[p.id], p)
    for stage in refiner.stages():
        for r in stage.removals:
            tally.skip(files[r.problem_id], f"{stage.name}: {r.reason}")
    convert = StageResult("convert", rows[0], rows[0] - len(skipped), skipped, seconds=seconds[0])
    render(tally)
    report = refiner.report([s.path for s in sources], [convert])
    show(
        table(
            "dataset build: stages",
            ("stage", "in", "out", "removed", "seconds"),
            [(s["name"], s["in"], s["out"], s["removed"], f"{s['seconds']:.2f}") for s in report["stages"]],
        )
    )
    if config.report:
        md, js = write_report(config.report, report)
        info(
            f"report: {md} and {js} ({report['problems_in']} in, {report['problems_out']} out, "
            f"{report['removed']} removed{'' if report['accounted'] else ', COUNTS DO NOT ADD UP'})"
        )
    return tally
