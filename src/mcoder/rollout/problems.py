"""The problems ``mcoder rollout`` samples: read one line at a time (never all in memory), their
ids checked, stdin spooled to a file (it is read more than once), and each prompt measured against
the model's context before it is sampled."""

from __future__ import annotations

import contextlib
import shutil
import sys
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from mcoder.errors import DataError, UsageError
from mcoder.jsonl import STDIO, UniqueIds, display_name, read_numbered
from mcoder.prompts import render_prompt
from mcoder.records import Problem


def load_problems(path: Path, limit: int | None) -> list[Problem]:
    """Problems in file order, without their tests (for the data-parallel split)."""
    return [p for _, p in iter_problems(path, limit)]


def iter_problems(path: Path | str, limit: int | None) -> Iterator[tuple[int, Problem]]:
    """(line, problem) in file order, read one line at a time, without their tests (rollout never
    needs them; they can be large), checking that ids are unique."""
    ids = UniqueIds(path, field="id")
    for lineno, p in read_numbered(path, Problem):
        if limit is not None and len(ids) >= limit:
            break
        ids.add(p.id, lineno)
        p.tests = []
        yield lineno, p


def count_problems(path: Path | str, limit: int | None) -> int:
    """A first pass over the problems (ids only): their number; bad or empty input is an error
    here, before any model is loaded."""
    count = sum(1 for _ in iter_problems(path, limit))
    if count == 0 and limit != 0:
        raise DataError(
            "no problems in the file", path=display_name(path), hint="pass a problems file with records"
        )
    return count


@contextlib.contextmanager
def spooled_stdin(path: Path | str) -> Iterator[Path]:
    """``path``, or for ``-`` a temporary copy of stdin: rollout reads its problems more than once
    (count, measure, sample) and never holds them all in memory."""
    if str(path) != STDIO:
        yield Path(path)
        return
    with tempfile.TemporaryDirectory(prefix="mcoder-stdin-") as tmp:
        spool = Path(tmp) / "problems.jsonl"
        with open(spool, "wb") as f:
            shutil.copyfileobj(sys.stdin.buffer, f)
        yield spool


SHOWN_LONG = 5  # ids of skipped long prompts named in the summary


@dataclass
class PromptBudget:
    """The longest prompt the model can take with ``--max-tokens`` completion tokens after it:
    its context (``max_position_embeddings`` of its config) minus ``--max-tokens``."""

    context: int | None
    max_tokens: int

    @classmethod
    def of(cls, model: str, max_tokens: int) -> PromptBudget:
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(model)
        config = getattr(config, "text_config", None) or config
        context = getattr(config, "max_position_embeddings", None)
        if context is not None and max_tokens >= context:
            raise UsageError(
                f"--max-tokens {max_tokens} leaves no room for a prompt: the model's context is {context} tokens",
                hint=f"pass --max-tokens below {context}",
            )
        return cls(context, max_tokens)

    @property
    def limit(self) -> int | None:
        return None if self.context is None else self.context - self.max_tokens

    def fits(self, prompt_ids: list[int]) -> bool:
        return self.limit is None or len(prompt_ids) <= self.limit

    def render(self, p: Problem, tokenizer) -> tuple[str, list[int]] | None:
        """The prompt's text and ids, or None when it does not fit. A statement with more
        characters than the budget's tokens could cover (no token covers more characters than
        the longest entry of the vocabulary) is known not to fit without tokenizing it: a 50 MB
        statement would cost gigabytes to tokenize only to be skipped."""
        if self._surely_long(p, tokenizer):
            return None
        text, ids = render_prompt(p, tokenizer)
        return (text, ids) if self.fits(ids) else None

    def _surely_long(self, p: Problem, tokenizer) -> bool:
        return self.limit is not None and len(p.question) + len(p.starter_code or "") > self.limit * _longest(tokenizer)

    def refuse_long(self, problems: Iterable[tuple[int, Problem]], tokenizer, name: str) -> None:
        """--long-prompts error: a DataError naming the first problem too long, before sampling."""
        for lineno, p in problems:
            if self.render(p, tokenizer) is None:
                size = (
                    f"statement is {len(p.question):,} characters" if self._surely_long(p, tokenizer)
                    else f"prompt is {len(render_prompt(p, tokenizer)[1])} tokens"
                )  # fmt: skip
                raise DataError(
                    f"problem {p.id!r}: its {size}; with --max-tokens {self.max_tokens} "
                    f"the model's context of {self.context} leaves room for {self.limit}",
                    path=name, line=lineno,
                    hint="pass --long-prompts skip to leave such problems out, or a smaller --max-tokens",
                )  # fmt: skip

    def fitting(self, problems: Iterable[tuple[int, Problem]], tokenizer, count: int) -> list[Problem]:
        """The first ``count`` problems whose prompts fit (the temperature probe)."""
        out: list[Problem] = []
        for _, p in problems:
            if len(out) >= count:
                break
            if self.render(p, tokenizer) is not None:
                out.append(p)
        return out


def _longest(tokenizer) -> int:
    """Characters of the longest vocabulary entry (an upper bound on what one token covers)."""
    longest = getattr(tokenizer, "_mcoder_longest_token", None)
    if longest is None:
        longest = max(map(len, tokenizer.get_vocab()), default=1)
        with contextlib.suppress(AttributeError):
            tokenizer._mcoder_longest_token = longest
    return longest
