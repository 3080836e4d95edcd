"""`mcoder loop`: rollout -> judge -> update, step after step.

One loop for one process and for torchrun alike. Reads top to bottom in the order things happen;
what only the main process does (writing files, printing) sits behind one flag, ``main`` (rank 0
under torchrun, always true in one process), as nanoGPT's ``master_process``. Under torchrun
every rank samples and judges its share of the step's problem groups with its own engine and
the batch is gathered on every rank (loop/sample_judge.py: the files do not depend on the
split); every rank prepares the whole batch (advantages per group over the full batch) and
trains on its share of the groups (train/distributed.py). With ``--off-policy 1`` the next
step's batch is sampled and judged in a thread while this step trains (from the policy before
this step's update: one step behind, its π_old the recorded sampling log-probs); a resumed run
samples its first step afresh. Every step leaves the files the single-stage commands would
have written (loop/run_folder.py), so any step can be replayed or inspected alone.

Killed and rerun with the same command, it continues after the last checkpointed step; steps
after that checkpoint are redone (their files rewritten, their metrics lines dropped).
Checkpoints are in the single-process format, so a run killed under torchrun can be resumed by
one process, and the other way round.
"""

from __future__ import annotations

import contextlib
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from mcoder.console import emit, info
from mcoder.errors import DataError
from mcoder.jsonl import index_records
from mcoder.loop.config import LoopConfig
from mcoder.loop.run_folder import RunFolder
from mcoder.records import Problem


def run_loop(cfg: LoopConfig) -> Path:
    from mcoder.train.distributed import broadcast_result, is_main, setup

    cfg.validate()
    run = RunFolder(cfg.run_dir)
    setup(cfg.train.dist_timeout_s)  # joins torchrun's process group when launched by it; nothing in one process
    main = is_main()

    # -------- the run folder is an output like any other (RUN.lock and RUN.meta.json, held by the
    # main process until the end): refused when mcoder did not make it, resumed only from the
    # same problems and model (by content: moving or copying them is no change)
    lock = contextlib.ExitStack()
    broadcast_result(lambda: lock.enter_context(claim_run_folder(cfg)) and None)
    with lock, contextlib.closing(run):  # closing: the --report-to loggers
        # -------- the problems (tests kept: the judge needs them)
        problems = load_problems(cfg.problems)
        return _run(cfg, run, problems, main)


def claim_run_folder(cfg: LoopConfig):
    """``mcoder.outputs.claim_output`` on RUN: the settings themselves are compared through
    RUN/config.json (``RunFolder.prepare``: some may change on a resume, such as --steps)."""
    from mcoder.outputs import claim_output

    return claim_output(
        cfg.run_dir, stage="loop", settings={}, inputs={"problems": cfg.problems, "model": cfg.model},
        kind="dir", expect=("config.json",), flag="--run-dir", can_overwrite=False,
    )  # fmt: skip


def _run(cfg: LoopConfig, run: RunFolder, problems: list[Problem], main: bool) -> Path:
    from mcoder.loop.sample_judge import sample_and_judge
    from mcoder.loop.samplers import make_sampler
    from mcoder.loop.temperature_stages import loop_temperatures
    from mcoder.train.distributed import (
        barrier,
        broadcast_result,
        gather_results,
        make_trainer,
        side_group,
        world_size,
    )

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
    # the engines start from a folder of weights: a sharded checkpoint saved mid-run has none (its
    # base model's, then a sync before the first rollout brings them to the policy)
    sampler = make_sampler(cfg, trainer.source, trainer, run.adapters)
    stale_engine = trainer.source != start
    save_every = default_save_every(trainer) if cfg.save_every is None else cfg.save_every

    # -------- derived sizes, printed before anything runs
    updates = -(-cfg.train_batch_size // tcfg.mini_batch_size)
    info(
        f"{world_size()} process(es) | problems {len(problems)} | steps {first_step}..{cfg.steps} | "
        f"{cfg.train_batch_size} problems x G={cfg.sampling.n} = {cfg.train_batch_size * cfg.sampling.n} "
        f"samples/step | L_max {cfg.sampling.max_tokens} | {updates} optimizer steps/step (mini-batch "
        f"{tcfg.mini_batch_size} groups, micro-batch {tcfg.micro_batch_size} seqs) | algo {tcfg.algo} | "
        f"trainable params {sum(p.numel() for p in trainer.params):,} | {tcfg.dtype} compute | "
        + (f"checkpoint every {save_every} step(s)" if save_every else "no checkpoint (--save-every 0)")
    )
    if state:
        info(f"resuming after step {state['loop_step']} (optimizer step {trainer.step})")

    sync_s = 0.0  # bringing the engines to the policy: the last step's hand-over + this step's sync
    ahead = None  # --off-policy 1: the next step's batch, sampled and judged while this step trains
    side = side_group() if cfg.off_policy else None  # that thread's collectives, apart from the trainer's
    with (
        judge_client(cfg) as judge,  # each rank's judge has its share of the cores, or the services
        ThreadPoolExecutor(1, thread_name_prefix="sample-ahead") as sampling,
    ):
        # -------- the sampling temperature: fixed, a staged schedule, or chosen by diversity in
        # stages (the probe dealt over the ranks, each judging its share for the pass-rate guard)
        temperature = loop_temperatures(
            cfg.sampling, tcfg.seed, run.temperature, sampler.engine, trainer.tokenizer, problems, first_step, judge
        )
        try:
            for step in range(first_step, cfg.steps + 1):
                # 1-2. rollout and judge (every rank its share of the groups)
                step_t0 = time.perf_counter()
                if ahead is not None:  # sampled from the policy before the last update, while that update ran
                    rollouts, verdicts, timing = ahead.result()
                    timing["time/sample_wait"] = time.perf_counter() - step_t0
                if step > first_step or stale_engine:
                    t0 = time.perf_counter()
                    sampler.sync()  # the sampling copy starts from the policy's own folder: no sync before the first
                    sync_s += time.perf_counter() - t0
                    stale_engine = False
                if ahead is None:  # on-policy: from the policy as it is now
                    # T: measured at a stage's start by every rank (its share of the probe); rank 0's
                    T = gather_results(lambda step=step: temperature(step))[0]
                    rollouts, verdicts, timing = sample_and_judge(
                        cfg, step, problems, sampler, judge, trainer, T, trainer.policy_version
                    )
                ahead = None
                if cfg.off_policy and step < cfg.steps:
                    T = gather_results(lambda step=step: temperature(step + 1))[0]
                    version = trainer.policy_version  # the engine's policy: this step's update has not run
                    args = (cfg, step + 1, problems, sampler, judge, trainer, T, version, side)
                    ahead = sampling.submit(sample_and_judge, *args)
                if main:
                    run.write_step(step, "rollouts", "id", rollouts)
                    run.write_step(step, "verdicts", "rollout_id", verdicts)

                # 3. update, every rank on its share of the groups (a GPU engine sleeps meanwhile,
                # unless it samples the next step)
                t0 = time.perf_counter()
                if ahead is None:
                    sampler.before_update()
                metrics = trainer.train_on_batch(rollouts, {v.rollout_id: v for v in verdicts})
                update_s = time.perf_counter() - t0
                if main:
                    from mcoder.rollout.diversity import batch_diversity

                    run.write_step(step, "samples", "rollout_id", [s.to_row() for s in trainer.last_samples])
                    metrics.update(batch_diversity(rollouts))
                    metrics.update(
                        {
                            "step": step,
                            "processes": world_size(),
                            "time/sync": sync_s,
                            "time/update": update_s,  # the engine set aside, then the trainer's time/train
                            "time/step": time.perf_counter() - step_t0,
                            **timing,
                        }
                    )
                    run.append_metrics(metrics)
                    info(_progress_line(step, cfg.steps, metrics))

                # 4. checkpoint (atomic; under torchrun each rank writes its shards, in the background,
                # and whole weights only at the end): a kill once it is in place resumes at the next step
                if save_every and (step % save_every == 0 or step == cfg.steps):
                    trainer.save(run.checkpoint, extra_state=run.checkpoint_state(step), final=step == cfg.steps)
                t0 = time.perf_counter()
                sampler.after_step(step)  # LoRA: the adapter is written and handed over here
                sync_s = time.perf_counter() - t0
        except KeyboardInterrupt:
            # Ctrl-C: the judge stops now (queued candidates never start, running ones are
            # killed) instead of finishing its batch; the rerun continues after the checkpoint
            judge.abort()
            sampling.shutdown(wait=False, cancel_futures=True)
            raise
    trainer.wait_for_saves()
    barrier()
    emit(str(run.checkpoint))
    return run.checkpoint


# --save-every not given: every step while a checkpoint is small, else every SAVE_EVERY_LARGE steps.
# A checkpoint holds 12 bytes a trainable parameter (float32 weights and AdamW's two moments): at
# Qwen3-1.7B 21 GB, minutes of writing a step; the steps after a checkpoint are redone on a resume.
SMALL_CHECKPOINT_BYTES = 2e9
SAVE_EVERY_LARGE = 10


def default_save_every(trainer) -> int:
    trainable = sum(p.numel() for p in trainer.params)  # (a sharded parameter counts whole)
    return 1 if 12 * trainable <= SMALL_CHECKPOINT_BYTES else SAVE_EVERY_LARGE


def load_problems(path: Path) -> list[Problem]:
    """The training problems with their tests (the judge needs them); a repeated id is bad data."""
    problems = list(index_records(path, Problem, key=lambda p: p.id).values())
    if not problems:
        raise DataError("no problems to train on", path=str(path))
    untested = [p.id for p in problems if not p.tests]
    if untested:  # every rollout of it would be graded wrong: a reward signal that means nothing
        raise DataError(
            f"{len(untested)} problems have no tests (e.g. {', '.join(map(repr, untested[:3]))})",
            path=str(path), field="tests",
            hint="drop them (mcoder dataset build --min-tests 1), or add their tests",
        )  # fmt: skip
    return problems


def judge_client(cfg: LoopConfig):
    """The loop's judge: this machine's sandboxed workers, or the --judge-url services."""
    if cfg.judge_url:
        import os

        from mcoder.integrations.remote import RemoteJudge

        return RemoteJudge(list(cfg.judge_url), token=os.environ.get("MCODER_JUDGE_TOKEN"), expect=cfg.judge)
    from mcoder.judge.core import Judge

    return Judge(judge_share(cfg.judge))


def judge_share(cfg):
    """This rank's judge settings: the judge's workers (one per core by default) split between
    the ranks of a node, which all judge at once."""
    import dataclasses

    from mcoder.judge.config import default_workers
    from mcoder.train.distributed import world_size

    workers = cfg.workers if cfg.workers > 0 else default_workers()
    return dataclasses.replace(cfg, workers=max(1, workers // world_size()))


def _progress_line(step: int, steps: int, m: dict[str, Any]) -> str:
    return (
        f"step {step}/{steps} | reward {m['reward/mean']:.3f} | pass {m['pass_rate']:.2f} | "
        f"len {m['length/mean']:.0f} | trunc {m['truncated_rate']:.2f} | masked {m['masked_count']} | "
        f"loss {m.get('loss', 0.0):.4f} | kl {m.get('kl', 0.0):.4f} | T {m['temperature']:g} | "
        f"rollout {m['time/rollout']:.1f}s judge {m['time/judge']:.1f}s train {m['time/train']:.1f}s "
        f"sync {m['time/sync']:.1f}s"
    )
