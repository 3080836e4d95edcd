"""`mcoder judge` as a stage: problems and rollouts files in, a verdicts file out.

Resumable (verdicts already in OUT or OUT.part are skipped), shardable by a stable hash of the
rollout id, with a progress bar counting verdicts by status and a summary table at the end.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rich.progress import TextColumn

from mcoder import console
from mcoder.config import output_settings
from mcoder.errors import DataError, UsageError
from mcoder.jsonl import RecordWriter, UniqueIds, display_name, index_records, read_numbered
from mcoder.judge.config import JudgeConfig
from mcoder.judge.core import Judge
from mcoder.outputs import Claim, Job, execute
from mcoder.records import STATUSES, Problem, Rollout, Verdict

BATCH_PER_WORKER = 32  # rollouts handed to the pool at once, per worker: enough to keep it busy


@dataclass(frozen=True, slots=True)
class Shard:
    index: int = 0
    count: int = 1

    @classmethod
    def parse(cls, text: str | None) -> Shard:
        if not text:
            return cls()
        try:
            i, n = (int(x) for x in text.split("/"))
        except ValueError:
            raise UsageError(
                f"--shard {text!r} is not i/n", hint="e.g. --shard 0/4 for the first of four"
            ) from None
        if not (n >= 1 and 0 <= i < n):
            raise UsageError(f"--shard {text}: need 0 <= i < n", hint="shards are numbered from 0")
        return cls(i, n)

    def owns(self, rollout_id: str) -> bool:
        return self.count == 1 or self.owner(rollout_id, self.count) == self.index

    @staticmethod
    def owner(rollout_id: str, count: int) -> int:
        """The shard of ``count`` that judges ``rollout_id``: sha1 of the id, so the same on every
        machine and Python run (Python's own hash() of a str is salted per process)."""
        h = int.from_bytes(hashlib.sha1(rollout_id.encode()).digest()[:8], "big")
        return h % count


def read_rollouts(path: Path | str, problems: dict[str, Problem], shard: Shard) -> list[Rollout]:
    """The rollouts of this shard, keeping only what the judge needs; every line is checked
    (a known problem, a unique id) whichever shard owns it."""
    name = display_name(path)
    ids = UniqueIds(path, field="id")
    out = []
    for lineno, r in numbered_rollouts(path):
        ids.add(r.id, lineno)
        if r.problem_id not in problems:
            raise DataError(
                f"no problem with id {r.problem_id!r} in the problems file",
                path=name,
                line=lineno,
                field="problem_id",
                hint="pass the problems file these rollouts were made from",
            )
        if not problems[r.problem_id].tests:  # every program would be "wrong": that grades nothing
            raise DataError(
                f"problem {r.problem_id!r} has no tests: its rollouts cannot be judged",
                path=name, line=lineno, field="problem_id",
                hint="drop the problem (mcoder dataset build --min-tests 1), or add its tests",
            )  # fmt: skip
        if shard.owns(r.id):
            out.append(Rollout(id=r.id, problem_id=r.problem_id, completion=r.completion))
    if not len(ids):
        raise DataError("no rollouts in the file", path=name, hint="judge the output of `mcoder rollout`")
    return out


def numbered_rollouts(path: Path | str) -> Iterator[tuple[int, Rollout]]:
    """Rollouts JSONL, or a LiveCodeBench results file (*_eval_all.json) whose code_list is judged."""
    from mcoder.formats import lcb_results

    if lcb_results.is_results_file(path):
        return lcb_results.as_rollouts(path)
    return read_numbered(path, Rollout)


def judge_settings(cfg: JudgeConfig, shard: Shard) -> dict:
    """What decides the verdicts written: limits, comparison, reward, early exit (every field not
    marked ``mcoder.config.not_setting``), the shard."""
    return {**output_settings(cfg), "shard": f"{shard.index}/{shard.count}"}


def judge_files(
    cfg: JudgeConfig,
    problems_path: Path | str,
    rollouts_path: Path | str,
    out: Path | str,
    shard: Shard = Shard(),
    overwrite: bool = False,
) -> Counter:
    """Judge every rollout of the shard into ``out``; the status counts of this run.

    The inputs are read and checked whole before anything is written (``outputs.py`` for the
    lock, the settings check and what ``--overwrite`` does)."""
    inputs = {"problems": problems_path, "rollouts": rollouts_path}
    job = Job(out=out, inputs=inputs, settings=judge_settings(cfg, shard), overwrite=overwrite)
    done = execute(JudgeStage(cfg, problems_path, rollouts_path, shard), job)
    if done is None:
        return Counter()
    counts, t0, resumed = done
    _summary(counts, time.monotonic() - t0, resumed)
    return counts


@dataclass
class JudgeStage:
    """``mcoder judge`` as a stage (``mcoder.outputs.Stage``): the status counts, when this run
    started judging and how many verdicts were already written; None when finished earlier."""

    cfg: JudgeConfig
    problems_path: Path | str
    rollouts_path: Path | str
    shard: Shard
    name = "judge"
    kind = "jsonl"
    expect = ("rollout_id",)

    def finished(self, job: Job, claim: Claim) -> None:
        console.info(claim.finished_message)

    def run(self, job: Job, claim: Claim) -> tuple[Counter, float, int]:
        problems = index_records(self.problems_path, Problem, key=lambda p: p.id)
        if not problems:
            raise DataError("no problems in the file", path=display_name(self.problems_path))
        rollouts = read_rollouts(self.rollouts_path, problems, self.shard)
        counts: Counter = Counter()
        with RecordWriter(job.out, "rollout_id", resume=claim.resume) as writer:
            todo = [r for r in rollouts if r.id not in writer.done]
            if writer.resumed:
                console.info(f"resuming: {writer.resumed} verdicts already in {job.out}")
            t0 = time.monotonic()
            _run(self.cfg, problems, todo, writer, counts)
        return counts, t0, writer.resumed


def _run(
    cfg: JudgeConfig, problems: dict[str, Problem], todo: list[Rollout], writer: RecordWriter, counts: Counter
) -> None:
    columns = TextColumn("{task.fields[counts]}")
    stopped = threading.Event()  # Ctrl-C: nothing judged after it is written
    with Judge(cfg) as judge, console.progress(columns) as bar:
        task = bar.add_task("judge", total=len(todo), counts="")

        def on_verdict(_i: int, v: Verdict) -> None:
            if stopped.is_set():
                return
            writer.write(v)
            counts[v.status] += 1
            counts["cached"] += v.cached
            shown = " ".join(f"{s}={counts[s]}" for s in STATUSES if counts[s])
            bar.update(task, advance=1, counts=shown)

        step = max(1, cfg.workers * BATCH_PER_WORKER)
        try:
            for start in range(0, len(todo), step):
                judge.judge(problems, todo[start : start + step], on_verdict)
        except KeyboardInterrupt:
            # Stop now, not after the batch: the queued candidates never start and the running
            # ones are killed (their would-be verdicts are dropped: a rerun judges them)
            stopped.set()
            judge.abort()
            raise


def _summary(counts: Counter, seconds: float, resumed: int) -> None:
    judged = sum(counts[s] for s in STATUSES)
    rows = [
        (s, counts[s], f"{100 * counts[s] / judged:.1f}%" if judged else "-") for s in STATUSES if counts[s]
    ]
    rows.append(
        (
            "pass rate",
            f"{counts['accepted']}/{judged}",
            f"{100 * counts['accepted'] / judged:.1f}%" if judged else "-",
        )
    )
    rows.append(("cached", counts["cached"], ""))
    if resumed:
        rows.append(("resumed (skipped)", resumed, ""))
    rows.append(("time", f"{seconds:.1f}s", f"{judged / seconds:.1f} rollouts/s" if seconds > 0 else ""))
    console.show(console.table("judge summary", ["status", "count", "share"], rows))
