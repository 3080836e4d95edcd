"""``mcoder export``: a checkpoint as other tools take it. The policy is copied out of a
checkpoint as a plain Hugging Face folder (``vllm serve DIR``,
``AutoModelForCausalLM.from_pretrained(DIR)``), with a LoRA run's adapter merged into its base
model on request (``--merge-lora``): vLLM then serves the trained policy as a model of its own,
with no LoRA support needed.

    CKPT/                  weights or adapter, tokenizer, README.md (the model card)
    CKPT/trainer/          optimizer, step and resolved config: what only training reads
    DIR/ (export)          weights (merged, or the adapter as it is), tokenizer, README.md

A checkpoint that torchrun saved mid-run holds no weights files, only its shards of the
trained weights (CKPT/trainer/dcp/): the export loads its base model, puts the shards in, and
writes whole Hugging Face weights.

The model card (README.md) is written by ``mcoder.train.card``, for checkpoints and exports alike.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcoder.config import not_setting, output_settings
from mcoder.errors import UsageError
from mcoder.train.card import CARD, write_model_card

# Files of a checkpoint folder that are not the model: the export leaves them out.
NOT_MODEL = frozenset({"trainer", "samples.jsonl", "metrics.json", CARD})


# ------------------------------------------------------------------ mcoder export


@dataclass
class ExportJob:
    checkpoint: Path = field(metadata=not_setting("the input, compared by content"))
    """A checkpoint folder written by ``mcoder train`` (or a loop's RUN/checkpoint)."""
    out: Path = field(metadata=not_setting("the output"))
    """Folder to write the model to."""
    merge_lora: bool = False
    """LoRA checkpoints: merge the adapter into the base weights (a full model vLLM serves alone)."""
    bench: Path | None = field(default=None, metadata=not_setting("an input, compared by content"))
    """A bench table (markdown) for the model card; default CKPT/../bench.md when it exists."""
    overwrite: bool = field(default=False, metadata=not_setting("whether to start over"))
    """Write OUT again even when it holds this export."""


def export_checkpoint(job: ExportJob) -> Path:
    """Copy (or merge) the policy of ``job.checkpoint`` into ``job.out``, with its model card."""
    from mcoder.models import check_model_dir
    from mcoder.outputs import Job, execute
    from mcoder.train.trainer import CONFIG_FILE, read_state, state_dir, weights_folder

    ckpt = Path(job.checkpoint)
    state = read_state(ckpt)
    if state is None:
        raise UsageError(
            f"{ckpt} is not a checkpoint written by `mcoder train` (no trainer/trainer_state.json)",
            hint="pass the --out folder of `mcoder train`, or RUN/checkpoint of a --loop run",
        )
    sharded = weights_folder(ckpt) != str(ckpt)  # a mid-run torchrun save: no weights files
    folder = check_model_dir(weights_folder(ckpt), flag="CHECKPOINT")
    if job.merge_lora and folder.adapter is None:
        raise UsageError(
            f"{ckpt} holds full weights, not a LoRA adapter: there is nothing to merge",
            hint="drop --merge-lora: the export is then a copy of the model without the training state",
        )
    settings = json.loads((state_dir(ckpt) / CONFIG_FILE).read_text())
    bench = job.bench if job.bench is not None else ckpt.parent / "bench.md"
    if job.bench is not None and not Path(job.bench).is_file():
        raise UsageError(
            f"--bench {job.bench}: no such file", hint="pass a table written by mcoder bench --markdown"
        )
    claimed = Job(
        out=job.out, inputs={"checkpoint": ckpt, "bench": job.bench}, settings=output_settings(job),
        overwrite=job.overwrite,
    )  # fmt: skip
    return execute(_ExportStage(job, ckpt, folder, sharded, settings, state, bench), claimed)


@dataclass
class _ExportStage:
    """``mcoder export`` as a stage (``mcoder.outputs.Stage``), the checkpoint read and checked."""

    job: ExportJob
    ckpt: Path
    folder: Any
    sharded: bool
    settings: dict
    state: dict
    bench: Path
    name = "export"
    kind = "dir"
    expect = (CARD,)

    def finished(self, claimed, claim) -> Path:
        from mcoder.console import info

        info(claim.finished_message)
        return Path(self.job.out)

    def run(self, claimed, claim) -> Path:
        from mcoder.outputs import naming_output, temp_folder

        job, ckpt, folder, settings = self.job, self.ckpt, self.folder, self.settings
        tmp = temp_folder(job.out)  # removes what an export killed half-way left
        try:
            with naming_output(job.out):  # a full disk names --out, not the checkpoint file being copied
                if job.merge_lora:
                    _merge(folder, settings.get("dtype", "float32"), tmp)
                    weights = f"LoRA adapter (rank {settings.get('lora_rank', '?')}) merged into the base weights"
                elif self.sharded:
                    _copy_model_files(ckpt, tmp)  # config and tokenizer; the weights next
                    _write_sharded(ckpt, settings, tmp)
                    weights = None
                else:
                    _copy_model_files(ckpt, tmp)
                    weights = None
                write_model_card(tmp, self.state, settings, bench=self.bench, weights=weights)
            if Path(job.out).exists():
                shutil.rmtree(job.out)
            os.replace(tmp, job.out)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return Path(job.out)


def _copy_model_files(ckpt: Path, dest: Path) -> None:
    for entry in sorted(ckpt.iterdir()):
        if entry.name in NOT_MODEL or entry.name.startswith("."):
            continue
        if entry.is_dir():
            shutil.copytree(entry, dest / entry.name)
        else:
            shutil.copy2(entry, dest / entry.name)


def _write_sharded(ckpt: Path, settings: dict, dest: Path) -> None:
    """The base model with the checkpoint's trained weights in it (one process), saved whole."""
    from mcoder.config import from_dict
    from mcoder.train.config import TrainConfig
    from mcoder.train.models import load_policy
    from mcoder.train.trainer import load_sharded_weights, weights_folder

    model = load_policy(weights_folder(ckpt), from_dict(TrainConfig, settings))
    load_sharded_weights(model, ckpt)
    model.save_pretrained(dest)


def _merge(folder, dtype: str, dest: Path) -> None:
    """Base weights + adapter -> one model (W + B·A·alpha/r in every adapted layer), saved whole."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    from mcoder.models import resolve_dtype

    hf_logging.disable_progress_bar()
    base = AutoModelForCausalLM.from_pretrained(str(folder.base), dtype=resolve_dtype(dtype))
    merged = PeftModel.from_pretrained(base, str(folder.adapter)).merge_and_unload()
    merged.save_pretrained(dest)
    AutoTokenizer.from_pretrained(str(folder.tokenizer)).save_pretrained(dest)
