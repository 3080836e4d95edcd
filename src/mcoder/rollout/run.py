"""`mcoder rollout`: problems file -> rollouts file, resumable, with a progress bar and a summary.

Reads the problems, builds the engine, settles the temperature (fixed, scheduled, or chosen
from measured diversity), then samples the problems whose groups are not yet complete in the
output, a few problems per engine call, writing each call's records before the next.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from rich.progress import TextColumn

from mcoder import console
from mcoder.errors import DataError, EnvironmentMissing, UsageError
from mcoder.jsonl import STDIO, RecordWriter, UniqueIds, display_name, read_numbered
from mcoder.outputs import claim_output
from mcoder.prompts import render_prompt
from mcoder.records import Problem
from mcoder.rollout.config import RolloutConfig
from mcoder.rollout.diversity import MEASURES, group_texts
from mcoder.rollout.sample import make_rollouts, rollout_id, write_rollouts
from mcoder.rollout.temperature import TemperatureSchedule, select_temperature


@dataclass
class RolloutSummary:
    out: str
    engine: str
    temperature: float
    problems: int = 0
    samples: int = 0
    resumed: int = 0
    completion_tokens: int = 0
    truncated: int = 0
    seconds: float = 0.0
    too_long: int = 0
    too_long_ids: list[str] = field(default_factory=list)
    diversity: dict[str, float] = field(default_factory=dict)
    temperature_table: list[tuple[float, float]] | None = None

    @property
    def mean_length(self) -> float:
        return self.completion_tokens / self.samples if self.samples else 0.0

    @property
    def truncated_share(self) -> float:
        return self.truncated / self.samples if self.samples else 0.0

    @property
    def tokens_per_s(self) -> float:
        return self.completion_tokens / self.seconds if self.seconds else 0.0


def load_problems(path: Path, limit: int | None) -> list[Problem]:
    """Problems in file order, without their tests (for the data-parallel split)."""
    return [p for _, p in iter_problems(path, limit)]


def iter_problems(path: Path | str, limit: int | None) -> Iterator[tuple[int, Problem]]:
    """(line, problem) in file order, read one line at a time, without their tests (rollout never
    needs them; they can be large), checking that ids are unique."""
    ids = UniqueIds(path, field="id")
    for lineno, p in read_numbered(path, Problem):
        if limit is not None and len(ids) >= limit:
            break
        ids.add(p.id, lineno)
        p.tests = []
        yield lineno, p


def count_problems(path: Path | str, limit: int | None) -> int:
    """A first pass over the problems (ids only): their number; bad or empty input is an error
    here, before any model is loaded."""
    count = sum(1 for _ in iter_problems(path, limit))
    if count == 0 and limit != 0:
        raise DataError("no problems in the file", path=display_name(path), hint="pass a problems file with records")
    return count


def rollout_settings(cfg: RolloutConfig) -> dict:
    """What decides the rollouts written (recorded beside the output; a resume must match)."""
    settings = {
        "model": os.path.abspath(cfg.model), "adapter": cfg.adapter and os.path.abspath(cfg.adapter),
        "n": cfg.n, "max_tokens": cfg.max_tokens, "temperature": cfg.temperature,
        "temperature_schedule": cfg.temperature_schedule, "step": cfg.step, "top_k": cfg.top_k,
        "top_p": cfg.top_p, "seed": cfg.seed, "policy_version": cfg.policy_version, "limit": cfg.limit,
        "engine": cfg.engine, "long_prompts": cfg.long_prompts,
    }  # fmt: skip
    if cfg.temperature == "auto":
        settings.update(
            diversity_target=cfg.diversity_target, temperature_candidates=list(cfg.temperature_candidates),
            probe_problems=cfg.probe_problems, diversity_measure=cfg.diversity_measure,
        )  # fmt: skip
    return settings


def run_rollout(cfg: RolloutConfig) -> RolloutSummary:
    from mcoder.models import check_model_dir

    cfg.validate()
    check_model_dir(cfg.model, cfg.adapter)
    inputs = {"problems": cfg.problems, "model": cfg.model, "adapter": cfg.adapter}
    with spooled_stdin(cfg.problems) as problems, claim_output(
        cfg.out, stage="rollout", settings=rollout_settings(cfg), inputs=inputs,
        overwrite=cfg.overwrite, expect=("id", "problem_id", "completion"),
    ) as claim:  # fmt: skip
        if claim.finished:
            console.info(claim.finished_message)
            return RolloutSummary(out=str(cfg.out), engine="-", temperature=float("nan"))
        total = count_problems(problems, cfg.limit)
        if cfg.data_parallel_size > 1:  # replicas in processes of their own (rollout/data_parallel.py)
            summary = _data_parallel(replace(cfg, problems=problems), claim.resume)
        else:
            summary = _run_one(cfg, problems, total, claim.resume)
        claim.mark_finished()
    return summary


def _data_parallel(cfg: RolloutConfig, resume: bool) -> RolloutSummary:
    from mcoder.rollout.data_parallel import run_data_parallel
    from mcoder.rollout.engines.factory import VLLM_HINT, vllm_available

    if not vllm_available():
        raise EnvironmentMissing("--data-parallel-size > 1 needs vllm, which is not installed", hint=VLLM_HINT)
    return run_data_parallel(cfg, resume=resume)


def _run_one(cfg: RolloutConfig, problems: Path, total: int, resume: bool) -> RolloutSummary:
    from mcoder.models import check_model_dir, load_tokenizer
    from mcoder.rollout.engines.factory import make_engine

    folder = check_model_dir(cfg.model, cfg.adapter)  # --model may be an adapter folder: its base
    tokenizer = load_tokenizer(folder)
    budget = PromptBudget.of(str(folder.base), cfg.max_tokens)
    if cfg.long_prompts == "error":
        budget.refuse_long(iter_problems(problems, cfg.limit), tokenizer, display_name(cfg.problems))
    engine = make_engine(
        cfg.engine, cfg.model, cfg.adapter, tokenizer=tokenizer, batch_size=cfg.batch_size,
        top_k=cfg.top_k, top_p=cfg.top_p, seed=cfg.seed,
        **({"tensor_parallel_size": cfg.tensor_parallel_size} if cfg.tensor_parallel_size > 1 else {}),
    )  # fmt: skip
    probe = budget.fitting(iter_problems(problems, cfg.limit), tokenizer, cfg.probe_problems)
    temperature, table = resolve_temperature(cfg, engine, tokenizer, probe)
    summary = RolloutSummary(out=str(cfg.out), engine=engine.name, temperature=temperature, temperature_table=table)
    with RecordWriter(cfg.out, "id", resume=resume) as writer:
        summary.resumed = writer.resumed
        if writer.resumed:
            console.info(f"resuming {display_name(cfg.out)}: {writer.resumed} rollouts already written")
        todo = (p for _, p in iter_problems(problems, cfg.limit) if not _group_done(p, cfg, writer.done))
        _sample_all(cfg, engine, tokenizer, todo, total, temperature, writer, summary, budget)
    if summary.too_long:
        shown = ", ".join(summary.too_long_ids)
        console.warn(
            f"{summary.too_long} problems skipped: prompt + --max-tokens {cfg.max_tokens} exceed the model's "
            f"context of {budget.context} tokens (e.g. {shown}); see --long-prompts"
        )
    show_summary(summary)
    return summary


@contextlib.contextmanager
def spooled_stdin(path: Path | str) -> Iterator[Path]:
    """``path``, or for ``-`` a temporary copy of stdin: rollout reads its problems more than once
    (count, measure, sample) and never holds them all in memory."""
    if str(path) != STDIO:
        yield Path(path)
        return
    with tempfile.TemporaryDirectory(prefix="mcoder-stdin-") as tmp:
        spool = Path(tmp) / "problems.jsonl"
        with open(spool, "wb") as f:
            shutil.copyfileobj(sys.stdin.buffer, f)
        yield spool


SHOWN_LONG = 5  # ids of skipped long prompts named in the summary


@dataclass
class PromptBudget:
    """The longest prompt the model can take with ``--max-tokens`` completion tokens after it:
    its context (``max_position_embeddings`` of its config) minus ``--max-tokens``."""

    context: int | None
    max_tokens: int

    @classmethod
    def of(cls, model: str, max_tokens: int) -> PromptBudget:
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(model)
        config = getattr(config, "text_config", None) or config
        context = getattr(config, "max_position_embeddings", None)
        if context is not None and max_tokens >= context:
            raise UsageError(
                f"--max-tokens {max_tokens} leaves no room for a prompt: the model's context is {context} tokens",
                hint=f"pass --max-tokens below {context}",
            )
        return cls(context, max_tokens)

    @property
    def limit(self) -> int | None:
        return None if self.context is None else self.context - self.max_tokens

    def fits(self, prompt_ids: list[int]) -> bool:
        return self.limit is None or len(prompt_ids) <= self.limit

    def refuse_long(self, problems: Iterable[tuple[int, Problem]], tokenizer, name: str) -> None:
        """--long-prompts error: a DataError naming the first problem too long, before sampling."""
        for lineno, p in problems:
            _, ids = render_prompt(p, tokenizer)
            if not self.fits(ids):
                raise DataError(
                    f"problem {p.id!r}: its prompt is {len(ids)} tokens; with --max-tokens {self.max_tokens} "
                    f"the model's context of {self.context} leaves room for {self.limit}",
                    path=name, line=lineno,
                    hint="pass --long-prompts skip to leave such problems out, or a smaller --max-tokens",
                )  # fmt: skip

    def fitting(self, problems: Iterable[tuple[int, Problem]], tokenizer, count: int) -> list[Problem]:
        """The first ``count`` problems whose prompts fit (the temperature probe)."""
        out: list[Problem] = []
        for _, p in problems:
            if len(out) >= count:
                break
            if self.fits(render_prompt(p, tokenizer)[1]):
                out.append(p)
        return out


def _group_done(problem: Problem, cfg: RolloutConfig, done: set[str]) -> bool:
    return all(rollout_id(problem.id, cfg.policy_version, j) in done for j in range(cfg.n))


def _sample_all(cfg, engine, tokenizer, todo, total, temperature, writer, summary, budget) -> None:
    """Sample ``todo`` (an iterator) a few problems per engine call: memory is bounded by the call."""
    per_call = max(1, math.ceil(cfg.batch_size / cfg.n))
    model_name = cfg.model if cfg.adapter is None else f"{cfg.model}+{cfg.adapter}"
    diversity = _DiversityMean()
    bar = console.progress(TextColumn("{task.fields[tps]} tok/s"))
    start = time.perf_counter()
    with bar:
        task = bar.add_task("rollout", total=total - summary.resumed // cfg.n, tps="-")
        while chunk := list(itertools.islice(todo, per_call)):
            keep, prompts = [], []
            for p in chunk:  # every prompt is measured before it is sampled
                text, ids = render_prompt(p, tokenizer)
                if budget.fits(ids):
                    keep.append(p)
                    prompts.append((text, ids))
                else:
                    summary.too_long += 1
                    if len(summary.too_long_ids) < SHOWN_LONG:
                        summary.too_long_ids.append(p.id)
            rollouts = make_rollouts(
                keep, engine, tokenizer, n=cfg.n, max_tokens=cfg.max_tokens, temperature=temperature,
                seed=cfg.seed, model_name=model_name, policy_version=cfg.policy_version, prompts=prompts,
            )  # fmt: skip
            write_rollouts(writer, rollouts)
            _account(summary, rollouts)
            summary.problems += len(keep)
            diversity.add(rollouts)
            summary.seconds = time.perf_counter() - start
            bar.update(task, advance=len(chunk), tps=f"{summary.tokens_per_s:,.0f}")
    summary.diversity = diversity.result()


@dataclass
class _DiversityMean:
    """The batch's mean group diversity (``batch_diversity``), added up a call at a time so that
    no completion is kept after it is written."""

    sums: dict[str, float] = field(default_factory=dict)
    groups: int = 0

    def add(self, rollouts: list) -> None:
        groups = [g for g in group_texts(rollouts).values() if len(g) >= 2]
        self.groups += len(groups)
        for name, fn in MEASURES.items():
            self.sums[name] = self.sums.get(name, 0.0) + sum(fn(g) for g in groups)

    def result(self) -> dict[str, float]:
        return {f"diversity/{name}": self.sums.get(name, 0.0) / self.groups if self.groups else 0.0 for name in MEASURES}


def _account(summary: RolloutSummary, rollouts: list) -> None:
    summary.samples += len(rollouts)
    summary.completion_tokens += sum(len(r.completion_token_ids) for r in rollouts)
    summary.truncated += sum(r.finish_reason == "length" for r in rollouts)


def resolve_temperature(cfg: RolloutConfig, engine, tokenizer, problems) -> tuple[float, list | None]:
    """The run's temperature: scheduled, fixed, or chosen from measured diversity (and recorded)."""
    if cfg.temperature_schedule is not None:
        t = TemperatureSchedule.parse(cfg.temperature_schedule).at(cfg.step)
        console.info(f"temperature {t:g} (schedule {cfg.temperature_schedule}, step {cfg.step})")
        return t, None
    if cfg.temperature != "auto":
        return cfg.fixed_temperature(), None
    record = _choice_path(cfg.out)
    if record is not None and record.exists() and not cfg.overwrite:
        saved = json.loads(record.read_text())
        console.info(f"temperature {saved['temperature']:g} (chosen earlier, see {record})")
        return saved["temperature"], [tuple(r) for r in saved["table"]]
    probe = problems[: cfg.probe_problems]  # the first problems whose prompts fit
    chosen, table = select_temperature(
        engine, tokenizer, probe, candidates=cfg.temperature_candidates, target=cfg.diversity_target,
        n=cfg.n, max_tokens=cfg.max_tokens, seed=cfg.seed, measure=cfg.diversity_measure,
    )
    show_temperature_table(table, chosen, cfg.diversity_target, cfg.diversity_measure, len(probe))
    if record is not None:
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(json.dumps(_choice(cfg, chosen, table, len(probe)), indent=1) + "\n")
    return chosen, table


def _choice_path(out: Path) -> Path | None:
    """Where --temperature auto records its choice: OUT.temperature.json beside the output."""
    return None if str(out) == STDIO else Path(str(out) + ".temperature.json")


def _choice(cfg: RolloutConfig, chosen: float, table, probe: int) -> dict:
    return {
        "temperature": chosen, "table": table, "target": cfg.diversity_target,
        "measure": cfg.diversity_measure, "probe_problems": probe, "n": cfg.n,
        "max_tokens": cfg.max_tokens, "seed": cfg.seed, "model": cfg.model,
    }


def show_temperature_table(table, chosen: float, target: float, measure: str, probe: int) -> None:
    rows = [(f"{t:g}", f"{d:.3f}", "<- chosen" if t == chosen else "") for t, d in table]
    console.show(console.table(f"D(T): {measure} diversity on {probe} probe problems, target {target:g}", ["T", "D", ""], rows))
    if all(d < target for _, d in table):
        console.warn(f"no candidate temperature reaches diversity {target:g}; using the highest, {chosen:g}")
    console.info(f"temperature {chosen:g} (smallest reaching {measure} diversity {target:g})")


def show_summary(s: RolloutSummary) -> None:
    rows = [
        ("engine", s.engine), ("temperature", f"{s.temperature:g}"), ("problems sampled", s.problems),
        ("samples written", s.samples), ("already there (resumed)", s.resumed),
        *((("prompts too long (skipped)", f"{s.too_long}: {', '.join(s.too_long_ids)}"),) if s.too_long else ()),
        ("mean completion tokens", f"{s.mean_length:.1f}"), ("truncated share", f"{s.truncated_share:.3f}"),
        *((k, f"{v:.3f}") for k, v in s.diversity.items()),
        ("tokens/s", f"{s.tokens_per_s:,.0f}"),
    ]
    console.show(console.table("rollout summary", ["", "value"], rows))


def summary_dict(s: RolloutSummary) -> dict:
    return {**asdict(s), "mean_length": s.mean_length, "truncated_share": s.truncated_share}
