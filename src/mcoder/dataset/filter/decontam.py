"""Decontamination: remove training problems that a benchmark already holds.

A problem is contaminated when its statement shares enough word n-grams (13 by default, the
size GPT-3 and most later reports use) with one benchmark statement, or when its test set equals
a benchmark problem's. One shared n-gram is not enough here: statements repeat boilerplate such
as "the first line contains a single integer t the number of test cases", so the share of the
shorter statement's n-grams that match must reach ``min_overlap`` (default 0.5: distinct
Codeforces problems in ../shared/data share up to about 0.3 of their 13-grams in boilerplate,
while a lightly reworded copy keeps well over half). Each removal names the benchmark problem it
matched and the share. Benchmark files may be mcoder problems or any source format the adapters
read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mcoder.dataset.filter.dedup import testset_signature, words
from mcoder.dataset.report import Removal, StageResult
from mcoder.records import Problem


def ngrams(text: str, n: int) -> set[int]:
    """Hashed word n-grams of a statement (the whole statement if it is shorter than n)."""
    w = words(text)
    if 0 < len(w) < n:
        return {hash(w)}
    # Python's hash of the tuple of words (each word's hash is cached): fast and 64-bit, with no
    # joined string made per n-gram. It differs between processes, but the index and the lookups
    # live in one process, and which n-grams are shared does not depend on the values.
    return {hash(w[i : i + n]) for i in range(len(w) - n + 1)}


@dataclass
class BenchIndex:
    """The benchmark problems' n-grams and test sets, for lookups by training problems."""

    n: int
    ids: list[str] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    by_gram: dict[int, list[int]] = field(default_factory=dict)
    by_tests: dict[str, int] = field(default_factory=dict)

    @classmethod
    def build(cls, bench: Iterable[tuple[str, Problem]], n: int = 13) -> BenchIndex:
        """``bench``: (label, problem) pairs; the label (e.g. ``file:id``) is what removals name."""
        index = cls(n)
        for label, p in bench:
            k = len(index.ids)
            index.ids.append(label)
            grams = ngrams(p.question, n)
            index.sizes.append(len(grams))
            for g in grams:
                index.by_gram.setdefault(g, []).append(k)
            sig = testset_signature(p)
            if sig is not None:
                index.by_tests.setdefault(sig, k)
        return index

    def match(self, problem: Problem, min_overlap: float) -> dict | None:
        """The benchmark problem this one is contaminated by, or None."""
        grams = ngrams(problem.question, self.n)
        shared: Counter[int] = Counter()
        for g in grams:
            if g in self.by_gram:  # most n-grams of a training problem are in no benchmark
                shared.update(self.by_gram[g])
        if shared:
            # Most shared n-grams first; ties go to the earlier benchmark problem (deterministic).
            k, count = min(shared.items(), key=lambda kv: (-kv[1], kv[0]))
            overlap = count / max(1, min(len(grams), self.sizes[k]))
            if overlap >= min_overlap:
                return {"benchmark": self.ids[k], "by": "statement", "overlap": round(overlap, 3)}
        sig = testset_signature(problem)
        if sig is not None and sig in self.by_tests:
            return {"benchmark": self.ids[self.by_tests[sig]], "by": "tests"}
        return None


def load_bench(paths: Sequence[str | Path]) -> list[tuple[str, Problem]]:
    """Benchmark problems, labelled ``file-name:id``, from mcoder problem files or any source
    format the adapters read (e.g. LiveCodeBench rows as downloaded); rows an adapter skips
    (no usable problem) are left out."""
    from mcoder.dataset.adapters import detect
    from mcoder.dataset.fields import Skip
    from mcoder.dataset.sources import expand
    from mcoder.errors import UsageError

    out = []
    sources, _ = expand([str(p) for p in paths])
    for source in sources:
        for ref, row in source.rows():
            adapter = detect(row)
            if adapter is None:
                raise ref.error(
                    "not a problem in a known format", hint="give mcoder problems or a source file"
                )
            try:
                p = adapter.convert(row, ref)
            except Skip:
                continue
            out.append((f"{Path(source.path).name}:{p.id}", p))
    if not out:
        raise UsageError(
            f"no benchmark problems in {', '.join(map(str, paths))}", hint="check --decontaminate"
        )
    return out


def decontaminate(
    problems: Sequence[Problem], index: BenchIndex, min_overlap: float = 0.5
) -> tuple[list[Problem], StageResult]:
    kept, removals, matches = [], [], []
    for p in problems:
        hit = index.match(p, min_overlap)
        if hit is None:
            kept.append(p)
            continue
        removals.append(Removal(p.id, "decontaminate", f"benchmark_{hit['by']}", hit))
        matches.append({"id": p.id, **hit})
    notes = {"matches": sorted(matches, key=lambda m: m["id"])}
    params = {"ngram": index.n, "min_overlap": min_overlap, "benchmark_problems": len(index.ids)}
    return kept, StageResult("decontaminate", len(problems), len(kept), removals, notes=notes, params=params)
