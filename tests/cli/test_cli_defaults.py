"""One declaration per setting: every subcommand's setting options come from a config field, with
that field's default, and no setting is given a second default anywhere else in the package.

The commands are read from the CLI itself (the typer app, and the subcommands hung under a command),
so a new command or option is checked without being listed here; what is listed is each
command's short hand-written list of inputs, outputs and switches.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import re
import typing
from pathlib import Path

import pytest
import typer.main

from mcoder.cli import app as app_module
from mcoder.cli.app import app
from mcoder.cli.options import FromField, _as_text, _field_default, _shown

SRC = Path(__file__).resolve().parents[2] / "src" / "mcoder"

# The options each command writes by hand: inputs, outputs and switches of the command itself
# (parameter names). Any other option must be generated from a config field.
HAND_WRITTEN: dict[str, set[str]] = {
    "dataset build": {"out", "sources", "verify", "report", "limit", "quiet", "overwrite", "help_"},
    "dataset difficulty predict": {"problems", "model", "out", "overwrite", "quiet", "help_"},
    "dataset difficulty calibrate": {"scores", "out", "overwrite", "quiet", "help_"},
    "dataset difficulty select": {"problems", "scores", "calibration", "out", "overwrite", "quiet", "help_"},
    "rollout": {"problems", "model", "out", "adapter", "limit", "overwrite", "quiet", "help_"},
    "judge": {"out", "problems", "rollouts", "merge", "parts", "shard", "explain", "overwrite", "quiet", "help_"},
    "judge serve": {"quiet"},
    "train": {"model", "rollouts", "verdicts", "out", "overwrite", "quiet", "print_config"},
    "loop": {"model", "problems", "run_dir", "config", "set", "quiet", "print_config"},
    "bench": {
        "problems", "verdicts", "rollouts", "baseline", "markdown", "json_out", "lcb_out", "junit",
        "run_dir", "out_dir", "quiet", "help_",
    },
    "show": {"target", "html", "verdicts", "problems", "quiet", "help_"},
    "export": {"checkpoint", "out", "merge_lora", "bench", "overwrite", "quiet", "help_"},
    "python -m mcoder.warmstart": {"problems", "out", "help_"},
}


def _commands(typer_app=app, prefix=()):
    """(words, callback) of every command of the app, groups walked, attached commands included."""
    for c in typer_app.registered_commands:
        yield (*prefix, c.name or c.callback.__name__), c.callback
    for g in typer_app.registered_groups:
        yield from _commands(g.typer_instance, (*prefix, g.name))
    if not prefix:
        for name in app_module.ATTACHED:  # hung under another command (`mcoder judge serve`)
            module = importlib.import_module(f"mcoder.cli.{name}")
            host = next(c.name for c in app.registered_commands if f"{c.name} {name}" in module.__doc__)
            yield (host, name), module.command


# Commands of their own, outside the `mcoder` app, checked the same way
ENTRY_POINTS = {"python -m mcoder.warmstart": importlib.import_module("mcoder.cli.warmstart").command}
COMMANDS = {**{" ".join(words): callback for words, callback in _commands()}, **ENTRY_POINTS}


def _options(callback):
    """(parameter, typer info, FromField or None) of each option or argument of a command."""
    for p in inspect.signature(callback, eval_str=True).parameters.values():
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            continue
        meta = typing.get_args(p.annotation)[1:] if typing.get_origin(p.annotation) is typing.Annotated else ()
        info = next((m for m in meta if hasattr(m, "param_decls")), None)
        yield p, info, next((m for m in meta if isinstance(m, FromField)), None)


# a preset-dependent default is shown as the presets' values: "(grpo 0.2, dapo 0.28, ...)"
PRESETS_SHOWN = re.compile(r"\((?:[a-z0-9-]+ [^,()]+, )*[a-z0-9-]+ [^,()]+\)$")


def test_every_command_is_walked():
    """The walk finds every subcommand the overview lists, and the groups' commands."""
    top = {w.split()[0] for w in COMMANDS if w not in ENTRY_POINTS}
    assert top == set(app_module.SUBCOMMANDS)
    assert {"dataset build", "dataset difficulty predict", "judge serve", "rollout", "judge", "bench", "show"} <= set(COMMANDS)


# Commands whose hand-written settings are being replaced (strict: passing, it fails until removed)
PENDING: dict[str, str] = {}


@pytest.mark.parametrize(
    "words",
    [pytest.param(w, marks=pytest.mark.xfail(reason=PENDING[w], strict=True)) if w in PENDING else w
     for w in sorted(COMMANDS)],
)  # fmt: skip
def test_every_option_is_a_field_or_in_the_hand_written_list(words):
    """A setting written by hand as an option (a second declaration, a second default) fails here:
    only the command's own inputs, outputs and switches may be written by hand."""
    assert words in HAND_WRITTEN, f"`mcoder {words}` is new: list its hand-written inputs and outputs in HAND_WRITTEN"
    hand = {p.name for p, _, mark in _options(COMMANDS[words]) if mark is None}
    assert hand - HAND_WRITTEN[words] == set(), f"`mcoder {words}`: hand-written options that are not inputs or outputs"
    # and the list is not a stale allowance
    assert HAND_WRITTEN[words] - hand == set(), f"`mcoder {words}`: HAND_WRITTEN names options it no longer has"


@pytest.mark.parametrize("words", sorted(COMMANDS))
def test_every_generated_option_defaults_to_its_field_and_shows_it(words):
    """Not given, a generated option is None and the dataclass decides (``mcoder.cli.options.given``);
    the default the command claims is the field's own, and the help shows it (or the presets')."""
    checked = 0
    for p, info, mark in _options(COMMANDS[words]):
        if mark is None:
            continue
        field = {f.name: f for f in dataclasses.fields(mark.cls)}[mark.name]
        assert p.default is None, f"{words} {p.name}: a generated option must not carry a default of its own"
        assert mark.default == _field_default(field), (
            f"`mcoder {words}`: {mark.cls.__name__}.{mark.name} defaults to {_field_default(field)!r}, "
            f"the command says {mark.default!r}"
        )
        if mark.alias or mark.default is None or info.hidden:
            continue
        shown = _as_text(mark.default) if field.metadata.get("text") else _shown(mark.default)
        help_text = (info.help or "").split(" Choices: ")[0]
        assert f"(default {shown})" in help_text or PRESETS_SHOWN.search(help_text), (
            f"`mcoder {words} -h` does not show the default {shown} of {p.name}: {help_text!r}"
        )
        checked += 1
    generated = [m for _, _, m in _options(COMMANDS[words]) if m is not None]
    assert checked or not generated


def test_the_judge_options_build_the_default_judge_config():
    """`mcoder judge`, `mcoder judge serve` and the loop build JudgeConfig through one pair of functions."""
    from mcoder.cli.judge import judge_config, judge_params
    from mcoder.judge.config import JudgeConfig

    assert judge_config({p.name: None for p in judge_params()}) == JudgeConfig()
    infos = [typing.get_args(p.annotation)[1] for p in judge_params()]
    flags = {d for i in infos for d in (i.default, *i.param_decls) if isinstance(d, str)}
    assert {"--timeout-s", "--memory-mb", "--max-processes", "--max-output-mb", "--max-disk-mb", "--first-uid",
            "--cache-size", "--no-cache", "--allow-package", "--early-exit", "--no-early-exit"} <= flags  # fmt: skip
    assert not any("judge" in f for f in flags)  # one name in every command: no judge- prefix
    command = typer.main.get_command(app).commands["judge"]  # type: ignore[attr-defined]

    def parsed(*args: str) -> JudgeConfig:
        return judge_config(command.make_context("judge", ["-o", "v.jsonl", *args]).params)

    assert parsed() == JudgeConfig() and parsed().early_exit is True
    assert parsed("--no-early-exit").early_exit is False
    assert parsed("--reward", "fraction").early_exit is False and parsed("--reward", "fraction", "--early-exit").early_exit
    assert parsed("--timeout", "2").timeout_s == parsed("--timeout-s", "2").timeout_s == 2.0  # the old spelling
    assert parsed("--no-cache", "--allow-package", "rich", "--max-processes", "8") == JudgeConfig(
        cache=False, allow_packages=("rich",), max_processes=8
    )


# ---------------------------------------------------------------- one declaration per setting

# (file relative to src/mcoder, function or class): the names it may give a default, and why.
EXEMPT: dict[tuple[str, str], tuple[set[str], str]] = {
    ("rollout/config.py", "RolloutConfig"): (
        {"n", "max_tokens", "probe_problems", "temperature_rule"},
        (
            "rollout's own defaults (8 samples of up to 1024 tokens, the knee rule: rollout has no judge "
            "for the loop's spread rule) over SamplingConfig's, which are the loop's"
        ),
    ),
    ("engines/factory.py", "make_engine"): (
        {"batch_size", "top_k", "top_p", "seed"},
        (
            "an engine built outside a stage (tests, predict) samples plainly; the stages pass their "
            "config's values (to do: drop these defaults where the engines now live)"
        ),
    ),
    ("engines/hf_engine.py", "__init__"): ({"batch_size", "top_k", "top_p"}, "as make_engine"),
    ("engines/hf_engine.py", "sample_next"): ({"top_k", "top_p"}, "as make_engine: the filters off"),
    ("engines/vllm_engine.py", "__init__"): ({"top_k", "top_p", "seed"}, "as make_engine"),
    ("rollout/sample.py", "problem_seed"): ({"policy_version"}, "the untrained policy, 0; stages pass theirs"),
    ("rollout/sample.py", "make_rollouts"): ({"policy_version"}, "as problem_seed"),
    ("loop/samplers.py", "vllm_engine"): ({"tensor_parallel_size"}, "one GPU per engine; the loop passes its own"),
    ("train/batching.py", "Sample"): ({"masked"}, "a record of one sample (was it masked), not a setting"),
    ("bench/table.py", "ProblemTally"): ({"n"}, "a count of samples, not the group size"),
    ("testing.py", "TinySpec"): ({"seed", "dtype", "layers"}, "the tiny test model's own spec, not a run's"),
    ("models.py", "load_model"): ({"dtype", "device"}, "'auto': the checkpoint's dtype and the free device"),
    ("warmstart/gates.py", "measure"): ({"step"}, "the step being checked, not a setting"),
    ("judge/harness.py", "imported_names"): ({"limit"}, "how many code objects are walked, not a number of problems"),
}


def _config_classes() -> dict[type, set[str]]:
    """The config dataclasses the CLI generates options from (and their dataclass bases and
    nested config dataclasses), each with all its field names."""
    found: set[type] = set()
    for callback in COMMANDS.values():
        for _, _, mark in _options(callback):
            if mark is not None:
                found |= {c for c in mark.cls.__mro__ if dataclasses.is_dataclass(c)}
    for cls in list(found):  # nested configs (LoopConfig.sampling, BuildConfig.verify, ...)
        for tp in typing.get_type_hints(cls).values():
            for arg in (tp, *typing.get_args(tp)):
                if dataclasses.is_dataclass(arg):
                    found.add(arg)
    return {cls: {f.name for f in dataclasses.fields(cls)} for cls in found}


def _settings(classes: dict[type, set[str]]) -> dict[str, set[type]]:
    """Setting name (a field some command has as a generated option) -> the types of its non-None
    defaults in the configs (int and float as one)."""
    names = {m.name for callback in COMMANDS.values() for _, _, m in _options(callback) if m is not None}
    out: dict[str, set[type]] = {}
    for cls in classes:
        for f in dataclasses.fields(cls):
            value = _field_default(f)
            if f.name in names and value is not None and value != () and value != []:
                out.setdefault(f.name, set()).add(float if type(value) is int else type(value))
    return out


def _literal(node: ast.expr | None) -> tuple[bool, object]:
    """(written as a literal, its value), for a default that is not None, (), [] or a name."""
    if node is None:
        return False, None
    try:
        value = ast.literal_eval(node)
    except ValueError:
        return False, None
    return value is not None and value != () and value != [], value


def declarations(settings: dict[str, set[type]], owners: dict[str, set[str]]) -> list[tuple[str, str, str, int]]:
    """(file, function or class, name, line) of each parameter or class field in src/mcoder named
    like a setting, with a literal default of the setting's type, outside a config class that
    declares that field."""

    def same_setting(name: str, node: ast.expr | None) -> bool:
        written, value = _literal(node)
        kind = float if type(value) is int else type(value)
        return written and name in settings and kind in settings[name]

    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                a = node.args
                positional = a.posonlyargs + a.args
                pairs = [*zip(positional[len(positional) - len(a.defaults) :], a.defaults, strict=True),
                         *zip(a.kwonlyargs, a.kw_defaults, strict=True)]  # fmt: skip
                for arg, default in pairs:
                    if same_setting(arg.arg, default):
                        found.append((rel, getattr(node, "name", "lambda"), arg.arg, arg.lineno))
            elif isinstance(node, ast.ClassDef):
                for st in node.body:
                    if not (isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)):
                        continue
                    name, value = st.target.id, st.value
                    if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "field":
                        value = next((k.value for k in value.keywords if k.arg == "default"), None)
                    if same_setting(name, value) and name not in owners.get(node.name, set()):
                        found.append((rel, node.name, name, st.lineno))
    return found


def test_no_setting_is_declared_with_a_default_outside_its_config():
    """`max_tokens` had 512 in one place, 1024 in two, None in one: a setting's default lives in
    the config dataclass that declares it; functions take it from there (or as a required argument)."""
    classes = _config_classes()
    owners = {cls.__name__: fields for cls, fields in classes.items()}
    for cls in classes:  # a subclass redeclaring a base's field is a second declaration
        for base in cls.__mro__[1:]:
            if base in classes:
                owners[cls.__name__] = owners[cls.__name__] - classes[base]
    found = declarations(_settings(classes), owners)
    allowed = {(rel, where, name) for (rel, where), (names, _) in EXEMPT.items() for name in names}
    bad = [f"{rel}:{line} {where}.{name}" for rel, where, name, line in found if (rel, where, name) not in allowed]
    assert not bad, "settings given a default outside their config dataclass:\n" + "\n".join(bad)
    stale = allowed - {(r, w, n) for r, w, n, _ in found}
    assert not stale, f"exemptions that no longer match a declaration: {sorted(stale)}"


def test_the_declaration_scan_finds_a_second_default(tmp_path):
    """The scan itself: a function or class giving max_tokens a literal int default is found; one
    taking it from a constant, requiring it, or naming something else max_tokens (a string) is not."""
    (tmp_path / "m.py").write_text(
        "def a(x, max_tokens=512): ...\n"
        "def b(x, *, max_tokens: int): ...\n"
        "def c(x, max_tokens=DEFAULT): ...\n"
        "class D:\n    max_tokens: int = 7\n"
        "class SamplingConfig:\n    max_tokens: int = 512\n"
        "def e(max_tokens='all'): ...\n"
    )
    global SRC
    old, SRC = SRC, tmp_path
    try:
        found = declarations({"max_tokens": {float}}, {"SamplingConfig": {"max_tokens"}})
    finally:
        SRC = old
    assert [(w, line) for _, w, _, line in found] == [("a", 1), ("D", 5)]


def test_dataset_build_reads_its_settings_into_the_filter_and_verify_configs():
    """The generated options land in the configs (the old --verify-timeout spelling too), and a
    build given no filter option records the configs' defaults, as the command always did."""
    from mcoder.cli.options import given
    from mcoder.dataset.filter.steps import FilterConfig
    from mcoder.dataset.verify.step import VerifyConfig

    build = typer.main.get_command(app).commands["dataset"].commands["build"]  # type: ignore[attr-defined]

    def params(*args: str) -> dict:
        return build.make_context("build", ["x.jsonl", "-o", "o.jsonl", *args]).params

    assert FilterConfig(**given(FilterConfig, params())) == FilterConfig() and FilterConfig().min_tests == 0
    got = FilterConfig(**given(FilterConfig, params("--special-judge", "drop", "--keep-pass-rate", "0.1,0.9",
                                                    "--difficulty-from", "v.jsonl")))  # fmt: skip
    assert (got.special_judge, got.keep_pass_rate) == ("drop", (0.1, 0.9))
    old = given(VerifyConfig, params("--verify-timeout", "5"), prefix="verify_")
    new = given(VerifyConfig, params("--verify-timeout-s", "5", "--verify-workers", "2"), prefix="verify_")
    assert old == {"timeout_s": 5.0} and new == {"timeout_s": 5.0, "workers": 2}
