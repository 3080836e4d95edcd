"""Diversity measures on hand-made texts, with hand-computed values."""

from __future__ import annotations

import pytest

from mcoder.records import Rollout
from mcoder.rollout.diversity import (
    batch_diversity,
    extract_code,
    lexical_diversity,
    normalized_program,
    program_diversity,
)

SQUARE = "n = int(input())\nprint(n * n)\n"
SQUARE_RENAMED = "# read it\nvalue = int(input())\n\nprint(value*value)  # done\n"
SQUARE_POW = "n = int(input())\nprint(n ** 2)\n"


def test_identical_texts_have_zero_diversity():
    assert lexical_diversity([SQUARE] * 4) == 0.0
    assert program_diversity([SQUARE] * 4) == 0.0


def test_texts_with_no_common_ngram_have_full_lexical_diversity():
    assert lexical_diversity(["alpha beta gamma", "delta epsilon zeta", "eta theta iota"]) == 1.0


def test_lexical_diversity_hand_computed():
    # unigram sets {a, b} and {a, c}: union 3 of 4 -> (3/4 - 1/2) / (1 - 1/2) = 0.5
    assert lexical_diversity(["a b", "a c"], orders=(1,)) == pytest.approx(0.5)
    # bigrams {(a,b)} and {(a,c)}: union 2 of 2 -> 1; mean over orders 1 and 2 = 0.75
    assert lexical_diversity(["a b", "a c"], orders=(1, 2)) == pytest.approx(0.75)


def test_repetition_inside_one_text_is_not_diversity():
    # the same n-gram sets, however often each text repeats them
    assert lexical_diversity(["x = 1\n" * 50, "x = 1\n" * 3]) == 0.0


def test_fewer_than_two_texts_have_no_diversity():
    assert lexical_diversity([SQUARE]) == 0.0 and program_diversity([]) == 0.0


def test_program_diversity_ignores_names_comments_and_layout():
    assert normalized_program(SQUARE) == normalized_program(SQUARE_RENAMED)
    assert normalized_program(SQUARE) != normalized_program(SQUARE_POW)
    # two programs among three texts: (2 - 1) / (3 - 1)
    assert program_diversity([SQUARE, SQUARE_RENAMED, SQUARE_POW]) == pytest.approx(0.5)


def test_program_diversity_drops_docstrings_and_keeps_builtins():
    a = 'def f(x):\n    """Doc."""\n    return len(x)\n'
    b = "def g(items):\n    return len(items)\n"
    c = "def g(items):\n    return sum(items)\n"
    assert program_diversity([a, b]) == 0.0
    assert program_diversity([b, c]) == 1.0


def test_code_is_taken_from_the_last_fenced_block():
    text = f"Idea:\n```python\nprint(1)\n```\nFinal:\n```python\n{SQUARE}```\n"
    assert extract_code(text).strip() == SQUARE.strip()
    assert normalized_program(text) == normalized_program(SQUARE_RENAMED)


def test_unparsable_text_counts_by_its_collapsed_text():
    assert program_diversity(["def (:", "def  (:"]) == 0.0
    assert program_diversity(["def (:", "print("]) == 1.0


def test_batch_diversity_is_the_mean_over_groups():
    def r(pid, i, text):
        return Rollout(id=f"{pid}/0/{i}", problem_id=pid, completion=text, sample_index=i)

    rollouts = [r("p", 0, SQUARE), r("p", 1, SQUARE), r("q", 0, SQUARE), r("q", 1, SQUARE_POW), r("s", 0, SQUARE)]
    got = batch_diversity(rollouts)
    assert got["diversity/program"] == pytest.approx(0.5)  # p: 0, q: 1; s has one sample, left out
    assert got["diversity/lexical"] == pytest.approx(lexical_diversity([SQUARE, SQUARE_POW]) / 2)
