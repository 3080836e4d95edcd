"""`mcoder rollout`: problems file -> rollouts file, resumable, with a progress bar and a summary.

Reads the problems, builds the engine, settles the temperature (fixed, scheduled, or chosen
from measured diversity), then samples the problems whose groups are not yet complete in the
output, a few problems per engine call, writing each call's records before the next.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.progress import TextColumn

from mcoder import console
from mcoder.errors import DataError, EnvironmentMissing
from mcoder.jsonl import STDIO, RecordWriter, display_name, read_records
from mcoder.records import Problem
from mcoder.rollout.config import RolloutConfig
from mcoder.rollout.diversity import batch_diversity
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
    """Problems in file order, without their tests (rollout never needs them; they can be large)."""
    problems, seen = [], set()
    for p in read_records(path, Problem):
        if limit is not None and len(problems) >= limit:
            break
        if p.id in seen:
            raise DataError(f"duplicate problem id {p.id!r}", path=display_name(path), field="id")
        seen.add(p.id)
        p.tests = []
        problems.append(p)
    return problems


def run_rollout(cfg: RolloutConfig) -> RolloutSummary:
    from mcoder.rollout.engines.factory import check_model_dir, load_tokenizer, make_engine

    cfg.validate()
    check_model_dir(cfg.model)
    if cfg.data_parallel_size > 1:  # replicas in processes of their own (rollout/data_parallel.py)
        from mcoder.rollout.data_parallel import run_data_parallel
        from mcoder.rollout.engines.factory import VLLM_HINT, vllm_available

        if not vllm_available():
            raise EnvironmentMissing("--data-parallel-size > 1 needs vllm, which is not installed", hint=VLLM_HINT)
        return run_data_parallel(cfg)
    problems = load_problems(cfg.problems, cfg.limit)
    tokenizer = load_tokenizer(cfg.model)
    engine = make_engine(
        cfg.engine, cfg.model, cfg.adapter, tokenizer=tokenizer, batch_size=cfg.batch_size,
        top_k=cfg.top_k, top_p=cfg.top_p, seed=cfg.seed,
        **({"tensor_parallel_size": cfg.tensor_parallel_size} if cfg.tensor_parallel_size > 1 else {}),
    )
    temperature, table = resolve_temperature(cfg, engine, tokenizer, problems)
    summary = RolloutSummary(out=str(cfg.out), engine=engine.name, temperature=temperature, temperature_table=table)
    writer = RecordWriter(cfg.out, "id", resume=not cfg.overwrite)
    try:
        todo = [p for p in problems if not _group_done(p, cfg, writer.done)]
        summary.resumed = writer.resumed
        if writer.resumed:
            console.info(f"resuming {display_name(cfg.out)}: {writer.resumed} rollouts already written")
        _sample_all(cfg, engine, tokenizer, todo, temperature, writer, summary)
    except BaseException:
        writer.close()
        raise
    writer.finish()
    show_summary(summary)
    return summary


def _group_done(problem: Problem, cfg: RolloutConfig, done: set[str]) -> bool:
    return all(rollout_id(problem.id, cfg.policy_version, j) in done for j in range(cfg.n))


def _sample_all(cfg, engine, tokenizer, todo, temperature, writer, summary) -> None:
    per_call = max(1, math.ceil(cfg.batch_size / cfg.n))
    model_name = cfg.model if cfg.adapter is None else f"{cfg.model}+{cfg.adapter}"
    rollouts_all: list[Any] = []
    bar = console.progress(TextColumn("{task.fields[tps]} tok/s"))
    start = time.perf_counter()
    with bar:
        task = bar.add_task("rollout", total=len(todo), tps="-")
        for i in range(0, len(todo), per_call):
            chunk = todo[i : i + per_call]
            rollouts = make_rollouts(
                chunk, engine, tokenizer, n=cfg.n, max_tokens=cfg.max_tokens, temperature=temperature,
                seed=cfg.seed, model_name=model_name, policy_version=cfg.policy_version,
            )
            write_rollouts(writer, rollouts)
            _account(summary, rollouts)
            # Keep only what the diversity summary needs, not token ids.
            rollouts_all.extend(_Text(r.problem_id, r.completion) for r in rollouts)
            summary.seconds = time.perf_counter() - start
            bar.update(task, advance=len(chunk), tps=f"{summary.tokens_per_s:,.0f}")
    summary.problems = len(todo)
    summary.diversity = batch_diversity(rollouts_all)


@dataclass(slots=True)
class _Text:
    problem_id: str
    completion: str


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
    probe = problems[: cfg.probe_problems]
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
        ("mean completion tokens", f"{s.mean_length:.1f}"), ("truncated share", f"{s.truncated_share:.3f}"),
        *((k, f"{v:.3f}") for k, v in s.diversity.items()),
        ("tokens/s", f"{s.tokens_per_s:,.0f}"),
    ]
    console.show(console.table("rollout summary", ["", "value"], rows))


def summary_dict(s: RolloutSummary) -> dict:
    return {**asdict(s), "mean_length": s.mean_length, "truncated_share": s.truncated_share}
