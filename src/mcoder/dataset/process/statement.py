"""Statement text and the facts inside it: prompt wrappers around the statement, the starter
code block, time and memory limits, tags, dates, difficulty labels, placeholder solutions.

Statements come from downloaded files and can be megabytes long, so every scan here is linear:
markers are found with ``str.find`` and the regular expressions are either applied to a bounded
slice (the trailer lines) or of a form that cannot backtrack over the text (no unbounded
repeat of ``.``, no repeat inside a repeat; ``tests/dataset/test_dataset_fuzz.py`` checks both)."""

from __future__ import annotations

import ast
import re
from typing import Any

from mcoder import safe_ast

_FENCE, _PY_FENCE = "```", "```python"
_COMPLETE_PROMPT = "Please complete the following python code precisely:"
_SOLVE_PREFIX = re.compile(r"\APlease solve the programming task below[^\n]*\n+")
_TIME_MS = re.compile(
    r"^Time Limit:[ \t]*([\d.]+)[ \t]*(ms|milliseconds?|s|seconds?)[ \t]*$", re.MULTILINE | re.IGNORECASE
)
_TIME_DICT = re.compile(r"^Time Limit:[ \t]*(\{[^\n]*\})[ \t]*$", re.MULTILINE)
_MEMORY = re.compile(
    r"^Memory Limit:[ \t]*([\d.]+)[ \t]*(MB|megabytes|Bytes|KB)[ \t]*$", re.MULTILINE | re.IGNORECASE
)
_TAGS = re.compile(r"^Tags:[ \t]*\n(\[[^\n]*\])[ \t]*$", re.MULTILINE)
_DATE = re.compile(r"^(\d{4}-\d{2}-\d{2})")
_INTERACTION_HEADING = re.compile(r"^[ \t]*interaction[ \t]*$", re.MULTILINE)
_INTERACTOR = re.compile(r"\binteractor\b")
_TRAILER_CHARS = 2000  # limits and tags are trailer lines: search only the end of a long statement
_PLACEHOLDER_STARTER = re.compile(r"^\s*#\s*YOUR CODE HERE\s*$", re.IGNORECASE)


def python_block(text: str) -> str | None:
    """The last ```python block of ``text`` (where a prompt keeps its starter code): from the
    line after a ```python fence to the next fence; blocks are read left to right."""
    block, pos = None, 0
    while (start := text.find(_PY_FENCE, pos)) != -1:
        newline = text.find("\n", start + len(_PY_FENCE))
        end = text.find(_FENCE, newline + 1) if newline != -1 else -1
        if end == -1:
            break  # no later fence either: nothing after this is a block
        block, pos = text[newline + 1 : end], end + len(_FENCE)
    return block


def _section(text: str, heading: str, stop: str) -> str | None:
    """The text after the first ``heading`` up to ``stop`` (or the end); None without heading."""
    start = text.find(heading)
    if start == -1:
        return None
    start += len(heading)
    end = text.find(stop, start)
    return text[start:] if end == -1 else text[start:end]


def _lcb_question(content: str) -> str | None:
    """The statement after the first '### Question:' heading whose line ends there (blank
    space up to a newline), up to '\n### Format:'."""
    pos = 0
    while (start := content.find("### Question:", pos)) != -1:
        pos = start + len("### Question:")
        blank_end = skip_space(content, pos)
        newline = content.rfind("\n", pos, blank_end)
        if newline == -1:
            continue
        end = content.find("\n### Format:", newline)
        return content[newline + 1 :] if end == -1 else content[newline + 1 : end]
    return None


def skip_space(text: str, pos: int) -> int:
    """The first position at or after ``pos`` that is not white space (a linear scan)."""
    n = len(text)
    while pos < n and text[pos].isspace():
        pos += 1
    return pos


def lcb_prompt_parts(content: str) -> tuple[str, str]:
    """(statement, starter code) of a LiveCodeBench prompt as SandboxFusion stores it.

    The prompt wraps the statement in '### Question:' ... '### Format:'; the format section's
    python block is the starter code, or a '# YOUR CODE HERE' placeholder for stdin problems.
    """
    found = _lcb_question(content)
    question = found.strip() if found is not None else content.strip()
    starter = ""
    fmt = _section(content, "### Format:", "\n### Answer:")
    block = python_block(fmt) if fmt is not None else None
    if block and not _PLACEHOLDER_STARTER.match(block):
        starter = block.rstrip() + "\n"
    return question, starter


def leetcode_prompt_parts(problem: str) -> tuple[str, str]:
    """(statement, starter code) of a LeetCode prompt that ends with 'Please complete ... ```python'."""
    starter = python_block(problem) or ""
    question = _without_complete_prompt(_SOLVE_PREFIX.sub("", problem.strip())).strip()
    return question, (starter.rstrip() + "\n") if starter.strip() else ""


def _without_complete_prompt(text: str) -> str:
    """``text`` cut before the first 'Please complete the following python code precisely:'
    that a ```python fence follows (after blank space), with the newlines before it."""
    pos = 0
    while (start := text.find(_COMPLETE_PROMPT, pos)) != -1:
        pos = start + len(_COMPLETE_PROMPT)
        if text.startswith(_PY_FENCE, skip_space(text, pos)):
            return text[:start].rstrip("\n")
    return text


def limits(statement: str) -> dict[str, Any]:
    """Time limit (seconds), memory limit (MB) and tags found in a statement's trailer lines."""
    meta: dict[str, Any] = {}
    statement = statement[-_TRAILER_CHARS:]
    if (m := _TIME_MS.search(statement)) and _is_number(m.group(1)):
        value, unit = float(m.group(1)), m.group(2).lower()
        meta["time_limit_s"] = value / 1000 if unit.startswith("m") else value
    elif m := _TIME_DICT.search(statement):
        try:  # CodeContests' protobuf duration, printed as a dict
            d = safe_ast.literal_eval(m.group(1))
            meta["time_limit_s"] = d.get("seconds", 0) + d.get("nanos", 0) / 1e9
        except (ValueError, SyntaxError, AttributeError, TypeError, RecursionError, MemoryError):
            pass
    if (m := _MEMORY.search(statement)) and _is_number(m.group(1)):
        value, unit = float(m.group(1)), m.group(2).lower()
        # CodeContests writes 256 MB as 256000000 bytes: decimal megabytes.
        meta["memory_limit_mb"] = {"bytes": value / 1e6, "kb": value / 1e3}.get(unit, value)
    if m := _TAGS.search(statement):
        try:
            tags = safe_ast.literal_eval(m.group(1))
            if isinstance(tags, list) and all(isinstance(t, str) for t in tags):
                meta["tags"] = tags
        except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
            pass
    return meta


def _is_number(text: str) -> bool:
    """Text of a finite float ('1.5', not '1.2.3')."""
    return text.count(".") <= 1 and any(c.isdigit() for c in text) and len(text) < 30


def is_interactive(statement: str, tags: Any = None) -> bool:
    """True for a problem judged by an interactor: its sample 'tests' are a transcript of a
    dialogue, which no stdin/stdout comparison can grade."""
    if isinstance(tags, list) and "interactive" in tags:
        return True
    low = statement.lower()
    return (
        "this is an interactive problem" in low
        or bool(_INTERACTION_HEADING.search(low))
        or ("interactor" in low and bool(_INTERACTOR.search(low)))
    )


def day(value: Any) -> str | None:
    """A date as YYYY-MM-DD (from an ISO date or datetime text, or a datetime)."""
    if value is None:
        return None
    if hasattr(value, "date") and callable(value.date):
        value = value.date()
    if hasattr(value, "isoformat"):
        return value.isoformat()[:10]
    m = _DATE.match(str(value).strip())
    return m.group(1) if m else None


def difficulty_label(value: Any) -> str | None:
    """A source's difficulty as text: words lower-cased, numbers (ratings) as digits."""
    if value is None or value == "":
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    label = str(value).strip().lower()
    return None if label in ("unknown", "unknown_difficulty", "none") else label


def is_placeholder(code: str) -> bool:
    """True for code that cannot be a solution: empty, or only imports, pass and an exit call
    (SandboxFusion stores ``import sys; sys.exit(0)`` where it has no canonical solution)."""
    try:
        tree = safe_ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # not Python (a null byte, too deep)
        return False
    return all(_is_noop(stmt) for stmt in tree.body)


def _is_noop(stmt: ast.stmt) -> bool:
    if isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Pass)):
        return True
    if isinstance(stmt, ast.Expr):
        if isinstance(stmt.value, ast.Constant):
            return True
        call = stmt.value
        if isinstance(call, ast.Call):
            fn = call.func
            name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", None)
            return name in ("exit", "quit", "_exit")
    return False
