"""Output comparison: does a candidate's output (or return value) answer a test?

A pure module: strings and Python values in, the name of the rule that accepted out (``None`` for
a wrong answer). The judge records that name as ``matched_by``.

A comparison rule (what ``--compare`` names) is one function registered by name with ``@rule``:
it gets a ``Compared`` (the test's kind, input and expected output or value, what the program
gave, the float tolerances) and returns the name to record, or None. The config's choices and
the command line's ``--compare`` read the names from ``RULES``. ``microcoder`` and ``strict`` are
the two built in (ARCHITECTURE.md, "How to add a comparison rule").

``microcoder`` mode (the default) tries these rules in order and stops at the first that accepts:

- ``exact``: the two texts are identical.
- ``whitespace``: equal after CRLF -> LF, dropping trailing whitespace on each line and trailing
  blank lines. Whitespace is what Python's ``str.split()`` splits on, Unicode spaces included:
  expected outputs scraped from HTML statements carry non-breaking spaces where programs print
  plain ones.
- ``lines``: equal line by line after stripping each line (both ends) and dropping blank lines at
  the start and the end. Interior blank lines still count.
- ``tokens_numeric``: equal token by token (tokens split on whitespace, so one token per line and
  space-separated layouts match), with numeric tolerance:

  * an expected *integer* token (``[+-]?[0-9]+``) needs an integer token of the same value, compared
    as digit strings (big integers are exact, never through float); the digit count must agree, so
    ``05`` does not match ``5``, while ``-0`` matches ``0`` and ``+5`` matches ``5``;
  * an expected *float* token (a decimal literal with a ``.`` or an exponent: ``0.5``, ``1.``,
    ``1e5``) accepts any decimal number (integer or float literal, plain or scientific) within
    ``max(atol, rtol * |expected|)``. So ``1e5`` matches ``100000`` and ``-0.000`` matches
    ``0.000``. The difference is taken in floating point (its 1e-16 relative rounding is far
    below any judge's tolerance) and with ``decimal`` when a number is past float range, so
    ``1e999999999`` compares instead of overflowing to ``inf``;
  * every other token must be equal character for character (case-sensitive): ``nan``, ``inf``,
    ``True``/``true``, ``0x10``, ``1_000`` are words, not numbers, so ``inf`` matches only ``inf``
    and a float never matches ``nan``. Expected ``1`` (an integer) never matches ``1.0``.

  Where either side has an interior blank line (a line that is empty between printed lines, for
  instance the answer "empty string" to one query), tokens are compared line by line with equal
  line counts, so a missing or extra empty line is not hidden by the token layout freedom.
- ``structural``: the expected output is a container literal (starts with ``[``, ``(`` or
  ``{``) and both outputs parse with the same parser: strict JSON first (no ``NaN``/``Infinity``,
  no repeated keys, no float literal past float range), else a printed Python literal read by
  this module's own parser, which takes lists, tuples, sets, dicts, quoted strings (escapes
  decoded), plain decimal numbers with the sign attached, ``True``/``False``/``None``, and
  refuses what no ``print`` of a value produces: comments, ``0x10``, ``1_000``, ``1j``,
  ``b''``, ``'a' 'b'``, ``(1)``, trailing commas other than ``(1,)``, repeated set items or
  dict keys, text after the literal. The values then compare as ``compare_value`` does (lists
  and tuples alike, floats with tolerance, sets unordered, integers exact), except that dict
  keys must come in the same order as in the expected text (a printed order is an order).
  Mixing parsers is not allowed, so ``[True]`` never matches ``[true]``. The parser reads each
  token once, so nesting cannot make it slow.

Never accepted: a different case or word, a missing or extra line or token, a prefix of the
expected output, a correct output followed by anything, reordered tokens, an expected integer
printed as a float.

Known limits (kept because loosening them would accept wrong answers): an expected output that
separates groups with blank lines is not matched by one that drops them (an empty line can be an
answer); set elements compare exactly, without float tolerance; a problem that accepts several
answers (a special judge) cannot be graded by text at all; a literal more than 8 times longer
than the expected one (plus 1 KB) is not parsed (reformatting does not grow text that much, and
parsing junk would stall the judge); an output more than ``OUTPUT_MAX_GROWTH`` (16) times longer
than the expected one plus 64 KiB is a wrong answer without being read (``microcoder`` mode;
``strict`` reads it, as LiveCodeBench does); numbers with exponents past 10**999999999999999999
match only as identical text.

Bounded work on hostile input: the text rules split both texts a chunk at a time and compare a
batch of lines or tokens at once, so memory stays near one copy of each text; no value of the
candidate's is hashed (sets and dicts, parsed here or decoded by ``plain`` with ``hashfree``,
compare as lists of canonical keys sorted, so a set of integers that all hash alike costs
n log n, not n squared). ``OUTPUT_RULES`` and ``VALUE_RULES`` list each mode's rules in order. Like LiveCodeBench, ``lines`` ignores leading indentation. Unlike it, integer
tokens with extra leading zeros (``01``), digit grouping (``1_000``) and non-ASCII digits are not
numbers here.

``compare_value`` (call tests) compares ``expected = json.loads(test.output)`` with the return value
rebuilt by ``safe_ast.literal_eval(repr(value))``: ``value_exact`` when types and values agree exactly,
``value_structural`` when only lists vs tuples or float tolerance (nested) made them agree. Types
are otherwise strict: ``True`` is not ``1``, ``1.0`` is not an expected ``1`` (LeetCode judges
``2.0`` against an ``int`` answer as wrong), a set matches only an expected set (a list or tuple
without duplicates is taken as a set there); an expected list keeps its order. ``nan`` never equals
anything; ``inf`` only equals the same ``inf``.

``strict`` mode reproduces LiveCodeBench (``lcb_runner/evaluation/testing_util.py`` at commit
8610ffb of LiveCodeBench/LiveCodeBench, ``grade_stdio`` and ``grade_call_based``); this is a
re-implementation of its observable behaviour, not its code:

- stdin: both texts are ``str.strip()``-ed, split on ``"\\n"``, and each line ``str.strip()``-ed;
  the line counts must agree; each line pair is accepted when equal as strings, otherwise when
  every whitespace-separated token of both lines converts with ``decimal.Decimal`` and the two
  lists of Decimals are equal (exact equality, no tolerance: ``1.0 == 1``, ``1e5 == 100000``,
  ``Infinity == inf``, but ``0.5`` vs ``0.50000001`` fails and ``NaN`` never equals). A comparison
  that raises (signalling NaN) is a wrong answer, as LCB's runtime error is a failure. Rules:
  ``exact`` (identical texts, which LCB accepts too), ``lcb_lines`` (all lines equal as
  strings), ``lcb_decimal`` (some line needed the Decimal comparison).
- call: a top-level tuple becomes a list, then Python ``==`` (so ``True == 1`` and ``2.0 == 2``
  pass, nested tuples vs lists fail). Rule: ``lcb_equal``.
"""

from __future__ import annotations

import decimal
import json
import math
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from itertools import islice, pairwise, zip_longest
from typing import Any, Literal

from mcoder import safe_ast
from mcoder.judge.plain import DictItems, SetItems

# The names compare_output / compare_value return, per mode (the verdict's matched_by).
MICROCODER_RULES = (
    "exact",
    "whitespace",
    "lines",
    "tokens_numeric",
    "structural",
    "value_exact",
    "value_structural",
)
STRICT_RULES = ("exact", "lcb_lines", "lcb_decimal", "lcb_equal")

# Tolerances for float comparison; a token/value passes when |got - expected| <= max(atol, rtol*|expected|).
FLOAT_RTOL = 1e-6
FLOAT_ATOL = 1e-6

# Possessive quantifiers (no backtracking): a hostile 1 MB token of digits ending in a letter
# must fail in linear time, not stall the judge in a regex.
_INT = re.compile(r"[+-]?+[0-9]++")
_NUMBER = re.compile(r"[+-]?+(?:[0-9]++(?:\.[0-9]*+)?+|\.[0-9]++)(?:[eE][+-]?+[0-9]++)?+")
# Wide exponent range: a candidate printing 1e999999999 must compare, not overflow.
_DECIMAL_CTX = decimal.Context(prec=60, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)


# ---------------------------------------------------------------------------------------------
# Public API


def compare_output(
    expected: str,
    got: str,
    mode: str = "microcoder",
    *,
    rtol: float = FLOAT_RTOL,
    atol: float = FLOAT_ATOL,
    test_input: str = "",
) -> str | None:
    """The rule that accepts ``got`` as the output of a stdin test, or None for a wrong answer:
    what the comparison rule ``mode`` (a name in ``RULES``) returns."""
    return _rule(mode)(Compared("stdin", expected, got, test_input, rtol, atol))


def compare_value(
    expected: Any,
    got: Any,
    mode: str = "microcoder",
    *,
    rtol: float = FLOAT_RTOL,
    atol: float = FLOAT_ATOL,
    test_input: str = "",
) -> str | None:
    """The rule that accepts ``got`` as the return value of a call test, or None for a wrong answer.
    ``got`` may hold ``plain.SetItems`` / ``plain.DictItems`` (a reply decoded without hashing)."""
    return _rule(mode)(Compared("call", expected, got, test_input, rtol, atol))


# ---------------------------------------------------------------------------------------------
# The comparison rules, by name: each one function, registered once


@dataclass(frozen=True, slots=True)
class Compared:
    """What a comparison rule sees of one test."""

    kind: Literal["stdin", "call"]
    """stdin: ``expected`` and ``got`` are texts; call: the expected value (the test's output as
    JSON) and the return value rebuilt as plain data."""
    expected: Any
    got: Any
    input: str
    """The test's input (a call test's: its arguments as JSON lines); "" where the caller has none."""
    rtol: float
    atol: float


Rule = Callable[[Compared], str | None]
RULES: dict[str, Rule] = {}
"""The comparison rules by name, in the order ``--compare`` lists them."""


def rule(name: str) -> Callable[[Rule], Rule]:
    """Register the decorated function as the comparison rule ``name`` (``--compare NAME``): it
    returns the name the verdict records as ``matched_by`` when it accepts, else None."""

    def register(fn: Rule) -> Rule:
        if name in RULES:
            raise ValueError(f"the comparison rule {name!r} is registered twice")
        RULES[name] = fn
        return fn

    return register


def _rule(mode: str) -> Rule:
    found = RULES.get(mode)
    if found is None:
        raise ValueError(f"unknown comparison mode {mode!r}; expected one of {', '.join(RULES)}")
    return found


# A candidate's output longer than this multiple of the expected one (plus the slack) is a wrong
# answer without being read: whitespace and number layouts (padding, trailing spaces, more float
# digits) stay far below it, and reading 16 MB of junk into lines and tokens held ~50 times its
# size in the judge process. The text rules below also read both texts as streams (a line or a
# token at a time), so what they hold stays near one copy of each text.
OUTPUT_MAX_GROWTH = 16
OUTPUT_SLACK = 1 << 16


# ---------------------------------------------------------------------------------------------
# Text rules (microcoder), each reading both texts as streams


def _exact_rule(expected: str, got: str, rtol: float, atol: float) -> str | None:
    return "exact" if got == expected else None


def _whitespace_rule(expected: str, got: str, rtol: float, atol: float) -> str | None:
    """Equal after CRLF -> LF, trailing whitespace of each line and trailing blank lines dropped."""
    exp, out = _text_lines(_unix(expected).rstrip()), _text_lines(_unix(got).rstrip())
    return "whitespace" if _same_lines(exp, out, str.rstrip) else None


def _lines_rule(expected: str, got: str, rtol: float, atol: float) -> str | None:
    """Equal line by line, each line stripped; blank lines at the start and the end dropped."""
    exp, out = _text_lines(_unix(expected).strip()), _text_lines(_unix(got).strip())
    return "lines" if _same_lines(exp, out, str.strip) else None


def _tokens_rule(expected: str, got: str, rtol: float, atol: float) -> str | None:
    exp, out = _unix(expected).strip(), _unix(got).strip()
    # An interior blank line is an answer of its own (an empty string): keep the line structure.
    if _BLANK_LINE.search(exp) or _BLANK_LINE.search(out):
        pairs = _pairs(_text_lines(exp), _text_lines(out))
        ok = all(
            e is not None and g is not None and _token_streams_match(_tokens(e), _tokens(g), rtol, atol)
            for e, g in pairs
        )
    else:
        ok = _token_streams_match(_tokens(exp), _tokens(out), rtol, atol)
    return "tokens_numeric" if ok else None


def _structural_rule(expected: str, got: str, rtol: float, atol: float) -> str | None:
    return "structural" if _structural_match(expected, got, rtol, atol) else None


def _unix(text: str) -> str:
    return text.replace("\r\n", "\n")


_BLANK_LINE = re.compile(r"\n[^\S\n]*+\n")  # a line of whitespace only, between two others
_SPACE = re.compile(r"\s")  # str.split()'s whitespace (the same Unicode test)
_CHUNK = 1 << 16  # characters split at once: C-speed splitting, a bounded piece at a time
_BATCH = 4096  # lines or tokens compared at once (as lists, in C)
_END = object()


def _text_lines(text: str) -> Iterator[str]:
    """The lines of ``text`` split on "\\n", a chunk at a time; none at all for an empty text."""
    if not text:
        return
    pos = 0
    while True:
        end = text.find("\n", pos + _CHUNK)
        if end < 0:
            yield from text[pos:].split("\n")
            return
        yield from text[pos:end].split("\n")
        pos = end + 1


def _tokens(text: str) -> Iterator[str]:
    """The tokens of ``text`` (``str.split()``), a chunk at a time: cut only at whitespace."""
    pos = 0
    while True:
        cut = _SPACE.search(text, pos + _CHUNK)
        if cut is None:
            yield from text[pos:].split()
            return
        yield from text[pos : cut.start()].split()
        pos = cut.start()


def _pairs(a: Iterator[Any], b: Iterator[Any]) -> Iterator[tuple[Any, Any]]:
    return zip_longest(a, b, fillvalue=None)


def _same_lines(a: Iterator[str], b: Iterator[str], clean: Callable[[str], str]) -> bool:
    """Equal line counts and equal lines after ``clean``, compared a batch at a time."""
    while True:
        x, y = list(map(clean, islice(a, _BATCH))), list(map(clean, islice(b, _BATCH)))
        if x != y:
            return False
        if not x:
            return True


def _token_streams_match(exp: Iterator[str], got: Iterator[str], rtol: float, atol: float) -> bool:
    while True:
        x, y = list(islice(exp, _BATCH)), list(islice(got, _BATCH))
        if len(x) != len(y):
            return False
        if not x:
            return True
        if x != y and not all(e == g or _token_match(e, g, rtol, atol) for e, g in zip(x, y)):
            return False


def _token_match(exp: str, got: str, rtol: float, atol: float) -> bool:
    if exp == got:
        return True
    if _INT.fullmatch(exp):
        return _INT.fullmatch(got) is not None and _same_integer(exp, got)
    if _NUMBER.fullmatch(exp):  # a float literal: it has a '.' or an exponent
        return _NUMBER.fullmatch(got) is not None and _numbers_close(exp, got, rtol, atol)
    return False


def _same_integer(a: str, b: str) -> bool:
    """Integer literals of equal value and equal digit count, without converting to int or float."""
    da, db = a.lstrip("+-"), b.lstrip("+-")
    if da != db:
        return False
    if set(da) == {"0"}:  # zero: the sign does not matter (-0 == 0)
        return True
    return a.startswith("-") == b.startswith("-")


def _numbers_close(exp: str, got: str, rtol: float, atol: float) -> bool:
    e, g = float(exp), float(got)
    if math.isinf(e) or math.isinf(g):  # past float range: decimal has the exponent range
        return _decimal_close(exp, got, rtol, atol)
    # Float rounding (1e-16 relative) is far below any tolerance a judge uses.
    return abs(g - e) <= max(atol, rtol * abs(e))


def _decimal_close(exp: str, got: str, rtol: float, atol: float) -> bool:
    try:
        e, g = Decimal(exp), Decimal(got)
        diff = _DECIMAL_CTX.abs(_DECIMAL_CTX.subtract(g, e))
        bound = max(Decimal(atol), _DECIMAL_CTX.multiply(Decimal(rtol), _DECIMAL_CTX.abs(e)))
        return diff <= bound
    except decimal.DecimalException:  # an exponent past 10**999999999999999999: equal text only
        return False


# ---------------------------------------------------------------------------------------------
# Structural rule (microcoder): whole outputs as Python literals or JSON


class _NotALiteral(Exception):
    pass


# A reformatted literal (spacing, quotes, brackets, more float digits) stays within this factor of
# the expected text's length; a longer output is rejected unparsed.
_STRUCTURAL_MAX_GROWTH = 8
# SyntaxError: an escape that no printed string holds ('\\N{foo}'), read by literal_eval.
_STRUCTURAL_ERRORS = (
    _NotALiteral, ValueError, TypeError, IndexError, SyntaxError, RecursionError, MemoryError, OverflowError
)


def _structural_match(expected: str, got: str, rtol: float, atol: float) -> bool:
    # JSON first: it parses in C. The first parser that reads both texts decides; mixing them
    # would let [True] match [true].
    if expected.lstrip()[:1] not in ("[", "(", "{"):
        return False  # a bare scalar or plain text is the token rule's business
    if len(got) > _STRUCTURAL_MAX_GROWTH * len(expected) + 1024:
        return False  # reformatting does not grow a literal 8-fold; parsing junk would stall the judge
    for parse in (_parse_json, _parse_python_literal):
        try:
            exp_value = parse(expected)
            got_value = parse(got)
        except _STRUCTURAL_ERRORS:
            continue
        try:
            return _values_match(
                exp_value, got_value, tolerant=True, rtol=rtol, atol=atol, ordered_dicts=True
            )
        except RecursionError:
            return False
    return False


def _parse_json(text: str) -> Any:
    def reject_constant(name: str) -> Any:
        raise _NotALiteral(name)  # NaN, Infinity

    def finite_float(literal: str) -> float:
        value = float(literal)
        if math.isinf(value):
            raise _NotALiteral("float literal out of range")  # 1e400 and 2e400 would both be inf
        return value

    return json.loads(
        text,
        parse_constant=reject_constant,
        parse_float=finite_float,
        object_pairs_hook=_dict_without_repeats,
    )


# One token of a printed Python literal. Numbers are plain decimal with the sign glued on and must
# not run into letters, '_' or '.' (so 0x10, 1_000, 1j, 1.5.3 are not numbers); strings carry no
# prefix and no line break; the only names are the three constants.
_LITERAL_TOKEN = re.compile(
    r"""[ \t\n\r\f\v]*(?:
      (?P<num>[+-]?+(?:[0-9]++(?:\.[0-9]*+)?+|\.[0-9]++)(?:[eE][+-]?+[0-9]++)?+)(?![\w.])
    | (?P<str>'(?:[^'\\\n]++|\\.)*+'|"(?:[^"\\\n]++|\\.)*+")
    | (?P<name>True|False|None)(?!\w)
    | (?P<punct>[\[\](){},:])
    )""",
    re.VERBOSE,
)
_CONSTANTS = {"True": True, "False": False, "None": None}
_CLOSING = {"[": "]", "(": ")", "{": "}"}


def _parse_python_literal(text: str) -> Any:
    """A printed Python container literal: what ast.literal_eval reads, minus what no program prints
    as an answer (comments, 'a' 'b' concatenation, redundant parentheses, bytes, complex, names)."""
    if text.lstrip()[:1] not in ("[", "(", "{"):
        raise _NotALiteral("not a container")  # checked first: most outputs are not literals
    tokens = _literal_tokens(text)
    value, end = _literal_at(tokens, 0)
    if end != len(tokens):
        raise _NotALiteral("text after the literal")
    return value


def _literal_tokens(text: str) -> list[Any]:
    """Punctuation as its character, every other token as a 1-tuple holding its value."""
    tokens: list[Any] = []
    append = tokens.append
    pos, end = len(text) - len(text.lstrip()), len(text.rstrip())
    match = _LITERAL_TOKEN.match
    while pos < end:
        m = match(text, pos, end)  # match, not finditer: stop at the first unreadable character
        if m is None:
            raise _NotALiteral(f"unexpected text at {pos}")
        pos = m.end()
        num, string, name, punct = m.groups()
        if punct is not None:
            append(punct)
        elif num is not None:
            append((_number(num),))
        elif string is not None:
            append((_string(string),))
        else:
            append((_CONSTANTS[name],))
    return tokens


def _number(literal: str) -> int | float:
    if "." not in literal and "e" not in literal and "E" not in literal:
        return int(literal)  # ValueError past Python's digit limit: no structural verdict then
    value = float(literal)
    if math.isinf(value):
        raise _NotALiteral("float literal out of range")
    return value


def _string(literal: str) -> str:
    if "\\" not in literal:
        return literal[1:-1]
    with warnings.catch_warnings():  # an unknown escape such as '\d' only warns
        warnings.simplefilter("ignore")
        return safe_ast.literal_eval(literal)


def _literal_at(tokens: list[Any], i: int) -> tuple[Any, int]:
    """The value starting at tokens[i] and the index after it. Each token is read once, so the
    cost stays linear whatever the nesting (a hostile output must not stall the judge)."""
    tok = tokens[i]
    if isinstance(tok, tuple):
        return tok[0], i + 1
    if tok not in _CLOSING:
        raise _NotALiteral(f"unexpected {tok!r}")
    items, values, i, commas = _items_at(tokens, i + 1, _CLOSING[tok])
    if tok == "[":
        return items, i
    if tok == "(":
        if len(items) == 1 and not commas:
            raise _NotALiteral("parentheses that are not a tuple")  # (1) is 1, not what was printed
        return tuple(items), i
    if values or not items:
        return _dict_without_repeats(list(zip(items, values))), i
    if _has_repeats([_key(x) for x in items]):
        raise _NotALiteral("set with repeated elements")
    return SetItems(items), i


def _items_at(tokens: list[Any], i: int, closing: str) -> tuple[list[Any], list[Any], int, int]:
    """Comma-separated items up to ``closing``: (items, dict values, index after closing, commas).
    Inside braces, ``key: value`` items make a dict; then every item must have a value."""
    items: list[Any] = []
    values: list[Any] = []
    commas = 0
    while tokens[i] != closing:
        item, i = _literal_at(tokens, i)
        items.append(item)
        if closing == "}" and tokens[i] == ":":
            value, i = _literal_at(tokens, i + 1)
            values.append(value)
        if len(values) not in (0, len(items)):
            raise _NotALiteral("a set item inside a dict or a pair inside a set")
        if tokens[i] == ",":
            commas += 1
            i += 1
            # A trailing comma is printed only by a one-element tuple: (1,). Elsewhere it is extra text.
            if tokens[i] == closing and not (closing == ")" and len(items) == 1):
                raise _NotALiteral("trailing comma")
        elif tokens[i] != closing:
            raise _NotALiteral(f"expected ',' or {closing!r}")
    return items, values, i + 1, commas


def _dict_without_repeats(pairs: list[tuple[Any, Any]]) -> DictItems:
    """A dict as its pairs (never hashed); a repeated key is extra output that a dict would
    silently swallow."""
    if _has_repeats([_key(k) for k, _ in pairs]):
        raise _NotALiteral("dict with repeated keys")
    return DictItems(pairs)


# ---------------------------------------------------------------------------------------------
# Values (microcoder): used by compare_value and the structural rule


def _values_match(e: Any, g: Any, *, tolerant: bool, rtol: float, atol: float, ordered_dicts: bool) -> bool:
    kw = {"tolerant": tolerant, "rtol": rtol, "atol": atol, "ordered_dicts": ordered_dicts}
    if isinstance(e, bool) or e is None or isinstance(e, str):
        return type(g) is type(e) and g == e
    if isinstance(e, int):
        return type(g) is int and g == e
    if isinstance(e, float):
        return _float_value_match(e, g, tolerant, rtol, atol)
    if isinstance(e, (list, tuple)):
        if not (type(g) is type(e) or (tolerant and type(g) in (list, tuple))):
            return False
        if len(g) != len(e):
            return False
        if _same_plain_items(e, g):
            return True
        return all(_values_match(x, y, **kw) for x, y in zip(e, g))
    if isinstance(e, (dict, DictItems)):
        return _dicts_match(e, g, kw)
    if isinstance(e, (set, frozenset, SetItems)):
        return _sets_match(e, g, tolerant)
    return type(g) is type(e) and g == e  # anything else a literal can hold: bytes, complex


_PLAIN_TYPES = frozenset((int, str, bool, type(None)))


def _same_plain_items(e: list | tuple, g: list | tuple) -> bool:
    """Fast path for long lists of ints/strings: same type at every position and == (in C)."""
    types = list(map(type, e))
    return types == list(map(type, g)) and _PLAIN_TYPES.issuperset(types) and list(e) == list(g)


def _float_value_match(e: float, g: Any, tolerant: bool, rtol: float, atol: float) -> bool:
    if isinstance(g, bool) or not isinstance(g, (int, float)):
        return False
    if math.isnan(e) or (isinstance(g, float) and math.isnan(g)):
        return False
    if not tolerant:
        return type(g) is float and g == e
    if math.isinf(e) or (isinstance(g, float) and math.isinf(g)):
        return g == e
    diff = _DECIMAL_CTX.abs(_DECIMAL_CTX.subtract(Decimal(g), Decimal(e)))
    return diff <= max(Decimal(atol), _DECIMAL_CTX.multiply(Decimal(rtol), _DECIMAL_CTX.abs(Decimal(e))))


def _dict_pairs(d: Any) -> list[tuple[Any, Any]] | None:
    if isinstance(d, DictItems):
        return d.pairs
    return list(d.items()) if isinstance(d, dict) else None


def _dicts_match(e: Any, g: Any, kw: dict) -> bool:
    """Keys compared by canonical key, in sorted order: no key of the candidate's is hashed."""
    exp, got = _dict_pairs(e), _dict_pairs(g)
    if got is None or len(got) != len(exp):
        return False
    exp_keys, got_keys = [_key(k) for k, _ in exp], [_key(k) for k, _ in got]
    if kw["ordered_dicts"] and exp_keys != got_keys:
        return False
    exp_order = sorted(range(len(exp)), key=exp_keys.__getitem__)
    got_order = sorted(range(len(got)), key=got_keys.__getitem__)
    if _has_repeats([got_keys[j] for j in got_order], presorted=True):
        return False
    return all(
        exp_keys[i] == got_keys[j] and _values_match(exp[i][1], got[j][1], **kw)
        for i, j in zip(exp_order, got_order)
    )


def _set_items(x: Any) -> tuple[list, type] | None:
    if isinstance(x, SetItems):
        return x.items, frozenset if x.frozen else set
    if isinstance(x, (set, frozenset)):
        return list(x), type(x)
    return None


def _sets_match(e: Any, g: Any, tolerant: bool) -> bool:
    """Sets as sorted lists of canonical keys (no item of the candidate's is hashed); a list or
    tuple without repeats stands for a set when ``tolerant``."""
    exp_items, exp_type = _set_items(e)
    got = _set_items(g)
    if got is None:
        if not (tolerant and type(g) in (list, tuple)):
            return False
        got = (g, type(g))
    elif not tolerant and got[1] is not exp_type:
        return False
    got_keys = sorted(_key(x) for x in got[0])
    if _has_repeats(got_keys, presorted=True):
        return False  # duplicates are not that set
    return got_keys == sorted(_key(x) for x in exp_items)


def _has_repeats(keys: list[str], presorted: bool = False) -> bool:
    keys = keys if presorted else sorted(keys)
    return any(a == b for a, b in pairwise(keys))


def _key(value: Any) -> str:
    """A canonical text of ``value`` that sorts and compares without hashing: equal keys mean
    equal type and value (True is not 1, 1.0 is not 1, a list is not a tuple); sets and dicts
    as their sorted items. A nan's key is unique: nan equals nothing, not even another nan."""
    t = type(value)
    if value is None:
        return "N"
    if t is bool:
        return "B1" if value else "B0"
    if t is int:
        return "I" + format(value, "x")  # hex: no digit limit, linear time
    if t is float:
        if math.isnan(value):
            return f"Fnan{id(value)}"
        return "F" + (value + 0.0).hex()  # -0.0 + 0.0 is 0.0: -0.0 == 0.0
    if t is str:
        return f"S{len(value)}:{value}"
    if t is bytes:
        return f"Y{len(value)}:{value.hex()}"
    if t in (list, tuple):
        return ("L[" if t is list else "T[") + ",".join(map(_key, value)) + "]"
    items = _set_items(value)
    if items is not None:
        return ("E[" if items[1] is set else "Z[") + ",".join(sorted(map(_key, items[0]))) + "]"
    pairs = _dict_pairs(value)
    if pairs is not None:
        return "D[" + ",".join(sorted(_key(k) + ":" + _key(v) for k, v in pairs)) + "]"
    return f"?{t.__name__}:{id(value)}"  # nothing a literal holds: equal to nothing else


# ---------------------------------------------------------------------------------------------
# strict: LiveCodeBench's rules


def _lcb_stdio(expected: str, got: str, rtol: float = 0.0, atol: float = 0.0) -> str | None:
    """LCB's grade_stdio, read as streams: line pairs, then token pairs as Decimals."""
    if got == expected:
        return "exact"
    used_decimal = False
    for e, g in _pairs(_text_lines(expected.strip()), _text_lines(got.strip())):
        if e is None or g is None:
            return None  # the line counts differ
        e, g = e.strip(), g.strip()
        if e == g:
            continue
        if not _lcb_decimal_line(e, g):
            return None
        used_decimal = True
    if not expected.strip() and not got.strip():
        return "lcb_lines"  # both one empty line
    return "lcb_decimal" if used_decimal else "lcb_lines"


def _lcb_decimal_line(e: str, g: str) -> bool:
    """Every token of both lines a Decimal and the two lists equal (a token that is not a number,
    or a comparison that raises, is a failed line)."""
    try:
        for x, y in zip_longest(_tokens(e), _tokens(g), fillvalue=_END):
            if x is _END or y is _END or Decimal(y) != Decimal(x):
                return False
    except (decimal.InvalidOperation, ValueError, TypeError):
        return False
    return True


def _lcb_call(expected: Any, got: Any, rtol: float = 0.0, atol: float = 0.0) -> str | None:
    if isinstance(got, tuple):
        got = list(got)
    try:
        return "lcb_equal" if _python_equal(expected, got) else None
    except RecursionError:  # LCB counts a comparison that raises as a failed test
        return None


def _python_equal(e: Any, g: Any) -> bool:
    """Python's ``==`` between the expected value and the return value, where the return value
    may hold sets and dicts decoded without hashing (compared by keys under which ``==``-equal
    numbers agree: True, 1 and 1.0 alike, as in a Python set)."""
    if isinstance(g, (dict, set, frozenset)):
        return e == g  # real ones: built by the caller, not decoded from a candidate
    if isinstance(g, SetItems):
        items = _set_items(e)
        if items is None:
            return False
        return sorted(set(map(_loose_key, items[0]))) == sorted(set(map(_loose_key, g.items)))
    if isinstance(g, DictItems):
        if not isinstance(e, dict) or len(g.pairs) != len(e):
            return False
        exp = sorted(((_loose_key(k), v) for k, v in e.items()), key=lambda kv: kv[0])
        got = sorted(((_loose_key(k), v) for k, v in g.pairs), key=lambda kv: kv[0])
        if _has_repeats([k for k, _ in got], presorted=True):
            return False  # a real dict has no repeated keys: this one was forged
        return all(a[0] == b[0] and _python_equal(a[1], b[1]) for a, b in zip(exp, got))
    if type(g) in (list, tuple):
        return type(e) is type(g) and len(e) == len(g) and all(map(_python_equal, e, g))
    if type(e) in (list, tuple, dict, set, frozenset):
        return False  # a scalar is never equal to a container
    return e == g


def _loose_key(value: Any) -> str:
    """A canonical key under which values equal by Python's ``==`` of hashables agree."""
    t = type(value)
    if t is bool or (t is float and value.is_integer()):
        return "I" + format(int(value), "x")
    if t in (list, tuple):
        return ("L[" if t is list else "T[") + ",".join(map(_loose_key, value)) + "]"
    if isinstance(value, (SetItems, set, frozenset)):
        return "E[" + ",".join(sorted(set(map(_loose_key, _set_items(value)[0])))) + "]"
    return _key(value)


# ---------------------------------------------------------------------------------------------
# The registries: the rules each mode tries, in order (a rule returns its name when it accepts).
# The fuzzing suite enumerates these to drive every comparator with hostile text.


def _value_exact_rule(expected: Any, got: Any, rtol: float, atol: float) -> str | None:
    return "value_exact" if _values_guarded(expected, got, False, rtol, atol) else None


def _value_structural_rule(expected: Any, got: Any, rtol: float, atol: float) -> str | None:
    return "value_structural" if _values_guarded(expected, got, True, rtol, atol) else None


def _values_guarded(expected: Any, got: Any, tolerant: bool, rtol: float, atol: float) -> bool:
    try:
        return _values_match(expected, got, tolerant=tolerant, rtol=rtol, atol=atol, ordered_dicts=False)
    except RecursionError:  # absurdly deep nesting: no verdict of ours can trust it
        return False


OUTPUT_RULES: dict[str, tuple[Callable[[str, str, float, float], str | None], ...]] = {
    "microcoder": (_exact_rule, _whitespace_rule, _lines_rule, _tokens_rule, _structural_rule),
    "strict": (_exact_rule, _lcb_stdio),
}
VALUE_RULES: dict[str, tuple[Callable[[Any, Any, float, float], str | None], ...]] = {
    "microcoder": (_value_exact_rule, _value_structural_rule),
    "strict": (_lcb_call,),
}


def _first(rules: tuple[Callable[[Any, Any, float, float], str | None], ...], c: Compared) -> str | None:
    for step in rules:
        name = step(c.expected, c.got, c.rtol, c.atol)
        if name is not None:
            return name
    return None


@rule("microcoder")
def microcoder(c: Compared) -> str | None:
    """The tolerant chain: the first of ``OUTPUT_RULES`` or ``VALUE_RULES`` that accepts."""
    if c.kind == "call":
        return _first(VALUE_RULES["microcoder"], c)
    if c.got == c.expected:
        return "exact"
    if len(c.got) > OUTPUT_MAX_GROWTH * len(c.expected) + OUTPUT_SLACK:
        return None  # no layout freedom of ours grows an answer that much: refused unread
    return _first(OUTPUT_RULES["microcoder"][1:], c)


@rule("strict")
def strict(c: Compared) -> str | None:
    """LiveCodeBench's rules."""
    if c.kind == "call":
        return _first(VALUE_RULES["strict"], c)
    if c.got == c.expected:
        return "exact"
    return _first(OUTPUT_RULES["strict"][1:], c)
