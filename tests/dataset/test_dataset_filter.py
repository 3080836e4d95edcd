"""The filter stage on the project's own rows and real problems (``problem_sets``): duplicates, decontamination, special judge, freshness,
length, test counts, the test cap and the difficulty band."""

from __future__ import annotations

import dataclasses

import pytest

from helpers.dataset_real import examples, real
from mcoder.dataset.difficulty.measured import difficulty_band, parse_band, read_pass_counts
from mcoder.dataset.filter.decontam import BenchIndex, decontaminate, load_bench
from mcoder.dataset.filter.dedup import dedup, exact_duplicates, near_duplicates
from mcoder.dataset.filter.special_judge import special_judge_phrase
from mcoder.dataset.filter.steps import (
    FilterConfig,
    cap_tests,
    freshness,
    min_tests,
    run_filter,
    special_judge,
    statement_length,
)
from mcoder.errors import UsageError
from mcoder.jsonl import RecordWriter, dumps
from mcoder.records import Problem, Test, Verdict

NGRAM = FilterConfig().ngram  # the filter's n-gram size, as a build uses it


def reworded(p: Problem, new_id: str) -> Problem:
    """A light rewording: a few words swapped, a sentence added, another test and another id."""
    text = p.question
    for old, new in (
        ("integers", "numbers"),
        ("print", "output"),
        ("array", "sequence"),
        ("given", "handed"),
    ):
        text = text.replace(old, new, 1)
    text = "Here is a task for you. " + text + " Good luck!"
    return dataclasses.replace(
        p, id=new_id, question=text, tests=[Test("7\n", "7\n")], reference_solutions=[]
    )


def ids(problems) -> list[str]:
    return [p.id for p in problems]


# ---------------------------------------------------------------- duplicates


def test_planted_near_duplicate_is_removed_and_distinct_problems_kept(problem_sets):
    problems = real(problem_sets, "rllm_codeforces.json")[:120]
    baseline, before = dedup(problems)  # the real set has its own duplicates (easy/hard versions)
    clustered = {c["kept"] for c in before.notes["near_clusters"] + before.notes["exact_clusters"]}
    original = max((p for p in baseline if p.id not in clustered), key=lambda p: len(p.question))
    copy = reworded(original, "planted-copy")
    assert copy.question != original.question
    kept, result = dedup([*problems, copy])
    assert ids(kept) == ids(baseline)  # the copy went; every distinct problem stayed
    (removal,) = [r for r in result.removals if r.problem_id == "planted-copy"]
    assert removal.reason == "near_duplicate"
    assert removal.detail["kept"] == original.id
    assert 0.8 <= removal.detail["similarity"] < 1.0
    assert {"kept": original.id, "removed": ["planted-copy"]} in result.notes["near_clusters"]


def test_distinct_problems_are_not_near_duplicates():
    probs = examples()  # 48 short problems, many about arrays and sums
    kept, removals, clusters = near_duplicates(probs)
    assert ids(kept) == ids(probs) and removals == [] and clusters == []


def test_exact_duplicates_by_normalised_statement_and_by_identical_tests():
    base = examples()[0]
    same_text = dataclasses.replace(
        base,
        id="spaced",
        question="  " + base.question.upper().replace(" ", "  ") + "\n",
        tests=base.tests[:1],
    )
    same_tests = dataclasses.replace(
        base, id="same-tests", question="A different statement entirely about sums."
    )
    other = examples()[1]
    kept, removals, clusters = exact_duplicates([base, same_text, same_tests, other])
    assert ids(kept) == [base.id, other.id]
    reasons = {r.problem_id: (r.reason, r.detail["kept"]) for r in removals}
    assert reasons == {"spaced": ("duplicate_statement", base.id), "same-tests": ("duplicate_tests", base.id)}
    assert len(clusters) == 2


def test_cluster_keeps_the_problem_with_references_then_most_tests():
    base = examples()[0]
    bare = dataclasses.replace(base, id="a-first-but-bare", reference_solutions=[], tests=base.tests * 2)
    kept, removals, _ = exact_duplicates([bare, base])
    assert ids(kept) == [base.id] and removals[0].problem_id == "a-first-but-bare"


# ---------------------------------------------------------------- decontamination


def _write(path, problems):
    with RecordWriter(path, "id", resume=False) as w:
        w.write_all(problems)
    return path


def test_planted_benchmark_problem_is_caught_by_decontamination(problem_sets, tmp_path):
    bench = real(problem_sets, "rllm_code_contests.json") + real(
        problem_sets, "sandboxfusion_code_contests.jsonl"
    )
    bench_file = _write(tmp_path / "bench.jsonl", bench)
    target = bench[min(40, len(bench) - 1)]
    planted = reworded(target, "looks-new")
    train = real(problem_sets, "rllm_codeforces.json") + [planted]
    index = BenchIndex.build(load_bench([bench_file]), NGRAM)
    kept, result = decontaminate(train, index)
    assert ids(kept) == ids(train[:-1])  # the Codeforces problems (408 real ones): none is a false match
    (removal,) = result.removals
    assert removal.problem_id == "looks-new" and removal.reason == "benchmark_statement"
    # The target's problem; the project's own sets hold each CodeContests problem in both shapes.
    same = {f"bench.jsonl:{p.id}" for p in bench if p.question[:80] == target.question[:80]}
    assert removal.detail["benchmark"] in same
    assert 0.5 <= removal.detail["overlap"] < 1.0
    assert result.notes["matches"] == [{"id": "looks-new", **removal.detail}]


def test_decontamination_by_identical_test_set(tmp_path):
    bench = examples()[:5]
    index = BenchIndex.build(load_bench([_write(tmp_path / "b.jsonl", bench)]), NGRAM)
    disguised = dataclasses.replace(
        bench[2],
        id="renamed",
        question="Completely new words here, nothing alike.",
        tests=list(reversed(bench[2].tests)),
    )
    kept, result = decontaminate([*examples()[5:10], disguised], index)
    assert ids(kept) == ids(examples()[5:10])
    assert result.removals[0].detail == {"benchmark": f"b.jsonl:{bench[2].id}", "by": "tests"}


BOILERPLATE = (
    "The first line contains a single integer t, the number of test cases. The description of the "
    "test cases follows. Each test case consists of one line with two integers n and m."
)
PRIMES = (
    "Alice collects prime numbers. She writes down every prime strictly between m and n on a long paper "
    "strip, then asks Bob how many digits the strip holds in total. Bob is slow at arithmetic and wants "
    "a program that answers quickly even for the largest strips Alice can afford, since she keeps "
    "buying more paper every week and the numbers grow with each purchase she makes at the shop. "
)
GRID = (
    "A robot stands in the top left cell of a grid with n rows and m columns. Some cells hold walls and "
    "the robot may move right or down into a free cell. Find the number of cells on the longest route "
    "the robot can take before it gets stuck, counting the starting cell, and tell whether the bottom "
    "right corner lies on some such route, which matters to the engineers who built the robot. "
)


def test_boilerplate_alone_is_not_contamination():
    a = Problem("a", "s", PRIMES + BOILERPLATE, [Test("1\n1 2\n", "0\n")])
    b = Problem("b", "s", GRID + BOILERPLATE, [Test("1\n", "1\n")])
    index = BenchIndex.build([("bench:a", a)], NGRAM)
    kept, result = decontaminate([b], index)
    assert ids(kept) == ["b"]
    kept, result = decontaminate([b], index, min_overlap=0.01)  # any shared 13-gram would count
    assert ids(kept) == [] and result.removals[0].detail["benchmark"] == "bench:a"


# ---------------------------------------------------------------- special judge


def test_special_judge_flagged_on_own_statements(own_sets):
    problems = real(own_sets, "rllm_codeforces.json") + real(own_sets, "rllm_leetcode_test.json")
    flagged = [p for p in problems if special_judge_phrase(p.question)]
    multi = [p for p in problems if "print any of them" in p.question]
    tolerance = [p for p in problems if "absolute or relative error" in p.question]
    any_order = [p for p in problems if "in any order" in p.question]
    assert multi and tolerance and any_order
    assert all(special_judge_phrase(p.question) for p in multi + any_order)
    assert all(special_judge_phrase(p.question) is None for p in tolerance)
    assert len(flagged) == len(multi) + len(any_order)


def test_special_judge_flagged_on_real_statements(shared_data):
    problems = real(shared_data, "rllm_codeforces.json") + real(shared_data, "rllm_code_contests.json")
    multi = [
        p
        for p in problems
        if "If there are multiple answers, print any of them" in " ".join(p.question.split())
    ]
    tolerance = [p for p in problems if "absolute or relative error" in " ".join(p.question.split())]
    assert len(multi) >= 10 and tolerance
    assert all(special_judge_phrase(p.question) for p in multi)
    assert all(special_judge_phrase(p.question) is None for p in tolerance)
    leetcode = real(shared_data, "rllm_leetcode_test.json")
    any_order = [p for p in leetcode if "in any order" in p.question and "return" in p.question.lower()]
    assert any_order and all(special_judge_phrase(p.question) for p in any_order)


@pytest.mark.parametrize(
    "text, flagged",
    [
        ("If there are several possible answers, you may output any of them.", True),
        ("Print any valid answer.", True),
        ("Return the answer in any order.", True),
        ("Your answer is accepted if its absolute or relative error does not exceed 10^{-6}.", False),
        ("In one operation you can choose any index i and set a_i to 0.", False),
        ("Do not print any extra spaces.", False),
        ("You can perform the operations in any order. Print the minimum cost.", False),
    ],
)
def test_special_judge_phrases(text, flagged):
    assert (special_judge_phrase(text) is not None) == flagged


def test_special_judge_excluded_by_default_and_flagged_when_kept():
    p = Problem(
        "sj",
        "s",
        "Print any permutation. If there are multiple answers, print any of them.",
        [Test("1", "1")],
    )
    q = Problem("plain", "s", "Print the sum of a and b.", [Test("1 2", "3")])
    kept, result = special_judge([p, q], keep=False)
    assert ids(kept) == ["plain"] and result.removals[0].reason == "special_judge"
    kept, result = special_judge([p, q], keep=True)
    assert ids(kept) == ["sj", "plain"] and kept[0].meta["special_judge"] is True
    assert "special_judge" not in kept[1].meta and not result.removals


# ---------------------------------------------------------------- per-problem filters


def test_freshness_length_and_min_tests():
    ps = [
        Problem("old", "s", "x" * 50, [Test("1", "1")], date="2023-05-01"),
        Problem("new", "s", "x" * 50, [Test("1", "1"), Test("2", "2")], date="2024-08-01T12:00:00"),
        Problem("undated", "s", "x" * 50, [Test("1", "1")]),
        Problem("short", "s", "x", [Test("1", "1")], date="2025-01-01"),
    ]
    kept, result = freshness(ps, "2024-08-01")
    assert ids(kept) == ["new", "short"]
    assert {r.problem_id: r.reason for r in result.removals} == {"old": "too_old", "undated": "no_date"}
    kept, result = statement_length(ps, 10, 40)
    assert ids(kept) == [] and {r.reason for r in result.removals} == {
        "statement_too_long",
        "statement_too_short",
    }
    kept, result = min_tests(ps, 2)
    assert ids(kept) == ["new"] and result.n_in == 4 and result.n_out == 1


def test_cap_keeps_the_largest_inputs_in_their_order():
    tests = [Test("x" * n, str(n)) for n in (5, 50, 1, 30, 40, 2)]
    p = Problem("many", "s", "q", tests)
    (capped,), result = cap_tests([p], 3)
    assert [t.output for t in capped.tests] == ["50", "30", "40"]
    assert capped.meta["tests_capped_from"] == 6 and result.notes["capped"] == 1
    (same,), _ = cap_tests([p], 10)
    assert same is p


# ---------------------------------------------------------------- difficulty band


def test_difficulty_band_keeps_exactly_the_problems_inside(tmp_path):
    rates = {
        "p0": [0, 0, 0, 0],
        "p25": [1, 0, 0, 0],
        "p50": [1, 1, 0, 0],
        "p75": [1, 1, 1, 0],
        "p100": [1, 1, 1, 1],
    }
    problems = [Problem(pid, "s", "q", [Test("1", "1")]) for pid in [*rates, "unjudged"]]
    path = tmp_path / "verdicts.jsonl"
    with RecordWriter(path, "rollout_id", resume=False) as w:
        for pid, passes in rates.items():
            for i, ok in enumerate(passes):
                w.write(
                    Verdict(
                        f"{pid}-{i}", pid, float(ok), bool(ok), "accepted" if ok else "wrong_answer", ok, 1
                    )
                )
    kept, result = difficulty_band(problems, read_pass_counts([path]), *parse_band("0.25,0.75"))
    assert ids(kept) == ["p25", "p50", "p75"]
    assert [p.meta["pass_rate"] for p in kept] == [0.25, 0.5, 0.75]
    assert all(p.meta["pass_samples"] == 4 for p in kept)
    assert {r.problem_id: r.reason for r in result.removals} == {
        "p0": "too_hard",
        "p100": "too_easy",
        "unjudged": "no_verdicts",
    }


@pytest.mark.parametrize("band", ["0.5", "0.9,0.1", "a,b", "-0.1,0.5"])
def test_bad_band_is_a_usage_error(band):
    with pytest.raises(UsageError):
        parse_band(band)


def test_config_validation():
    with pytest.raises(UsageError, match="go together"):
        FilterConfig(keep_pass_rate=(0.1, 0.9))
    with pytest.raises(UsageError, match="--after"):
        FilterConfig(after="01/02/2024")
    with pytest.raises(UsageError, match="--max-tests"):
        FilterConfig(min_tests=5, max_tests=2)


# ---------------------------------------------------------------- the stage


def test_run_filter_is_deterministic_and_accounts_for_every_problem(problem_sets, tmp_path):
    problems = real(problem_sets, "rllm_codeforces.json") + real(problem_sets, "rllm_code_contests.json")
    bench = _write(tmp_path / "bench.jsonl", real(problem_sets, "sandboxfusion_code_contests.jsonl"))
    cfg = FilterConfig(dedup=True, decontaminate=[bench], max_tests=5, min_chars=100)
    first, stages = run_filter(problems, cfg)
    again, _ = run_filter(list(problems), cfg)
    assert b"".join(map(dumps, first)) == b"".join(map(dumps, again))
    removed = [r.problem_id for s in stages for r in s.removals]
    assert len(removed) == len(set(removed))
    assert sorted(removed + ids(first)) == sorted(ids(problems))
    assert [s.name for s in stages] == [
        "length",
        "min_tests",
        "special_judge",
        "dedup",
        "decontaminate",
        "cap_tests",
    ]
    assert all(len(p.tests) <= 5 for p in first)


def test_benchmark_file_in_a_source_format_is_read_through_the_adapters(problem_sets):
    lcb = problem_sets / "sandboxfusion_lcb_v1.jsonl"
    bench = load_bench([lcb])
    assert [label for label, _ in bench] == [f"{lcb.name}:{p.id}" for p in real(problem_sets, lcb.name)]
    kept, result = decontaminate(real(problem_sets, lcb.name), BenchIndex.build(bench, NGRAM))
    assert kept == [] and {r.reason for r in result.removals} == {"benchmark_statement"}
