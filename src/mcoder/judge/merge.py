"""`mcoder judge --merge`: join the verdict files of `--shard i/n` runs into one, checked.

Shards run on different machines (a SLURM array, Ray tasks, Kubernetes jobs) and come back as
n files. Merging checks what a lost or doubled job would break: no rollout judged twice
(the error names both files), and, when the rollouts file is given, every rollout judged
exactly once and nothing judged that is not in it. The check reads ids only, so that hundreds
of thousands of verdicts never sit in memory; the merged file is written in a second pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mcoder import console
from mcoder.errors import DataError, UsageError
from mcoder.jsonl import RecordWriter, display_name, iter_objects
from mcoder.outputs import Claim, Job, execute
from mcoder.records import Rollout, Verdict, from_dict

SHOWN_IDS = 5  # missing ids named in an error


def merge_verdicts(
    parts: Sequence[Path | str], out: Path | str, rollouts: Path | str | None = None, overwrite: bool = False
) -> int:
    """Check the parts, then write them to ``out`` in part order; the number of verdicts.

    ``out`` is claimed as any stage's output (``outputs.py``): locked, never one of the parts,
    and a rerun with the same parts is a no-op."""
    if not parts:
        raise UsageError("--merge needs the verdict files of the shards", hint="e.g. --merge v.*.jsonl")
    inputs = {f"part {i + 1}": p for i, p in enumerate(parts)} | {"rollouts": rollouts}
    job = Job(out=out, inputs=inputs, settings={"parts": len(parts)}, overwrite=overwrite)
    merged = execute(MergeStage(parts, rollouts), job)
    if merged is not None:
        console.info(f"merged {merged} verdicts from {len(parts)} parts")
    return merged or 0


@dataclass
class MergeStage:
    """``mcoder judge --merge`` as a stage (``mcoder.outputs.Stage``): the number of verdicts
    merged; None when finished earlier."""

    parts: Sequence[Path | str]
    rollouts: Path | str | None
    name = "judge --merge"
    kind = "jsonl"
    expect = ("rollout_id",)

    def finished(self, job: Job, claim: Claim) -> None:
        console.info(claim.finished_message)

    def run(self, job: Job, claim: Claim) -> int:
        seen = _index_parts(self.parts)
        if self.rollouts is not None:
            _check_against_rollouts(seen, self.rollouts, len(self.parts))
        with RecordWriter(job.out, "rollout_id", resume=False) as writer:
            for part in self.parts:
                for _, obj in iter_objects(part):
                    writer.write(obj)
        return len(seen)


def _index_parts(parts: Sequence[Path | str]) -> dict[str, tuple[str, int, str]]:
    """rollout id -> (file, line, problem id) over all parts; a repeated id is a data error."""
    seen: dict[str, tuple[str, int, str]] = {}
    for part in parts:
        name = display_name(part)
        for lineno, obj in iter_objects(part):
            try:
                v = from_dict(Verdict, obj)
            except DataError as e:
                raise DataError(e.reason, path=name, line=lineno, field=e.field, hint=e.hint) from None
            if v.rollout_id in seen:
                first, first_line, _ = seen[v.rollout_id]
                raise DataError(
                    f"rollout {v.rollout_id!r} is judged twice: here and in {first}:{first_line}",
                    path=name,
                    line=lineno,
                    field="rollout_id",
                    hint="two shards overlap: were they run with the same --shard i/n "
                    "or with different n? rerun them with one n and distinct i",
                )
            seen[v.rollout_id] = (name, lineno, v.problem_id)
    return seen


def _check_against_rollouts(
    seen: dict[str, tuple[str, int, str]], rollouts: Path | str, n_parts: int
) -> None:
    """Every rollout judged exactly once, for its own problem; no verdict without a rollout."""
    name = display_name(rollouts)
    missing: list[str] = []
    known: set[str] = set()
    for lineno, obj in iter_objects(rollouts):
        try:
            r = from_dict(Rollout, obj)
        except DataError as e:
            raise DataError(e.reason, path=name, line=lineno, field=e.field, hint=e.hint) from None
        known.add(r.id)
        hit = seen.get(r.id)
        if hit is None:
            missing.append(r.id)
        elif hit[2] != r.problem_id:
            raise DataError(
                f"verdict of rollout {r.id!r} is for problem {hit[2]!r}, the rollout for {r.problem_id!r}",
                path=hit[0],
                line=hit[1],
                field="problem_id",
                hint=f"the parts were judged from another rollouts file than {name}",
            )
    if missing:
        raise DataError(
            f"{len(missing)} rollouts of {name} have no verdict in the {n_parts} parts, e.g. "
            + ", ".join(repr(x) for x in missing[:SHOWN_IDS]),
            hint="a shard's file is missing or unfinished: pass every part, or rerun the lost "
            "shard with its --shard i/n and --out (a killed shard resumes where it stopped)",
        )
    for rid, (file, line, _) in seen.items():
        if rid not in known:
            raise DataError(
                f"verdict for rollout {rid!r}, which is not in {name}",
                path=file,
                line=line,
                field="rollout_id",
                hint="merge the verdicts of this rollouts file only",
            )
