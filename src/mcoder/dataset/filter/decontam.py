"""Decontamination: remove training problems that a benchmark already holds.

A problem is contaminated when its statement shares enough word n-grams (13 by default, the
size GPT-3 and most later reports use) with one benchmark statement, when its normalised
statement equals one, or when its test set equals a benchmark problem's. Statements are read
through ``dedup.normalise``, so invisible characters, accents and look-alike letters planted in
a copy change nothing. One shared n-gram is not enough: statements repeat boilerplate such as
"the first line contains a single integer t the number of test cases", so the share of the
benchmark statement's n-grams found in the problem must reach ``min_overlap`` (default 0.5:
distinct Codeforces problems in ../shared/data share up to about 0.3 of their 13-grams in
boilerplate, while a lightly reworded copy keeps well over half). The share is of the benchmark
side, counted as at least ``MIN_BENCH_NGRAMS``: a short benchmark row (a line of boilerplate)
cannot mark every problem that contains it; a short benchmark statement copied whole is still
caught by the exact match. Each removal names the benchmark problem it
matched and the share. Benchmark files may be mcoder problems or any source format the adapters
read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mcoder.dataset.filter.dedup import normalise, testset_signature, words
from mcoder.dataset.report import Removal, StageResult
from mcoder.records import Problem

MIN_BENCH_NGRAMS = 50  # about 60 words: shorter benchmark statements count as this long


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
    by_statement: dict[str, int] = field(default_factory=dict)

    @classmethod
    def build(cls, bench: Iterable[tuple[str, Problem]], n: int) -> BenchIndex:
        """``bench``: (label, problem) pairs; the label (e.g. ``file:id``) is what removals name;
        ``n``: the n-gram size (FilterConfig's ``ngram``)."""
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
            if words(p.question):
                index.by_statement.setdefault(normalise(p.question), k)
        return index

    def match(self, problem: Problem, min_overlap: float) -> dict | None:
        """The benchmark problem this one is contaminated by, or None."""
        grams = ngrams(problem.question, self.n)
        shared: Counter[int] = Counter()
        for g in grams:
            if g in self.by_gram:  # most n-grams of a training problem are in no benchmark
                shared.update(self.by_gram[g])
        if shared:
            # The largest share of a benchmark statement; ties go to the earlier one (deterministic).
            k, overlap = min(
                ((k, count / max(MIN_BENCH_NGRAMS, self.sizes[k])) for k, count in shared.items()),
                key=lambda kv: (-kv[1], kv[0]),
            )
            if overlap >= min_overlap:
                return {"benchmark": self.ids[k], "by": "statement", "overlap": round(overlap, 3)}
        same = self.by_statement.get(normalise(problem.question)) if words(problem.question) else None
        if same is not None:
            return {"benchmark": self.ids[same], "by": "statement", "overlap": 1.0}
        sig = testset_signature(problem)
        if sig is not None and sig in self.by_tests:
            return {"benchmark": self.ids[self.by_tests[sig]], "by": "tests"}
        return None


def load_bench(paths: Sequence[str | Path]) -> list[tuple[str, Problem]]:
    """Benchmark problems, labelled ``file-name:id``, from mcoder problem files or any source
    format the adapters read (e.g. LiveCodeBench rows as downloaded); rows an adapter skips
    (no usable problem) are left out."""
    from mcoder.dataset.collect.sources import Unread, expand
    from mcoder.dataset.process.adapters import detect
    from mcoder.dataset.process.fields import Skip
    from mcoder.errors import DataError, UsageError

    out = []
    sources, _ = expand([str(p) for p in paths])
    for source in sources:
        for ref, row in source.rows():
            if isinstance(row, Unread):
                raise ref.error(f"a benchmark row {row.skip.reason}", hint="raise the budget with --limit")
            adapter = detect(row)
            if adapter is None:
                raise ref.error(
                    "not a problem in a known format", hint="give mcoder problems or a source file"
                )
            try:
                p = adapter.convert(row, ref)
            except Skip:
                continue
            except DataError:
                raise
            except Exception as e:  # a gap in the adapter: still about this row
                raise ref.error(f"cannot read this benchmark row ({type(e).__name__}: {e})"[:300]) from e
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
