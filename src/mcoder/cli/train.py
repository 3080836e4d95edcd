"""`mcoder train`: policy updates from one rollout batch, or `--loop`: rollout, judge, update, repeat."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mcoder.cli.common import ModelPath, Overwrite, Quiet, Seed, apply_quiet, guarded
from mcoder.console import emit
from mcoder.errors import UsageError


def register(app: typer.Typer) -> None:
    app.command(
        "train",
        help="Update the policy from rollouts + verdicts (GRPO, DAPO, MicroCoder-GRPO), or run the whole --loop.",
    )(train)


Opt = typer.Option


@guarded
def train(
    model: ModelPath,
    rollouts: Annotated[Path | None, Opt("--rollouts", "-r", help="Rollouts JSONL (one batch).")] = None,
    verdicts: Annotated[Path | None, Opt("--verdicts", help="Verdicts JSONL of those rollouts.")] = None,
    out: Annotated[Path | None, Opt("--out", "-o", help="Checkpoint folder to write.")] = None,
    loop: Annotated[bool, Opt("--loop", help="Run rollout -> judge -> update for --steps steps.")] = False,
    problems: Annotated[Path | None, Opt("--problems", "-p", help="Loop: training problems JSONL.")] = None,
    run_dir: Annotated[
        Path | None, Opt("--run-dir", help="Loop: run folder (resumed when it exists).")
    ] = None,
    steps: Annotated[int | None, Opt("--steps", help="Loop: steps to run.")] = None,
    algo: Annotated[str, Opt("--algo", help="Preset: grpo, dapo or microcoder-grpo.")] = "microcoder-grpo",
    n: Annotated[int | None, Opt("--n", "-n", help="Loop: samples per problem (G).")] = None,
    train_batch_size: Annotated[
        int | None, Opt("--train-batch-size", help="Loop: problems per step.")
    ] = None,
    max_tokens: Annotated[
        int | None, Opt("--max-tokens", help="L_max (loop: sampling limit; default 512).")
    ] = None,
    temperature: Annotated[
        str | None,
        Opt(
            "--temperature",
            "-t",
            help="Single batch: T of the log-probs (default: the rollouts'). "
            "Loop: a number, 'auto' (chosen by diversity) or a schedule 'T@STEP,...'.",
        ),
    ] = None,
    lora_rank: Annotated[int | None, Opt("--lora-rank", help="LoRA rank (0: full fine-tuning).")] = None,
    lr: Annotated[float | None, Opt("--lr", help="AdamW learning rate.")] = None,
    warmup_steps: Annotated[
        int | None, Opt("--warmup-steps", help="Linear warm-up, optimizer steps.")
    ] = None,
    max_grad_norm: Annotated[float | None, Opt("--max-grad-norm", help="Gradient clipping (0: off).")] = None,
    weight_decay: Annotated[float | None, Opt("--weight-decay", help="AdamW weight decay.")] = None,
    mini_batch_size: Annotated[
        int | None, Opt("--mini-batch-size", help="Prompt groups per optimizer step.")
    ] = None,
    micro_batch_size: Annotated[
        int | None, Opt("--micro-batch-size", help="Sequences per forward/backward (gradient accumulation).")
    ] = None,
    recompute_old_logprobs: Annotated[
        bool | None,
        Opt(
            "--recompute-old-logprobs/--rollout-logprobs",
            help="π_old from the model before the update, or from the rollouts' sampling_logprobs.",
        ),
    ] = None,
    eps_low: Annotated[float | None, Opt("--eps-low", help="ε: lower clip 1-ε.")] = None,
    eps_high: Annotated[float | None, Opt("--eps-high", help="ε_high: upper clip 1+ε_high.")] = None,
    beta: Annotated[float | None, Opt("--beta", help="KL weight β (0 loads no reference model).")] = None,
    loss_agg: Annotated[str | None, Opt("--loss-agg", help="token, sequence or constant.")] = None,
    truncation: Annotated[
        str | None,
        Opt("--truncation", help="Truncated outputs: none, all (DAPO) or conditional (MicroCoder)."),
    ] = None,
    mask_rho: Annotated[float | None, Opt("--mask-rho", help="ρ of conditional truncation masking.")] = None,
    mask_repeat_m: Annotated[int | None, Opt("--mask-repeat-m", help="m of the repetition test.")] = None,
    mask_non_incorrect: Annotated[
        str | None, Opt("--mask-non-incorrect", help="accepted or accepted_or_no_code.")
    ] = None,
    overlong_penalty: Annotated[
        bool | None, Opt("--overlong-penalty/--no-overlong-penalty", help="DAPO soft overlong punishment.")
    ] = None,
    dynamic_sampling: Annotated[
        bool | None, Opt("--dynamic-sampling/--no-dynamic-sampling", help="Drop zero-variance groups.")
    ] = None,
    dtype: Annotated[str | None, Opt("--dtype", help="float32 or bfloat16.")] = None,
    device: Annotated[
        str | None, Opt("--device", help="auto (cuda when present), cpu, cuda or cuda:N.")
    ] = None,
    save_every: Annotated[int | None, Opt("--save-every", help="Loop: checkpoint every N steps.")] = None,
    unsafe_no_sandbox: Annotated[
        bool, Opt("--unsafe-no-sandbox", help="Loop: judge without isolation (only inside outer isolation).")
    ] = False,
    judge_workers: Annotated[int, Opt("--judge-workers", help="Loop: judge workers (0: one per core).")] = 0,
    diversity_target: Annotated[
        float | None,
        Opt("--diversity-target", help="Loop, --temperature auto: the diversity T must reach (default 0.5)."),
    ] = None,
    probe_problems: Annotated[
        int, Opt("--probe-problems", help="Loop, --temperature auto: problems sampled to measure D(T).")
    ] = 8,
    temperature_stage_steps: Annotated[
        int,
        Opt(
            "--temperature-stage-steps",
            help="Loop, --temperature auto: measure diversity again every K steps and re-pick T "
            "(a new stage; 0: once, before step 1).",
        ),
    ] = 0,
    engine: Annotated[
        str, Opt("--engine", help="Loop: rollout engine, hf (the live policy) or vllm (needs --lora-rank).")
    ] = "hf",
    tensor_parallel_size: Annotated[
        int, Opt("--tensor-parallel-size", help="Loop, vllm: GPUs the rollout engine is split over.")
    ] = 1,
    seed: Seed = 0,
    overwrite: Overwrite = False,
    quiet: Quiet = False,
) -> None:
    import json

    from mcoder.train.config import resolve

    apply_quiet(quiet)
    overrides = {
        "lora_rank": lora_rank,
        "lr": lr,
        "warmup_steps": warmup_steps,
        "max_grad_norm": max_grad_norm,
        "weight_decay": weight_decay,
        "mini_batch_size": mini_batch_size,
        "micro_batch_size": micro_batch_size,
        "recompute_old_logprobs": recompute_old_logprobs,
        "eps_low": eps_low,
        "eps_high": eps_high,
        "beta": beta,
        "loss_agg": loss_agg,
        "truncation": truncation,
        "mask_rho": mask_rho,
        "mask_repeat_m": mask_repeat_m,
        "mask_non_incorrect": mask_non_incorrect,
        "overlong_penalty": overlong_penalty,
        "dynamic_sampling": dynamic_sampling,
        "dtype": dtype,
        "device": device,
        "seed": seed,
    }
    if loop:
        from mcoder.train.loop import LoopJob, run_loop

        _require(loop=True, problems=problems, run_dir=run_dir, steps=steps)
        overrides.update(
            steps=steps,
            n=n,
            train_batch_size=train_batch_size,
            save_every=save_every,
            sampling_temperature=temperature,
        )
        judge = {"workers": judge_workers, "unsafe_no_sandbox": unsafe_no_sandbox}
        run_loop(
            LoopJob(
                model=model,
                problems=problems,
                run_dir=run_dir,
                cfg=resolve(algo, overrides),
                max_tokens=max_tokens or 512,
                judge=judge,
                engine=engine,
                tensor_parallel_size=tensor_parallel_size,
                diversity_target=diversity_target,
                probe_problems=probe_problems,
                temperature_stage_steps=temperature_stage_steps,
            )
        )
        return

    from mcoder.train.run import TrainJob, train_once

    _require(loop=False, rollouts=rollouts, verdicts=verdicts, out=out)
    overrides.update(max_tokens=max_tokens, temperature=_float(temperature))
    metrics = train_once(
        TrainJob(
            model=model,
            rollouts=rollouts,
            verdicts=verdicts,
            out=out,
            cfg=resolve(algo, overrides),
            overwrite=overwrite,
        )
    )
    emit(json.dumps(metrics, sort_keys=True))
    emit(str(out))


def _require(*, loop: bool, **values) -> None:
    missing = [k for k, v in values.items() if v is None]
    if missing:
        flags = ", ".join("--" + k.replace("_", "-") for k in missing)
        mode = "--loop" if loop else "single-batch training"
        raise UsageError(
            f"{mode} needs {flags}",
            hint="mcoder train --model M --rollouts R --verdicts V --out CKPT, or "
            "mcoder train --loop --model M --problems P --run-dir RUN --steps N",
        )


def _float(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        raise UsageError(
            f"--temperature {text!r} is not a number",
            hint="single-batch training takes the sampling temperature as a number",
        ) from None
