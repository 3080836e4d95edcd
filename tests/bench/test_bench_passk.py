"""pass@k: hand-computed values, a brute-force enumeration over subsets, and the edge cases."""

import itertools
from math import comb

import pytest

from mcoder.bench.passk import mean_pass_at_k, pass_at_k


def test_hand_computed_n5_c2():
    # 1 - C(3,k)/C(5,k): k=1: 1-3/5, k=2: 1-3/10, k=3: 1-1/10, k>=4: C(3,k)=0
    expected = {1: 0.4, 2: 0.7, 3: 0.9, 4: 1.0, 5: 1.0}
    for k, value in expected.items():
        assert pass_at_k(5, 2, k) == pytest.approx(value, abs=1e-12), k


def brute_force(n: int, c: int, k: int) -> float:
    """Share of the k-subsets of n samples (the first c passing) that hold a passing sample."""
    subsets = list(itertools.combinations(range(n), k))
    return sum(any(i < c for i in s) for s in subsets) / len(subsets)


def test_matches_enumeration_over_subsets():
    for n in range(1, 9):
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert pass_at_k(n, c, k) == pytest.approx(brute_force(n, c, k), abs=1e-12), (n, c, k)


def test_stable_for_large_n_where_binomials_overflow_floats():
    n, c, k = 2000, 3, 100
    exact = 1 - comb(n - c, k) / comb(n, k)  # Python ints: exact, then one division
    assert pass_at_k(n, c, k) == pytest.approx(exact, rel=1e-12)


def test_edges():
    assert pass_at_k(5, 0, 1) == 0.0
    assert pass_at_k(5, 0, 5) == 0.0
    assert pass_at_k(5, 5, 1) == 1.0
    assert pass_at_k(1, 1, 1) == 1.0
    assert pass_at_k(5, 2, 6) is None  # k > n: undefined, not silently pass@n
    with pytest.raises(ValueError):
        pass_at_k(5, 6, 1)
    with pytest.raises(ValueError):
        pass_at_k(5, 1, 0)


def test_mean_leaves_out_problems_with_fewer_than_k_samples():
    mean, used, skipped = mean_pass_at_k([(5, 2), (1, 1), (4, 0)], 2)
    assert (used, skipped) == (2, 1)
    assert mean == pytest.approx((0.7 + 0.0) / 2)
    assert mean_pass_at_k([(1, 1)], 2) == (None, 0, 1)
