"""Problem -> chat messages -> prompt text and token ids. Every template and stop string lives here.

The structure follows the one LiveCodeBench uses for chat models, so that numbers stay
comparable with its leaderboard: a system message that asks for a correct Python program, then a
user turn with the statement under a question heading, a format instruction that depends on how
the program is tested, a code fence to fill in, and an answer heading. The wording is mcoder's.

- stdin problems (no starter code): the program reads standard input and writes standard output.
- call-based and functional problems (starter code given): the program completes the starter code.

The prompt is rendered with the model's own chat template (``add_generation_prompt``), so the
same problem file works for any chat model.
"""

from __future__ import annotations

from typing import Any

from mcoder.errors import UsageError
from mcoder.records import Problem

SYSTEM = (
    "You are an expert Python programmer. Given a programming problem, you write a correct "
    "Python program that meets the specification and passes every test. Reply with the program only."
)

STDIN_FORMAT = (
    "Your program reads its input from standard input and writes the answer to standard output; "
    "do not hard-code the sample inputs. Put the whole program in one code block, like this:"
)

STARTER_FORMAT = "Complete the following starter code and put the whole solution in one code block:"

ANSWER = "### Answer (one ```python code block)"

# A completion ends at the chat template's end-of-turn token; engines stop on the tokenizer's eos.
CODE_FENCE = "```python"


def user_message(problem: Problem) -> str:
    """The user turn: question, format instruction with its code fence, answer heading."""
    parts = [f"### Question:\n{problem.question.strip()}\n"]
    if problem.starter_code.strip():
        parts.append(f"### Format: {STARTER_FORMAT}\n{CODE_FENCE}\n{problem.starter_code.rstrip()}\n```\n")
    else:
        parts.append(f"### Format: {STDIN_FORMAT}\n{CODE_FENCE}\n# YOUR CODE HERE\n```\n")
    parts.append(ANSWER + "\n")
    return "\n".join(parts)


def build_messages(problem: Problem) -> list[dict[str, str]]:
    """The chat messages for one problem: a system turn and a user turn."""
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": user_message(problem)},
    ]


def render_prompt(problem: Problem, tokenizer: Any) -> tuple[str, list[int]]:
    """(prompt text, prompt token ids) through the tokenizer's chat template.

    The ids are those of the rendered text with no extra special tokens, because the template
    already holds them (a second BOS would shift every position the trainer scores).
    """
    if not getattr(tokenizer, "chat_template", None):
        raise UsageError(
            "the model's tokenizer has no chat template",
            hint="use an instruction-tuned model, or set `chat_template` in its tokenizer_config.json",
        )
    text = tokenizer.apply_chat_template(build_messages(problem), tokenize=False, add_generation_prompt=True)
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    return text, list(ids)


# --- difficulty prediction (``mcoder dataset difficulty predict``)

DIFFICULTY_SYSTEM = (
    "You are an experienced competitive programmer and problem setter. You rate how difficult a "
    "programming problem is to solve correctly, without solving it."
)

DIFFICULTY_INSTRUCTION = (
    "Rate the problem above on each dimension below, from 1 (trivial) to 10 (extremely hard). "
    "Reply with exactly one line per dimension, `name: score`, using the names as written, and nothing else."
)


def difficulty_messages(problem: Problem, dimensions: list[tuple[str, str]]) -> list[dict[str, str]]:
    """The chat messages asking for one score per (name, description) dimension."""
    lines = "\n".join(f"- {name}: {description}" for name, description in dimensions)
    example = "\n".join(f"{name}: N" for name, _ in dimensions)
    user = (
        f"### Problem:\n{problem.question.strip()}\n\n### Dimensions:\n{lines}\n\n"
        f"{DIFFICULTY_INSTRUCTION}\n\n### Answer format:\n{example}\n"
    )
    return [{"role": "system", "content": DIFFICULTY_SYSTEM}, {"role": "user", "content": user}]


def render_messages(messages: list[dict[str, str]], tokenizer: Any) -> tuple[str, list[int]]:
    """(prompt text, token ids) of any chat messages through the tokenizer's chat template."""
    if not getattr(tokenizer, "chat_template", None):
        raise UsageError(
            "the model's tokenizer has no chat template",
            hint="use an instruction-tuned model, or set `chat_template` in its tokenizer_config.json",
        )
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return text, list(tokenizer(text, add_special_tokens=False)["input_ids"])
