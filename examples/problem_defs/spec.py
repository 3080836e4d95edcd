"""What one example problem is before its expected outputs are known.

A ``Spec`` holds the statement (without its example, which the generator adds from the first
test), the reference solutions and the test inputs. Expected outputs are never written by hand:
``make_problems.py`` runs the reference solutions to get them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Spec:
    id: str
    title: str
    difficulty: str  # easy | medium | hard
    statement: str
    solutions: list[str]
    # stdin problems: the text fed to standard input, one string per test.
    # call problems: the positional arguments of one call, one list per test.
    tests: list[Any]
    fn_name: str | None = None
    starter_code: str = ""
    float_output: bool = False  # outputs are compared with absolute or relative error 1e-6
    tags: list[str] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return "call" if self.fn_name else "stdin"


def lines(*rows: Any) -> str:
    """Test input from rows: each row is a value or a list of values joined by spaces."""
    out = []
    for row in rows:
        out.append(" ".join(map(str, row)) if isinstance(row, (list, tuple)) else str(row))
    return "\n".join(out) + "\n"
