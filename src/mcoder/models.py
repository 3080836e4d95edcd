"""Model folders: what one must hold, and how its tokenizer, weights, LoRA adapter and
end-of-sequence ids are loaded. The rollout engines and the trainer both load through here, so
they cannot disagree on padding, dtype or where a sample ends.

A model folder is a local folder, one of

- a transformers folder (``save_pretrained`` output): ``config.json``, weights (``*.safetensors``,
  ``pytorch_model*.bin`` or a sharded index) and tokenizer files; or
- a PEFT adapter folder (a LoRA checkpoint of ``mcoder train``): ``adapter_config.json`` and the
  adapter weights, whose ``base_model_name_or_path`` is a transformers folder here. Its tokenizer is
  its own when one was saved with it, else the base's.

Nothing is downloaded. A folder that lacks a piece is a ``UsageError`` (exit 2) naming the piece,
raised before anything is loaded.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcoder.errors import EnvironmentMissing, UsageError

WEIGHT_PATTERNS = ("*.safetensors", "pytorch_model*.bin", "*.index.json")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "vocab.txt")
ADAPTER_WEIGHTS = ("adapter_model.safetensors", "adapter_model.bin")
FOLDER_HINT = (
    "pass a local folder in transformers format (save_pretrained output), "
    "or a checkpoint written by `mcoder train`"
)


@dataclass(frozen=True)
class ModelFolder:
    """A checked model folder, resolved into the parts that load separately."""

    base: Path
    """The transformers folder: config.json and the base weights."""
    adapter: Path | None
    """The PEFT adapter folder to put on the base, if any."""
    tokenizer: Path
    """The folder the tokenizer is loaded from."""


# ------------------------------------------------------------------ checking folders


def check_model_dir(
    path: str | os.PathLike, adapter: str | os.PathLike | None = None, *, flag: str = "--model"
) -> ModelFolder:
    """Check that ``path`` (and ``adapter``, an adapter folder for it) can be loaded; say what is missing."""
    p = Path(path)
    if not p.is_dir():
        raise UsageError(f"{flag} {path}: no such folder", hint=FOLDER_HINT)
    if (p / "adapter_config.json").is_file():
        if adapter is not None:
            raise UsageError(
                f"{flag} {path} is an adapter folder, and --adapter {adapter} is given too",
                hint=f"pass the adapter folder alone as {flag}, or its base model with --adapter",
            )
        check_adapter_dir(p, flag=flag)
        base = _check_full_dir(Path(_adapter_base(p)), f"{flag} {path}: its base model")
        return ModelFolder(base=base, adapter=p, tokenizer=p if _has_tokenizer(p) else base)
    p = _check_full_dir(p, f"{flag} {path}")
    if adapter is not None:
        check_adapter_dir(adapter)
    return ModelFolder(base=p, adapter=None if adapter is None else Path(adapter), tokenizer=p)


def check_adapter_dir(path: str | os.PathLike, *, flag: str = "--adapter") -> Path:
    """A PEFT adapter folder: adapter_config.json and the adapter weights."""
    p = Path(path)
    if not (p / "adapter_config.json").is_file():
        raise UsageError(
            f"{flag} {path}: no adapter_config.json there",
            hint="pass a folder written by a PEFT model's save_pretrained (e.g. a `mcoder train` checkpoint)",
        )
    if not any((p / name).is_file() for name in ADAPTER_WEIGHTS):
        raise UsageError(
            f"{flag} {path}: no adapter weights there ({' or '.join(ADAPTER_WEIGHTS)})",
            hint="the adapter folder is incomplete: copy its weight file too, or save the adapter again",
        )
    return p


def _check_full_dir(p: Path, what: str) -> Path:
    if not p.is_dir():
        raise UsageError(
            f"{what} {p} is not a folder here",
            hint="put the base model at that path, or set base_model_name_or_path in adapter_config.json "
            "to where it is",
        )
    if not (p / "config.json").is_file():
        raise UsageError(f"{what}: no config.json there", hint=FOLDER_HINT)
    missing = _missing_weights(p)
    if missing:
        raise UsageError(
            f"{what}: {missing}",
            hint="the folder is incomplete: copy the weight files into it, or save the model again "
            "with save_pretrained",
        )
    if not _has_tokenizer(p):
        raise UsageError(
            f"{what}: no tokenizer files there ({', '.join(TOKENIZER_FILES)})",
            hint="save the tokenizer beside the model: tokenizer.save_pretrained(folder)",
        )
    return p


def _missing_weights(p: Path) -> str | None:
    """What is missing of the weights, or None: no weight file at all, or shards an index names."""
    if not any(any(p.glob(pattern)) for pattern in WEIGHT_PATTERNS):
        return "no weights there (*.safetensors, pytorch_model*.bin or a sharded index)"
    for index in p.glob("*.index.json"):
        shards = sorted(set(json.loads(index.read_text()).get("weight_map", {}).values()))
        absent = [name for name in shards if not (p / name).is_file()]
        if absent:
            return f"no weights {', '.join(absent)} there ({index.name} names them)"
    return None


def _has_tokenizer(p: Path) -> bool:
    return any((p / name).is_file() for name in TOKENIZER_FILES)


def _adapter_base(adapter: Path) -> str:
    return json.loads((adapter / "adapter_config.json").read_text())["base_model_name_or_path"]


def _folder(model: str | os.PathLike | ModelFolder, adapter: str | os.PathLike | None = None) -> ModelFolder:
    return model if isinstance(model, ModelFolder) else check_model_dir(model, adapter)


# ------------------------------------------------------------------ tokenizer


def load_tokenizer(model: str | os.PathLike | ModelFolder):
    """The folder's tokenizer, padding on the left, with a pad token.

    Left, for generation and training alike: prompts of different lengths end in the same
    column, so sampling appends each new token at one position for the whole batch, and in
    training the completions start at one column after the prompts. (mcoder pads by hand in
    both places, with attention masks and position ids that skip the padding; the side set here
    is what any ``tokenizer(..., padding=True)`` call gets, so it agrees.)

    Without a pad token, the end-of-sequence token pads. That is safe here because no mask in
    mcoder is derived from the pad id (they come from lengths), so padding never hides a real
    end-of-sequence token from the loss and the model still learns to stop.
    """
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(_folder(model).tokenizer))
    tok.padding_side = "left"
    if tok.pad_token_id is None:
        if tok.eos_token is None:
            raise UsageError(
                f"the tokenizer of {model} has neither a pad nor an end-of-sequence token",
                hint="set eos_token (and pad_token) in tokenizer_config.json",
            )
        tok.pad_token = tok.eos_token
    return tok


# ------------------------------------------------------------------ model


def resolve_device(name: str):
    """auto -> cuda when present, else cpu. Asking for cuda where there is none is an error."""
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise EnvironmentMissing(f"--device {name}: no CUDA device here", hint="use --device cpu (or auto)")
    return torch.device(name)


def resolve_dtype(name: Any):
    """auto -> bfloat16 on a GPU, float32 on a CPU (exact log-probs); or float32 / bfloat16."""
    import torch

    if isinstance(name, torch.dtype):
        return name
    if name == "auto":
        return torch.bfloat16 if torch.cuda.is_available() else torch.float32
    dtypes = {"float32": torch.float32, "bfloat16": torch.bfloat16}
    if name not in dtypes:
        raise UsageError(f"dtype {name!r}: unknown", hint="use float32, bfloat16 or auto")
    return dtypes[name]


def load_model(
    model: str | os.PathLike | ModelFolder,
    adapter: str | os.PathLike | None = None,
    *,
    dtype: Any = "auto",
    device: str | None = "auto",
    trainable: bool = False,
):
    """The causal LM of a model folder, with its adapter (the folder's own, or ``adapter``) attached.

    ``device`` None leaves the model on the CPU, where the caller places it (the trainer does).
    ``trainable``: the adapter's weights take gradients (continuing a LoRA run) and the model is
    left in whatever mode loading gives; otherwise the model is put in eval mode.
    """
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    folder = _folder(model, adapter)
    hf_logging.disable_progress_bar()  # mcoder shows its own progress
    net = AutoModelForCausalLM.from_pretrained(str(folder.base), dtype=resolve_dtype(dtype))
    if folder.adapter is not None:
        from peft import PeftModel

        net = PeftModel.from_pretrained(net, str(folder.adapter), is_trainable=trainable)
    if device is not None:
        net = net.to(resolve_device(device))
    return net if trainable else net.eval()


def add_lora(model, *, rank: int, alpha: int | None, dropout: float, target_modules: list[str]):
    """A fresh LoRA adapter on ``model`` (alpha defaults to 2 x rank); only the adapter trains."""
    try:
        from peft import LoraConfig, get_peft_model
    except ImportError as e:  # pragma: no cover - peft is a dependency
        raise EnvironmentMissing("LoRA needs peft", hint="pip install peft") from e
    lora = LoraConfig(
        r=rank,
        lora_alpha=alpha or 2 * rank,
        lora_dropout=dropout,
        target_modules=target_modules[0] if target_modules == ["all-linear"] else target_modules,
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, lora)


def model_device(model):
    return next(model.parameters()).device


# ------------------------------------------------------------------ end of sequence


def eos_ids(tokenizer: Any, model: Any) -> set[int]:
    """The token ids that end a sample: the union of the tokenizer's end-of-sequence token and
    ``eos_token_id`` of the model's config and generation config (one id or a list each).

    ``model`` is a loaded model (the hf engine, which may hold the trainer's live policy) or a
    model folder (the vLLM engine, which holds none); both read the same two configs, so both
    engines end samples, and so set ``finish_reason`` and truncation masking, on the same ids.
    """
    if isinstance(model, (str, os.PathLike, ModelFolder)):
        base = _folder(model).base
        files = ("config.json", "generation_config.json")
        found = [_read_json(base / name).get("eos_token_id") for name in files]
    else:
        configs = (getattr(model, "config", None), getattr(model, "generation_config", None))
        found = [getattr(config, "eos_token_id", None) for config in configs]
    ids = {tokenizer.eos_token_id} if tokenizer.eos_token_id is not None else set()
    for value in found:
        if value is not None:
            ids |= set(value) if isinstance(value, (list, tuple)) else {value}
    if not ids:
        raise UsageError(
            "the model has no end-of-sequence token: samples could never stop",
            hint="set eos_token in tokenizer_config.json or eos_token_id in generation_config.json",
        )
    return ids


def _read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.is_file() else {}
