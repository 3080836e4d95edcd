"""What ``mcoder show`` shows: samples joined from the files the stages wrote, then filtered.

A target is one of:

- a run folder of ``mcoder loop`` (``RUN/config.json``, ``RUN/step_NNNN/``): the samples of one
  step (the last by default; ``step`` picks another, or ``all``), with the problems file the run
  names in its config;
- a step folder, or any folder holding ``rollouts.jsonl`` (with ``verdicts.jsonl`` and the
  loop's ``samples.jsonl`` beside it when present);
- a rollouts file (its verdicts from ``--verdicts``, or ``verdicts.jsonl`` beside a
  ``rollouts.jsonl``);
- a LiveCodeBench results file (``*_eval_all.json``): its programs and grades.

Samples join on the rollout id, never on line order; a problem is read only if a sample needs it.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcoder.errors import DataError, UsageError
from mcoder.jsonl import iter_objects, read_numbered
from mcoder.records import Problem, Rollout, Verdict, from_dict

UNJUDGED = "unjudged"


@dataclass
class Shown:
    """One sample: the rollout, its verdict, its training record and its problem, where known."""

    rollout: Rollout
    verdict: Verdict | None = None
    train: dict[str, Any] | None = None
    """The loop's row of samples.jsonl: reward, advantage, truncated, cut_off, masked, dropped, mask_reason."""
    step: int | None = None
    problem: Problem | None = None

    @property
    def id(self) -> str:
        return self.rollout.id

    @property
    def problem_id(self) -> str:
        return self.rollout.problem_id

    @property
    def status(self) -> str:
        return self.verdict.status if self.verdict is not None else UNJUDGED

    @property
    def program(self) -> str | None:
        from mcoder.extract import extract_code

        return extract_code(self.rollout.completion)

    @property
    def length(self) -> int | None:
        """Completion tokens, where the rollout recorded them."""
        ids = self.rollout.completion_token_ids
        return len(ids) if ids is not None else None

    @property
    def mean_logprob(self) -> float | None:
        lp = self.rollout.sampling_logprobs
        return statistics.fmean(lp) if lp else None

    @property
    def masked(self) -> bool:
        return bool(self.train and self.train.get("masked"))

    @property
    def reward(self) -> float | None:
        if self.train is not None and "reward" in self.train:
            return float(self.train["reward"])
        return self.verdict.reward if self.verdict is not None else None


@dataclass
class Batch:
    """Everything read for one ``show``: the samples, where they came from, and notes."""

    target: Path
    kind: str  # run | step | rollouts | lcb
    samples: list[Shown]
    run_dir: Path | None = None
    problems_path: Path | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class Filters:
    statuses: tuple[str, ...] = ()
    """Only samples with this verdict status (repeatable)."""
    masked: bool = False
    """Only samples the truncation mask zeroed."""
    problem_ids: tuple[str, ...] = ()
    """Only this problem id (repeatable)."""
    rollout_id: str | None = None
    """One rollout, shown in full."""

    def __post_init__(self) -> None:
        from mcoder.records import STATUSES

        self.statuses, self.problem_ids = tuple(self.statuses), tuple(self.problem_ids)
        known = (*STATUSES, UNJUDGED)
        unknown = [s for s in self.statuses if s not in known]
        if unknown:
            raise UsageError(f"--status {unknown[0]!r} is not a verdict status", hint="one of " + ", ".join(known))

    def keep(self, s: Shown) -> bool:
        if self.rollout_id is not None and s.id != self.rollout_id:
            return False
        if self.statuses and s.status not in self.statuses:
            return False
        if self.masked and not s.masked:
            return False
        return not self.problem_ids or s.problem_id in self.problem_ids


def load(
    target: Path, *, verdicts: Path | None = None, problems: Path | None = None, step: str
) -> Batch:
    """Read the target (see the module docstring) into a Batch, problems attached."""
    if not target.exists():
        raise UsageError(
            f"no such file or folder: {target}", hint="give a rollouts file, a step folder or a run folder"
        )
    if target.is_dir() and _is_run(target):
        batch = _load_run(target, step)
    elif target.is_dir():
        batch = _load_folder(target, target, "step", verdicts)
    else:
        batch = _load_file(target, verdicts)
    batch.problems_path = problems or batch.problems_path
    if batch.problems_path is not None:
        _attach_problems(batch)
    return batch


def _is_run(path: Path) -> bool:
    return (path / "config.json").is_file() or (path / "metrics.jsonl").is_file()


def _load_run(run: Path, step: str) -> Batch:
    steps = sorted(p for p in run.glob("step_*") if p.is_dir() and p.name[5:].isdigit())
    if not steps:
        raise UsageError(f"{run} has no step folders yet", hint="a run writes RUN/step_NNNN/ after each step")
    if step == "all":
        chosen = steps
    elif step == "last":
        chosen = steps[-1:]
    else:
        try:
            wanted = int(step)
        except ValueError:
            raise UsageError(f"--step {step!r} is not a step number, 'last' or 'all'") from None
        chosen = [p for p in steps if int(p.name[5:]) == wanted]
        if not chosen:
            raise UsageError(
                f"{run} has no step {wanted}", hint=f"steps {steps[0].name[5:]}..{steps[-1].name[5:]}"
            )
    samples: list[Shown] = []
    notes: list[str] = []
    for folder in chosen:
        part = _load_folder(folder, run, "run", None)
        samples += part.samples
        notes += part.notes
    problems_path = _run_problems(run, notes)
    return Batch(run, "run", samples, run_dir=run, problems_path=problems_path, notes=notes)


def _run_problems(run: Path, notes: list[str]) -> Path | None:
    """The problems file a run's config.json names, when it is still there."""
    config = run / "config.json"
    named = json.loads(config.read_text()).get("problems") if config.is_file() else None
    if named and Path(named).is_file():
        return Path(named)
    if named:
        notes.append(f"the run's problems file {named} is not here: statements and tests are not shown")
    return None


def _load_folder(folder: Path, target: Path, kind: str, verdicts: Path | None) -> Batch:
    rollouts = folder / "rollouts.jsonl"
    if not rollouts.is_file():
        raise UsageError(
            f"no rollouts.jsonl in {folder}", hint="give a rollouts file, a step folder or a run folder"
        )
    step = int(folder.name[5:]) if folder.name.startswith("step_") and folder.name[5:].isdigit() else None
    samples = _read_rollouts(rollouts, step)
    notes = _join_verdicts(samples, verdicts or folder / "verdicts.jsonl", rollouts)
    train = folder / "samples.jsonl"
    if train.is_file():
        by_id = {s.id: s for s in samples}
        for _, row in iter_objects(train):
            s = by_id.get(row.get("rollout_id"))
            if s is not None:
                s.train = row
    problems_path = None
    if kind == "step" and _is_run(folder.parent):  # a step folder of a run: the run's problems
        problems_path = _run_problems(folder.parent, notes)
    return Batch(target, kind, samples, problems_path=problems_path, notes=notes)


def _load_file(path: Path, verdicts: Path | None) -> Batch:
    from mcoder.formats import lcb_results

    if lcb_results.is_results_file(path):
        samples = [Shown(r) for _, r in lcb_results.as_rollouts(path)]
        grades = {v.rollout_id: v for _, v in lcb_results.as_verdicts(path)}
        problems = _lcb_problems(path)
        for s in samples:
            s.verdict = grades.get(s.id)
            s.problem = problems.get(s.problem_id)  # statement, platform, difficulty (no tests)
        return Batch(path, "lcb", samples)
    samples = _read_rollouts(path, None)
    beside = path.with_name("verdicts.jsonl") if path.name == "rollouts.jsonl" else None
    notes = _join_verdicts(samples, verdicts or beside, path)
    return Batch(path, "rollouts", samples, notes=notes)


def _lcb_problems(path: Path) -> dict[str, Problem]:
    """The problems of a LiveCodeBench results file as dataset build reads them (without tests)."""
    import orjson

    from mcoder.dataset.collect.sources import RowRef
    from mcoder.dataset.process.adapters import lcb_results as adapter

    rows = orjson.loads(path.read_bytes())
    problems = [
        adapter.ADAPTER.convert(row, RowRef(str(path), path.stem, i))
        for i, row in enumerate(rows)
        if adapter.ADAPTER.detect(row)  # a file without statements shows the programs alone
    ]
    return {p.id: p for p in problems}


def _read_rollouts(path: Path, step: int | None) -> list[Shown]:
    return [Shown(r, step=step) for _, r in read_numbered(path, Rollout)]


def _join_verdicts(samples: list[Shown], path: Path | None, rollouts: Path) -> list[str]:
    if path is None or not path.is_file():
        return ["no verdicts found: samples are shown unjudged (pass --verdicts)"] if samples else []
    _check_judged_from(path, rollouts)
    by_id = {s.id: s for s in samples}
    for _, v in read_numbered(path, Verdict):
        s = by_id.get(v.rollout_id)
        if s is not None:
            s.verdict = v
    unjudged = sum(1 for s in samples if s.verdict is None)
    return [f"{unjudged} of {len(samples)} samples have no verdict in {path}"] if unjudged else []


def _check_judged_from(verdicts: Path, rollouts: Path) -> None:
    """Verdicts that ``mcoder judge`` made from other rollouts than these (its sidecar,
    ``VERDICTS.meta.json``, holds the fingerprint of the rollouts it read) would show each sample
    with another sample's verdict: a DataError, not a page of wrong statuses."""
    from mcoder.outputs import fingerprint, read_sidecar, sidecar_path

    meta = read_sidecar(verdicts)
    judged = ((meta or {}).get("inputs") or {}).get("rollouts") or {}
    if not judged.get("sha256"):
        return  # no record (the loop's step files, a verdicts file of elsewhere) or read from stdin
    now = fingerprint(rollouts)
    if (now.get("size"), now.get("sha256")) != (judged.get("size"), judged.get("sha256")):
        raise DataError(
            f"these verdicts were judged from other rollouts than {rollouts} ({sidecar_path(verdicts).name} "
            f"holds the fingerprint of the {judged.get('path')} they were made from)",
            path=str(verdicts),
            hint="judge these rollouts again (mcoder judge ... --overwrite), or pass the verdicts made from them",
        )


def _attach_problems(batch: Batch) -> None:
    wanted = {s.problem_id for s in batch.samples}
    found: dict[str, Problem] = {}
    assert batch.problems_path is not None
    for lineno, obj in iter_objects(batch.problems_path):
        if obj.get("id") in wanted:
            try:
                found[obj["id"]] = from_dict(Problem, obj)
            except DataError as e:
                raise DataError(e.reason, path=str(batch.problems_path), line=lineno, field=e.field) from None
    for s in batch.samples:
        s.problem = found.get(s.problem_id)
    missing = wanted - set(found)
    if missing:
        batch.notes.append(f"{len(missing)} problems are not in {batch.problems_path}, e.g. {min(missing)}")


# ------------------------------------------------------------------ groups


@dataclass
class Group:
    """The samples of one problem at one step (GRPO's group)."""

    step: int | None
    problem_id: str
    samples: list[Shown]

    @property
    def passed(self) -> int:
        return sum(1 for s in self.samples if s.verdict is not None and s.verdict.passed)

    @property
    def statuses(self) -> Counter:
        return Counter(s.status for s in self.samples)

    def mean(self, values: list[float | int | None]) -> float | None:
        known = [v for v in values if v is not None]
        return statistics.fmean(known) if known else None


def groups(samples: list[Shown]) -> list[Group]:
    """Samples grouped by (step, problem), in the order the groups first appear."""
    out: dict[tuple[int | None, str], Group] = {}
    for s in samples:
        key = (s.step, s.problem_id)
        if key not in out:
            out[key] = Group(s.step, s.problem_id, [])
        out[key].samples.append(s)
    for g in out.values():
        g.samples.sort(key=lambda s: (s.rollout.sample_index, s.id))
    return list(out.values())
