"""Recipes: the loop's settings as a file (``mcoder loop --config FILE``) and ``--set key=value``.

A recipe has the shape of the ``RUN/config.json`` a run writes, so a run's own config restarts it::

    model = "Qwen/Qwen3-1.7B"       # optional: --model, --problems and --run-dir may give them
    problems = "problems.jsonl"

    [loop]                          # LoopConfig's own fields (steps, train_batch_size, engine, ...)
    steps = 300
    [train]                         # TrainConfig (algo picks the preset the other values start from)
    algo = "microcoder-grpo"
    mask_rho = 0.2
    [sampling]                      # SamplingConfig
    temperature = "auto"
    [judge]                         # JudgeConfig
    workers = 32

TOML (``.toml``) or JSON (any other name), UTF-8 with or without a byte-order mark. Every key
must be a field of its section, given once, and every value of the field's type, one of its
choices and in its range (``mcoder.config.value_problem``, the check the config itself makes): an
error reads ``FILE:LINE: section.key: what is wrong``.
``--set train.mask_rho=0.5`` sets one dotted key, its value read as a TOML value (a bare word
such as ``auto`` is taken as text). Layers are merged in order (``merge``) and ``build`` makes the
``LoopConfig``: the preset of ``train.algo`` first, then every value a layer gave.

Importing this module imports neither torch nor typer.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import re
import tomllib
import types
import typing
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, get_args, get_origin

from mcoder.config import choices_of, field_types, value_problem
from mcoder.errors import UsageError
from mcoder.jsonl import RepeatedKey, keys_once
from mcoder.judge.config import JudgeConfig
from mcoder.loop.config import LoopConfig
from mcoder.rollout.sampling import SamplingConfig
from mcoder.train.config import ALGOS, RECIPES, TrainConfig, preset_temperature, recipe_names, resolve

# A recipe: top-level keys (TOP_KEYS) and one table per section; what every layer holds.
Settings = dict[str, Any]

SECTIONS: dict[str, type] = {
    "loop": LoopConfig,
    "train": TrainConfig,
    "sampling": SamplingConfig,
    "judge": JudgeConfig,
}
TOP_KEYS = ("model", "problems", "run_dir")
# LoopConfig's fields that are not its own settings: the top-level keys and the sections.
_NOT_LOOP_KEYS = frozenset(TOP_KEYS) | frozenset(SECTIONS)


def section_fields(section: str) -> dict[str, Any]:
    """``{field: type}`` of the settings a section may hold."""
    cls = SECTIONS[section]
    types_ = field_types(cls)
    return {
        f.name: types_[f.name]
        for f in dataclasses.fields(cls)
        if f.init and not (section == "loop" and f.name in _NOT_LOOP_KEYS)
    }


# ---------------------------------------------------------------- reading


def read_recipe(path: str | Path) -> Settings:
    """The settings of a recipe file, checked: known keys given once, values of the fields' types,
    choices and ranges. A name with no such file (``dapo``) is the package's recipe of that name."""
    path = recipe_path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")  # -sig: a byte-order mark is not a setting
    except FileNotFoundError:
        raise UsageError(f"--config {path}: no such file") from None
    except (IsADirectoryError, UnicodeDecodeError) as e:
        raise UsageError(f"--config {path}: not a text file ({e})") from None
    try:
        data = _parse(path, text)
    except RecursionError:  # tomllib and json recurse once per level of nesting
        raise UsageError(
            f"{path}: nested too deeply to be a recipe", hint="a recipe holds tables of settings, two levels deep"
        ) from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: a recipe is a table of settings, not {type(data).__name__}")
    return check(data, origin=str(path), text=text)


def recipe_path(path: str | Path) -> Path:
    """``path``, or the package's recipe it names (``dapo``: ``mcoder/recipes/dapo.toml``) when
    no such file is here."""
    path = Path(path)
    if not path.exists() and str(path) in recipe_names():
        return RECIPES / f"{path}.toml"
    return path


_TOML_AT = re.compile(r"\(at line (\d+), column (\d+)\)")


def _parse(path: Path, text: str) -> Any:
    if path.suffix.lower() == ".toml":
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            m = _TOML_AT.search(str(e))
            where = f"{path}:{m.group(1)}" if m else str(path)
            raise UsageError(f"{where}: not valid TOML: {_TOML_AT.sub('', str(e)).strip()}") from None
    try:
        return json.loads(text, object_pairs_hook=keys_once)
    except json.JSONDecodeError as e:
        raise UsageError(
            f"{path}:{e.lineno}: not valid JSON: {e.msg}", hint="a recipe is TOML (.toml) or JSON"
        ) from None
    except RepeatedKey as e:
        line = _line_of(text, None, e.key, nth=2)
        raise UsageError(
            f"{path}{f':{line}' if line else ''}: {e.key}: given twice",
            hint="a setting is given once (JSON readers differ on which of two would win)",
        ) from None



def parse_sets(items: Iterable[str]) -> Settings:
    """``--set section.key=value`` (or ``model=...``, ``problems=...``) as settings."""
    out: Settings = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"--set {item!r} is not key=value", hint="e.g. --set train.mask_rho=0.5")
        try:
            value = _toml_value(raw.strip())
        except RecursionError:
            raise UsageError(f"--set {key}: the value is nested too deeply") from None
        *tables, name = key.split(".")
        if len(tables) > 1:
            raise UsageError(f"--set {key}: one section and a key, e.g. train.lr")
        layer = {tables[0]: {name: value}} if tables else {name: value}
        out = merge(out, check(layer, origin=f"--set {item}"))
    return out


def _toml_value(raw: str) -> Any:
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw  # a bare word (auto, tensorboard, a path): the text itself


def check(
    data: Mapping[str, Any], *, origin: str, text: str | None = None, values: bool = True
) -> Settings:
    """``data`` as settings: every key known, every value converted to its field's type and, with
    ``values``, one of its choices and in its range. An error reads ``ORIGIN[:LINE]: section.key:
    what is wrong`` (the line when ``text`` is the file's content). ``values=False`` for the
    command line's options, whose values the config checks naming their flags."""
    out: Settings = {}
    for key, value in data.items():
        if key in SECTIONS:
            if not isinstance(value, Mapping):
                raise UsageError(f"{_where(origin, text, None, key)}: {key}: must be a table of settings")
            fields = section_fields(key)
            table = {}
            for name, v in value.items():
                where = f"{_where(origin, text, key, name)}: {key}.{name}"
                if name not in fields:
                    raise UsageError(f"{where}: unknown key", hint=_known_hint(key, name))
                table[name] = _convert(v, fields[name], where)
                problem = value_problem(SECTIONS[key], name, table[name]) if values else None
                if problem is not None:
                    raise UsageError(f"{where}: {problem}", hint=_value_hint(key, name))
            out[key] = table
        elif key in TOP_KEYS:
            if value is not None and not isinstance(value, str):
                raise UsageError(f"{_where(origin, text, None, key)}: {key}: must be text (a path)")
            out[key] = value
        else:
            raise UsageError(
                f"{_where(origin, text, None, key)}: {key}: unknown key", hint=_known_hint(None, key)
            )
    return out


def _value_hint(section: str, name: str) -> str:
    from mcoder.config import field_docs

    doc = field_docs(SECTIONS[section]).get(name)
    return f"{section}.{name}: {doc.help}" if doc and doc.help else "see mcoder loop --help"


def _known_hint(section: str | None, name: str) -> str:
    homes = [s for s in SECTIONS if name in section_fields(s)]
    if homes and homes != [section]:
        return f"{name} is a setting of [{homes[0]}] (with --set: {homes[0]}.{name})"
    close = difflib.get_close_matches(name, list(section_fields(section)) if section else TOP_KEYS, n=1)
    if close:
        return f"did you mean {section + '.' if section else ''}{close[0]}?"
    if section is None:
        return f"the top level holds {', '.join(TOP_KEYS)} and the tables {', '.join(SECTIONS)}"
    return f"[{section}] holds: {', '.join(section_fields(section))}"


def _where(origin: str, text: str | None, section: str | None, key: str) -> str:
    """``origin`` with the line of ``key`` (in ``section``) when the file's text is known."""
    line = _line_of(text, section, key) if text is not None else None
    return f"{origin}:{line}" if line else origin


def _line_of(text: str, section: str | None, key: str, nth: int = 1) -> int | None:
    """The line that sets ``key`` (its ``nth`` time): under its ``[section]`` header (TOML), or
    after the section's ``"section":`` line (JSON); None when it cannot be told."""
    toml_key = re.compile(rf"""^\s*["']?{re.escape(key)}["']?\s*=""")
    json_key = re.compile(rf'^\s*"{re.escape(key)}"\s*:')
    header = re.compile(r"^\s*\[\s*([^\]]+?)\s*\]")
    current: str | None = None
    json_section: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        m = header.match(line)
        if m:
            current = m.group(1).strip("\"' ")
            continue
        if section is not None and re.match(rf'^\s*"{re.escape(section)}"\s*:', line):
            json_section = section
        if (toml_key.match(line) and current == section) or (
            json_key.match(line) and (section is None or json_section == section)
        ):
            nth -= 1
            if nth == 0:
                return number
    return None


def _convert(value: Any, tp: Any, where: str) -> Any:
    """``value`` (from TOML or JSON) as the field type ``tp`` wants it, or a usage error."""
    if value is None:
        if _optional(tp):
            return None
        raise UsageError(f"{where}: a value is needed")
    base = _strip_optional(tp)
    if choices_of(base) is not None and get_origin(base) is not tuple:
        return value  # checked against its choices by the config, the one place choices are checked
    if base is bool:
        if isinstance(value, bool):
            return value
        raise UsageError(f"{where}: expected true or false, got {value!r}")
    if base is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise UsageError(f"{where}: expected a whole number, got {value!r}")
    if base is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise UsageError(f"{where}: expected a number, got {value!r}")
    if base is str or base is Path:
        if isinstance(value, str):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return value  # e.g. temperature = 1.0: the config reads a number as its text
        raise UsageError(f"{where}: expected text, got {value!r}")
    origin = get_origin(base)
    if origin in (tuple, list):
        items = list(value) if isinstance(value, (list, tuple)) else [value]  # one value: a list of one
        args = get_args(base)
        if origin is tuple and args[-1:] != (Ellipsis,):  # a fixed-size tuple, e.g. adam_betas
            if len(items) != len(args):
                raise UsageError(f"{where}: expected {len(args)} values, got {value!r}")
            return tuple(_convert(v, a, where) for v, a in zip(items, args, strict=True))
        item = args[0] if args else Any
        converted = [_convert(v, item, where) for v in items]
        return tuple(converted) if origin is tuple else converted
    return value  # any other type: the config takes it as it is


def _optional(tp: Any) -> bool:
    return get_origin(tp) in (typing.Union, types.UnionType) and type(None) in get_args(tp)


def _strip_optional(tp: Any) -> Any:
    if get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        return args[0] if len(args) == 1 else Any
    return tp


# ---------------------------------------------------------------- merging and building


def merge(*layers: Mapping[str, Any]) -> Settings:
    """The layers' settings, a later layer's value over an earlier one's (key by key inside a
    section)."""
    out: Settings = {}
    for layer in layers:
        for key, value in layer.items():
            if key in SECTIONS:
                out[key] = {**out.get(key, {}), **value}
            else:
                out[key] = value
    return out


def one_algorithm(layers: Iterable[tuple[str, Mapping[str, Any]]]) -> None:
    """Refuse layers that name different algorithms (``train.algo``). A recipe of one algorithm
    states that preset's values (``recipes/grpo.toml`` its ε, β, loss aggregation, masking): with
    another ``--algo`` over it, those values would run under the other name, and the saved config
    and model card would say so. A layer that names no algorithm (``smoke.toml``, a recipe of
    sizes) goes over whichever preset is named. ``layers``: (where it came from, its settings)."""
    named = [(origin, layer["train"]["algo"]) for origin, layer in layers if "algo" in layer.get("train", {})]
    if len({algo for _, algo in named}) <= 1:
        return
    (first, a), (second, b) = named[0], next((o, x) for o, x in named if x != named[0][1])
    raise UsageError(
        f"{_where_algo(first)}: train.algo is {a!r}, and {_where_algo(second)} names {b!r}: the values {first} "
        f"states are {a}'s, and would run under the name {b}",
        hint=f"use the recipe of {b} (recipes/{b}.toml), or remove train.algo and the values of its preset "
        f"from {first} to layer the rest over {b}'s preset",
    )


def _where_algo(origin: str) -> str:
    """A recipe file with the line of its train.algo; another origin as it is."""
    path = Path(origin)
    if path.is_file():
        line = _line_of(path.read_text(encoding="utf-8-sig"), "train", "algo")
        return f"{origin}:{line}" if line else origin
    return origin


def build(settings: Mapping[str, Any]) -> LoopConfig:
    """The ``LoopConfig`` of merged settings: ``train`` starts from the preset of its ``algo``
    (default microcoder-grpo) and the sampling temperature from the preset's when none is given.
    ``model``, ``problems``, ``run_dir`` and ``loop.steps`` must be given. Not validated
    (``run_loop`` validates)."""
    missing = [k for k in TOP_KEYS if not settings.get(k)]
    if "steps" not in settings.get("loop", {}):
        missing.append("steps")  # how long a run is: said, never assumed
    if missing:
        flags = ", ".join("--" + k.replace("_", "-") for k in missing)
        raise UsageError(
            f"mcoder loop needs {flags}",
            hint="mcoder loop --model M --problems P --run-dir RUN --steps N, or --config RECIPE.toml with the rest",
        )
    train = dict(settings.get("train", {}))
    algo = train.pop("algo", "microcoder-grpo")
    sampling = dict(settings.get("sampling", {}))
    if sampling.get("temperature") is None and algo in ALGOS:
        sampling["temperature"] = preset_temperature(algo)
    _check_length_limit(train, sampling)
    return LoopConfig(
        model=settings["model"],
        problems=Path(settings["problems"]),
        run_dir=Path(settings["run_dir"]),
        train=resolve(algo, train),
        sampling=SamplingConfig(**sampling),
        judge=JudgeConfig(**settings.get("judge", {})),
        **settings.get("loop", {}),
    )


def _check_length_limit(train: dict[str, Any], sampling: dict[str, Any]) -> None:
    """The loop trains with its sampling limit as L_max (``LoopConfig.validate``): a
    ``train.max_tokens`` that says otherwise would be overwritten without a word."""
    default = next(f.default for f in dataclasses.fields(SamplingConfig) if f.name == "max_tokens")
    limit = sampling.get("max_tokens", default)
    given = train.pop("max_tokens", None)
    if given is not None and given != limit:
        raise UsageError(
            f"train.max_tokens {given} differs from the sampling limit {limit}",
            hint="the loop trains with L_max = sampling.max_tokens (--max-tokens): set that one",
        )
