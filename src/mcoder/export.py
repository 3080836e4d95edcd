"""A checkpoint as other tools take it: the model card written into every checkpoint, and
``mcoder export``, which copies the policy out of a checkpoint as a plain Hugging Face folder
(``vllm serve DIR``, ``AutoModelForCausalLM.from_pretrained(DIR)``), with a LoRA run's adapter
merged into its base model on request (``--merge-lora``): vLLM then serves the trained policy
as a model of its own, with no LoRA support needed.

    CKPT/                  weights or adapter, tokenizer, README.md (the model card)
    CKPT/trainer/          optimizer, step and resolved config: what only training reads
    DIR/ (export)          weights (merged, or the adapter as it is), tokenizer, README.md

The card lists the base model, the algorithm and its resolved settings, the data the policy was
trained on with the fingerprints the checkpoint recorded (``mcoder.outputs.fingerprint``), the
steps, and the last bench table when one lies beside the checkpoint (``bench.md``, as
``mcoder bench --markdown`` writes it).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcoder import __version__
from mcoder.errors import UsageError

CARD = "README.md"
# Files of a checkpoint folder that are not the model: the export leaves them out.
NOT_MODEL = frozenset({"trainer", "samples.jsonl", "metrics.json", CARD})
# Settings the card leaves out: where and how the run was watched, not what it computed.
NOT_SETTINGS = frozenset({"report_to", "device"})


# ------------------------------------------------------------------ the model card


def write_model_card(
    folder: str | os.PathLike,
    state: dict[str, Any],
    settings: dict[str, Any],
    *,
    bench: str | os.PathLike | None = None,
    weights: str | None = None,
) -> Path:
    """Write ``folder/README.md`` from a checkpoint's step record and resolved training settings;
    ``bench`` is a markdown table to include when that file exists; ``weights`` says what the
    folder holds (default: read from it)."""
    folder = Path(folder)
    table = Path(bench).read_text() if bench is not None and Path(bench).is_file() else None
    text = model_card(state, settings, weights=weights or _weights_kind(folder, settings), bench=table)
    (folder / CARD).write_text(text)
    return folder / CARD


def model_card(state: dict[str, Any], settings: dict[str, Any], *, weights: str, bench: str | None) -> str:
    algo = settings.get("algo", "?")
    adapter = weights.startswith("LoRA adapter")
    head = [
        "---",
        f"base_model: {json.dumps(str(state.get('base_model', '?')))}",
        f"library_name: {'peft' if adapter else 'transformers'}",
        "pipeline_tag: text-generation",
        f"tags: [mcoder, reinforcement-learning, code, {algo}]",
        "---",
        "",
        f"# A code model trained with {algo} (mcoder {__version__})",
        "",
        "| | |",
        "|---|---|",
        f"| base model | `{state.get('base_model', '?')}` |",
        f"| weights | {weights} |",
        f"| algorithm | {algo} |",
        *_steps(state),
        "",
    ]
    data = state.get("data") or {}
    lines = [*head, "## Data", ""]
    if data:
        lines += ["| input | path | size (bytes) | sha256 |", "|---|---|---|---|"]
        for name, fp in sorted(data.items()):
            sha = fp.get("sha256", "-")
            note = f" ({fp['hashed']})" if fp.get("hashed") not in (None, "all") else ""
            lines.append(f"| {name} | `{fp.get('path', '?')}` | {fp.get('size', '-')} | `{sha}`{note} |")
    else:
        lines.append("Not recorded.")
    lines += ["", f"## Settings ({algo}, resolved)", "", "| setting | value |", "|---|---|"]
    for k, v in sorted(settings.items()):
        if k not in NOT_SETTINGS:
            lines.append(f"| {k} | `{json.dumps(v)}` |")
    lines += ["", "## Bench", ""]
    lines += (
        [bench.strip()] if bench else ["No bench table beside this checkpoint (`mcoder bench --markdown`)."]
    )
    lines += ["", "## Use", "", *_usage(adapter), ""]
    return "\n".join(lines)


def _steps(state: dict[str, Any]) -> list[str]:
    rows = []
    if "loop_step" in state:
        rows.append(f"| loop steps | {state['loop_step']} |")
    rows.append(f"| rollout batches trained on | {state.get('policy_version', '?')} |")
    rows.append(f"| optimizer steps | {state.get('step', '?')} |")
    return rows


def _usage(adapter: bool) -> list[str]:
    if adapter:
        return [
            "A LoRA adapter on the base model above. For a folder vLLM serves as a model of its own:",
            "",
            "```bash",
            "mcoder export THIS_FOLDER --out merged --merge-lora",
            "vllm serve merged",
            "```",
        ]
    return [
        "```bash",
        "vllm serve THIS_FOLDER",
        "```",
        "",
        "```python",
        "from transformers import AutoModelForCausalLM, AutoTokenizer",
        'model = AutoModelForCausalLM.from_pretrained("THIS_FOLDER")',
        "```",
    ]


def _weights_kind(folder: Path, settings: dict[str, Any]) -> str:
    if (folder / "adapter_config.json").is_file():
        return f"LoRA adapter (rank {settings.get('lora_rank', '?')})"
    return f"full weights ({settings.get('dtype', '?')})"


# ------------------------------------------------------------------ mcoder export


@dataclass
class ExportJob:
    checkpoint: Path
    """A checkpoint folder written by ``mcoder train`` (or a loop's RUN/checkpoint)."""
    out: Path
    """Folder to write the model to."""
    merge_lora: bool = False
    """LoRA checkpoints: merge the adapter into the base weights (a full model vLLM serves alone)."""
    bench: Path | None = None
    """A bench table (markdown) for the model card; default CKPT/../bench.md when it exists."""
    overwrite: bool = False
    """Write OUT again even when it holds this export."""


def export_checkpoint(job: ExportJob) -> Path:
    """Copy (or merge) the policy of ``job.checkpoint`` into ``job.out``, with its model card."""
    from mcoder.models import check_model_dir
    from mcoder.outputs import claim_output
    from mcoder.train.trainer import CONFIG_FILE, read_state, state_dir

    ckpt = Path(job.checkpoint)
    state = read_state(ckpt)
    if state is None:
        raise UsageError(
            f"{ckpt} is not a checkpoint written by `mcoder train` (no trainer/trainer_state.json)",
            hint="pass the --out folder of `mcoder train`, or RUN/checkpoint of a --loop run",
        )
    folder = check_model_dir(ckpt, flag="CHECKPOINT")
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
    with claim_output(
        job.out,
        stage="export",
        settings={"merge_lora": job.merge_lora},
        inputs={"checkpoint": ckpt, "bench": job.bench},
        overwrite=job.overwrite,
        kind="dir",
        expect=(CARD,),
    ) as claim:
        if claim.finished:
            from mcoder.console import info

            info(claim.finished_message)
            return Path(job.out)
        tmp = Path(tempfile.mkdtemp(prefix=f".{Path(job.out).name}.", dir=Path(job.out).parent))
        try:
            if job.merge_lora:
                _merge(folder, settings.get("dtype", "float32"), tmp)
                weights = f"LoRA adapter (rank {settings.get('lora_rank', '?')}) merged into the base weights"
            else:
                _copy_model_files(ckpt, tmp)
                weights = None
            write_model_card(tmp, state, settings, bench=bench, weights=weights)
            if Path(job.out).exists():
                shutil.rmtree(job.out)
            os.replace(tmp, job.out)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        claim.mark_finished()
    return Path(job.out)


def _copy_model_files(ckpt: Path, dest: Path) -> None:
    for entry in sorted(ckpt.iterdir()):
        if entry.name in NOT_MODEL or entry.name.startswith("."):
            continue
        if entry.is_dir():
            shutil.copytree(entry, dest / entry.name)
        else:
            shutil.copy2(entry, dest / entry.name)


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
