"""Duplicate removal: the same statement, the same tests, or a near-copy of the statement.

Statements are compared after ``normalise`` (Unicode compatibility forms, accents, invisible
characters such as zero-width spaces and soft hyphens dropped, Cyrillic and Greek look-alikes of
Latin letters folded, lower case, LaTeX commands and punctuation dropped), so ``$1 \\le n$`` and
``1 ≤ n`` read the same, and so do a statement and its copy salted with invisible or look-alike
characters. Near-duplicates are found
with MinHash LSH (``minhash.py``) over word shingles; each candidate pair is confirmed with the
MinHash estimate of Jaccard similarity before it counts. In every cluster one problem stays:
the one with reference solutions, then the most tests, then the first in input order.
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mcoder.dataset.report import Removal, StageResult
from mcoder.records import Problem

_LATEX_COMMAND = re.compile(r"\\[A-Za-z]+")
_WORD = re.compile(r"\w+")

# Invisible characters (format characters: zero-width space and joiners, soft hyphen, word joiner,
# byte-order mark, bidirectional marks) and combining marks (accents, once NFKD has split them off)
# go; Cyrillic and Greek letters that look like Latin ones become those.
_INVISIBLE = "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufe00-\ufe0f\ufeff"
_COMBINING = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
_LOOKALIKES = {
    "АВЕКМНОРСТХУаеорсухіјѕԁһӏ": "ABEKMHOPCTXYaeopcyxijsdhl",  # Cyrillic
    "ΑΒΕΖΗΙΚΜΝΟΡΤΥΧοιν": "ABEZHIKMNOPTYXoiv",  # Greek
}


def _fold_table() -> dict[int, str | None]:
    table: dict[int, str | None] = {}
    for ranges in (_INVISIBLE, _COMBINING):
        for part in re.findall(r".-.|.", ranges):
            lo, hi = (part[0], part[2]) if len(part) == 3 else (part, part)
            table.update(dict.fromkeys(range(ord(lo), ord(hi) + 1)))
    for src, dst in _LOOKALIKES.items():
        table.update({ord(a): b for a, b in zip(src, dst, strict=True)})
    return table


_FOLD = _fold_table()

# A test set this small (e.g. one "1" -> "1" sample) is shared by unrelated problems, so an
# identical set of it says nothing about duplication.
MIN_TESTSET_CHARS = 32


# Special judge, dedup and decontamination each read every statement's words, one stage after
# another. The normalised text is cached as one string (about the statement's size; a tuple of
# word objects would be several times that) for as many statements as a large build holds:
# with a cache smaller than the set, each stage normalised every statement again.
@functools.lru_cache(maxsize=1 << 16)
def normalise(text: str) -> str:
    """The statement as normalised words (see the module's docstring) joined by spaces."""
    text = unicodedata.normalize("NFKD", text).translate(_FOLD)
    return " ".join(_WORD.findall(_LATEX_COMMAND.sub(" ", text.lower())))


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


# ---------------------------------------------------------------- keys


@dataclass(slots=True)
class Keys:
    """What dedup needs of one problem, in a few hundred bytes: never the problem itself, so that
    a build with ``--dedup`` holds keys for the whole set and the problems on disk."""

    id: str
    rank: tuple[int, int]  # keeper_rank without the position: reference solutions, then tests
    statement: bytes | None  # digest of the normalised statement (None: no words)
    tests: bytes | None  # testset_signature
    signature: bytes  # MinHash values of the statement's shingles (uint32[NUM_PERM], minhash.py)


class Signer:
    """The Keys of problems: digests and a MinHash signature of the statement's shingles."""

    def __init__(self, shingle_words: int = 3):
        self.shingle_words = shingle_words

    def keys(self, problem: Problem) -> Keys:
        from mcoder.dataset.filter.minhash import signature  # numpy: paid only when dedup runs

        sig = signature(s.encode("utf-8") for s in shingles(problem.question, self.shingle_words))
        statement = _digest(normalise(problem.question)).encode() if words(problem.question) else None
        return Keys(
            problem.id,
            (0 if problem.reference_solutions else 1, -len(problem.tests)),
            statement,
            (testset_signature(problem) or "").encode() or None,
            sig.tobytes(),
        )


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


def _clusters(members: Sequence[int], pairs: Sequence[tuple[int, int]]) -> list[list[int]]:
    """Clusters (of two or more) among ``members`` (positions) joined by ``pairs``."""
    slot = {m: i for i, m in enumerate(members)}
    uf = _UnionFind(len(members))
    for a, b in pairs:
        uf.union(slot[a], slot[b])
    groups: dict[int, list[int]] = {}
    for m in members:
        groups.setdefault(uf.find(slot[m]), []).append(m)
    return [g for g in groups.values() if len(g) > 1]


def _resolve(
    keys: Sequence[Keys],
    members: Sequence[int],
    pairs: Sequence[tuple[int, int]],
    stage: str,
    reason: str,
    score: Callable[[int, int], float] | None = None,
) -> tuple[dict[int, Removal], list[dict]]:
    """Keep one problem per cluster; the rest become removals naming the kept one."""
    removed: dict[int, Removal] = {}
    notes = []
    for group in _clusters(members, pairs):
        keep = min(group, key=lambda i: (*keys[i].rank, i))
        gone = sorted((i for i in group if i != keep), key=lambda i: keys[i].id)
        for i in gone:
            detail = {"kept": keys[keep].id}
            if score is not None:
                detail["similarity"] = round(score(keep, i), 3)
            removed[i] = Removal(keys[i].id, stage, reason, detail)
        notes.append({"kept": keys[keep].id, "removed": [keys[i].id for i in gone]})
    notes.sort(key=lambda c: c["kept"])
    return removed, notes


def _same_key_pairs(members: Sequence[int], key: Callable[[int], bytes | None]) -> list[tuple[int, int]]:
    first: dict[bytes, int] = {}
    pairs = []
    for i in members:
        k = key(i)
        if k is None:
            continue
        if k in first:
            pairs.append((first[k], i))
        else:
            first[k] = i
    return pairs


def _similar_pairs(keys: Sequence[Keys], members: Sequence[int], threshold: float) -> list[tuple[int, int]]:
    """Pairs of ``members`` whose estimated Jaccard is >= threshold (LSH bands, each confirmed)."""
    import numpy as np

    from mcoder.dataset.filter.minhash import NUM_PERM, candidate_pairs

    if len(members) < 2:
        return []
    signatures = np.frombuffer(b"".join(keys[i].signature for i in members), dtype=np.uint32)
    pairs = candidate_pairs(signatures.reshape(len(members), NUM_PERM), threshold)
    return [(members[a], members[b]) for a, b in pairs]


def jaccard(a: Keys, b: Keys) -> float:
    import numpy as np

    from mcoder.dataset.filter.minhash import similarity

    return similarity(np.frombuffer(a.signature, np.uint32), np.frombuffer(b.signature, np.uint32))


# ---------------------------------------------------------------- the plan


def plan(
    keys: Sequence[Keys], threshold: float = 0.8, stage: str = "dedup", near: bool = True
) -> tuple[dict[int, Removal], dict[str, list[dict]]]:
    """Which positions go, and why: exact duplicates by statement, then by test set, among what is
    left; then near-duplicates among what is left."""
    members = list(range(len(keys)))
    removed, exact = _resolve(
        keys, members, _same_key_pairs(members, lambda i: keys[i].statement), stage, "duplicate_statement"
    )
    members = [i for i in members if i not in removed]
    more, more_exact = _resolve(
        keys, members, _same_key_pairs(members, lambda i: keys[i].tests), stage, "duplicate_tests"
    )
    removed |= more
    notes = {"exact_clusters": exact + more_exact}
    if near:
        members = [i for i in members if i not in removed]
        pairs = _similar_pairs(keys, members, threshold)
        close, clusters = _resolve(
            keys, members, pairs, stage, "near_duplicate", lambda a, c: jaccard(keys[a], keys[c])
        )
        removed |= close
        notes["near_clusters"] = clusters
    return removed, notes


def _apply(problems: Sequence[Problem], removed: dict[int, Removal]) -> tuple[list[Problem], list[Removal]]:
    return [p for i, p in enumerate(problems) if i not in removed], [removed[i] for i in sorted(removed)]


def exact_duplicates(
    problems: Sequence[Problem], stage: str = "dedup"
) -> tuple[list[Problem], list[Removal], list[dict]]:
    """Remove problems whose normalised statement or whose test set equals another's."""
    signer = Signer()
    removed, notes = plan([signer.keys(p) for p in problems], stage=stage, near=False)
    return (*_apply(problems, removed), notes["exact_clusters"])


def near_duplicates(
    problems: Sequence[Problem], threshold: float = 0.8, shingle_words: int = 3, stage: str = "dedup"
) -> tuple[list[Problem], list[Removal], list[dict]]:
    """Remove near-copies: LSH candidates whose estimated Jaccard is >= threshold."""
    signer = Signer(shingle_words)
    keys = [signer.keys(p) for p in problems]
    members = list(range(len(keys)))
    pairs = _similar_pairs(keys, members, threshold)
    removed, clusters = _resolve(
        keys, members, pairs, stage, "near_duplicate", lambda a, c: jaccard(keys[a], keys[c])
    )
    return (*_apply(problems, removed), clusters)


def shingles(text: str, k: int) -> set[str]:
    w = words(text)
    if len(w) <= k:
        return {" ".join(w)} if w else set()
    return {" ".join(w[i : i + k]) for i in range(len(w) - k + 1)}


def result(
    n_in: int, removed: dict[int, Removal], notes: dict, threshold: float, shingle_words: int
) -> StageResult:
    params = {"threshold": threshold, "shingle_words": shingle_words}
    removals = [removed[i] for i in sorted(removed)]
    return StageResult("dedup", n_in, n_in - len(removed), removals, notes=notes, params=params)


def dedup(
    problems: Sequence[Problem], threshold: float = 0.8, shingle_words: int = 3
) -> tuple[list[Problem], StageResult]:
    """Exact duplicates first, then near-duplicates among what is left (a list in memory; a
    build streams instead: ``refine.Refiner`` keeps only the keys)."""
    signer = Signer(shingle_words)
    removed, notes = plan([signer.keys(p) for p in problems], threshold)
    kept, _ = _apply(problems, removed)
    return kept, result(len(problems), removed, notes, threshold, shingle_words)
