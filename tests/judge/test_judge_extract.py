"""Code extraction: which text of a completion is the program."""

from __future__ import annotations

import pytest

from mcoder.extract import compile_program, extract_code


@pytest.mark.parametrize(
    ("completion", "code"),
    [
        ("Here:\n```python\nprint(1)\n```\nDone.", "print(1)\n"),
        ("```py\nx = 1\n```", "x = 1\n"),
        ("first\n```python\nprint(1)\n```\nbetter:\n```python\nprint(2)\n```\n", "print(2)\n"),
        ("```python\nprint(1)\n```\nrun it with\n```bash\npython a.py\n```", "print(1)\n"),
        ("no label\n```\nprint(3)\n```", "print(3)\n"),
        ("labelled wins\n```python\nprint(1)\n```\n```\nprint(2)\n```", "print(1)\n"),
        ("print(int(input()) * 2)\n", "print(int(input()) * 2)\n"),
        ("<think>maybe ```python\nprint(0)\n```</think>\n```python\nprint(5)\n```", "print(5)\n"),
        (
            "cut off by the length limit:\n```python\nfor i in range(3):\n    print(i)",
            "for i in range(3):\n    print(i)",
        ),
        ("````python\ns = '```'\nprint(s)\n````", "s = '```'\nprint(s)\n"),
    ],
)
def test_extracts_the_program(completion, code):
    assert extract_code(completion) == code


@pytest.mark.parametrize(
    "completion",
    ["", "   \n", "I cannot solve this problem.", "```bash\necho hi\n```", "```python\n```"],
)
def test_no_code(completion):
    assert extract_code(completion) is None


def test_compile_error_is_reported_with_the_compiler_message():
    code, error = compile_program("def f(:\n  pass\n")
    assert code is None and error.startswith("SyntaxError")
    code, error = compile_program("x = 1\n")
    assert code is not None and error is None
    _, error = compile_program("x = 1\0")  # a null byte: ValueError or SyntaxError by version, never a crash
    assert error is not None
