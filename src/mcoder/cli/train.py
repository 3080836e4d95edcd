"""`mcoder train`: policy updates from one rollout batch (GRPO, DAPO, MicroCoder-GRPO).

The few options of the command itself (inputs and outputs) are written here; every training
setting is generated from its ``TrainConfig`` field (``mcoder.cli.options``), so the help text is
the field's docstring and cannot drift from it. The loop (rollout, judge, update, repeat) is
``mcoder loop`` (``mcoder.cli.loop``); ``mcoder train --loop ...`` still runs it, with a notice.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import click
import typer
from typer.core import TyperCommand

from mcoder.cli.common import INPUT, OUTPUT_DIR, apply_quiet, guarded
from mcoder.cli.options import config_options, given, option, with_options
from mcoder.config import flag
from mcoder.console import emit
from mcoder.errors import UsageError
from mcoder.judge.config import JudgeConfig
from mcoder.train.config import TrainConfig, presets

IO = "Inputs and outputs"
EPILOG = (
    "Example:\n\n"
    "  mcoder train -m MODEL -r rollouts.jsonl --verdicts verdicts.jsonl -o ckpt --algo grpo\n\n"
    "The loop (rollout -> judge -> update, step after step) is mcoder loop."
)
# TrainConfig fields `mcoder train` does not offer: how long torchrun's collectives may wait is a
# setting of multi-process runs, which are loops (`mcoder loop`, or a recipe file's [train]).
SKIP = frozenset({"dist_timeout_s"})
NAMES = {"logprob_temperature": ("--temperature", "-t")}  # the rollouts' sampling temperature


def _params() -> list:
    explicit = [
        option("model", str, "--model", "-m", default=..., help="Model folder (transformers format), or a checkpoint to continue.", panel=IO, role=INPUT),
        option("rollouts", Path | None, "--rollouts", "-r", help="Rollouts JSONL (one batch).", panel=IO, role=INPUT),
        option("verdicts", Path | None, "--verdicts", help="Verdicts JSONL of those rollouts.", panel=IO, role=INPUT),
        option("out", Path | None, "--out", "-o", help="Checkpoint folder to write.", panel=IO, role=OUTPUT_DIR),
        option("overwrite", bool, "--overwrite", default=False, help="Train again even if OUT holds this update.", panel=IO),
        option("quiet", bool, "--quiet", "-q", default=False, help="No progress bars or tables on stderr.", panel=IO),
        option("print_config", bool, "--print-config", default=False, help="Print the resolved settings (JSON, OUT/trainer/train_config.json's; null: read from the rollouts) and train nothing.", panel=IO),
    ]
    return [*explicit, *config_options(TrainConfig, skip=SKIP, names=NAMES, preset_values=presets())]


@guarded
def _train(**kw: Any) -> None:
    import json

    from mcoder.train.config import resolve
    from mcoder.train.stage import TrainJob, train_once

    apply_quiet(kw["quiet"])
    values = given(TrainConfig, kw)
    algo = values.pop("algo", "microcoder-grpo")
    if kw["print_config"]:
        from mcoder.console import document

        document(resolve(algo, values).settle().to_json() + "\n")
        return
    missing = [k for k in ("rollouts", "verdicts", "out") if kw[k] is None]
    if missing:
        raise UsageError(
            f"mcoder train needs {', '.join('--' + k for k in missing)}",
            hint="mcoder train --model M --rollouts R --verdicts V --out CKPT (the loop is mcoder loop)",
        )
    metrics = train_once(
        TrainJob(
            model=kw["model"],
            rollouts=kw["rollouts"],
            verdicts=kw["verdicts"],
            out=kw["out"],
            cfg=resolve(algo, values),
            overwrite=kw["overwrite"],
        )
    )
    emit(json.dumps(metrics, sort_keys=True))
    emit(str(kw["out"]))


train = with_options(_train, _params())


# ---------------------------------------------------------------- `train --loop`: `mcoder loop` now


def old_loop_flags() -> dict[str, str]:
    """The judge options' spellings under `train --loop` (``--judge-timeout-s``, ``--no-judge-cache``,
    ``--judge-allow-package``) -> `mcoder loop`'s (those of `mcoder judge`)."""
    out = {"--judge-allow-package": "--allow-package"}
    for name in JudgeConfig.__dataclass_fields__:
        if name in ("unsafe_no_sandbox", "allow_packages"):
            continue  # (the first was already --unsafe-no-sandbox)
        out[flag("judge_" + name)] = flag(name)
        out[f"--no-judge-{name.replace('_', '-')}"] = f"--no-{name.replace('_', '-')}"
    return out


def loop_args(args: list[str]) -> list[str]:
    """The arguments of `mcoder train --loop ARGS` as `mcoder loop`'s: --loop dropped, the judge
    options renamed, --overwrite (which the loop never read) dropped."""
    renamed = old_loop_flags()
    out = []
    for i, arg in enumerate(args):
        if arg == "--":
            return out + args[i:]
        name, eq, value = arg.partition("=")
        if arg in ("--loop", "--overwrite"):
            continue
        out.append(renamed[name] + eq + value if name in renamed else arg)
    return out


class TrainCommand(TyperCommand):
    """`mcoder train`, which hands `--loop ...` to `mcoder loop` (with a one-line notice)."""

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any):
        head = args[: args.index("--")] if "--" in args else args
        if "--loop" not in head:
            return super().make_context(info_name, args, parent=parent, **extra)
        new = loop_args(list(args))
        print(f"notice: `mcoder train --loop` is `mcoder loop` now; running: mcoder loop {shlex.join(new)}", file=sys.stderr)
        if parent is not None and isinstance(parent.command, click.Group):
            command = parent.command.get_command(parent, "loop")
        else:
            from mcoder.cli.app import app

            command = typer.main.get_command(app).commands["loop"]  # type: ignore[attr-defined]
        return command.make_context("loop", new, parent=parent, **extra)


def register(app: typer.Typer) -> None:
    app.command(
        "train",
        cls=TrainCommand,
        help="Update the policy from one batch of rollouts + verdicts (GRPO, DAPO, MicroCoder-GRPO).",
        epilog=EPILOG,
        context_settings={"help_option_names": ["-h", "--help"]},
    )(train)
