"""Assert-based tests (``def check(candidate): assert candidate(...) == ...``) as mcoder tests.

Each ``assert candidate(args) == literal`` whose arguments and expected value are Python literals
that JSON can hold becomes a ``call`` test: the positional arguments as JSON values one per line
(keyword arguments put in place through the function's signature) and the expected value as JSON.
Tuples become lists. When any statement of ``check`` cannot be converted that way (a loop, a
helper call, a tolerance, a set, inf or nan), the whole source is kept as one ``functional`` test,
so that no assert is ever dropped.
"""

from __future__ import annotations

import ast
import json
import math
from typing import Any

from mcoder import safe_ast
from mcoder.dataset.process.statement import skip_space
from mcoder.records import Test


class NotConvertible(Exception):
    """This check cannot be written as call tests (the functional form keeps it)."""


def split_invocation(source: str) -> tuple[str, str | None]:
    """(source without its trailing ``check(...)`` call, the function it checks).

    ``check(Solution().maxSum)`` gives ``maxSum``; ``check(f)`` gives ``f``; with no such
    call the source comes back whole and the name is None.
    """
    tree = safe_ast.parse(source)
    if not tree.body:
        return source, None
    last = tree.body[-1]
    if not (
        isinstance(last, ast.Expr)
        and isinstance(last.value, ast.Call)
        and isinstance(last.value.func, ast.Name)
        and last.value.func.id == "check"
        and len(last.value.args) == 1
    ):
        return source, None
    target = last.value.args[0]
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
    lines = source.splitlines(keepends=True)
    kept = "".join(lines[: last.lineno - 1]).rstrip() + "\n"
    return kept, name


def check_tests(source: str, params: list[str] | None) -> list[Test]:
    """Call tests for each assert of ``check`` in ``source``, or one functional test of it all.

    ``params`` are the parameter names of the function under test (for keyword arguments);
    raises SyntaxError when ``source`` is not Python and ValueError when it defines no check.
    """
    tree = safe_ast.parse(source)
    check = _check_function(tree)
    try:
        return _call_tests(check, params)
    except NotConvertible:
        return [Test(input=source, output="", kind="functional")]


def signature_params(code: str, fn_name: str) -> list[str] | None:
    """Parameter names of ``def fn_name(...)`` in (possibly body-less) starter code, less ``self``."""
    params = _def_params(code, fn_name)
    if params is None:
        return None
    try:
        fn = safe_ast.parse(f"def _f({params}): pass").body[0]
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    args = fn.args
    if args.vararg or args.kwarg or args.kwonlyargs:
        return None
    names = [a.arg for a in args.posonlyargs + args.args]
    return names[1:] if names[:1] in (["self"], ["cls"]) else names


def _def_params(code: str, fn_name: str) -> str | None:
    """The text between the parentheses of the first ``def fn_name(...)`` header (closed by the
    first ')' that a ':' follows, after an optional '-> annotation'), in one linear scan."""
    pos = 0
    while (start := code.find("def", pos)) != -1:
        pos = start + 3
        name = skip_space(code, pos)
        if name == pos or not code.startswith(fn_name, name):
            continue
        paren = skip_space(code, name + len(fn_name))
        if code.startswith("(", paren):
            return _params_text(code, paren + 1)
    return None


def _params_text(code: str, start: int) -> str | None:
    last_colon = code.rfind(":")
    close = start - 1
    while (close := code.find(")", close + 1)) != -1:
        after = skip_space(code, close + 1)
        if code.startswith(":", after) or (code.startswith("->", after) and last_colon > after):
            return code[start:close]
    return None


def _check_function(tree: ast.Module) -> ast.FunctionDef:
    checks = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check"]
    if not checks:
        raise ValueError("defines no check(candidate) function")
    return checks[-1]


def _call_tests(check: ast.FunctionDef, params: list[str] | None) -> list[Test]:
    if len(check.args.args) != 1:
        raise NotConvertible
    candidate = check.args.args[0].arg
    tests = []
    for stmt in check.body:
        if isinstance(stmt, ast.Pass) or (
            isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
        ):
            continue  # docstrings and pass
        if not isinstance(stmt, ast.Assert):
            raise NotConvertible
        tests.append(_assert_test(stmt.test, candidate, params))
    if not tests:
        raise NotConvertible
    return tests


def _assert_test(test: ast.expr, candidate: str, params: list[str] | None) -> Test:
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        raise NotConvertible
    left, right = test.left, test.comparators[0]
    call, expected = (left, right) if _is_call_of(left, candidate) else (right, left)
    if not _is_call_of(call, candidate):
        raise NotConvertible
    args = _arguments(call, params)
    return Test(
        input="\n".join(_json_text(_literal(a)) for a in args),
        output=_json_text(_literal(expected)),
        kind="call",
    )


def _is_call_of(node: ast.expr, candidate: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == candidate


def _arguments(call: ast.Call, params: list[str] | None) -> list[ast.expr]:
    """The call's arguments in positional order, keyword ones placed through ``params``."""
    if any(isinstance(a, ast.Starred) for a in call.args):
        raise NotConvertible
    args: list[ast.expr | None] = list(call.args)
    if not call.keywords:
        return args
    if params is None or any(k.arg is None for k in call.keywords):
        raise NotConvertible
    args += [None] * (len(params) - len(args))
    for k in call.keywords:
        if k.arg not in params:
            raise NotConvertible
        i = params.index(k.arg)
        if i >= len(args) or args[i] is not None:
            raise NotConvertible
        args[i] = k.value
    if any(a is None for a in args):
        raise NotConvertible  # a parameter left to its default: its value is not known here
    return args


def _literal(node: ast.expr) -> Any:
    try:
        return safe_ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise NotConvertible from None


def _json_text(value: Any) -> str:
    return json.dumps(_jsonable(value))


def _jsonable(value: Any) -> Any:
    """``value`` as JSON data; sets, bytes, complex numbers, inf and nan cannot be."""
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NotConvertible
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _jsonable(v) for k, v in value.items()}
    raise NotConvertible
