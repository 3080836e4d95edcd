"""The one door for untrusted text to a terminal: ``printable(text)``.

Completions are written by the policy being trained; program output by the candidate; ids,
statements and tests by whoever made a source file. Any of them may hold a terminal's control
sequences: CSI (clear the screen, move the cursor), OSC (set the window title, write the
clipboard with OSC 52, make a link), DCS, the 8-bit C1 forms of all of these, a carriage return
or backspaces that overwrite what was printed, and bidirectional overrides that show text in
another order than it is. Every string of that kind passes ``printable`` before rich prints it
(``mcoder.console`` calls it on every message, table cell and result line; ``show`` on every
part of a sample), as ``judge/untrusted.admit`` is the door for what a candidate returns and
``mcoder.outputs`` for written paths.

What it does: each character a terminal could act on is shown escaped, the way Python's
``repr`` writes it (``\\x1b``, ``\\r``, ``\\x9b``, ``\\u202e``), so a person sees that it was there; every
other character, backslashes included, is left as it is, so the function is idempotent and
cheap on clean text (one regular-expression search). Escaped: the C0 controls but tab (and line
feed where the text is ``multiline``: a completion, a program's stderr), DEL, the C1 controls,
the bidirectional formatting characters (U+061C, U+200E, U+200F, U+202A..U+202E,
U+2066..U+2069), the line and paragraph separators U+2028 and U+2029, and lone surrogates
(which no terminal encoding can write).

Importing this module imports nothing but ``re``.
"""

from __future__ import annotations

import re

_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_SEPARATORS = (0x2028, 0x2029)
_ALWAYS = (
    *(c for c in range(0x20) if c not in (0x09, 0x0A)),
    0x7F,
    *range(0x80, 0xA0),
    *_BIDI,
    *_SEPARATORS,
)
ESCAPED: frozenset[int] = frozenset((*_ALWAYS, 0x0A, *range(0xD800, 0xE000)))
"""Every code point ``printable`` escapes (line feed only in single-line text)."""


_NAMED = {0x0A: "\\n", 0x0D: "\\r"}


def _escape(c: int) -> str:
    return _NAMED.get(c) or (f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}")


def _pattern(codes: tuple[int, ...]) -> re.Pattern[str]:
    return re.compile("[" + "".join(f"\\u{c:04x}" for c in codes) + "\\ud800-\\udfff]")


_ONE_LINE = _pattern((*_ALWAYS, 0x0A))
_LINES = _pattern(_ALWAYS)


def printable(value: object, *, multiline: bool = False) -> str:
    """``value`` (any object: ``str()`` of it) with every character a terminal would act on shown
    escaped (see the module); ``multiline`` keeps line feeds (a completion, a program's output),
    otherwise they are escaped too (an id, a status, a one-line message)."""
    text = value if isinstance(value, str) else str(value)
    pattern = _LINES if multiline else _ONE_LINE
    if pattern.search(text) is None:
        return text
    return pattern.sub(lambda m: _escape(ord(m.group())), text)
