"""The ``mcoder`` command: subcommands are registered from their own modules, imported lazily
enough that ``mcoder --help`` and ``mcoder --version`` never import torch."""

from __future__ import annotations

import importlib
from typing import Annotated

import typer

from mcoder import __version__

# The overview under `mcoder --help`: one line per subcommand, in the order the data flows (each
# subcommand's own -h says more), how the stages chain, and where the ready-made chains are.
SUMMARIES = {
    "dataset": "Build problems.jsonl from public problem sets.",
    "rollout": "Sample G completions per problem into rollouts.jsonl.",
    "judge": "Run completions against the tests in a sandbox.",
    "train": "One GRPO / DAPO / MicroCoder-GRPO update from a judged batch.",
    "loop": "Rollout -> judge -> train, step after step (a recipe: --config).",
    "bench": "pass@k by platform x difficulty; training figures.",
    "show": "Read a rollout batch or a run; --html writes a report page.",
    "export": "A checkpoint as a plain Hugging Face folder (vllm serve).",
}
EPILOG = (
    "Stages talk through JSONL files: dataset build -> problems.jsonl -> rollout -> rollouts.jsonl -> "
    "judge -> verdicts.jsonl -> train -> checkpoint -> bench.\n\n"
    "mcoder loop runs rollout -> judge -> train for many steps. The GRPO, DAPO and MicroCoder-GRPO "
    "runs are recipe files in the repository's recipes/ folder (mcoder loop --config "
    "recipes/microcoder-grpo.toml ...); launchers (torchrun), a sharded judge and the demo are "
    "the scripts in commands/.\n\n"
    "mcoder COMMAND -h: a subcommand's options.  mcoder --install-completion: tab completion for your shell."
)

app = typer.Typer(
    name="mcoder",
    help="Reinforcement learning for code models: dataset build, rollout, judge, train, loop, bench.",
    epilog=EPILOG,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    # --install-completion / --show-completion: typer's own shell completion (bash, zsh, fish, PowerShell)
    add_completion=True,
    # -h as well as --help, for every subcommand (a subcommand's context inherits this)
    context_settings={"help_option_names": ["-h", "--help"]},
)

# Each module defines register(app); its heavy imports happen inside the command bodies.
SUBCOMMANDS = ("dataset", "rollout", "judge", "train", "loop", "bench", "export", "show")
# `mcoder judge serve`: hung under the judge command by its own module (after judge is registered)
ATTACHED = ("serve",)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"mcoder {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """mcoder: MicroCoder-GRPO training for code models, as composable JSONL stages."""


for _name in SUBCOMMANDS:
    importlib.import_module(f"mcoder.cli.{_name}").register(app)
for _name in ATTACHED:
    importlib.import_module(f"mcoder.cli.{_name}").register(app)
for _info in [*app.registered_commands, *app.registered_groups]:
    _info.short_help = SUMMARIES.get(_info.name or "", _info.short_help)


def main() -> None:
    app()
