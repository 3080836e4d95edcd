"""MinHash signatures and LSH banding in numpy, in little memory: a signature is 128 uint32
values (512 bytes), and candidate pairs are found by sorting one 64-bit hash per band and
signature, never by an index holding every band of every problem.

The signature: each shingle's crc32, spread over 64 bits by the MurmurHash3 finaliser, then per
permutation k the high 32 bits of ``a_k * h + b_k`` modulo 2**64 (``a_k`` odd, so each is a
bijection), minimised over the shingles. The share of equal values of two signatures estimates
the Jaccard similarity of their shingle sets. The bands: ``b`` bands of ``r`` values, chosen for
the threshold as MinHash LSH does (the least sum of the false-positive and false-negative areas,
weighted equally); two problems are candidates when one band agrees, then confirmed by their
estimate.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from functools import cache

import numpy as np

NUM_PERM = 128
SEED = 1
_EMPTY = np.full(NUM_PERM, np.iinfo(np.uint32).max, dtype=np.uint32)


@cache
def _permutations(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    gen = np.random.default_rng(seed)
    a = gen.integers(0, 1 << 63, num_perm, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    b = gen.integers(0, 1 << 63, num_perm, dtype=np.uint64)
    return a, b


def _fmix64(h: np.ndarray) -> np.ndarray:
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xFF51AFD7ED558CCD)
    h ^= h >> np.uint64(33)
    h *= np.uint64(0xC4CEB9FE1A85EC53)
    h ^= h >> np.uint64(33)
    return h


def signature(shingles: Iterable[bytes]) -> np.ndarray:
    """The MinHash signature (uint32[NUM_PERM]) of a set of shingles; all-max for none."""
    values = np.fromiter((zlib.crc32(s) for s in shingles), dtype=np.uint64)
    if not values.size:
        return _EMPTY.copy()
    a, b = _permutations(NUM_PERM, SEED)
    with np.errstate(over="ignore"):
        mixed = _fmix64(values)
        hashed = (mixed[:, None] * a[None, :] + b[None, :]) >> np.uint64(32)
    return hashed.min(axis=0).astype(np.uint32)


def similarity(a: np.ndarray, b: np.ndarray) -> float:
    """The estimated Jaccard similarity of two signatures."""
    return float(np.count_nonzero(a == b)) / len(a)


@cache
def bands(threshold: float, num_perm: int = NUM_PERM) -> tuple[int, int]:
    """(b, r) with b * r <= num_perm minimising the false-positive plus false-negative area
    of the LSH curve 1 - (1 - s**r)**b around ``threshold``."""
    s = np.linspace(0.0, 1.0, 2001)
    below, above = s <= threshold, s >= threshold
    best, best_error = (1, 1), float("inf")
    for b in range(1, num_perm + 1):
        for r in range(1, num_perm // b + 1):
            p = 1 - (1 - s**r) ** b
            error = np.trapezoid(p[below], s[below]) + np.trapezoid(1 - p[above], s[above])
            if error < best_error:
                best, best_error = (b, r), error
    return best


def candidate_pairs(signatures: np.ndarray, threshold: float) -> list[tuple[int, int]]:
    """Pairs (i < j) of rows of ``signatures`` (n x NUM_PERM) that agree on a whole band and
    whose estimate reaches ``threshold``, sorted."""
    n = len(signatures)
    if n < 2:
        return []
    b, r = bands(threshold, signatures.shape[1])
    weights = np.uint64(0x9E3779B97F4A7C15) ** np.arange(r, dtype=np.uint64)
    pairs: set[tuple[int, int]] = set()
    with np.errstate(over="ignore"):
        for band in range(b):
            block = signatures[:, band * r : (band + 1) * r].astype(np.uint64)
            keys = _fmix64((block * weights).sum(axis=1, dtype=np.uint64))
            order = np.argsort(keys, kind="stable")
            ordered = keys[order]
            starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
            ends = np.r_[starts[1:], n]
            for start, end in zip(starts, ends, strict=True):
                if end - start > 1:
                    group = sorted(order[start:end].tolist())
                    pairs.update((x, y) for i, x in enumerate(group) for y in group[i + 1 :])
    return sorted(
        (i, j) for i, j in pairs if similarity(signatures[i], signatures[j]) >= threshold
    )
