"""`torchrun --nproc-per-node N mcoder train --loop ...`: the loop of train/loop.py, N ranks.

The same steps and the same files as the one-process loop. What differs, and why:

- Rank 0 alone samples and judges. Generation from the sharded policy would make every token a
  collective that all ranks must join in lockstep; instead rank 0 keeps an unsharded copy of the
  policy (the hf engine) that is refreshed from the gathered weights before each step's rollout,
  and the vLLM engine (rank 0 too) is pointed at the step's saved LoRA adapter.
- Rollouts and verdicts are broadcast; every rank then prepares the whole batch (advantages per
  group over the full batch) and trains on its share of the groups (train/distributed.py).
- Rank 0 alone writes files; checkpoints are gathered and in the single-process format, so a
  run killed under torchrun can be resumed by one process, and the other way round.
"""

from __future__ import annotations

import random
import time
from contextlib import nullcontext
from pathlib import Path

from mcoder.console import emit, info
from mcoder.train import loop as one
from mcoder.train.distributed import FSDPTrainer, barrier, broadcast, is_main, setup, world_size
from mcoder.train.trainer import read_state


def run_loop_distributed(job: one.LoopJob) -> Path:
    from mcoder.judge.config import JudgeConfig
    from mcoder.judge.run import Judge
    from mcoder.rollout.diversity import batch_diversity

    setup()
    cfg, run = job.cfg, Path(job.run_dir)
    main = is_main()
    problems = one._load_problems(job.problems)
    by_id = {p.id: p for p in problems}

    # -------- resume: rank 0 looks at the checkpoint (and repairs a torn save), all ranks follow
    ckpt = run / "checkpoint"
    state = _on_main(lambda: _prepare_run(run, cfg, ckpt))
    first_step = state["loop_step"] + 1 if state else 1
    start = str(ckpt) if state else job.model
    trainer = FSDPTrainer(start, cfg)
    sampler = _Sampler(start, trainer) if job.engine == "hf" else _VLLMSampler(job, start, trainer)
    info(
        f"{world_size()} processes | problems {len(problems)} | steps {first_step}..{cfg.steps} | "
        f"{cfg.train_batch_size} problems x G={cfg.n} per step | algo {cfg.algo}"
    )
    if state:
        info(f"resuming after step {state['loop_step']} (optimizer step {trainer.step})")

    # rank 0's sampling copy starts from the same folder as the policy: no sync before step 1
    schedule = one._temperature(job, run, sampler.engine, trainer.tokenizer, problems, first_step) if main else None
    with Judge(JudgeConfig(**job.judge)) if main else nullcontext() as judge:
        for step in range(first_step, cfg.steps + 1):
            # 1-2. rollout and judge, on rank 0, from the policy as it is now
            if step > first_step:
                sampler.sync()
            batch = _on_main(
                lambda step=step: _sample_and_judge(
                    job, step, problems, by_id, sampler, judge, trainer, schedule
                )
            )
            rollouts, verdicts, timing = batch

            # 3. update, every rank on its share of the groups
            metrics = trainer.train_on_batch(rollouts, {v.rollout_id: v for v in verdicts})
            if main:
                step_dir = run / f"step_{step:04d}"
                one._write(
                    step_dir / "samples.jsonl", "rollout_id", [s.to_row() for s in trainer.last_samples]
                )
                metrics.update(batch_diversity(rollouts))
                metrics.update({"step": step, "processes": world_size(), **timing})
                one._append_metrics(run / "metrics.jsonl", metrics)
                info(one._progress_line(step, cfg.steps, metrics))

            # 4. checkpoint (gathered by all ranks, written by rank 0)
            if step % cfg.save_every == 0 or step == cfg.steps:
                trainer.save(ckpt, extra_state={"loop_step": step})
            sampler.after_step(ckpt, step)
    barrier()
    emit(str(ckpt))
    return ckpt


def _on_main(fn):
    """``fn()`` on rank 0, its result (or its error) on every rank: no rank waits forever on a
    collective that rank 0 never reaches because it raised."""
    result, error = None, None
    if is_main():
        try:
            result = fn()
        except Exception as e:  # noqa: BLE001 - re-raised below, on every rank
            error = e
    result, error = broadcast((result, error))
    if error is not None:
        raise error
    return result


def _prepare_run(run: Path, cfg, ckpt: Path):
    run.mkdir(parents=True, exist_ok=True)
    state = read_state(ckpt)
    one._check_same_config(run, cfg, resumed=state is not None)
    one._trim_metrics(run / "metrics.jsonl", last_step=(state["loop_step"] if state else 0))
    return state


def _sample_and_judge(job, step, problems, by_id, sampler, judge, trainer, schedule):
    from mcoder.rollout.sample import make_rollouts

    cfg = job.cfg
    T = schedule(step)
    rng = random.Random(cfg.seed * 1_000_003 + step)
    t0 = time.perf_counter()
    batch = rng.sample(problems, min(cfg.train_batch_size, len(problems)))
    rollouts = make_rollouts(
        batch, sampler.engine, trainer.tokenizer, n=cfg.n, max_tokens=job.max_tokens, temperature=T,
        seed=cfg.seed + step, model_name=job.model, policy_version=trainer.policy_version,
    )  # fmt: skip
    t1 = time.perf_counter()
    verdicts = judge.judge(by_id, rollouts)
    t2 = time.perf_counter()
    rollouts, verdicts, rounds = one._dynamic_sampling(
        job,
        rng,
        problems,
        batch,
        rollouts,
        verdicts,
        sampler.engine,
        trainer.tokenizer,
        judge,
        trainer,
        T,
        step,
    )
    t3 = time.perf_counter()
    step_dir = job.run_dir / f"step_{step:04d}"
    one._write(step_dir / "rollouts.jsonl", "id", rollouts)
    one._write(step_dir / "verdicts.jsonl", "rollout_id", verdicts)
    tokens = sum(len(r.completion_token_ids or ()) for r in rollouts)
    timing = {
        "time/rollout": (t1 - t0) + (t3 - t2),
        "time/judge": t2 - t1,
        "rollout_tokens_per_s": tokens / max(t1 - t0, 1e-9),
        "resample_rounds": rounds,
    }
    return rollouts, verdicts, timing


class _Sampler:
    """hf engine on rank 0 over an unsharded copy of the policy, refreshed by ``sync``."""

    def __init__(self, start: str, trainer: FSDPTrainer):
        from mcoder.rollout.engines.hf_engine import HFEngine
        from mcoder.train.models import load_policy

        self.trainer = trainer
        self.engine = None
        self.copy = None
        if is_main():
            self.copy = load_policy(start, trainer.cfg).to(trainer.device).eval()
            self.engine = HFEngine(self.copy, trainer.tokenizer)

    def sync(self) -> None:
        """Gather the policy's weights (every rank) into rank 0's copy."""
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        full = get_model_state_dict(
            self.trainer.model, options=StateDictOptions(full_state_dict=True, cpu_offload=True)
        )
        if self.copy is not None:
            self.copy.load_state_dict(full, strict=False)  # a tied lm_head comes under both names

    def after_step(self, ckpt: Path, step: int) -> None:
        pass


class _VLLMSampler:
    """vLLM engine on rank 0, given each step's LoRA adapter (``set_adapter``: no restart)."""

    def __init__(self, job, start: str, trainer: FSDPTrainer):
        from mcoder.train.policy_sync import vllm_engine_for

        self.engine = vllm_engine_for(job, start) if is_main() else None
        self.trainer = trainer

    def sync(self) -> None:
        pass  # the adapter folder is handed over in after_step

    def after_step(self, ckpt: Path, step: int) -> None:
        from mcoder.train.policy_sync import publish_adapter

        publish_adapter(self.trainer, self.engine, ckpt.parent / "adapters", step)
