"""Duplicate removal: the same statement, the same tests, or a near-copy of the statement.

Statements are compared after ``normalise`` (Unicode NFKC, lower case, LaTeX commands and
punctuation dropped), so ``$1 \\le n$`` and ``1 ≤ n`` read the same. Near-duplicates are found
with MinHash LSH (``datasketch``) over word shingles; each candidate pair is confirmed with the
MinHash estimate of Jaccard similarity before it counts. In every cluster one problem stays:
the one with reference solutions, then the most tests, then the first in input order.
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
import zlib
from collections.abc import Callable, Sequence

from mcoder.dataset.report import Removal, StageResult
from mcoder.records import Problem

_LATEX_COMMAND = re.compile(r"\\[A-Za-z]+")
_WORD = re.compile(r"\w+")

# A test set this small (e.g. one "1" -> "1" sample) is shared by unrelated problems, so an
# identical set of it says nothing about duplication.
MIN_TESTSET_CHARS = 32
NUM_PERM = 128
MINHASH_SEED = 1


# Special judge, dedup and decontamination each read every statement's words, one stage after
# another. The normalised text is cached as one string (about the statement's size; a tuple of
# word objects would be several times that) for as many statements as a large build holds:
# with a cache smaller than the set, each stage normalised every statement again.
@functools.lru_cache(maxsize=1 << 16)
def normalise(text: str) -> str:
    """The statement as normalised words (NFKC, lower case, no LaTeX commands) joined by spaces."""
    text = unicodedata.normalize("NFKC", text).lower()
    return " ".join(_WORD.findall(_LATEX_COMMAND.sub(" ", text)))


@functools.lru_cache(maxsize=256)  # a step reads one statement's words several times in a row
def words(text: str) -> tuple[str, ...]:
    """The statement as normalised words."""
    n = normalise(text)
    return tuple(n.split(" ")) if n else ()


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def _norm_output(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def testset_signature(problem: Problem) -> str | None:
    """A hash of the problem's tests, order-free and whitespace-normalised; None when too small."""
    items = sorted(f"{t.kind}\x00{_norm_output(t.input)}\x00{_norm_output(t.output)}" for t in problem.tests)
    if sum(len(i) for i in items) < MIN_TESTSET_CHARS:
        return None
    return _digest("\x01".join(items))


def keeper_rank(problem: Problem, position: int) -> tuple[int, int, int]:
    """Sort key of the problem a cluster keeps (smallest first)."""
    return (0 if problem.reference_solutions else 1, -len(problem.tests), position)


# ---------------------------------------------------------------- clustering


class _UnionFind:
    def __init__(self, n: int):
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def _clusters(n: int, pairs: Sequence[tuple[int, int]]) -> list[list[int]]:
    uf = _UnionFind(n)
    for a, b in pairs:
        uf.union(a, b)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(uf.find(i), []).append(i)
    return [g for g in groups.values() if len(g) > 1]


def _resolve(
    problems: Sequence[Problem],
    pairs: Sequence[tuple[int, int]],
    stage: str,
    reason: str,
    score: Callable[[int, int], float] | None = None,
) -> tuple[list[Problem], list[Removal], list[dict]]:
    """Keep one problem per cluster; the rest become removals naming the kept one."""
    removed: dict[int, Removal] = {}
    notes = []
    for group in _clusters(len(problems), pairs):
        keep = min(group, key=lambda i: keeper_rank(problems[i], i))
        gone = sorted((i for i in group if i != keep), key=lambda i: problems[i].id)
        for i in gone:
            detail = {"kept": problems[keep].id}
            if score is not None:
                detail["similarity"] = round(score(keep, i), 3)
            removed[i] = Removal(problems[i].id, stage, reason, detail)
        notes.append({"kept": problems[keep].id, "removed": [problems[i].id for i in gone]})
    kept = [p for i, p in enumerate(problems) if i not in removed]
    notes.sort(key=lambda c: c["kept"])
    return kept, [removed[i] for i in sorted(removed)], notes


def _same_key_pairs(keys: Sequence[str | None]) -> list[tuple[int, int]]:
    first: dict[str, int] = {}
    pairs = []
    for i, k in enumerate(keys):
        if k is None:
            continue
        if k in first:
            pairs.append((first[k], i))
        else:
            first[k] = i
    return pairs


# ---------------------------------------------------------------- the three checks


def exact_duplicates(
    problems: Sequence[Problem], stage: str = "dedup"
) -> tuple[list[Problem], list[Removal], list[dict]]:
    """Remove problems whose normalised statement or whose test set equals another's."""
    keys = [_digest(normalise(p.question)) if words(p.question) else None for p in problems]
    kept, removals, clusters = _resolve(problems, _same_key_pairs(keys), stage, "duplicate_statement")
    keys = [testset_signature(p) for p in kept]
    kept, more, more_clusters = _resolve(kept, _same_key_pairs(keys), stage, "duplicate_tests")
    return kept, removals + more, clusters + more_clusters


def shingles(text: str, k: int) -> set[str]:
    w = words(text)
    if len(w) <= k:
        return {" ".join(w)} if w else set()
    return {" ".join(w[i : i + k]) for i in range(len(w) - k + 1)}


def near_duplicates(
    problems: Sequence[Problem], threshold: float = 0.8, shingle_words: int = 3, stage: str = "dedup"
) -> tuple[list[Problem], list[Removal], list[dict]]:
    """Remove near-copies: MinHash LSH candidates whose estimated Jaccard is >= threshold."""
    from datasketch import MinHash, MinHashLSH  # numpy/scipy: paid only when dedup runs

    hashes = []
    lsh = MinHashLSH(threshold=threshold, num_perm=NUM_PERM)
    first = MinHash(num_perm=NUM_PERM, seed=MINHASH_SEED)  # its permutations are made once, shared by all
    for i, p in enumerate(problems):
        # crc32: a fast 32-bit hash in C; MinHash needs uniform 32-bit values, not a secure hash.
        m = MinHash(
            num_perm=NUM_PERM,
            seed=MINHASH_SEED,
            hashfunc=zlib.crc32,
            permutations=first.permutations,
            scheme=first.scheme,
        )
        m.update_batch([s.encode("utf-8") for s in shingles(p.question, shingle_words)])
        hashes.append(m)
        lsh.insert(str(i), m)
    pairs = []
    for i, m in enumerate(hashes):
        for j in sorted(int(key) for key in lsh.query(m)):
            if j > i and m.jaccard(hashes[j]) >= threshold:
                pairs.append((i, j))
    return _resolve(problems, pairs, stage, "near_duplicate", lambda a, b: hashes[a].jaccard(hashes[b]))


def dedup(
    problems: Sequence[Problem], threshold: float = 0.8, shingle_words: int = 3
) -> tuple[list[Problem], StageResult]:
    """Exact duplicates first (cheap), then near-duplicates among what is left."""
    kept, removals, exact = exact_duplicates(problems)
    kept, near, clusters = near_duplicates(kept, threshold, shingle_words)
    notes = {"exact_clusters": exact, "near_clusters": clusters}
    params = {"threshold": threshold, "shingle_words": shingle_words}
    return kept, StageResult("dedup", len(problems), len(kept), removals + near, notes=notes, params=params)
