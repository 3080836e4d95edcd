"""`mcoder train --loop`: rollout -> judge -> update, step after step.

One loop for one process and for torchrun alike. Reads top to bottom in the order things happen;
what only the main process does (sampling, judging, writing files, printing) sits behind one
flag, ``main`` (rank 0 under torchrun, always true in one process), as nanoGPT's
``master_process``. Under torchrun rank 0 samples and judges, the batch is broadcast, every rank
prepares the whole batch (advantages per group over the full batch) and trains on its share of
the groups (train/distributed.py). Every step leaves the files the single-stage commands would
have written (loop/run_folder.py), so any step can be replayed or inspected alone.

Killed and rerun with the same command, it continues after the last checkpointed step; steps
after that checkpoint are redone (their files rewritten, their metrics lines dropped).
Checkpoints are in the single-process format, so a run killed under torchrun can be resumed by
one process, and the other way round.
"""

from __future__ import annotations

import contextlib
import random
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from mcoder.console import emit, info
from mcoder.errors import DataError
from mcoder.jsonl import index_records
from mcoder.loop.config import LoopConfig
from mcoder.loop.run_folder import RunFolder
from mcoder.records import Problem


def run_loop(cfg: LoopConfig) -> Path:
    from mcoder.outputs import hold_lock
    from mcoder.train.distributed import broadcast_result, is_main, setup

    cfg.validate()
    run = RunFolder(cfg.run_dir)
    setup()  # joins torchrun's process group when launched by it; nothing in one process
    main = is_main()

    # -------- the problems (tests kept: the judge needs them)
    problems = load_problems(cfg.problems)
    by_id = {p.id: p for p in problems}

    # -------- one run at a time in a run folder (RUN.lock, held by the main process until the end)
    lock = contextlib.ExitStack()
    broadcast_result(lambda: lock.enter_context(hold_lock(run.root)) and None)
    with lock:
        return _run(cfg, run, problems, by_id, main)


def _run(
    cfg: LoopConfig, run: RunFolder, problems: list[Problem], by_id: dict[str, Problem], main: bool
) -> Path:
    from mcoder.judge.core import Judge
    from mcoder.loop.samplers import make_sampler
    from mcoder.loop.temperature import temperature_by_step
    from mcoder.train.distributed import barrier, broadcast_result, make_trainer, world_size

    tcfg = cfg.train

    # -------- the policy: fresh from --model, or resumed from the run's checkpoint
    state = broadcast_result(lambda: run.prepare(cfg))  # rank 0 looks (and repairs a torn save)
    first_step = state["loop_step"] + 1 if state else 1
    if first_step > cfg.steps:
        info(f"{run.root} already ran {first_step - 1} steps: nothing to do (a larger --steps goes on)")
        emit(str(run.checkpoint))
        return run.checkpoint
    start = str(run.checkpoint) if state else cfg.model
    trainer = make_trainer(start, tcfg)  # FSDP2 across ranks under torchrun
    sampler = make_sampler(cfg, start, trainer, run.adapters)

    # -------- derived sizes, printed before anything runs
    updates = -(-cfg.train_batch_size // tcfg.mini_batch_size)
    info(
        f"{world_size()} process(es) | problems {len(problems)} | steps {first_step}..{cfg.steps} | "
        f"{cfg.train_batch_size} problems x G={cfg.sampling.n} = {cfg.train_batch_size * cfg.sampling.n} "
        f"samples/step | L_max {cfg.sampling.max_tokens} | {updates} optimizer steps/step (mini-batch "
        f"{tcfg.mini_batch_size} groups, micro-batch {tcfg.micro_batch_size} seqs) | algo {tcfg.algo} | "
        f"trainable params {sum(p.numel() for p in trainer.params):,}"
    )
    if state:
        info(f"resuming after step {state['loop_step']} (optimizer step {trainer.step})")

    # -------- the sampling temperature: fixed, a staged schedule, or chosen by diversity in stages
    temperature = None
    if main:
        temperature = temperature_by_step(
            cfg.sampling, tcfg.seed, run.temperature, sampler.engine, trainer.tokenizer, problems, first_step
        )

    sync_s = 0.0  # bringing the engine to the policy: the last step's hand-over + this step's sync
    with Judge(cfg.judge) if main else nullcontext() as judge:
        for step in range(first_step, cfg.steps + 1):
            # 1-2. rollout and judge (main process), from the policy as it is now
            if step > first_step:
                t0 = time.perf_counter()
                sampler.sync()  # the sampling copy starts from the policy's own folder: no sync before the first
                sync_s += time.perf_counter() - t0
            rollouts, verdicts, timing = broadcast_result(
                lambda step=step: _sample_and_judge(
                    cfg, run, step, problems, by_id, sampler, judge, trainer, temperature
                )
            )

            # 3. update, every rank on its share of the groups (a GPU engine sleeps meanwhile)
            sampler.before_update()
            metrics = trainer.train_on_batch(rollouts, {v.rollout_id: v for v in verdicts})
            if main:
                from mcoder.rollout.diversity import batch_diversity

                run.write_step(step, "samples", "rollout_id", [s.to_row() for s in trainer.last_samples])
                metrics.update(batch_diversity(rollouts))
                metrics.update({"step": step, "processes": world_size(), "time/sync": sync_s, **timing})
                run.append_metrics(metrics)
                info(_progress_line(step, cfg.steps, metrics))

            # 4. checkpoint (atomic; under torchrun gathered by all ranks, written by rank 0):
            # a kill after this line resumes at the next step
            if step % cfg.save_every == 0 or step == cfg.steps:
                trainer.save(run.checkpoint, extra_state={"loop_step": step})
            t0 = time.perf_counter()
            sampler.after_step(step)  # LoRA: the adapter is written and handed over here
            sync_s = time.perf_counter() - t0
    barrier()
    emit(str(run.checkpoint))
    return run.checkpoint


def load_problems(path: Path) -> list[Problem]:
    """The training problems with their tests (the judge needs them); a repeated id is bad data."""
    problems = list(index_records(path, Problem, key=lambda p: p.id).values())
    if not problems:
        raise DataError("no problems to train on", path=str(path))
    return problems


def _sample_and_judge(
    cfg: LoopConfig, run: RunFolder, step, problems, by_id, sampler, judge, trainer, temperature
):
    """One step's batch: sample train_batch_size problems (G completions each), judge them, top
    up by dynamic sampling, write the step's rollouts and verdicts. Main process only."""
    T = temperature(step)
    rng = random.Random(cfg.train.seed * 1_000_003 + step)
    t0 = time.perf_counter()
    batch = rng.sample(problems, min(cfg.train_batch_size, len(problems)))
    rollouts = _rollouts(cfg, batch, sampler, trainer, T, seed=cfg.train.seed + step)
    t1 = time.perf_counter()
    verdicts = judge.judge(by_id, rollouts)
    t2 = time.perf_counter()
    rollouts, verdicts, rounds = _dynamic_sampling(
        cfg, rng, problems, rollouts, verdicts, sampler, judge, trainer, T, step
    )
    t3 = time.perf_counter()
    run.write_step(step, "rollouts", "id", rollouts)
    run.write_step(step, "verdicts", "rollout_id", verdicts)
    tokens = sum(len(r.completion_token_ids or ()) for r in rollouts)
    timing = {
        "time/rollout": (t1 - t0) + (t3 - t2),
        "time/judge": t2 - t1,
        "rollout_tokens_per_s": tokens / max(t1 - t0, 1e-9),
        "resample_rounds": rounds,
    }
    return rollouts, verdicts, timing


def _rollouts(cfg: LoopConfig, batch, sampler, trainer, T: float, seed: int):
    from mcoder.rollout.sample import make_rollouts

    return make_rollouts(
        batch,
        sampler.engine,
        trainer.tokenizer,
        n=cfg.sampling.n,
        max_tokens=cfg.sampling.max_tokens,
        temperature=T,
        seed=seed,
        model_name=cfg.model,
        policy_version=trainer.policy_version,
    )


def _dynamic_sampling(cfg: LoopConfig, rng, problems, rollouts, verdicts, sampler, judge, trainer, T, step):
    """DAPO: while fewer than train_batch_size groups carry signal (two different rewards), sample
    more problems not yet in this step. Returns the batch's rollouts and verdicts and the rounds taken."""
    tcfg = cfg.train
    rounds = 0
    while tcfg.dynamic_sampling and rounds < cfg.max_resample_rounds:
        rewards: dict[str, set[float]] = {}
        for v in verdicts:
            rewards.setdefault(v.problem_id, set()).add(v.reward)
        useful = sum(len(r) > 1 for r in rewards.values())
        unused = [p for p in problems if p.id not in rewards]
        if useful >= cfg.train_batch_size or not unused:
            break
        rounds += 1
        more = rng.sample(unused, min(cfg.train_batch_size - useful, len(unused)))
        new = _rollouts(cfg, more, sampler, trainer, T, seed=tcfg.seed + step + 7919 * rounds)
        rollouts = rollouts + new
        verdicts = verdicts + judge.judge({p.id: p for p in more}, new)
    return rollouts, verdicts, rounds


def _progress_line(step: int, steps: int, m: dict[str, Any]) -> str:
    return (
        f"step {step}/{steps} | reward {m['reward/mean']:.3f} | pass {m['pass_rate']:.2f} | "
        f"len {m['length/mean']:.0f} | trunc {m['truncated_rate']:.2f} | masked {m['masked_count']} | "
        f"loss {m.get('loss', 0.0):.4f} | kl {m.get('kl', 0.0):.4f} | T {m['temperature']:g} | "
        f"rollout {m['time/rollout']:.1f}s judge {m['time/judge']:.1f}s train {m['time/train']:.1f}s "
        f"sync {m['time/sync']:.1f}s"
    )
