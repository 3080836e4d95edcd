"""What every stage's configuration dataclass shares: field docs, choices, and the JSON form.

A stage's settings are declared once, as a dataclass field with a type, a default and a
docstring line under it. From that one declaration come the ``--help`` text (the CLI generates
its options from the fields, ``mcoder.cli.options``), the allowed values (a ``Literal`` type is
the list of choices, checked here and by the CLI), and the JSON saved beside every output.
Section comments ``# --- name`` group fields into help panels.

Importing this module imports neither torch nor typer.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import re
import textwrap
import typing
from dataclasses import dataclass
from typing import Any, Literal, get_args, get_origin

from mcoder.errors import UsageError

TEXT = {"text": True}
"""A field's metadata (``field(..., metadata=TEXT)``): the command line takes the field as text
(a temperature 'T@STEP,...', candidates '0.6:1.8:0.2'), which the dataclass itself parses in its
``__post_init__``."""


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
    ``tuple[Literal[...], ...]``: a repeated choice), else None."""
    if get_origin(tp) is Literal:
        return get_args(tp)
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
