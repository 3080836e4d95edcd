"""Statement text from downloaded files: linear-time scans (counted in steps, not timed), and
decontamination and dedup that see through invisible characters, accents and look-alike letters,
with an overlap measure a short boilerplate benchmark row cannot turn into a mass removal."""

from __future__ import annotations

import importlib
import pkgutil
import re
from re import _constants as sre_c
from re import _parser as sre_parse

import pytest

import mcoder.dataset
from dataset_rows import CALL, STDIN
from mcoder.dataset.filter.decontam import BenchIndex, decontaminate
from mcoder.dataset.filter.dedup import dedup
from mcoder.dataset.filter.steps import FilterConfig
from mcoder.dataset.process import asserts, statement
from mcoder.records import Problem, Test

NGRAM = FilterConfig().ngram  # the filter's n-gram size, as a build uses it

MB = 1 << 20

# ---------------------------------------------------------------- regular expressions


def unsafe(pattern: re.Pattern) -> str | None:
    """Why ``pattern`` could backtrack over a long text more than linearly, or None. The forms
    refused: an unbounded repeat of '.', an unbounded repeat inside another, and an unbounded
    repeat at the start of an unanchored pattern with more after it (a search retries it at every
    position of a run, and each try can fail at the end of the run)."""
    return _walk(sre_parse.parse(pattern.pattern, pattern.flags), inside=False, first=True, followed=False)


_REPEATS = (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, sre_c.POSSESSIVE_REPEAT)


def _walk(tree, inside: bool, first: bool, followed: bool) -> str | None:
    for i, (op, av) in enumerate(tree):
        at_start, more = first and i == 0, followed or i < len(tree) - 1
        if op in _REPEATS:
            _lo, hi, sub = av
            unbounded = hi == sre_c.MAXREPEAT
            if unbounded and inside:
                return "an unbounded repeat inside an unbounded repeat"
            if unbounded and any(o == sre_c.ANY for o, _ in sub):
                return "an unbounded repeat of '.'"
            if unbounded and at_start and more:
                return "starts with an unbounded repeat that more of the pattern follows"
            why = _walk(sub, inside or unbounded, False, True)
        elif op == sre_c.SUBPATTERN:
            why = _walk(av[3], inside, at_start, more)
        elif op == sre_c.BRANCH:
            why = next((w for b in av[1] if (w := _walk(b, inside, at_start, more))), None)
        elif op in (sre_c.ASSERT, sre_c.ASSERT_NOT, sre_c.ATOMIC_GROUP):
            why = _walk(av[1] if op != sre_c.ATOMIC_GROUP else av, inside, False, True)
        else:
            why = None
        if why:
            return why
    return None


# Modules that never see source text (they read model output or mcoder's own files).
NOT_SOURCE_TEXT = {
    "mcoder.dataset.difficulty.predict",
    "mcoder.dataset.difficulty.calibrate",
    "mcoder.dataset.difficulty.select",
}


def source_text_patterns() -> list[tuple[str, re.Pattern]]:
    """Every compiled pattern at module level in the modules of mcoder.dataset that read sources."""
    found = []
    for info in pkgutil.walk_packages(mcoder.dataset.__path__, "mcoder.dataset."):
        if info.name in NOT_SOURCE_TEXT:
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            values = value if isinstance(value, tuple) else (value,)
            found += [(f"{info.name}.{name}", v) for v in values if isinstance(v, re.Pattern)]
    return found


def test_the_pattern_check_refuses_the_two_quadratic_expressions_of_the_audit():
    old_complete = re.compile(
        r"\n*Please complete the following python code precisely:\s*```python.*\Z", re.DOTALL
    )
    old_signature = re.compile(r"def\s+f\s*\((.*?)\)\s*(?:->[^:]*)?:", re.DOTALL)
    assert unsafe(old_complete) and unsafe(old_signature)
    assert unsafe(re.compile(r"(a+)+b")) and unsafe(re.compile(r"\s*x"))
    assert (
        unsafe(re.compile(r"^\s*x", re.MULTILINE)) is None
        and unsafe(re.compile(r"\bany (?:\w+ ){0,2}x")) is None
    )


def test_no_pattern_over_source_text_can_backtrack_more_than_linearly():
    patterns = source_text_patterns()
    assert len(patterns) >= 10  # the walk finds them (statement, dedup, special judge, taco, ...)
    assert [(name, why) for name, p in patterns if (why := unsafe(p))] == []


# ---------------------------------------------------------------- scans, counted


class Counted(str):
    """A string that counts the characters its searches examine (``steps``)."""

    steps = 0

    def find(self, sub, start=0, end=None):
        end = len(self) if end is None else end
        found = str.find(self, sub, start, end)
        Counted.steps += (found if found != -1 else end) - start + len(sub)
        return found

    def rfind(self, sub, start=0, end=None):
        end = len(self) if end is None else end
        Counted.steps += end - start
        return str.rfind(self, sub, start, end)

    def startswith(self, prefix, start=0, end=None):
        Counted.steps += len(prefix)
        return str.startswith(self, prefix, start, len(self) if end is None else end)

    def __getitem__(self, key):
        Counted.steps += key.stop - key.start if isinstance(key, slice) and key.stop is not None else 1
        return str.__getitem__(self, key)


def steps(fn, text: str) -> int:
    Counted.steps = 0
    fn(Counted(text))
    return Counted.steps


COMPLETE = "Please complete the following python code precisely:"
ADVERSARIAL = {
    "newline runs": "x" + "\n" * MB + "y",
    "phrase without a fence": (COMPLETE + " \n ") * (MB // 60),
    "fences without an end": "```python\n" * (MB // 10),
    "headings with blank space": ("### Question:" + " " * 50) * (MB // 63),
    "def headers without a colon": "def f(" + "a)" * (MB // 2),
    "arrows without a colon": "def f(x)" + " ->)" * (MB // 4),
    "spaces after def": ("def" + " " * 100 + "g") * (MB // 104),
}
SCANS = {
    "python_block": statement.python_block,
    "lcb_prompt_parts": statement.lcb_prompt_parts,
    "complete prompt": statement._without_complete_prompt,
    "def params": lambda code: asserts._def_params(code, "f"),
}


@pytest.mark.parametrize("scan", SCANS)
@pytest.mark.parametrize("text", ADVERSARIAL)
def test_scans_of_megabyte_texts_take_a_linear_number_of_steps(scan, text):
    """_COMPLETE_PROMPT took 12.9 s on 400 KB of newlines, signature_params over 100 s on 800 KB."""
    data = ADVERSARIAL[text]
    assert steps(SCANS[scan], data) <= 8 * len(data) + 1000


def test_the_scans_read_what_the_expressions_read():
    starter = "class Solution:\n    def f(self, a: List[int], b: int = (1)) -> int:\n"
    assert asserts.signature_params(starter, "f") == ["a", "b"]
    assert asserts.signature_params("def f(a, b):", "f") == ["a", "b"]
    assert asserts.signature_params("def g(a):", "f") is None
    prompt = f"Intro\n\nSolve it.\n\n\n{COMPLETE}\n```python\n{starter}```"
    assert statement.leetcode_prompt_parts(prompt) == ("Intro\n\nSolve it.", starter)
    assert statement.python_block("a ```python x\nA``` b ```python\nB\n``` ```python\nC") == "B\n"
    lcb = "### Question:\n  Q text\n### Format: Use\n```python\nclass S:\n  pass\n```\n### Answer:"
    assert statement.lcb_prompt_parts(lcb) == ("Q text", "class S:\n  pass\n")
    assert statement.lcb_prompt_parts("### Question: inline\nbody") == ("### Question: inline\nbody", "")


# ---------------------------------------------------------------- text tricks

ZERO_WIDTH, SOFT_HYPHEN = "\u200b", "\u00ad"
LOOKALIKE = str.maketrans("aeopcx", "аеорсх")  # Latin to Cyrillic


def salted(text: str, k: int) -> str:
    """A copy a reader cannot tell from ``text``: invisible characters inside words, and Latin
    letters swapped for Cyrillic look-alikes, differently for each ``k``."""
    out = []
    for i, word in enumerate(text.split(" ")):
        if (i + k) % 3 == 0 and len(word) > 3:
            word = word[:2] + (ZERO_WIDTH if k % 2 else SOFT_HYPHEN) + word[2:]
        if (i + k) % 4 == 1:
            word = word.translate(LOOKALIKE)
        out.append(word)
    return " ".join(out)


def bench_problems() -> list[Problem]:
    problems = [
        Problem(f"b{i}", "bench", f"{p.statement} {p.input_spec} {p.output_spec}", [Test(*p.tests[0])])
        for i, p in enumerate(STDIN)
    ]
    problems += [Problem(f"c{i}", "bench", c.statement, [Test("1", "1", "call")]) for i, c in enumerate(CALL)]
    return problems


def test_decontamination_removes_copies_salted_with_invisible_and_lookalike_characters():
    """0 of 30 benchmark copies were removed before."""
    bench = bench_problems()
    copies = [
        Problem(f"copy{k}", "train", salted(bench[k % len(bench)].question, k), [Test(f"{k}\n", "x\n")])
        for k in range(30)
    ]
    assert all(c.question != bench[k % len(bench)].question for k, c in enumerate(copies))
    kept, result = decontaminate(copies, BenchIndex.build([(p.id, p) for p in bench], NGRAM))
    assert kept == [] and len(result.removals) == 30


def test_dedup_clusters_salted_copies():
    base = bench_problems()[:5]
    copies = [
        Problem(f"copy{k}", "train", salted(base[k % 5].question, k), [Test(f"{k}\n", "x\n")])
        for k in range(10)
    ]
    kept, result = dedup(base + copies)
    assert [p.id for p in kept] == [p.id for p in base] and len(result.removals) == 10


BOILERPLATE = "The first line contains a single integer t, the number of test cases that follow."


def test_a_boilerplate_benchmark_row_does_not_mark_every_problem_holding_it():
    """A 13-word boilerplate row removed 127 of 391 Codeforces problems (share of the smaller side)."""
    index = BenchIndex.build([("bench:boiler", Problem("boiler", "bench", BOILERPLATE, [Test("1", "1")]))], NGRAM)
    train = [
        Problem(f"t{i}", "train", f"{p.statement} {BOILERPLATE} {p.input_spec}", [Test(*p.tests[0])])
        for i, p in enumerate(STDIN)
    ]
    kept, result = decontaminate(train, index)
    assert len(kept) == len(train) and result.removals == []


def test_a_short_benchmark_statement_copied_whole_is_still_caught():
    index = BenchIndex.build([("bench:short", Problem("short", "bench", BOILERPLATE, [Test("1", "1")]))], NGRAM)
    copy = Problem("copy", "train", salted(BOILERPLATE, 1).upper(), [Test("2", "3")])
    kept, result = decontaminate([copy], index)
    assert kept == [] and result.removals[0].detail["benchmark"] == "bench:short"


# ---------------------------------------------------------------- MinHash


@pytest.mark.parametrize("threshold", [0.5, 0.7, 0.8, 0.9])
def test_lsh_bands_are_the_ones_datasketch_picks(threshold):
    datasketch = pytest.importorskip("datasketch")
    from mcoder.dataset.filter.minhash import bands

    lsh = datasketch.MinHashLSH(threshold=threshold, num_perm=128)
    assert bands(threshold) == (lsh.b, lsh.r)


def test_signatures_estimate_jaccard_and_lsh_finds_the_close_pairs():
    import numpy as np

    from mcoder.dataset.filter.minhash import candidate_pairs, signature, similarity

    base = [f"w{i}".encode() for i in range(400)]
    close = base[:380] + [f"x{i}".encode() for i in range(20)]  # Jaccard 380/420 = 0.905
    far = base[:200] + [f"y{i}".encode() for i in range(200)]  # 200/600 = 0.333
    sigs = np.stack([signature(s) for s in (base, close, far)])
    assert abs(similarity(sigs[0], sigs[1]) - 380 / 420) < 0.1
    assert abs(similarity(sigs[0], sigs[2]) - 200 / 600) < 0.1
    assert candidate_pairs(sigs, 0.8) == [(0, 1)]
    assert (signature([]) == np.iinfo(np.uint32).max).all()
