"""Every numeric setting is checked where it is declared: finite and in its range.

The configuration classes are found from the code: every dataclass the CLI generates options
from (the ``FromField`` mark each generated option carries), the recipe's sections, and the
service's. Each numeric field (int or float, optional, or a tuple of them) must have its range
declared (``@ranges`` above the class: the one place), and every way a value reaches it must
refuse NaN, infinity and a value outside the range: the object made directly (a script, a saved
config), each command line option generated from the field (its flag named in the error), and
for the loop's sections a recipe file (``FILE:LINE: section.key: ...``) and ``--set``.
"""

from __future__ import annotations

import dataclasses
import inspect
import signal
import types
import typing
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mcoder.cli.app import app
from mcoder.cli.options import FromField
from mcoder.config import TEXT, field_ranges, field_types
from mcoder.errors import UsageError
from mcoder.integrations.serve import ServeConfig
from mcoder.loop.recipe import SECTIONS, parse_sets, read_recipe
from mcoder.warmstart import WarmStartConfig


def _walk(typer_app, prefix=()):
    for c in typer_app.registered_commands:
        yield (*prefix, c.name or c.callback.__name__), c.callback
    for g in typer_app.registered_groups:
        yield from _walk(g.typer_instance, (*prefix, g.name))


def generated_options() -> list[tuple[str, str, type, str]]:
    """(command, flag, class, field) of every option the CLI generates from a config field."""
    found = []
    for words, callback in _walk(app):
        for p in inspect.signature(callback, eval_str=True).parameters.values():
            if typing.get_origin(p.annotation) is not typing.Annotated:
                continue
            _, *meta = typing.get_args(p.annotation)
            mark = next((m for m in meta if isinstance(m, FromField)), None)
            info = next((m for m in meta if hasattr(m, "param_decls")), None)
            if mark is None or mark.alias or info is None:
                continue
            decls = [info.default, *(info.param_decls or ())]
            flags = [
                d for d in decls if isinstance(d, str) and d.startswith("--") and not d.startswith("--no-")
            ]
            if flags:
                found.append((" ".join(words), flags[0].split("/")[0], mark.cls, mark.name))
    return found


CONFIGS = sorted(
    {cls for _, _, cls, _ in generated_options()} | set(SECTIONS.values()) | {ServeConfig, WarmStartConfig},
    key=lambda c: c.__name__,
)


def _number_type(tp) -> type | None:
    """int or float when the field holds numbers (also optional, or a tuple of them); else None."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return _number_type(args[0]) if len(args) == 1 else None
    if typing.get_origin(tp) in (tuple, list):
        args = [a for a in typing.get_args(tp) if a is not Ellipsis]
        kinds = {_number_type(a) for a in args}
        return kinds.pop() if len(kinds) == 1 else None
    return tp if tp in (int, float) else None


def numeric_fields(cls) -> list[str]:
    types_ = field_types(cls)
    return [f.name for f in dataclasses.fields(cls) if f.init and _number_type(types_[f.name]) is not None]


CASES = [(cls, name) for cls in CONFIGS for name in numeric_fields(cls)]


def test_the_classes_and_fields_are_found():
    names = {c.__name__ for c in CONFIGS}
    assert {"TrainConfig", "LoopConfig", "SamplingConfig", "JudgeConfig", "RolloutConfig", "Gates"} <= names
    assert len(CASES) >= 100  # as counted when this test was written


@pytest.mark.parametrize("cls", CONFIGS, ids=lambda c: c.__name__)
def test_every_numeric_field_declares_its_range_and_its_class_checks_it(cls):
    missing = [n for n in numeric_fields(cls) if n not in field_ranges(cls)]
    assert not missing, f"declare the range of {cls.__name__}.{missing} in its @ranges(...)"
    if field_ranges(cls):  # the class's own __init__ (a subclass's dataclass makes a new one)
        assert getattr(cls.__dict__["__init__"], "checks_ranges", False), f"@ranges on {cls.__name__}"


def bad_values(cls, name) -> list:
    """NaN and infinity for a float field, and a value just outside each bound."""
    declared = field_ranges(cls)[name]
    kind = _number_type(field_types(cls)[name])
    out: list = [float("nan"), float("inf")] if kind is float else []
    if declared.lo is not None:
        out.append(kind(declared.lo if declared.lo_open else declared.lo - 1))
    if declared.hi is not None:
        out.append(kind(declared.hi if declared.hi_open else declared.hi + 1))
    return out


def shaped(cls, name, bad):
    """``bad`` in the shape of the field: alone, or in a tuple beside good values."""
    tp = field_types(cls)[name]
    tp = next((a for a in typing.get_args(tp) if a is not type(None)), tp) if typing.get_origin(tp) in (
        typing.Union, types.UnionType) else tp  # fmt: skip
    if typing.get_origin(tp) not in (tuple, list):
        return bad
    default = next(f for f in dataclasses.fields(cls) if f.name == name).default
    if isinstance(default, tuple) and default and typing.get_args(tp)[-1:] != (Ellipsis,):
        return (*default[:-1], bad)  # a fixed pair: the last one bad
    if isinstance(default, tuple) and len(default) == 2:
        return (bad, default[1])
    return (bad,)


# what a class needs besides its required fields to be made at all (bench: something to do)
MAKES = {"BenchConfig": {"problems": Path("P"), "verdicts": Path("V")}}


def _required(cls) -> dict:
    """Values for the fields without a default (paths and names: never read here)."""
    out = dict(MAKES.get(cls.__name__, {}))
    for f in dataclasses.fields(cls):
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING and f.init:
            tp = field_types(cls)[f.name]
            out[f.name] = ("x",) if typing.get_origin(tp) is tuple else "x"
    return out


@pytest.mark.parametrize("cls, name", CASES, ids=[f"{c.__name__}.{n}" for c, n in CASES])
def test_made_directly_a_value_out_of_range_is_refused(cls, name):
    for bad in bad_values(cls, name):
        value = shaped(cls, name, bad)
        with pytest.raises(UsageError) as e:
            cls(**_required(cls), **{name: value})
        assert name.replace("_", "-") in e.value.message, e.value.message  # its flag (--x-y, --verify-x-y)
        assert e.value.exit_code == 2


# ---------------------------------------------------------------- the command line

# A command line of each command that gets as far as making its configuration (nothing is read).
BASES = {
    "rollout": ["rollout", "-p", "P", "-m", "M", "-o", "O"],
    "judge": ["judge", "-p", "P", "-r", "R", "-o", "O"],
    "train": ["train", "-m", "M", "-r", "R", "--verdicts", "V", "-o", "O"],
    "loop": ["loop", "-m", "M", "-p", "P", "--run-dir", "RUN", "--steps", "1"],
    "bench": ["bench", "-p", "P", "--verdicts", "V", "--baseline", "B"],
    "show": ["show", "T"],
    "dataset build": ["dataset", "build", "S", "-o", "O"],
    "dataset difficulty predict": ["dataset", "difficulty", "predict", "-p", "P", "-m", "M", "-o", "O"],
    "dataset difficulty calibrate": [
        "dataset",
        "difficulty",
        "calibrate",
        "-s",
        "S",
        "--verdicts",
        "V",
        "-o",
        "O",
    ],
    "dataset difficulty select": [
        "dataset",
        "difficulty",
        "select",
        "-p",
        "P",
        "-s",
        "S",
        "-c",
        "C",
        "-o",
        "O",
    ],
}
OPTIONS = [o for o in generated_options() if o[3] in numeric_fields(o[2])]


def test_every_command_with_numeric_options_has_a_base():
    missing = sorted({cmd for cmd, *_ in OPTIONS} - set(BASES))
    assert not missing, f"add a command line to BASES for: {missing}"


def _as_text(cls, name, value) -> list[str]:
    """The option's words: a tuple's values as repeated words, or as one text (``metadata=TEXT``)."""
    text_field = next(f for f in dataclasses.fields(cls) if f.name == name).metadata.get("text")
    if isinstance(value, tuple):
        return [",".join(map(str, value))] if text_field else list(map(str, value))
    return [str(value)]


@pytest.mark.parametrize("command, option, cls, name", OPTIONS, ids=[f"{c} {o}" for c, o, *_ in OPTIONS])
def test_each_option_refuses_a_value_out_of_range_naming_its_flag(
    command, option, cls, name, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)  # nothing is read or written: the values are refused first
    for bad in bad_values(cls, name):
        words = _as_text(cls, name, shaped(cls, name, bad))
        old = signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError("the command ran")))
        signal.alarm(60)
        try:
            r = CliRunner().invoke(app, [*BASES[command], option, *words])
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
        assert r.exit_code == 2, (words, r.output)
        assert option in r.stderr and "internal error" not in r.stderr, (words, r.stderr)
        assert not list(tmp_path.iterdir()), "refused before anything was written"


# ---------------------------------------------------------------- recipes and --set


def _toml(value) -> str:
    if isinstance(value, tuple):
        return "[" + ", ".join(map(_toml, value)) + "]"
    return {"nan": "nan", "inf": "inf"}.get(str(value), repr(value))


SECTION_CASES = [(section, name) for section, cls in SECTIONS.items() for name in numeric_fields(cls)
                 if name not in ("model", "problems", "run_dir")]  # fmt: skip


@pytest.mark.parametrize("section, name", SECTION_CASES, ids=[f"{s}.{n}" for s, n in SECTION_CASES])
def test_a_recipe_and_set_refuse_it_naming_file_line_and_key(section, name, tmp_path):
    cls = SECTIONS[section]
    for bad in bad_values(cls, name):
        value = _toml(shaped(cls, name, bad))
        recipe = tmp_path / "r.toml"
        recipe.write_text(f"# a recipe\n[{section}]\n{name} = {value}\n")
        with pytest.raises(UsageError) as e:
            read_recipe(recipe)
        assert e.value.message.startswith(f"{recipe}:3: {section}.{name}: "), e.value.message
        with pytest.raises(UsageError) as e:
            parse_sets([f"{section}.{name}={value}"])
        assert e.value.message.startswith(f"--set {section}.{name}={value}: {section}.{name}: "), (
            e.value.message
        )


def test_a_number_given_as_text_is_finite_too():
    """Fields read as text (a temperature, candidates) parse their numbers at the same door."""
    from mcoder.rollout.sampling import SamplingConfig

    for text in ("nan", "inf", "-1"):
        with pytest.raises(UsageError, match="--temperature"):
            SamplingConfig(temperature=text)
        with pytest.raises(UsageError):
            SamplingConfig(temperature_candidates=text)
    assert TEXT == {"text": True} and Path  # the metadata mark the CLI reads as text
