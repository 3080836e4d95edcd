"""`mcoder train`: policy updates from one rollout batch, or `--loop`: rollout, judge, update, repeat.

The few options of the command itself are written here; every training, sampling, loop and
judge setting is generated from its dataclass field (``mcoder.cli.options``), so the help text
is the field's docstring and cannot drift from it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from mcoder.cli.common import INPUT, OUTPUT_DIR, apply_quiet, guarded
from mcoder.cli.options import config_options, given, option, with_options
from mcoder.console import emit
from mcoder.errors import UsageError
from mcoder.judge.config import JudgeConfig
from mcoder.loop.config import LoopConfig
from mcoder.rollout.sampling import SamplingConfig
from mcoder.train.config import PRESET_TEMPERATURE, PRESETS, TrainConfig

IO = "Inputs and outputs"
LOOP_NOTE = " (loop)"
EPILOG = (
    "Examples:\n\n"
    "  mcoder train -m MODEL -r rollouts.jsonl --verdicts verdicts.jsonl -o ckpt --algo grpo\n\n"
    "  mcoder train --loop -m MODEL -p problems.jsonl --run-dir run --steps 100 -n 8 --lora-rank 16"
)


def _params() -> list:
    explicit = [
        option("model", str, "--model", "-m", default=..., help="Model folder (transformers format), or a checkpoint to continue.", panel=IO, role=INPUT),
        option("rollouts", Path | None, "--rollouts", "-r", help="Rollouts JSONL (one batch).", panel=IO, role=INPUT),
        option("verdicts", Path | None, "--verdicts", help="Verdicts JSONL of those rollouts.", panel=IO, role=INPUT),
        option("out", Path | None, "--out", "-o", help="Checkpoint folder to write.", panel=IO, role=OUTPUT_DIR),
        option("loop", bool, "--loop", default=False, help="Run rollout -> judge -> update for --steps steps.", panel=IO),
        option("problems", Path | None, "--problems", "-p", help="Loop: training problems JSONL.", panel=IO, role=INPUT),
        option("run_dir", Path | None, "--run-dir", help="Loop: run folder (resumed when it exists).", panel=IO, role=OUTPUT_DIR),
        option(
            "temperature", str | None, "--temperature", "-t", panel=IO,
            help="Single batch: T of the log-probs (default: the rollouts'). Loop: a number, 'auto' (chosen by "
            "diversity) or a schedule 'T@STEP,...' (" + ", ".join(f"{a} {t}" for a, t in PRESET_TEMPERATURE.items()) + ").",
        ),
        option("max_tokens", int | None, "--max-tokens", help="L_max (loop: the sampling limit, default 512; single batch: default the longest completion).", panel=IO),
        option("overwrite", bool, "--overwrite", default=False, help="Single batch: train again even if OUT holds this update.", panel=IO),
        option("quiet", bool, "--quiet", "-q", default=False, help="No progress bars or tables on stderr.", panel=IO),
    ]
    return [
        *explicit,
        *config_options(
            TrainConfig,
            skip={"logprob_temperature", "max_tokens"},
            preset_values=PRESETS,
        ),
        *config_options(LoopConfig, skip={"model", "problems", "run_dir"}, note=LOOP_NOTE),
        *config_options(
            SamplingConfig,
            skip={"temperature", "max_tokens", "temperature_candidates"},
            names={"n": ("--n", "-n")},
            note=LOOP_NOTE,
        ),
        *config_options(
            JudgeConfig,
            prefix="judge_",
            flag_prefix="judge_",
            names={"unsafe_no_sandbox": ("--unsafe-no-sandbox",), "allow_packages": ("--judge-allow-package",)},
            panel="Judge (loop)",
        ),
    ]


@guarded
def _train(**kw: Any) -> None:
    import json

    from mcoder.train.config import resolve

    apply_quiet(kw["quiet"])
    train_values = given(TrainConfig, kw)
    algo = train_values.pop("algo", "microcoder-grpo")
    if kw["loop"]:
        from mcoder.loop.loop import run_loop

        _require(loop=True, problems=kw["problems"], run_dir=kw["run_dir"], steps=kw["steps"])
        sampling = SamplingConfig(**given(SamplingConfig, kw))
        sampling.temperature = kw["temperature"] or PRESET_TEMPERATURE[algo]
        sampling.max_tokens = kw["max_tokens"] or sampling.max_tokens
        loop_values = {
            k: v for k, v in given(LoopConfig, kw).items() if k not in ("model", "problems", "run_dir")
        }
        run_loop(
            LoopConfig(
                model=kw["model"],
                problems=kw["problems"],
                run_dir=kw["run_dir"],
                train=resolve(algo, train_values),
                sampling=sampling,
                judge=JudgeConfig(**given(JudgeConfig, kw, prefix="judge_")),
                **loop_values,
            )
        )
        return

    from mcoder.train.stage import TrainJob, train_once

    _require(loop=False, rollouts=kw["rollouts"], verdicts=kw["verdicts"], out=kw["out"])
    train_values.update(max_tokens=kw["max_tokens"], logprob_temperature=_float(kw["temperature"]))
    metrics = train_once(
        TrainJob(
            model=kw["model"],
            rollouts=kw["rollouts"],
            verdicts=kw["verdicts"],
            out=kw["out"],
            cfg=resolve(algo, train_values),
            overwrite=kw["overwrite"],
        )
    )
    emit(json.dumps(metrics, sort_keys=True))
    emit(str(kw["out"]))


train = with_options(_train, _params())


def register(app: typer.Typer) -> None:
    app.command(
        "train",
        help="Update the policy from rollouts + verdicts (GRPO, DAPO, MicroCoder-GRPO), or run the whole --loop.",
        epilog=EPILOG,
        context_settings={"help_option_names": ["-h", "--help"]},
    )(train)


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
