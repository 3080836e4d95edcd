"""What every engine returns, and how seeds are derived so that a sample does not depend on the
batch it was drawn in (a resumed run draws the same samples as an uninterrupted one)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from mcoder.records import FinishReason


@dataclass(slots=True)
class Generation:
    """One sampled completion.

    ``completion_token_ids`` end with the end-of-sequence token when ``finish_reason`` is
    ``stop`` (the trainer scores it too); nothing after it is kept. ``logprobs[i]`` is the
    log-probability of token i under the distribution it was drawn from:
    log_softmax(logits / temperature), after top-k / top-p filtering when those are on.
    """

    completion_token_ids: list[int]
    logprobs: list[float]
    finish_reason: FinishReason
    text: str


class Engine(Protocol):
    name: str

    def generate(
        self,
        prompt_ids: list[list[int]],
        *,
        n: int,
        max_tokens: int,
        temperature: float,
        seed: int | Sequence[int],
    ) -> list[list[Generation]]:
        """``n`` samples for each prompt, in prompt order. ``seed``: one for the call, or one per prompt."""
        ...

    def stream(
        self,
        prompt_ids: list[list[int]],
        *,
        n: int,
        max_tokens: int,
        temperature: float,
        seed: int | Sequence[int],
    ) -> Iterator[tuple[int, list[Generation]]]:
        """The same samples as ``generate``, each prompt's group as soon as it is finished:
        ``(prompt index, group)`` pairs, every index once, in the order the groups finish (so a
        caller can judge the first groups while the engine still samples the rest)."""
        ...


def derive_seed(*parts: object) -> int:
    """A 63-bit seed from any parts (run seed, problem id, sample index), stable across runs."""
    digest = hashlib.blake2b("/".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


def prompt_seeds(seed: int | Sequence[int], count: int) -> list[int]:
    """One seed per prompt: given as a list, or derived from one seed and the prompt's position."""
    if isinstance(seed, int):
        return [derive_seed(seed, i) for i in range(count)]
    seeds = list(seed)
    if len(seeds) != count:
        raise ValueError(f"{len(seeds)} seeds for {count} prompts")
    return seeds


def decode(tokenizer, ids: list[int]) -> str:
    """The completion text: special tokens (the final EOS among them) are not part of it."""
    return tokenizer.decode(ids, skip_special_tokens=True)
