"""What every stage's configuration dataclass shares: field docs, choices, and the JSON form.

A stage's settings are declared once, as a dataclass field with a type, a default and a
docstring line under it. From that one declaration come the ``--help`` text (the CLI generates
its options from the fields, ``mcoder.cli.options``), the allowed values (a ``Literal`` type is
the list of choices, checked here and by the CLI), and the JSON saved beside every output.
Section comments ``# --- name`` group fields into help panels.

A numeric field's range is declared once too, in the ``@ranges(...)`` line above the class's
``@dataclass`` (``lr="> 0"``, ``mask_rho="[0, 1]"``, ``seed="finite"``): every value must be a
finite number in it, checked when the object is made, whoever makes it (the CLI, a recipe,
``--set``, a saved config, a script); ``value_problem`` gives the same verdict for one value, so
that a recipe can name its file, line and key.

Importing this module imports neither torch nor typer.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import math
import re
import textwrap
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, get_args, get_origin

from mcoder.errors import UsageError

TEXT = {"text": True}
"""A field's metadata (``field(..., metadata=TEXT)``): the command line takes the field as text
(a temperature 'T@STEP,...', candidates '0.6:1.8:0.2'), which the dataclass itself parses in its
``__post_init__``."""

SETTING = "setting"
"""The metadata key of the settings marker (``not_setting``, ``setting_when``): whether a field
changes what an output holds. A field without it does, and is recorded (``output_settings``)."""


def not_setting(why: str, **more: Any) -> dict[str, Any]:
    """A field's metadata: the field changes how a run goes (how many workers, how long to wait,
    where logs go) or names an input or the output, never what is written; ``why`` says which.
    Left out of the settings an output records (its ``OUT.meta.json``, compared on a resume) and
    of the judge's cache key. ``more``: further metadata (``TEXT``, ``card=False``)."""
    return {SETTING: False, "why": why, **more}


def setting_when(test: Callable[[Any], bool], why: str, **more: Any) -> dict[str, Any]:
    """A field's metadata: a setting recorded only when ``test(config)`` holds (a field that has
    no effect otherwise, as the temperature choice's fields without ``--temperature auto``)."""
    return {SETTING: test, "why": why, **more}


def is_setting(f: Any, obj: Any) -> bool:
    """Whether the dataclass field ``f`` of ``obj`` changes the output (see ``SETTING``)."""
    marker = f.metadata.get(SETTING, True)
    return marker(obj) if callable(marker) else bool(marker)


def output_settings(obj: Any) -> dict[str, Any]:
    """The fields of a config dataclass that change the output, in declaration order: what an
    output records as its settings. A field is one unless marked (``not_setting``)."""
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if is_setting(f, obj)}


@dataclass(frozen=True)
class FieldDoc:
    help: str
    """The docstring line(s) under the field."""
    section: str
    """The ``# --- name`` comment above it ('' before the first one)."""


_SECTION = re.compile(r"^\s*#\s*-{2,}\s*(.+?)\s*$")


@functools.cache
def field_docs(cls: type) -> dict[str, FieldDoc]:
    """``{field: FieldDoc}`` read from the class source: the string literal after each annotated
    field, and the section comment it sits under."""
    source = textwrap.dedent(inspect.getsource(cls))
    lines = source.splitlines()
    body = ast.parse(source).body[0].body
    docs: dict[str, FieldDoc] = {}
    for i, node in enumerate(body):
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        nxt = body[i + 1] if i + 1 < len(body) else None
        text = ""
        if (
            isinstance(nxt, ast.Expr)
            and isinstance(nxt.value, ast.Constant)
            and isinstance(nxt.value.value, str)
        ):
            text = " ".join(nxt.value.value.split())
        section = ""
        for ln in reversed(lines[: node.lineno - 1]):
            m = _SECTION.match(ln)
            if m:
                section = m.group(1)
                break
        docs[node.target.id] = FieldDoc(text, section)
    for base in cls.__mro__[1:2]:
        if dataclasses.is_dataclass(base):  # a field redeclared without a docstring keeps its base's
            inherited = field_docs(base)
            docs = {**inherited, **{k: d for k, d in docs.items() if d.help or k not in inherited}}
    return docs


@functools.cache
def field_types(cls: type) -> dict[str, Any]:
    """The resolved annotations of a dataclass's fields."""
    return typing.get_type_hints(cls)


def choices_of(tp: Any) -> tuple[Any, ...] | None:
    """The allowed values of a ``Literal`` type (also inside ``X | None``, or each value of a
    ``tuple[Literal[...], ...]``: a repeated choice), or of a class with a ``__choices__()`` that
    reads them from a registry when asked (the judge's comparison rules), else None."""
    if get_origin(tp) is Literal:
        return get_args(tp)
    if isinstance(tp, type) and hasattr(tp, "__choices__"):
        return tp.__choices__()
    if get_origin(tp) is tuple and get_args(tp)[-1:] == (Ellipsis,):
        return choices_of(get_args(tp)[0])
    args = [a for a in get_args(tp) if a is not type(None)]
    if len(args) == 1 and get_origin(args[0]) is Literal:
        return get_args(args[0])
    return None


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def check_choices(obj: Any) -> None:
    """Every ``Literal``-typed field of the dataclass ``obj`` holds one of its values: the one
    place choices are checked, whatever built the object (CLI, JSON, a script)."""
    types = field_types(type(obj))
    for f in dataclasses.fields(obj):
        allowed = choices_of(types[f.name])
        value = getattr(obj, f.name)
        values = value if isinstance(value, (tuple, list)) else (value,)
        bad = [v for v in values if v is not None and v not in allowed] if allowed is not None else []
        if not bad:
            continue
        raise UsageError(
            f"unknown {flag(f.name)} {bad[0]!r}",
            hint=f"choose one of {', '.join(map(str, allowed))}",
        )


# ----------------------------------------------------------------------------- numeric ranges

_BOUND = re.compile(r"^(>=|>|<=|<)\s*(\S+)$")
_INTERVAL = re.compile(r"^([\[(])\s*([^,\s]+)\s*,\s*([^,\s]+)\s*([\])])$")


@dataclass(frozen=True)
class Range:
    """The finite numbers a field allows: ``lo``/``hi`` (None: no bound), open or closed."""

    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    text: str = "finite"

    @classmethod
    def parse(cls, text: str) -> Range:
        """'> 0', '>= 1', '<= 100', '[0, 1]', '(0, 1]', '[0, 1)' or 'finite' (any finite number)."""
        t = text.strip()
        if t == "finite":
            return cls()
        if m := _BOUND.match(t):
            op, value = m.group(1), float(m.group(2))
            if op.startswith(">"):
                return cls(lo=value, lo_open=op == ">", text=t)
            return cls(hi=value, hi_open=op == "<", text=t)
        if m := _INTERVAL.match(t):
            lo, hi = float(m.group(2)), float(m.group(3))
            return cls(lo, hi, m.group(1) == "(", m.group(4) == ")", text=t)
        raise ValueError(f"range {text!r}: write '> 0', '>= 1', '[0, 1]', '(0, 1]' or 'finite'")

    def problem(self, value: float) -> str | None:
        """Why ``value`` is refused, or None."""
        if isinstance(value, float) and not math.isfinite(value):
            return "is not a finite number"
        below = self.lo is not None and (value <= self.lo if self.lo_open else value < self.lo)
        above = self.hi is not None and (value >= self.hi if self.hi_open else value > self.hi)
        return f"is out of range: it must be {self.shown}" if below or above else None

    @property
    def shown(self) -> str:
        """'> 0', 'in [0, 1]'; '' for any finite number."""
        return "" if self.text == "finite" else self.text if self.text[0] in "<>" else f"in {self.text}"


RANGES_ATTR = "__field_ranges__"


def ranges(*, flag_prefix: str = "", **declared: str) -> Callable[[type], type]:
    """Class decorator, above ``@dataclass``: the range of each numeric field (see the module).
    The object is checked when it is made; ``flag_prefix``: what the command line puts before a
    field's flag (``verify-`` for ``--verify-runs``), for messages."""

    def decorate(cls: type) -> type:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(declared) - names
        if unknown:
            raise TypeError(f"@ranges on {cls.__name__}: no field {', '.join(sorted(unknown))}")
        own = {name: Range.parse(text) for name, text in declared.items()}
        setattr(cls, RANGES_ATTR, {**field_ranges(cls), **own})
        cls.__flag_prefix__ = flag_prefix
        made = cls.__init__
        post = cls.__dict__.get("__post_init__")

        @functools.wraps(made)
        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            made(self, *args, **kwargs)
            check_ranges(self)  # again after __post_init__: values it parsed from text

        __init__.checks_ranges = True  # type: ignore[attr-defined]
        cls.__init__ = __init__
        if post is not None:  # before the class's own checks, whose messages may be vaguer

            @functools.wraps(post)
            def __post_init__(self: Any) -> None:
                check_ranges(self)
                post(self)

            cls.__post_init__ = __post_init__
        return cls

    return decorate


def field_ranges(cls: type) -> dict[str, Range]:
    """``{field: Range}`` declared on ``cls`` and its bases."""
    out: dict[str, Range] = {}
    for base in reversed(cls.__mro__):
        out.update(base.__dict__.get(RANGES_ATTR, {}))
    return out


def _numbers(value: Any) -> list[float]:
    values = value if isinstance(value, (tuple, list)) else (value,)
    return [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]


def range_problem(cls: type, name: str, value: Any) -> str | None:
    """Why ``value`` (a number, or a tuple or list of them) is out of the field's range, or None."""
    declared = field_ranges(cls).get(name)
    if declared is None:
        return None
    for v in _numbers(value):
        problem = declared.problem(v)
        if problem is not None:
            return f"{v!r} {problem}" if isinstance(value, (tuple, list)) else problem
    return None


def value_problem(cls: type, name: str, value: Any) -> str | None:
    """Why ``value`` cannot be the field ``name`` of ``cls`` (not one of its choices, or out of
    its range), or None: the check ``check_choices`` and the range check make, for one value."""
    allowed = choices_of(field_types(cls)[name])
    values = value if isinstance(value, (tuple, list)) else (value,)
    if allowed is not None:
        bad = [v for v in values if v is not None and v not in allowed]
        if bad:
            return f"{bad[0]!r} is not one of {', '.join(map(str, allowed))}"
    return range_problem(cls, name, value)


def check_ranges(obj: Any) -> None:
    """Every numeric field of ``obj`` in its declared range (``ranges``); a UsageError naming the
    flag and the value otherwise."""
    cls = type(obj)
    prefix = getattr(cls, "__flag_prefix__", "")
    for name, declared in field_ranges(cls).items():
        value = getattr(obj, name)
        problem = range_problem(cls, name, value)
        if problem is not None:
            shown = ",".join(map(repr, value)) if isinstance(value, (tuple, list)) else repr(value)
            raise UsageError(
                f"{flag(prefix + name)} {shown}: {problem}",
                hint=f"{flag(prefix + name)} takes a finite number {declared.shown}".rstrip(),
            )


def to_dict(obj: Any) -> dict[str, Any]:
    return dataclasses.asdict(obj)


def from_dict(cls: type, data: dict[str, Any]) -> Any:
    """``cls`` from saved JSON: unknown keys ignored (older or newer files), tuples restored."""
    types = field_types(cls)
    values = {}
    for f in dataclasses.fields(cls):
        if f.name in data:
            v = data[f.name]
            if isinstance(v, list) and get_origin(types[f.name]) is tuple:
                v = tuple(v)
            values[f.name] = v
    return cls(**values)
