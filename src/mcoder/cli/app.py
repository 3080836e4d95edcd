"""The ``mcoder`` command: subcommands are registered from their own modules, imported lazily
enough that ``mcoder --help`` and ``mcoder --version`` never import torch."""

from __future__ import annotations

import importlib
from typing import Annotated

import typer

from mcoder import __version__

app = typer.Typer(
    name="mcoder",
    help="Reinforcement learning for code models: dataset build, rollout, judge, train, bench.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    # -h as well as --help, for every subcommand (a subcommand's context inherits this)
    context_settings={"help_option_names": ["-h", "--help"]},
)

# Each module defines register(app); its heavy imports happen inside the command bodies.
SUBCOMMANDS = ("dataset", "rollout", "judge", "train", "bench")


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


def main() -> None:
    app()
