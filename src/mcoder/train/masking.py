"""Which outputs at the length limit are masked out of the update.

MicroCoder-GRPO's conditional truncation masking masks output o_i when all four hold:

    |o_i| = L_max               it was cut off by the length limit
    non_incorrect(o_i)          it is not wrong: by default accepted, or cut off before its program
                                finished (no code reached, or code that does not parse)
    not repeat(o_i, m)          its last m tokens do not repeat the m before them (a looping output
                                is a real failure and keeps its negative signal)
    U(0,1) < rho                a seeded coin, so only a fraction rho of such outputs is masked

"Not incorrect" has four readings (``NonIncorrect``), because the sources differ: the paper's
equation says non-incorrect, its blog says truncated outputs that "produce correct answers", a
public re-implementation reads "correct or truncated". ``accepted_or_unfinished`` (the default)
reads "unfinished" from the program: accepted, or cut off with no program that parses.
``accepted_or_cut_off`` (the default before) reads it from the text: accepted, or the code block
was still open at the limit (or no code was reached). The two differ on a cut that falls on the closing fence: the open block then holds a whole
program, which the judge runs; when it fails it is a complete program that ran and failed, which
is incorrect. ``program_state`` records which case each output was (samples.jsonl), so a run shows
what its reading masked. ``accepted`` and ``accepted_or_no_code`` are the stricter readings.

DAPO's baseline instead masks every truncated output. The decision and its reason are recorded
per sample (samples.jsonl), so a run can be audited afterwards. How a masked output leaves the
loss (its advantage zeroed, or the whole output dropped) is ``TrainConfig.mask_mode``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from mcoder.extract import extract_code, parses
from mcoder.train.config import NonIncorrect, TruncatedReward, TruncationMode

ProgramState = Literal["none", "unparsed", "complete"]


def repeats(tokens: Sequence[int], m: int) -> bool:
    """repeat(o, m): the last m tokens equal the m tokens before them."""
    return len(tokens) >= 2 * m and list(tokens[-m:]) == list(tokens[-2 * m : -m])


def cut_off(completion: str, finish_reason: str | None) -> bool:
    """Was this output cut off by the length limit before its program finished?

    True when the engine stopped it at the limit (finish_reason ``length``) and either no code was
    reached (the judge's extractor finds none) or the program the judge runs is a fenced block whose
    closing fence never came (the extractor then runs it to the end of the text, so the text ends
    with it). A closed block, or a bare completion that parses as a whole program, is finished.
    """
    if finish_reason != "length":
        return False
    code = extract_code(completion)
    if code is None:
        return True
    answer = completion.rsplit("</think>", 1)[-1]  # the extractor reads only the answer
    return answer != code and answer.endswith(code)


def program_state(completion: str) -> ProgramState:
    """What the judge had to run: ``none`` (no code), ``unparsed`` (code that does not parse: a
    program stopped mid-statement) or ``complete`` (a program that parses, which the judge ran)."""
    code = extract_code(completion)
    if code is None:
        return "none"
    return "complete" if parses(code) else "unparsed"


def is_non_incorrect(
    status: str, is_cut_off: bool, reading: NonIncorrect, program: ProgramState | None = None
) -> bool:
    """non_incorrect(o) under one reading of the sources (see the module docstring); ``program``
    is ``program_state`` of the output (``accepted_or_unfinished`` needs it)."""
    if status == "accepted":
        return True
    if reading == "accepted_or_no_code":
        return status == "no_code"
    if reading == "accepted_or_cut_off":
        return is_cut_off
    if reading == "accepted_or_unfinished":
        if program is None:
            raise ValueError("accepted_or_unfinished reads the program's state: pass program=")
        return is_cut_off and program != "complete"
    return False


def scored_reward(reward: float, truncated: bool, mode: TruncatedReward) -> float:
    """The reward an update sees: the verdict's, or 0 for an output cut at L_max under ``zero``."""
    return 0.0 if truncated and mode == "zero" else reward


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
    rho: float,
    m: int,
    non_incorrect: NonIncorrect,
    is_cut_off: bool = False,
    program: ProgramState | None = None,
) -> MaskDecision:
    """Decide for one output. ``rng`` is drawn from only for outputs that reach the coin, so the
    decisions of the other outputs never shift the coins (a rerun with the same seed agrees).
    ``is_cut_off`` is ``cut_off(completion, finish_reason)``, ``program`` its ``program_state``."""
    if mode == "none":
        return MaskDecision(False, "off")
    if not truncated:
        return MaskDecision(False, "not_truncated")
    if mode == "all":
        return MaskDecision(True, "all_truncated")
    if not is_non_incorrect(status, is_cut_off, non_incorrect, program):
        return MaskDecision(False, "incorrect")
    if repeats(tokens, m):
        return MaskDecision(False, "repeat")
    if rng.random() < rho:
        return MaskDecision(True, "masked")
    return MaskDecision(False, "coin")
