"""``ast.parse`` and ``ast.literal_eval`` that are safe to call from several threads.

CPython 3.11 keeps the AST constructor's recursion counter in per-interpreter state. When a
garbage collection during one thread's parse runs a finaliser that lets another thread parse,
the counter goes wrong and ``ast`` raises ``SystemError: AST constructor recursion depth
mismatch`` (python/cpython#106905). The judge parses candidate output from one thread per
worker, and the dataset stages parse while the judge runs, so every parse in mcoder goes
through this one lock. Re-entrant, because a finaliser may itself parse.

The text parsed is often a model's (a completion, its program): the warnings the parser gives on
it (``SyntaxWarning: invalid decimal literal``, an invalid escape sequence) are about that text,
not about mcoder, and are not printed on mcoder's stderr.
"""

from __future__ import annotations

import ast
import threading
import warnings
from typing import Any

_LOCK = threading.RLock()


def parse(source: str | bytes, *args: Any, **kwargs: Any) -> ast.AST:
    with _LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)  # an invalid escape, before Python 3.12
        return ast.parse(source, *args, **kwargs)


def literal_eval(node_or_string: str | ast.AST) -> Any:
    with _LOCK:
        return ast.literal_eval(node_or_string)
