"""`mcoder rollout`: problems file -> rollouts file, resumable, with a progress bar and a summary.

Reads the problems, builds the engine, settles the temperature (fixed, scheduled, or chosen
from measured diversity), then samples the problems whose groups are not yet complete in the
output, a few problems per engine call, writing each call's records before the next.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path

from rich.progress import TextColumn

from mcoder import console
from mcoder.config import output_settings
from mcoder.errors import EnvironmentMissing
from mcoder.jsonl import STDIO, RecordWriter, display_name
from mcoder.outputs import Claim, Job, check_document, execute, write_document
from mcoder.records import Problem
from mcoder.rollout.config import RolloutConfig
from mcoder.rollout.problems import SHOWN_LONG, PromptBudget, count_problems, iter_problems, spooled_stdin
from mcoder.rollout.sample import make_rollouts, rollout_id, write_rollouts
from mcoder.rollout.summary import (
    DiversityMean,
    RolloutSummary,
    account,
    show_summary,
    show_temperature_table,
)


def rollout_settings(cfg: RolloutConfig) -> dict:
    """What decides the rollouts written (recorded beside the output; a resume must match): every
    field of ``RolloutConfig`` not marked otherwise (``mcoder.config.not_setting``). The model and
    adapter are inputs, compared by content: moving or copying them is no change."""
    return output_settings(cfg)


def run_rollout(cfg: RolloutConfig) -> RolloutSummary:
    from mcoder.models import check_model_dir

    cfg.validate()
    check_model_dir(cfg.model, cfg.adapter)
    inputs = {"problems": cfg.problems, "model": cfg.model, "adapter": cfg.adapter}
    job = Job(out=cfg.out, inputs=inputs, settings=rollout_settings(cfg), overwrite=cfg.overwrite)
    with spooled_stdin(cfg.problems) as problems:
        return execute(RolloutStage(cfg, problems), job)


@dataclass
class RolloutStage:
    """``mcoder rollout`` as a stage (``mcoder.outputs.Stage``); ``problems``: the problems file,
    stdin spooled to a file."""

    cfg: RolloutConfig
    problems: Path
    name = "rollout"
    kind = "jsonl"
    expect = ("id", "problem_id", "completion")

    def finished(self, job: Job, claim: Claim) -> RolloutSummary:
        console.info(claim.finished_message)
        return RolloutSummary(out=str(self.cfg.out), engine="-", temperature=float("nan"))

    def run(self, job: Job, claim: Claim) -> RolloutSummary:
        cfg, problems = self.cfg, self.problems
        total = count_problems(problems, cfg.limit)
        if cfg.data_parallel_size > 1:  # replicas in processes of their own (rollout/data_parallel.py)
            return _data_parallel(replace(cfg, problems=problems), claim.resume)
        return _run_one(cfg, problems, total, claim.resume)


def _data_parallel(cfg: RolloutConfig, resume: bool) -> RolloutSummary:
    from mcoder.engines.factory import VLLM_HINT, vllm_available
    from mcoder.rollout.data_parallel import run_data_parallel

    if not vllm_available():
        raise EnvironmentMissing(
            "--data-parallel-size > 1 needs vllm, which is not installed", hint=VLLM_HINT
        )
    return run_data_parallel(cfg, resume=resume)


def _run_one(cfg: RolloutConfig, problems: Path, total: int, resume: bool) -> RolloutSummary:
    from mcoder.engines.factory import make_engine
    from mcoder.models import check_model_dir, load_tokenizer

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
    probe = budget.fitting(iter_problems(problems, cfg.limit), tokenizer, cfg.probe_size)
    temperature, table = temperature_from_setting(cfg, engine, tokenizer, probe)
    summary = RolloutSummary(
        out=str(cfg.out), engine=engine.name, temperature=temperature, temperature_table=table
    )
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


def _group_done(problem: Problem, cfg: RolloutConfig, done: set[str]) -> bool:
    return all(rollout_id(problem.id, cfg.policy_version, j) in done for j in range(cfg.n))


def _sample_all(cfg, engine, tokenizer, todo, total, temperature, writer, summary, budget) -> None:
    """Sample ``todo`` (an iterator) a few problems per engine call: memory is bounded by the call."""
    per_call = max(1, math.ceil(cfg.batch_size / cfg.n))
    model_name = _model_name(cfg, writer)
    diversity = DiversityMean()
    bar = console.progress(TextColumn("{task.fields[tps]} tok/s"))
    start = time.perf_counter()
    with bar:
        task = bar.add_task("rollout", total=total - summary.resumed // cfg.n, tps="-")
        while chunk := list(itertools.islice(todo, per_call)):
            keep, prompts = [], []
            for p in chunk:  # every prompt is measured before it is sampled
                prompt = budget.render(p, tokenizer)
                if prompt is not None:
                    keep.append(p)
                    prompts.append(prompt)
                else:
                    summary.too_long += 1
                    if len(summary.too_long_ids) < SHOWN_LONG:
                        summary.too_long_ids.append(p.id)
            rollouts = make_rollouts(
                keep, engine, tokenizer, n=cfg.n, max_tokens=cfg.max_tokens, temperature=temperature,
                seed=cfg.seed, model_name=model_name, policy_version=cfg.policy_version, prompts=prompts,
            )  # fmt: skip
            write_rollouts(writer, rollouts)
            account(summary, rollouts)
            summary.problems += len(keep)
            diversity.add(rollouts)
            summary.seconds = time.perf_counter() - start
            bar.update(task, advance=len(chunk), tps=f"{summary.tokens_per_s:,.0f}")
    summary.diversity = diversity.result()


def _model_name(cfg: RolloutConfig, writer: RecordWriter) -> str:
    """The ``model`` of each rollout: the folder's absolute path (the same from any working
    folder), and on a resume the name the output's records already carry (the folder may have
    moved: the claim checked that its content is the same)."""
    if writer.resumed:
        import orjson

        with open(writer.part, "rb") as f:
            name = orjson.loads(f.readline()).get("model")
        if isinstance(name, str):
            return name
    model = os.path.abspath(cfg.model)
    return model if cfg.adapter is None else f"{model}+{os.path.abspath(cfg.adapter)}"


def temperature_from_setting(cfg: RolloutConfig, engine, tokenizer, problems) -> tuple[float, list | None]:
    """The run's temperature: scheduled, fixed, or chosen from measured diversity (and recorded)."""
    if cfg.temperature_schedule is not None:
        t = cfg.temperature_schedule.schedule.at(cfg.step)
        console.info(f"temperature {t:g} (schedule {cfg.temperature_schedule}, step {cfg.step})")
        return t, None
    if not cfg.spec.auto:
        return cfg.fixed_temperature(), None
    record = _choice_path(cfg.out)
    if record is not None:  # a file beside the output, under the same guard: read or replaced only if mcoder's
        check_document(record, stage="rollout", flag="--temperature auto", inputs=_record_inputs(cfg))
    if record is not None and record.exists() and not cfg.overwrite:
        saved = json.loads(record.read_text())
        console.info(f"temperature {saved['temperature']:g} (chosen earlier, see {record})")
        return saved["temperature"], [tuple(r) for r in saved["table"]]
    probe = problems[: cfg.probe_size]  # the first problems whose prompts fit
    choice, table = cfg.temperature_from_probe(engine, tokenizer, probe, seed=cfg.seed)
    show_temperature_table(table, choice, cfg.diversity_measure, len(probe))
    if record is not None:
        text = json.dumps({**_choice(cfg, table, len(probe)), **choice.to_json()}, indent=1) + "\n"
        write_document(record, text, stage="rollout", flag="--temperature auto", inputs=_record_inputs(cfg))
    return choice.temperature, table


def _record_inputs(cfg: RolloutConfig) -> dict:
    return {"--problems": cfg.problems, "--out": cfg.out}


def _choice_path(out: Path) -> Path | None:
    """Where --temperature auto records its choice: OUT.temperature.json beside the output."""
    return None if str(out) == STDIO else Path(str(out) + ".temperature.json")


def _choice(cfg: RolloutConfig, table, probe: int) -> dict:
    return {
        "table": table, "target": cfg.diversity_target, "rise": cfg.diversity_rise,
        "rule_asked": cfg.temperature_rule, "measure": cfg.diversity_measure, "probe_problems": probe,
        "n": cfg.n, "max_tokens": cfg.max_tokens, "seed": cfg.seed, "model": cfg.model,
    }  # fmt: skip
