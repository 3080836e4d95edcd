"""Sources by name: ``hf:NAME[@CONFIG][:SPLIT]``, read through ``datasets.load_dataset``.

NAME is a dataset on the Hugging Face hub (``deepmind/code_contests``, ``BAAI/TACO``, ...) or
anything else ``load_dataset`` takes as its path, such as a local folder of data files laid out
as on the hub (``data/*.parquet``, ``*.jsonl``). CONFIG is the dataset's configuration (its
``name`` argument) and SPLIT its split, slices included (``train[:100]``); without a split every
split is read, in the order the dataset lists them. The rows then go through the same adapters
as local files. Examples: ``hf:deepmind/code_contests:test``, ``hf:open-r1/codeforces@verifiable:train``.

The dataset is loaded when the sources are found, before the output is claimed, so a dataset
that cannot be loaded stops the build before anything is written. ``load_dataset`` keeps what
it downloads in its cache; with ``HF_DATASETS_OFFLINE=1`` it reads that cache only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from mcoder.errors import EnvironmentMissing, UsageError

PREFIX = "hf:"
# No square brackets: the CLI prints hints as rich markup, which reads "[@...]" as a tag.
SYNTAX = "hf:NAME, hf:NAME:SPLIT or hf:NAME@CONFIG:SPLIT"


def is_hub(source: str) -> bool:
    return source.startswith(PREFIX)


@dataclass(frozen=True, slots=True)
class HubSpec:
    """What ``hf:NAME[@CONFIG][:SPLIT]`` names. NAME holds no ':' (hub names never do), so the
    first ':' starts the split, which may itself hold one (``train[:100]``)."""

    name: str
    config: str | None = None
    split: str | None = None

    @classmethod
    def parse(cls, source: str) -> HubSpec:
        head, colon, split = source[len(PREFIX) :].partition(":")
        name, at, config = head.partition("@")
        if not name or (at and not config) or (colon and not split):
            raise UsageError(
                f"cannot read the dataset name {source!r}",
                hint=f"write {SYNTAX}, e.g. hf:deepmind/code_contests:test",
            )
        return cls(name.rstrip("/"), config or None, split or None)

    @property
    def stem(self) -> str:
        """The name's last part (and the config), the start of ids derived for id-less rows."""
        last = self.name.rsplit("/", 1)[-1]
        return f"{last}-{self.config}" if self.config else last


def load(source: str) -> list[tuple[str | None, Any]]:
    """The (split, ``datasets.Dataset``) pairs that ``source`` names; errors say what to do."""
    spec = HubSpec.parse(source)
    try:
        import datasets
    except ImportError:  # pragma: no cover - a dependency of mcoder
        raise EnvironmentMissing("the datasets package is not installed", hint="pip install datasets") from None
    try:
        loaded = datasets.load_dataset(spec.name, spec.config, split=spec.split)
    except ConnectionError as e:
        raise _unreachable(spec, e, datasets.config.HF_HUB_OFFLINE) from None
    except datasets.exceptions.DatasetNotFoundError as e:
        raise UsageError(
            f"{source}: no dataset {spec.name!r} ({_first_line(e)})",
            hint="check the name on huggingface.co/datasets; a gated one needs `hf auth login` first",
        ) from None
    except (ValueError, FileNotFoundError, datasets.exceptions.DatasetsError) as e:
        raise UsageError(
            f"{source}: {_first_line(e)}", hint=f"check the dataset's name, config and split ({SYNTAX})"
        ) from None
    except RuntimeError as e:
        if "scripts are no longer supported" not in str(e):
            raise
        raise UsageError(
            f"{source}: the dataset is a loading script, which this datasets version cannot run",
            hint=_script_hint(spec.name),
        ) from None
    if isinstance(loaded, datasets.DatasetDict):
        return list(loaded.items())
    return [(spec.split, loaded)]


def _script_hint(name: str) -> str:
    """What to do instead of running a loading script; a local folder is not named again (the
    message already says which source it is) and is not something to download."""
    if os.path.exists(name) or name.startswith((".", "/", "~")):
        return "give the data files the script reads, or a folder of them, as SOURCE"
    return f"download its data files (hf download {name} --repo-type dataset) and give them or their folder as SOURCE"


def _unreachable(spec: HubSpec, error: Exception, offline: bool) -> EnvironmentMissing:
    if offline:
        return EnvironmentMissing(
            f"dataset {spec.name} is not in the local datasets cache, and HF_DATASETS_OFFLINE "
            "(or HF_HUB_OFFLINE) forbids downloading it",
            hint="load it once on a machine with network access (same cache folder, HF_HOME), unset "
            "HF_DATASETS_OFFLINE to download it, or give its files as SOURCE",
        )
    return EnvironmentMissing(
        f"cannot reach the Hugging Face hub to load dataset {spec.name} ({_first_line(error)})",
        hint="this machine seems offline: with HF_DATASETS_OFFLINE=1 datasets reads its local cache "
        "only (load the dataset once where there is network), or give its files as SOURCE",
    )


def _first_line(error: Exception) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__

