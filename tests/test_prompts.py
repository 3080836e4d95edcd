"""Prompts: LiveCodeBench-style stdin and starter-code instructions through the chat template."""

from __future__ import annotations

import pytest

from mcoder.errors import UsageError
from mcoder.prompts import STARTER_FORMAT, STDIN_FORMAT, SYSTEM, build_messages, render_prompt
from mcoder.records import Problem, Test

STDIN = Problem(id="s", source="t", question="Read n and print n + 1.", tests=[Test("1\n", "2\n")])
CALL = Problem(
    id="c", source="t", question="Return a + b.", fn_name="add", tests=[Test("1\n2", "3", "call")],
    starter_code="class Solution:\n    def add(self, a: int, b: int) -> int:\n        ",
)


def test_stdin_problem_asks_for_a_program_reading_stdin():
    system, user = build_messages(STDIN)
    assert system == {"role": "system", "content": SYSTEM}
    assert user["role"] == "user"
    text = user["content"]
    assert text.startswith("### Question:\nRead n and print n + 1.")
    assert STDIN_FORMAT in text and "# YOUR CODE HERE" in text and STARTER_FORMAT not in text
    assert text.index("### Question") < text.index("### Format") < text.index("### Answer")


def test_call_problem_shows_the_starter_code_in_a_fence():
    text = build_messages(CALL)[1]["content"]
    assert STARTER_FORMAT in text and STDIN_FORMAT not in text
    assert "```python\nclass Solution:\n    def add(self, a: int, b: int) -> int:\n```" in text


def test_render_uses_the_chat_template_and_ids_match_the_text(tiny_model):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_model))
    text, ids = render_prompt(STDIN, tok)
    assert text.startswith("<|im_start|>system\n" + SYSTEM)
    assert text.endswith("<|im_start|>assistant\n")  # the generation prompt
    assert tok.decode(ids) == text
    assert ids.count(tok.convert_tokens_to_ids("<|im_start|>")) == 3  # no extra special tokens


def test_a_tokenizer_without_chat_template_is_a_usage_error(tiny_model):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_model))
    tok.chat_template = None
    with pytest.raises(UsageError, match="chat template"):
        render_prompt(STDIN, tok)
