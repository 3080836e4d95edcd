"""``mcoder export``: a checkpoint's policy as a plain Hugging Face folder, a LoRA adapter merged."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mcoder.cli.common import (
    FLAG,
    INPUT,
    IO_PANEL,
    OUTPUT_DIR,
    HelpFlag,
    Overwrite,
    Quiet,
    apply_quiet,
    command_options,
    guarded,
)


def register(app: typer.Typer) -> None:
    @app.command(
        **command_options(
            "export",
            help="A checkpoint's policy as a plain Hugging Face folder (vllm serve, from_pretrained); "
            "--merge-lora merges a LoRA adapter into its base.",
            example="mcoder export run/checkpoint --out run/merged --merge-lora",
        )
    )  # fmt: skip
    @guarded
    def export(
        checkpoint: Annotated[
            Path,
            typer.Argument(
                help="Checkpoint folder of `mcoder train` (--out, or RUN/checkpoint).", show_default=False
            ),
            INPUT,
        ],
        out: Annotated[
            Path,
            typer.Option("--out", "-o", rich_help_panel=IO_PANEL, help="Folder to write the model to."),
            OUTPUT_DIR,
        ],
        merge_lora: Annotated[
            bool,
            typer.Option(
                "--merge-lora",
                metavar=FLAG,
                rich_help_panel=IO_PANEL,
                help="LoRA checkpoints: merge the adapter into the base weights (a full model vLLM serves alone).",
            ),
        ] = False,
        bench: Annotated[
            Path | None,
            typer.Option(
                "--bench",
                rich_help_panel=IO_PANEL,
                help="A bench table (mcoder bench --markdown) for the model card (default CHECKPOINT/../bench.md if present).",
            ),
            INPUT,
        ] = None,
        overwrite: Overwrite = False,
        quiet: Quiet = False,
        help_: HelpFlag = False,
    ) -> None:
        """A checkpoint's policy as a plain Hugging Face folder; --merge-lora merges a LoRA adapter."""
        from mcoder.console import emit
        from mcoder.export import ExportJob, export_checkpoint

        apply_quiet(quiet)
        emit(str(export_checkpoint(ExportJob(checkpoint, out, merge_lora, bench, overwrite))))
