"""A problem's difficulty and platform as the bench's table and LiveCodeBench's results file
name them.

Difficulty buckets:
- the words easy / medium / hard, in any case;
- APPS's introductory / interview / competition as easy / medium / hard;
- a number is a rating (Codeforces, AtCoder scale): below ``bounds[0]`` (default 1400) easy,
  below ``bounds[1]`` (default 2000) medium, otherwise hard;
- anything else (Codeforces letters "A".."F", empty) goes to ``unknown``: a letter is a position
  in a round, not a difficulty that compares across rounds.

Platforms are ``Problem.platform`` lowercased, ``unknown`` when absent.
"""

from __future__ import annotations

import math

DIFFICULTIES = ("easy", "medium", "hard")
UNKNOWN = "unknown"

_NAMED = {
    "easy": "easy",
    "medium": "medium",
    "hard": "hard",
    "introductory": "easy",
    "interview": "medium",
    "competition": "hard",
}


def difficulty_bucket(value: str | None, bounds: tuple[float, float]) -> str:
    """easy / medium / hard / unknown for a Problem.difficulty (see the module docstring)."""
    if value is None:
        return UNKNOWN
    text = value.strip().lower()
    if text in _NAMED:
        return _NAMED[text]
    try:
        rating = float(text)
    except ValueError:
        return UNKNOWN
    if not math.isfinite(rating) or rating < 0:
        return UNKNOWN
    lo, hi = bounds
    return "easy" if rating < lo else "medium" if rating < hi else "hard"


def platform_name(value: str | None) -> str:
    return value.strip().lower() if value and value.strip() else UNKNOWN
