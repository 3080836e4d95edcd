"""The model card of a checkpoint (its README.md): the base model, the algorithm and its
resolved settings, the data the policy was trained on with the fingerprints the checkpoint
recorded (``mcoder.outputs.fingerprint``), the steps, and the last bench table when one lies
beside the checkpoint (``bench.md``, as ``mcoder bench --markdown`` writes it). Written with every
checkpoint (``Trainer.save``) and with every export (``mcoder.export``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from mcoder import __version__

CARD = "README.md"


def _on_card(name: str) -> bool:
    """Whether the card shows a setting: all but the TrainConfig fields marked ``NOT_ON_CARD``
    (where and how the run was watched, not what it computed)."""
    from mcoder.train.config import TrainConfig

    f = TrainConfig.__dataclass_fields__.get(name)
    return f is None or f.metadata.get("card", True)


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
        if _on_card(k):
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
