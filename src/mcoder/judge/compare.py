"""Output comparison: does a candidate's output (or return value) answer a test?

A pure module: strings and Python values in, the name of the rule that accepted out (``None`` for
a wrong answer). The judge records that name as ``matched_by``.

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
parsing junk would stall the judge); numbers with exponents past 10**999999999999999999 match only
as identical text. Like LiveCodeBench, ``lines`` ignores leading indentation. Unlike it, integer
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
from decimal import Decimal
from typing import Any, Literal

from mcoder import safe_ast

Mode = Literal["microcoder", "strict"]
MODES: tuple[str, ...] = ("microcoder", "strict")

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
    mode: Mode = "microcoder",
    *,
    rtol: float = FLOAT_RTOL,
    atol: float = FLOAT_ATOL,
) -> str | None:
    """The rule that accepts ``got`` as the output of a stdin test, or None for a wrong answer."""
    _check_mode(mode)
    if mode == "strict":
        return _lcb_stdio(expected, got)
    if got == expected:
        return "exact"
    exp_lines, got_lines = _normalised_lines(expected), _normalised_lines(got)
    if exp_lines == got_lines:
        return "whitespace"
    exp_lines, got_lines = _stripped_lines(exp_lines), _stripped_lines(got_lines)
    if exp_lines == got_lines:
        return "lines"
    if _tokens_match(exp_lines, got_lines, rtol, atol):
        return "tokens_numeric"
    if _structural_match(expected, got, rtol, atol):
        return "structural"
    return None


def compare_value(
    expected: Any,
    got: Any,
    mode: Mode = "microcoder",
    *,
    rtol: float = FLOAT_RTOL,
    atol: float = FLOAT_ATOL,
) -> str | None:
    """The rule that accepts ``got`` as the return value of a call test, or None for a wrong answer."""
    _check_mode(mode)
    if mode == "strict":
        return _lcb_call(expected, got)
    try:
        if _values_match(expected, got, tolerant=False, rtol=rtol, atol=atol, ordered_dicts=False):
            return "value_exact"
        if _values_match(expected, got, tolerant=True, rtol=rtol, atol=atol, ordered_dicts=False):
            return "value_structural"
    except RecursionError:  # absurdly deep nesting: no verdict of ours can trust it
        return None
    return None


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"unknown comparison mode {mode!r}; expected one of {', '.join(MODES)}")


# ---------------------------------------------------------------------------------------------
# Text rules (microcoder)


def _normalised_lines(text: str) -> list[str]:
    """CRLF -> LF, trailing whitespace of each line dropped, trailing blank lines dropped."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _stripped_lines(lines: list[str]) -> list[str]:
    """Each line stripped at both ends; blank lines at the start and the end dropped."""
    out = [line.strip() for line in lines]
    start = 0
    while start < len(out) and not out[start]:
        start += 1
    while len(out) > start and not out[-1]:
        out.pop()
    return out[start:]


def _tokens_match(exp_lines: list[str], got_lines: list[str], rtol: float, atol: float) -> bool:
    # An interior blank line is an answer of its own (an empty string): keep the line structure.
    if "" in exp_lines or "" in got_lines:
        if len(exp_lines) != len(got_lines):
            return False
        return all(
            _token_lists_match(_tokens(e), _tokens(g), rtol, atol) for e, g in zip(exp_lines, got_lines)
        )
    return _token_lists_match(_tokens("\n".join(exp_lines)), _tokens("\n".join(got_lines)), rtol, atol)


def _tokens(line: str) -> list[str]:
    # Python's whitespace, Unicode included: expected outputs scraped from HTML carry non-breaking
    # spaces where the program prints plain ones.
    return line.split()


def _token_lists_match(exp: list[str], got: list[str], rtol: float, atol: float) -> bool:
    if len(exp) != len(got):
        return False
    return all(e == g or _token_match(e, g, rtol, atol) for e, g in zip(exp, got))


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
_STRUCTURAL_ERRORS = (_NotALiteral, ValueError, TypeError, IndexError, RecursionError, MemoryError)


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
    if len({_canonical(x) for x in items}) != len(items):
        raise _NotALiteral("set with repeated elements")
    return set(items), i


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


def _dict_without_repeats(pairs: list[tuple[Any, Any]]) -> dict:
    """A dict from pairs; a repeated key is extra output that a dict would silently swallow."""
    if len({_canonical(k) for k, _ in pairs}) != len(pairs):
        raise _NotALiteral("dict with repeated keys")
    return dict(pairs)


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
        if not (type(g) is type(e) or (tolerant and isinstance(g, (list, tuple)))):
            return False
        if len(g) != len(e):
            return False
        if _same_plain_items(e, g):
            return True
        return all(_values_match(x, y, **kw) for x, y in zip(e, g))
    if isinstance(e, dict):
        return _dicts_match(e, g, kw)
    if isinstance(e, (set, frozenset)):
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


def _dicts_match(e: dict, g: Any, kw: dict) -> bool:
    if not isinstance(g, dict) or len(g) != len(e):
        return False
    got_by_key = {_canonical(k): v for k, v in g.items()}
    if len(got_by_key) != len(g):
        return False
    exp_keys = [_canonical(k) for k in e]
    if kw["ordered_dicts"] and exp_keys != [_canonical(k) for k in g]:
        return False
    return all(
        key in got_by_key and _values_match(value, got_by_key[key], **kw)
        for key, value in zip(exp_keys, e.values())
    )


def _sets_match(e: set | frozenset, g: Any, tolerant: bool) -> bool:
    allowed = (set, frozenset, list, tuple) if tolerant else (type(e),)
    if not isinstance(g, allowed):
        return False
    try:
        got = {_canonical(x) for x in g}
    except TypeError:  # a list or dict inside: never an element of the expected set
        return False
    return len(got) == len(g) and got == {_canonical(x) for x in e}  # duplicates are not that set


def _canonical(value: Any) -> Any:
    """A hashable form in which equal means equal type and value (True != 1, 1.0 != 1)."""
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_canonical(x) for x in value))
    if isinstance(value, (set, frozenset)):
        return ("set", frozenset(_canonical(x) for x in value))
    if isinstance(value, float) and math.isnan(value):
        return ("nan", id(value))  # nan equals nothing, not even another nan
    return (type(value).__name__, value)


# ---------------------------------------------------------------------------------------------
# strict: LiveCodeBench's rules


def _lcb_stdio(expected: str, got: str) -> str | None:
    if got == expected:
        return "exact"
    exp_lines, got_lines = _lcb_stripped_lines(expected), _lcb_stripped_lines(got)
    if len(exp_lines) != len(got_lines):
        return None
    used_decimal = False
    for e, g in zip(exp_lines, got_lines):
        if e == g:
            continue
        try:
            if [Decimal(t) for t in g.split()] != [Decimal(t) for t in e.split()]:
                return None
        except (decimal.InvalidOperation, ValueError, TypeError):
            return None
        used_decimal = True
    return "lcb_decimal" if used_decimal else "lcb_lines"


def _lcb_stripped_lines(text: str) -> list[str]:
    return [line.strip() for line in text.strip().split("\n")]


def _lcb_call(expected: Any, got: Any) -> str | None:
    if isinstance(got, tuple):
        got = list(got)
    try:
        return "lcb_equal" if got == expected else None
    except RecursionError:  # LCB counts a comparison that raises as a failed test
        return None
