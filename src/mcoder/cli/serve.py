"""``mcoder judge serve``: the judge as an HTTP service (SandboxFusion's run_code and a native
endpoint; ``mcoder.integrations.serve``).

``mcoder judge`` is a command, not a group (it takes its inputs as options), so ``serve`` hangs
under it through the command's class: ``mcoder judge serve ...`` is handed to this command, every
other ``mcoder judge ...`` parses as before.
"""

from __future__ import annotations

import os
from typing import Any

import typer
import typer.core
import typer.main

from mcoder.cli.common import apply_quiet, guarded
from mcoder.cli.judge import judge_config, judge_params
from mcoder.cli.options import config_options, given, option, with_options
from mcoder.integrations.serve import ServeConfig

TOKEN_ENV = "MCODER_JUDGE_TOKEN"
EPILOG = (
    "Example: mcoder judge serve --port 8080 --workers 16 --problems problems.jsonl\n\n"
    f"The token is better given in the environment ({TOKEN_ENV}) than on the command line."
)


def _params() -> list:
    return [
        *config_options(ServeConfig, names={"port": ("--port",)}, panel="Service"),
        *judge_params("Judge", short=True, skip={"first_uid"}, old_spellings=True),
        option("quiet", bool, "--quiet", "-q", default=False, help="No news on stderr."),
    ]


@guarded
def _serve(**kw: Any) -> None:
    from mcoder.console import emit
    from mcoder.integrations.serve import serve

    apply_quiet(kw["quiet"])
    cfg = ServeConfig(**given(ServeConfig, kw))
    cfg.token = cfg.token or os.environ.get(TOKEN_ENV) or None
    serve(cfg, judge_config(kw), ready=emit)


command = with_options(_serve, _params())  # `mcoder judge serve`'s options (read by the defaults test)


def serve_command() -> typer.core.TyperCommand:
    app = typer.Typer(add_completion=False)
    app.command(
        "serve",
        help="The judge as an HTTP service: SandboxFusion's /run_code, a native /judge (verdicts as "
        "`mcoder judge` writes them) and /health; binds 127.0.0.1 by default.",
        epilog=EPILOG,
        context_settings={"help_option_names": ["-h", "--help"]},
    )(command)
    return typer.main.get_command(app)


def register(app: typer.Typer) -> None:
    """Give the registered ``judge`` command a class that hands ``judge serve ...`` to ``serve``."""
    serve = serve_command()

    class JudgeCommand(typer.core.TyperCommand):
        def make_context(self, info_name, args, parent=None, **extra):
            if args[:1] == ["serve"]:
                return serve.make_context(f"{info_name} serve", args[1:], parent=parent, **extra)
            return super().make_context(info_name, args, parent=parent, **extra)

    for info in app.registered_commands:
        if info.name == "judge":
            info.cls = JudgeCommand
            info.epilog = (info.epilog or "") + "\n\nmcoder judge serve -h: the judge as an HTTP service."
