"""Which outputs at the length limit are masked out of the update.

MicroCoder-GRPO's conditional truncation masking masks output o_i when all four hold:

    |o_i| = L_max               it was cut off by the length limit
    non_incorrect(o_i)          its verdict is accepted (or, configurably, no_code: no gradeable answer
                                because it was cut off before the code ended)
    not repeat(o_i, m)          its last m tokens do not repeat the m before them (a looping output
                                is a real failure and keeps its negative signal)
    U(0,1) < rho                a seeded coin, so only a fraction rho of such outputs is masked

DAPO's baseline instead masks every truncated output. The decision and its reason are recorded
per sample, so a run can be audited afterwards.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from mcoder.train.config import NonIncorrect, TruncationMode

NON_INCORRECT_STATUSES: dict[str, frozenset[str]] = {
    "accepted": frozenset({"accepted"}),
    "accepted_or_no_code": frozenset({"accepted", "no_code"}),
}


def repeats(tokens: Sequence[int], m: int) -> bool:
    """repeat(o, m): the last m tokens equal the m tokens before them."""
    return len(tokens) >= 2 * m and list(tokens[-m:]) == list(tokens[-2 * m : -m])


@dataclass(frozen=True)
class MaskDecision:
    masked: bool
    reason: str  # "not_truncated", "incorrect", "repeat", "coin", "masked", "all_truncated", "off"


def truncation_decision(
    *,
    truncated: bool,
    status: str,
    tokens: Sequence[int],
    mode: TruncationMode,
    rng: random.Random,
    rho: float = 0.1,
    m: int = 128,
    non_incorrect: NonIncorrect = "accepted_or_no_code",
) -> MaskDecision:
    """Decide for one output. ``rng`` is drawn from only for outputs that reach the coin, so the
    decisions of the other outputs never shift the coins (a rerun with the same seed agrees)."""
    if mode == "none":
        return MaskDecision(False, "off")
    if not truncated:
        return MaskDecision(False, "not_truncated")
    if mode == "all":
        return MaskDecision(True, "all_truncated")
    if status not in NON_INCORRECT_STATUSES[non_incorrect]:
        return MaskDecision(False, "incorrect")
    if repeats(tokens, m):
        return MaskDecision(False, "repeat")
    if rng.random() < rho:
        return MaskDecision(True, "masked")
    return MaskDecision(False, "coin")
