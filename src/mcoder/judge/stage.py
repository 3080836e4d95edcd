"""`mcoder judge` as a stage: problems and rollouts files in, a verdicts file out.

Resumable (verdicts already in OUT or OUT.part are skipped), shardable by a stable hash of the
rollout id, with a progress bar counting verdicts by status and a summary table at the end.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from rich.progress import TextColumn

from mcoder import console
from mcoder.errors import DataError, UsageError
from mcoder.jsonl import RecordWriter, display_name, index_records, iter_objects
from mcoder.judge.config import JudgeConfig
from mcoder.judge.run import Judge
from mcoder.records import STATUSES, Problem, Rollout, Verdict, from_dict

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


def read_rollouts(
    path: Path | str, problems: dict[str, Problem], shard: Shard, done: set[str]
) -> list[Rollout]:
    """The rollouts of this shard not judged yet, keeping only what the judge needs."""
    name = display_name(path)
    out = []
    for lineno, obj in iter_objects(path):
        try:
            r = from_dict(Rollout, obj)
        except DataError as e:
            raise DataError(e.reason, path=name, line=lineno, field=e.field, hint=e.hint) from None
        if r.problem_id not in problems:
            raise DataError(
                f"no problem with id {r.problem_id!r} in the problems file",
                path=name,
                line=lineno,
                field="problem_id",
                hint="pass the problems file these rollouts were made from",
            )
        if shard.owns(r.id) and r.id not in done:
            out.append(Rollout(id=r.id, problem_id=r.problem_id, completion=r.completion))
    return out


def judge_files(
    cfg: JudgeConfig,
    problems_path: Path | str,
    rollouts_path: Path | str,
    out: Path | str,
    shard: Shard = Shard(),
    overwrite: bool = False,
) -> Counter:
    """Judge every rollout of the shard into ``out``; the status counts of this run."""
    problems = index_records(problems_path, Problem, key=lambda p: p.id)
    writer = RecordWriter(out, "rollout_id", resume=not overwrite)
    counts: Counter = Counter()
    try:
        todo = read_rollouts(rollouts_path, problems, shard, writer.done)
        if writer.resumed:
            console.info(f"resuming: {writer.resumed} verdicts already in {out}")
        t0 = time.monotonic()
        _run(cfg, problems, todo, writer, counts)
        writer.finish()
    except BaseException:
        writer.close()
        raise
    _summary(counts, time.monotonic() - t0, writer.resumed)
    return counts


def _run(
    cfg: JudgeConfig, problems: dict[str, Problem], todo: list[Rollout], writer: RecordWriter, counts: Counter
) -> None:
    columns = TextColumn("{task.fields[counts]}")
    with Judge(cfg) as judge, console.progress(columns) as bar:
        task = bar.add_task("judge", total=len(todo), counts="")

        def on_verdict(_i: int, v: Verdict) -> None:
            writer.write(v)
            counts[v.status] += 1
            counts["cached"] += v.cached
            shown = " ".join(f"{s}={counts[s]}" for s in STATUSES if counts[s])
            bar.update(task, advance=1, counts=shown)

        step = max(1, cfg.workers * BATCH_PER_WORKER)
        for start in range(0, len(todo), step):
            judge.judge(problems, todo[start : start + step], on_verdict)


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
