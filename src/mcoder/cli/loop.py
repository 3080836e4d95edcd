"""`mcoder loop`: rollout -> judge -> update, step after step, in one run folder.

The options of the command itself (inputs, outputs, the recipe) are written here; every training,
loop, sampling and judge setting is generated from its dataclass field (``mcoder.cli.options``),
so the help text is the field's docstring. A recipe file (``--config``, the shape of
``RUN/config.json``, ``mcoder.loop.recipe``) and ``--set section.key=value`` give the same
settings: field defaults < --config files (in order) < plain options < --set. ``--print-config``
prints the settings they resolve to and runs nothing.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any

import typer

from mcoder.cli import judge as cli_judge
from mcoder.cli.common import INPUT, OUTPUT_DIR, apply_quiet, guarded
from mcoder.cli.options import config_options, given, option, with_options
from mcoder.judge.config import JudgeConfig
from mcoder.loop.config import LoopConfig
from mcoder.rollout.sampling import SamplingConfig
from mcoder.train.config import ALGOS, TrainConfig, preset_temperature, presets

IO = "Inputs and outputs"
EPILOG = (
    "Examples:\n\n"
    "  mcoder loop -m MODEL -p problems.jsonl --run-dir run --steps 100 -n 8 --lora-rank 16\n\n"
    "  mcoder loop --config recipes/microcoder-grpo.toml -m MODEL -p problems.jsonl --run-dir run "
    "--set train.mask_rho=0.2\n\n"
    "  mcoder loop --config run/config.json --run-dir run    (a run's own settings restart it)"
)
# Training fields the loop sets itself: L_max is its sampling limit, T the rollouts' temperature.
TRAIN_SKIP = frozenset({"logprob_temperature", "max_tokens"})
LOOP_SKIP = frozenset({"model", "problems", "run_dir"})
SAMPLING_SKIP = frozenset({"temperature_candidates"})  # (a list of floats: --set sampling.temperature_candidates=[...])
SAMPLING_NAMES = {"n": ("--n", "-n"), "temperature": ("--temperature", "-t")}


# ---------------------------------------------------------------- the judge's options
# Named as in `mcoder judge` (a JudgeConfig field x_y is --x-y; allow_packages is --allow-package;
# on by default: --no-x-y). These two functions are the only place the loop names them.


def judge_params() -> list[inspect.Parameter]:
    return cli_judge.judge_params(panel="Judge")


def judge_values(kw: dict[str, Any]) -> dict[str, Any]:
    """The judge settings the user gave as options (``{field: value}``)."""
    return given(JudgeConfig, kw, prefix=cli_judge.PREFIX)


# ---------------------------------------------------------------- the command


def _params() -> list[inspect.Parameter]:
    explicit = [
        option("model", str | None, "--model", "-m", help="Model folder to start from (transformers format); a recipe's model otherwise.", panel=IO, role=INPUT),
        option("problems", Path | None, "--problems", "-p", help="Training problems JSONL; a recipe's problems otherwise.", panel=IO, role=INPUT),
        option("run_dir", Path | None, "--run-dir", help="Run folder: per-step files, metrics, the checkpoint (resumed when it exists).", panel=IO, role=OUTPUT_DIR),
        _repeated(
            "config", Path, "--config", "-c", metavar="<file>", role=INPUT,
            help="Recipe file (TOML, or a run's RUN/config.json): loop, train, sampling and judge tables, and "
            "model, problems. Repeat to layer files (the later wins); options given here win over them.",
        ),
        _repeated(
            "set", str, "--set", metavar="<key=value>",
            help="SECTION.KEY=VALUE over everything else (repeatable), the value read as TOML, "
            "e.g. --set train.mask_rho=0.5 --set sampling.temperature=auto.",
        ),
        option("quiet", bool, "--quiet", "-q", default=False, help="No progress bars or tables on stderr.", panel=IO),
        option("print_config", bool, "--print-config", default=False, help="Print the resolved settings (JSON, the RUN/config.json the run would write: a recipe) and run nothing.", panel=IO),
    ]
    return [
        *explicit,
        *config_options(LoopConfig, skip=LOOP_SKIP),
        *config_options(TrainConfig, skip=TRAIN_SKIP, preset_values=presets()),
        *config_options(
            SamplingConfig,
            skip=SAMPLING_SKIP,
            names=SAMPLING_NAMES,
            preset_values={a: {"temperature": preset_temperature(a)} for a in ALGOS},
        ),
        *judge_params(),
    ]


def _repeated(name: str, tp: type, *decls: str, metavar: str, help: str, role: Any = None) -> inspect.Parameter:
    """A hand-written repeatable option (``option`` takes no metavar)."""
    opt = typer.Option(*decls, help=help, rich_help_panel=IO, metavar=metavar)
    annotation = Annotated[list[tp] | None, opt, role] if role is not None else Annotated[list[tp] | None, opt]
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation)


def settings_from_options(kw: dict[str, Any]) -> dict[str, Any]:
    """The settings given as plain options, in the recipe's shape (``mcoder.loop.recipe``)."""
    out: dict[str, Any] = {k: str(kw[k]) for k in ("model", "problems", "run_dir") if kw.get(k) is not None}
    sections = {
        "loop": {k: v for k, v in given(LoopConfig, kw).items() if k not in LOOP_SKIP},
        "train": {k: v for k, v in given(TrainConfig, kw).items() if k not in TRAIN_SKIP},
        "sampling": given(SamplingConfig, kw),
        "judge": judge_values(kw),
    }
    out.update({name: values for name, values in sections.items() if values})
    return out


def loop_config(kw: dict[str, Any]) -> LoopConfig:
    """The run's configuration: defaults < --config files < plain options < --set."""
    from mcoder.loop.recipe import build, check, merge, one_algorithm, parse_sets, read_recipe

    files = [(str(p), read_recipe(p)) for p in kw.get("config") or ()]
    # the options' values are checked by the config itself, which names their flags
    options = check(settings_from_options(kw), origin="the options", values=False)
    sets = [(f"--set {item}", parse_sets([item])) for item in kw.get("set") or ()]
    algo = options.get("train", {}).get("algo")
    one_algorithm([*files, (f"--algo {algo}", options), *sets])
    return build(merge(*(layer for _, layer in files), options, *(layer for _, layer in sets)))


@guarded
def _loop(**kw: Any) -> None:
    from mcoder.loop.loop import run_loop

    apply_quiet(kw["quiet"])
    if kw["print_config"]:
        from mcoder.console import document

        document(loop_config(kw).validate().to_json() + "\n")
        return
    run_loop(loop_config(kw))


loop = with_options(_loop, _params())


def register(app: typer.Typer) -> None:
    app.command(
        "loop",
        help="Rollout -> judge -> update for --steps steps (GRPO, DAPO, MicroCoder-GRPO), resumable; "
        "settings from options, a recipe file (--config) or --set.",
        epilog=EPILOG,
        context_settings={"help_option_names": ["-h", "--help"]},
    )(loop)
