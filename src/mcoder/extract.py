"""Find the program in a completion: the last fenced Python block, else the bare completion.

A completion is model text. The program is the last fenced block labelled Python (``python``,
``py``, ``python3``); failing that the last unlabelled fenced block; failing that the whole
completion when it parses as Python. A reasoning section closed by ``</think>`` is skipped: the
answer follows it. A block whose closing fence is missing (the model ran out of tokens) runs to
the end of the text. ``None`` means there is no code at all (the ``no_code`` verdict).
"""

from __future__ import annotations

import re
import warnings

from mcoder import safe_ast

_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+#.-]*)[^\n]*$", re.MULTILINE)
_PYTHON_LABELS = {"python", "py", "python3", "py3", "python2"}


def extract_code(completion: str) -> str | None:
    """The program in ``completion``, or None when there is none."""
    text = completion.rsplit("</think>", 1)[-1]
    blocks = _fenced_blocks(text)
    python = [body for label, body in blocks if label.lower() in _PYTHON_LABELS]
    plain = [body for label, body in blocks if not label]
    for candidates in (python, plain):
        if candidates and candidates[-1].strip():
            return candidates[-1]
    if blocks:
        return None  # fenced blocks, but none of them Python: prose around other languages
    if text.strip() and parses(text):
        return text
    return None


def _fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(label, body) of each fenced block, in order; an unclosed last block runs to the end."""
    blocks = []
    opened: tuple[str, str, int] | None = None  # (fence, label, body start)
    for m in _FENCE.finditer(text):
        fence, label = m.group(1), m.group(2)
        if opened is None:
            opened = (fence, label, m.end() + 1)
        elif fence[0] == opened[0][0] and len(fence) >= len(opened[0]) and not label:
            blocks.append((opened[1], text[opened[2] : m.start()]))
            opened = None
    if opened is not None:
        blocks.append((opened[1], text[opened[2] :]))
    return blocks


def parses(text: str) -> bool:
    """Does ``text`` parse as Python (by mcoder.safe_ast, which bounds what model text can cost)?"""
    try:
        safe_ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def compile_program(code: str) -> tuple[object | None, str | None]:
    """(code object, None) or (None, the compiler's message) for a compile error."""
    try:
        with warnings.catch_warnings():  # the candidate's own warnings (an invalid escape) stay
            warnings.simplefilter("ignore")  # out of the judge's stderr and cannot turn into errors
            return compile(code, "main.py", "exec", dont_inherit=True), None
    except (SyntaxError, ValueError, OverflowError, RecursionError, MemoryError) as e:
        return None, f"{type(e).__name__}: {e}"
