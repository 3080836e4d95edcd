"""`mcoder train --loop`: rollout -> judge -> update, step after step, in one process.

Reads top to bottom in the order things happen. Every step leaves the files the single-stage
commands would have written, so any step can be replayed or inspected alone:

    RUN/train_config.json            the resolved configuration
    RUN/temperature.json             the sampling temperature (with auto: each stage's diversity table)
    RUN/step_NNNN/rollouts.jsonl     what the policy sampled at step N
    RUN/step_NNNN/verdicts.jsonl     what the judge said
    RUN/step_NNNN/samples.jsonl      reward, advantage and truncation-mask decision per sample
    RUN/metrics.jsonl                one line of metrics per step
    RUN/checkpoint/                  the latest policy, optimizer and step (atomic)

Killed and rerun with the same command, it continues after the last checkpointed step; steps
after that checkpoint are redone (their files rewritten, their metrics lines dropped).
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from mcoder.console import emit, info
from mcoder.errors import DataError, UsageError
from mcoder.jsonl import RecordWriter, read_records
from mcoder.records import Problem
from mcoder.train.config import TrainConfig
from mcoder.train.trainer import Trainer, read_state


@dataclass
class LoopJob:
    model: str
    """Model folder to start from (ignored when RUN/checkpoint exists: the run resumes)."""
    problems: Path
    """Training problems JSONL."""
    run_dir: Path
    """Run folder: per-step files, metrics and the checkpoint."""
    cfg: TrainConfig
    """Resolved training configuration (steps, train_batch_size, n, ... included)."""
    max_tokens: int = 512
    """L_max: most completion tokens per sample."""
    judge: dict[str, Any] = field(default_factory=dict)
    """JudgeConfig fields (workers, timeout_s, unsafe_no_sandbox, ...)."""
    diversity_target: float | None = None
    """With temperature auto: the diversity the chosen T must reach (None: the rollout stage's default)."""
    probe_problems: int = 8
    """With temperature auto: problems sampled at each candidate temperature."""
    temperature_stage_steps: int = 0
    """With temperature auto: measure diversity again every K steps, a new stage (0: once, before step 1)."""
    engine: str = "hf"
    """Rollout engine: hf (the live policy) or vllm (LoRA adapter handed over each step)."""
    tensor_parallel_size: int = 1
    """vllm: GPUs the rollout engine's model copy is split over."""


def run_loop(job: LoopJob) -> Path:
    from mcoder.judge.config import JudgeConfig
    from mcoder.judge.run import Judge
    from mcoder.rollout.diversity import batch_diversity
    from mcoder.rollout.engines.hf_engine import HFEngine
    from mcoder.rollout.sample import make_rollouts
    from mcoder.train.distributed import world_size
    from mcoder.train.policy_sync import check_engine, publish_adapter, vllm_engine_for

    check_engine(job.engine, job.cfg.lora_rank)
    if world_size() > 1:  # launched by torchrun: the same loop, N ranks (train/distributed_loop.py)
        from mcoder.train.distributed_loop import run_loop_distributed

        return run_loop_distributed(job)
    cfg, run = job.cfg, Path(job.run_dir)
    run.mkdir(parents=True, exist_ok=True)

    # -------- the problems (tests kept: the judge needs them)
    problems = _load_problems(job.problems)
    by_id = {p.id: p for p in problems}

    # -------- the policy: fresh from --model, or resumed from the run's checkpoint
    ckpt = run / "checkpoint"
    state = read_state(ckpt)
    first_step = state["loop_step"] + 1 if state else 1
    _check_same_config(run, cfg, resumed=state is not None)
    trainer = Trainer(str(ckpt) if state else job.model, cfg)
    tokenizer = trainer.tokenizer
    if job.engine == "vllm":  # a separate engine: each step's adapter is handed to it (policy_sync.py)
        engine = vllm_engine_for(job, str(ckpt) if state else job.model)
    else:
        engine = HFEngine(trainer.model, tokenizer)  # samples from the live policy: always on-policy
    _trim_metrics(run / "metrics.jsonl", last_step=first_step - 1)

    # -------- derived sizes, printed before anything runs
    per_step = cfg.train_batch_size * cfg.n
    updates = -(-cfg.train_batch_size // cfg.mini_batch_size)
    info(
        f"problems {len(problems)} | steps {first_step}..{cfg.steps} | {cfg.train_batch_size} problems x "
        f"G={cfg.n} = {per_step} samples/step | L_max {job.max_tokens} | {updates} optimizer steps/step "
        f"(mini-batch {cfg.mini_batch_size} groups, micro-batch {cfg.micro_batch_size} seqs) | algo {cfg.algo} | "
        f"trainable params {sum(p.numel() for p in trainer.params):,}"
    )
    if state:
        info(f"resuming after step {state['loop_step']} (optimizer step {trainer.step})")

    # -------- the sampling temperature: fixed, a staged schedule, or chosen by diversity in stages
    schedule = _temperature(job, run, engine, tokenizer, problems, first_step)

    with Judge(JudgeConfig(**job.judge)) as judge:
        for step in range(first_step, cfg.steps + 1):
            step_dir = run / f"step_{step:04d}"
            T = schedule(step)
            rng = random.Random(cfg.seed * 1_000_003 + step)

            # 1. rollout: sample train_batch_size problems, G completions each
            t0 = time.perf_counter()
            batch = rng.sample(problems, min(cfg.train_batch_size, len(problems)))
            rollouts = make_rollouts(
                batch,
                engine,
                tokenizer,
                n=cfg.n,
                max_tokens=job.max_tokens,
                temperature=T,
                seed=cfg.seed + step,
                model_name=job.model,
                policy_version=trainer.policy_version,
            )
            # 2. judge
            t1 = time.perf_counter()
            verdicts = judge.judge(by_id, rollouts)
            t2 = time.perf_counter()
            rollouts, verdicts, rounds = _dynamic_sampling(
                job, rng, problems, batch, rollouts, verdicts, engine, tokenizer, judge, trainer, T, step
            )
            t3 = time.perf_counter()
            _write(step_dir / "rollouts.jsonl", "id", rollouts)
            _write(step_dir / "verdicts.jsonl", "rollout_id", verdicts)

            # 3. update
            metrics = trainer.train_on_batch(rollouts, {v.rollout_id: v for v in verdicts})
            _write(step_dir / "samples.jsonl", "rollout_id", [s.to_row() for s in trainer.last_samples])
            metrics.update(batch_diversity(rollouts))
            tokens = sum(len(r.completion_token_ids or ()) for r in rollouts)
            metrics.update(
                {
                    "step": step,
                    "time/rollout": (t1 - t0) + (t3 - t2),
                    "time/judge": t2 - t1,
                    "rollout_tokens_per_s": tokens / max(t1 - t0, 1e-9),
                    "resample_rounds": rounds,
                }
            )
            _append_metrics(run / "metrics.jsonl", metrics)
            info(_progress_line(step, cfg.steps, metrics))

            # 4. checkpoint (atomic): a kill after this line resumes at the next step
            if step % cfg.save_every == 0 or step == cfg.steps:
                trainer.save(ckpt, extra_state={"loop_step": step})
            if job.engine == "vllm":
                publish_adapter(trainer, engine, run / "adapters", step)
    emit(str(ckpt))
    return ckpt


# ---------------------------------------------------------------- the pieces, in order of use


def _load_problems(path: Path) -> list[Problem]:
    problems = list(read_records(path, Problem))
    if not problems:
        raise DataError("no problems to train on", path=str(path))
    if len({p.id for p in problems}) != len(problems):
        raise DataError("duplicate problem ids", path=str(path), field="id")
    return problems


def _check_same_config(run: Path, cfg: TrainConfig, *, resumed: bool) -> None:
    """A resumed run must go on with the configuration it started with (steps may grow)."""
    path = run / "train_config.json"
    if resumed and path.exists():
        before = json.loads(path.read_text())
        now = json.loads(cfg.to_json())
        diff = sorted(k for k in now if k != "steps" and before.get(k) != now[k])
        if diff:
            raise UsageError(
                f"{run} was started with other settings ({', '.join(diff)})",
                hint="rerun with the original flags, or use a new --run-dir",
            )
    path.write_text(cfg.to_json())


def _trim_metrics(path: Path, last_step: int) -> None:
    """Drop metrics lines of steps that were not checkpointed (they are about to be redone)."""
    if not path.exists():
        return
    keep = [
        ln
        for ln in path.read_bytes().splitlines(keepends=True)
        if ln.endswith(b"\n") and orjson.loads(ln).get("step", 0) <= last_step
    ]
    path.write_bytes(b"".join(keep))


def _temperature(job: LoopJob, run: Path, engine, tokenizer, problems: list[Problem], first_step: int = 1):
    """step -> T. 'auto': chosen by measured diversity before training and, with
    ``temperature_stage_steps`` K > 0, measured again every K steps from the policy as it is then
    (RUN/temperature.json keeps every stage, reused on resume); 'T@STEP,...' is a staged schedule;
    else a number."""
    from mcoder.rollout.temperature import TemperatureSchedule

    spec = job.cfg.sampling_temperature
    record = run / "temperature.json"
    if spec == "auto":
        return _DiversityStages(job, record, engine, tokenizer, problems, first_step)
    if "@" in spec:
        sched = TemperatureSchedule.parse(spec)
        return lambda step: sched.at(step - 1)
    try:
        T = float(spec)
    except ValueError:
        raise UsageError(
            f"bad --temperature {spec!r}", hint="a number, 'auto', or a schedule 'T@STEP,...'"
        ) from None
    record.write_text(json.dumps({"temperature": T}))
    return lambda step: T


class _DiversityStages:
    """The diversity-determined temperature, changed only in stages.

    A stage starts at step 1 and, when ``job.temperature_stage_steps`` is K > 0, at steps 1 + K,
    1 + 2K, ...: the probe problems are sampled at every candidate temperature from the policy of
    that moment and the smallest T whose diversity reaches the target holds until the next stage.
    Between boundaries T never moves. Stages are recorded in RUN/temperature.json (the top-level
    ``temperature``/``table`` are the latest stage's); a resumed run keeps the stages that began at
    or before its first step (their policy was checkpointed) and measures the later ones again.
    """

    def __init__(self, job: LoopJob, record: Path, engine, tokenizer, problems: list[Problem], first_step: int):
        from mcoder.rollout.temperature import DEFAULT_TARGET

        self.job, self.record, self.engine, self.tokenizer = job, record, engine, tokenizer
        if job.temperature_stage_steps < 0:
            raise UsageError(
                f"bad --temperature-stage-steps {job.temperature_stage_steps}",
                hint="0 (choose T once) or a number of steps per stage",
            )
        self.every = job.temperature_stage_steps
        self.target = DEFAULT_TARGET if job.diversity_target is None else job.diversity_target
        self.probe = random.Random(job.cfg.seed).sample(problems, min(job.probe_problems, len(problems)))
        self.stages: list[dict] = []
        if record.exists():
            old = json.loads(record.read_text())
            stages = old.get("stages") or (  # a record written before stages existed: one stage
                [{"from_step": 1, "temperature": old["temperature"], "table": old.get("table", [])}]
                if "temperature" in old and "table" in old
                else []
            )
            self.stages = [s for s in stages if s["from_step"] <= first_step]

    def boundary(self, step: int) -> bool:
        return step == 1 or (self.every > 0 and (step - 1) % self.every == 0)

    def __call__(self, step: int) -> float:
        if not any(s["from_step"] == step for s in self.stages) and (
            self.boundary(step) or not any(s["from_step"] <= step for s in self.stages)
        ):
            self._measure(step)
        return max((s for s in self.stages if s["from_step"] <= step), key=lambda s: s["from_step"])["temperature"]

    def _measure(self, step: int) -> None:
        from mcoder.rollout.temperature import select_temperature

        job = self.job
        chosen, table = select_temperature(
            self.engine,
            self.tokenizer,
            self.probe,
            target=self.target,
            n=max(job.cfg.n, 2),
            max_tokens=job.max_tokens,
            seed=job.cfg.seed + step,
        )
        self.stages = [s for s in self.stages if s["from_step"] < step]
        self.stages.append({"from_step": step, "temperature": chosen, "table": table})
        latest = {"temperature": chosen, "target": self.target, "table": table}
        tmp = self.record.with_name(self.record.name + ".part")
        tmp.write_text(json.dumps({**latest, "stage_steps": self.every, "stages": self.stages}, indent=2))
        tmp.replace(self.record)
        info(
            f"step {step}: temperature {chosen} chosen by diversity (target {self.target}): "
            + ", ".join(f"T={t:g}: {d:.3f}" for t, d in table)
        )


def _dynamic_sampling(
    job, rng, problems, batch, rollouts, verdicts, engine, tokenizer, judge, trainer, T, step
):
    """DAPO: while fewer than train_batch_size groups carry signal (two different rewards), sample
    more problems not yet in this step. Returns the batch's rollouts and verdicts and the rounds taken."""
    from mcoder.rollout.sample import make_rollouts

    cfg = job.cfg
    rounds = 0
    while cfg.dynamic_sampling and rounds < cfg.max_resample_rounds:
        rewards: dict[str, set[float]] = {}
        for v in verdicts:
            rewards.setdefault(v.problem_id, set()).add(v.reward)
        useful = sum(len(r) > 1 for r in rewards.values())
        unused = [p for p in problems if p.id not in rewards]
        if useful >= cfg.train_batch_size or not unused:
            break
        rounds += 1
        more = rng.sample(unused, min(cfg.train_batch_size - useful, len(unused)))
        new = make_rollouts(
            more,
            engine,
            tokenizer,
            n=cfg.n,
            max_tokens=job.max_tokens,
            temperature=T,
            seed=cfg.seed + step + 7919 * rounds,
            model_name=job.model,
            policy_version=trainer.policy_version,
        )
        rollouts = rollouts + new
        verdicts = verdicts + judge.judge({p.id: p for p in more}, new)
    return rollouts, verdicts, rounds


def _write(path: Path, key: str, records: list) -> None:
    with RecordWriter(path, key, resume=False) as w:
        w.write_all(records)


def _append_metrics(path: Path, metrics: dict[str, Any]) -> None:
    with open(path, "ab") as f:
        f.write(orjson.dumps(metrics) + b"\n")


def _progress_line(step: int, steps: int, m: dict[str, Any]) -> str:
    return (
        f"step {step}/{steps} | reward {m['reward/mean']:.3f} | pass {m['pass_rate']:.2f} | "
        f"len {m['length/mean']:.0f} | trunc {m['truncated_rate']:.2f} | masked {m['masked_count']} | "
        f"loss {m.get('loss', 0.0):.4f} | kl {m.get('kl', 0.0):.4f} | T {m['temperature']:g} | "
        f"rollout {m['time/rollout']:.1f}s judge {m['time/judge']:.1f}s train {m['time/train']:.1f}s"
    )
