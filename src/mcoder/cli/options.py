"""Command-line options generated from the configuration dataclasses: one declaration per setting.

A field's type, docstring and section (``mcoder.config``) become the option's type, help text and
help panel; a ``Literal``'s values are listed in the help and checked by the config. Every generated option defaults
to None, meaning "not given": the dataclass (or the preset) decides, and its value is shown in the
help. A subcommand lists its own few options by hand and adds these::

    params = config_options(TrainConfig, skip={"seed"}, preset_values=presets())
    train = with_options(_train, [*explicit, *params])
    ...
    values = given(TrainConfig, kwargs)        # {field: value} of the options the user gave

A field whose command-line form is text of its own (``0.6:1.8:0.2`` for a tuple of floats, a
temperature that is a number, ``auto`` or a schedule) says so in its metadata,
``field(..., metadata=TEXT)``: the option reads text, and the dataclass parses it (in
``__post_init__``, the one boundary, whoever builds the config; its errors are usage errors).
A flag renamed once can stay as a hidden, deprecated spelling (``aliases``). A generated
option's number is checked against its field's range (``mcoder.config.range_problem``, the
declaration on the class) before the command runs, and an error names the flag as typed; choices
are checked by the config (``check_choices``).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any, get_args, get_origin

import typer

from mcoder.config import choices_of, field_docs, field_types, flag, range_problem


@dataclasses.dataclass(frozen=True)
class FromField:
    """The mark a generated option carries in its ``Annotated`` metadata: the field it sets, the
    default the command claims for it, and whether it is a hidden older spelling (an alias). The
    defaults test reads it to tell generated options from hand-written ones."""

    cls: type
    name: str
    default: Any
    alias: bool = False
    flag: str = ""
    """The option's flag (its first spelling), for messages."""


def _cli_type(tp: Any) -> Any:
    """The type typer parses a field as (Optional stripped). A ``Literal`` is read as text and
    checked by the config itself (``mcoder.config.check_choices``), the one place choices are
    checked, whoever builds the config."""
    values = choices_of(tp)
    if values is not None:  # a repeated choice (a tuple of them) is a repeated option
        return list[type(values[0])] if get_origin(tp) is tuple else type(values[0])
    if get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        tp = args[0] if len(args) == 1 else str
    if get_origin(tp) is tuple and get_args(tp)[-1:] == (Ellipsis,):
        return list[get_args(tp)[0]]  # any number of values: the option is repeated
    return tp


def _shown(value: Any) -> str:
    if isinstance(value, (tuple, list)) and not value:
        return "none"
    if isinstance(value, (tuple, list)):  # spaced: a long default wraps at 80 columns instead of being cut
        return ", ".join(map(str, value))
    return "off" if value is False else "on" if value is True else str(value)


def config_options(
    cls: type,
    *,
    prefix: str = "",
    flag_prefix: str = "",
    skip: Iterable[str] = (),
    only: Iterable[str] | None = None,
    names: Mapping[str, tuple[str, ...]] | None = None,
    defaults: Mapping[str, Any] | None = None,
    preset_values: Mapping[str, Mapping[str, Any]] | None = None,
    panel: str | None = None,
    note: str = "",
    roles: Mapping[str, Any] | None = None,
    aliases: Mapping[str, tuple[str, ...]] | None = None,
) -> list[inspect.Parameter]:
    """Keyword parameters, one per field of ``cls``, for a typer command.

    ``prefix`` is put before each parameter name (and ``flag_prefix`` before each flag) so two
    dataclasses with a field of the same name can share a command; ``names`` overrides a field's
    flags; ``defaults`` are the values the command uses when the option is not given (shown in
    the help); ``preset_values`` (preset -> field -> value) are shown after the help text;
    ``roles`` marks path fields (``mcoder.cli.common.PathRole``); ``aliases`` are older flags of a
    field, accepted but not shown (read back by ``given``)."""
    docs, types_ = field_docs(cls), field_types(cls)
    skip, only = set(skip), (set(only) if only is not None else None)
    names, defaults = names or {}, defaults or {}
    params = []
    for f in dataclasses.fields(cls):
        if f.name in skip or (only is not None and f.name not in only) or not f.init:
            continue
        if dataclasses.is_dataclass(types_[f.name]):
            continue
        doc = docs.get(f.name)
        help_text = (doc.help if doc else "") + note
        default = defaults.get(f.name, _field_default(f))
        presets = {p: v[f.name] for p, v in (preset_values or {}).items() if f.name in v}
        if presets:
            help_text += " (" + ", ".join(f"{p} {_shown(v)}" for p, v in presets.items()) + ")"
        elif default is not None and default is not dataclasses.MISSING:
            shown = _as_text(default) if f.metadata.get("text") else _shown(default)
            help_text += f" (default {shown})"
        as_text = bool(f.metadata.get("text"))
        tp = str if as_text else _cli_type(types_[f.name])
        name = flag(flag_prefix + f.name)
        pname = prefix + f.name
        pair = tp is bool and default is None and f.name not in names  # unset: the config decides
        if pair:
            decls = (name,)  # turns it on; its --no- twin (below) turns it off
        elif tp is bool and default is True and f.name not in names:
            # on by default: one switch that turns it off (read back inverted by ``given``)
            decls, pname = (f"--no-{name[2:]}",), NEGATED + pname
            help_text = "Turn off: " + help_text
        elif tp is bool and True in presets.values():
            decls = (f"{name}/--no-{name[2:]}",)  # on in a preset: either way
        else:
            decls = names.get(f.name) or (name,)
        section = panel or (doc.section.capitalize() if doc and doc.section else None)
        choices = choices_of(types_[f.name])
        if (
            choices is not None
        ):  # listed in the help (a long <a|b|c> would squeeze the flag names at 80 columns)
            help_text += " Choices: " + ", ".join(map(str, choices)) + "."
        metavar = "<text>" if as_text else _metavar(tp, choices)
        option = typer.Option(*decls, help=help_text, rich_help_panel=section, show_default=False, metavar=metavar)
        role = (roles or {}).get(f.name)
        cli_tp = tp | None
        mark = FromField(cls, f.name, default, flag=decls[0].split("/")[0])
        marks = (mark, role) if role is not None else (mark,)
        annotation = Annotated[(cli_tp, option, *marks)]
        params.append(inspect.Parameter(pname, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation))
        if pair:  # a row of its own (a --x/--no-x pair would widen the flag column of every row)
            off = typer.Option(f"--no-{name[2:]}", help="Turn off: " + help_text, rich_help_panel=section, metavar="")
            params.append(
                inspect.Parameter(
                    NEGATED + pname, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[cli_tp, off, mark]
                )
            )
        for old in (aliases or {}).get(f.name, ()):
            hidden = typer.Option(old, hidden=True, help=f"Deprecated spelling of {decls[0].split('/')[0]}.")
            alias = dataclasses.replace(mark, alias=True)  # named by its current flag in messages
            params.append(
                inspect.Parameter(
                    ALIAS + pname, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[cli_tp, hidden, alias]
                )
            )
    return params


NEGATED = "not__"  # parameter-name mark of a --no-X switch
ALIAS = "alias__"  # parameter-name mark of a hidden, deprecated spelling of a field's flag


def _as_text(value: Any) -> str:
    """A default the way the option is written: '1400,2000', not '1400.0, 2000.0'."""
    if isinstance(value, (tuple, list)):
        return ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
    return str(value)


def _metavar(tp: Any, choices: tuple[Any, ...] | None) -> str | None:
    if tp is bool:
        return ""
    if choices is not None:
        return "<choice>"
    if get_origin(tp) is tuple:
        return "<x y>"  # a pair
    if get_origin(tp) is list:
        return f"<{get_args(tp)[0].__name__}>"  # repeated
    return None


def _field_default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


def given(cls: type, values: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{field: value}`` of the options of ``cls`` that the user gave (not None), as plain values."""
    out = {}
    for f in dataclasses.fields(cls):
        v = values.get(prefix + f.name)
        if v is None or (isinstance(v, (list, tuple)) and not v):
            v = values.get(ALIAS + prefix + f.name)
        if values.get(NEGATED + prefix + f.name):
            v = False
        if v is None or (isinstance(v, (list, tuple)) and not v):
            continue  # a repeated option given no time comes as an empty sequence
        if isinstance(v, list) and get_origin(field_types(cls)[f.name]) is tuple:  # (text stays text)
            v = tuple(v)
        out[f.name] = v
    return out


def with_options(fn: Callable[..., Any], params: list[inspect.Parameter]) -> Callable[..., Any]:
    """``fn(**values)`` as a typer command whose options are ``params``; each generated option's
    value is checked first (``check_given``)."""
    marks = {p.name: m for p in params for m in typing.get_args(p.annotation)[1:] if isinstance(m, FromField)}

    @functools.wraps(fn)
    def command(**kwargs: Any) -> Any:
        from mcoder.cli.common import report
        from mcoder.errors import McoderError

        try:
            check_given(marks, kwargs)
        except McoderError as e:  # the error boundary's message and exit code
            report(e)
            raise typer.Exit(e.exit_code) from None
        return fn(**kwargs)

    del command.__wrapped__  # typer must read the signature below, not fn's
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    return command


def check_given(marks: Mapping[str, FromField], values: Mapping[str, Any]) -> None:
    """A UsageError naming the flag, for the first given number (not None) of a generated option
    that is out of its field's range. Text options are checked by the dataclass that parses them."""
    from mcoder.errors import UsageError

    for pname, mark in marks.items():
        value = values.get(pname)
        if value is None or pname.startswith(NEGATED) or isinstance(value, str):
            continue
        problem = range_problem(mark.cls, mark.name, tuple(value) if isinstance(value, list) else value)
        if problem is not None:
            shown = " ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
            raise UsageError(f"{mark.flag} {shown}: {problem}")


def option(
    name: str, tp: Any, *decls: str, default: Any = None, help: str, panel: str | None = None, role: Any = None
) -> inspect.Parameter:
    """One hand-written option as a parameter for ``with_options``; ``role``: a path option's
    ``mcoder.cli.common.PathRole``."""
    metavar = "" if tp is bool else None
    opt = typer.Option(*decls, help=help, rich_help_panel=panel, metavar=metavar)
    return inspect.Parameter(
        name,
        inspect.Parameter.KEYWORD_ONLY,
        default=default,
        annotation=Annotated[tp, opt, role] if role is not None else Annotated[tp, opt],
    )
