"""Verdict accuracy of the two comparison modes on the labelled judging cases.

Runs every case of tests/data/compare_cases.jsonl (or --cases FILE) through
``compare_output``/``compare_value`` in ``microcoder`` and ``strict`` mode and prints, per mode and
per category: cases, accepts, false accepts (a wrong answer accepted), false rejects (a right answer
rejected) and accuracy; then the correct outputs that strict rejects and microcoder accepts, which is
the "more accurate verdicts" claim measured on this table.

    .venv/bin/python benchmarks/judge_accuracy.py [--cases FILE] [--list]

A label is a judgement about one output; the table's `why` field says it. The figures are only as
good as the table: it is weighted towards traps, not towards how often each case occurs in practice.
"""

from __future__ import annotations

import ast
import json
from collections import defaultdict
from pathlib import Path

from mcoder.judge.compare import compare_output, compare_value

if __package__:  # python -m benchmarks.judge_accuracy, or imported
    from benchmarks import common
else:  # python benchmarks/judge_accuracy.py: this folder is first on sys.path
    import common

DEFAULT_CASES = common.ROOT / "tests" / "data" / "compare_cases.jsonl"  # a data file, not test code
MODES = ("microcoder", "strict")


def load_cases(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def verdict(case: dict, mode: str) -> str | None:
    if case["kind"] == "call":
        got_text = case["got"]
        got = float(got_text) if got_text in ("nan", "inf", "-inf") else ast.literal_eval(got_text)
        return compare_value(json.loads(case["expected"]), got, mode)
    return compare_output(case["expected"], case["got"], mode)


def tally(cases: list[dict], results: dict[str, list[str | None]], mode: str, keep) -> dict[str, int]:
    counts = defaultdict(int)
    for case, rule in zip(cases, results[mode]):
        if not keep(case):
            continue
        counts["cases"] += 1
        counts["accepts"] += rule is not None
        counts["false_accepts"] += rule is not None and not case["correct"]
        counts["false_rejects"] += rule is None and case["correct"]
    counts["right"] = counts["cases"] - counts["false_accepts"] - counts["false_rejects"]
    return counts


def row(name: str, counts: dict[str, int]) -> str:
    acc = 100.0 * counts["right"] / counts["cases"] if counts["cases"] else 0.0
    return (
        f"| {name:<20} | {counts['cases']:>5} | {counts['accepts']:>7} | {counts['false_accepts']:>13} "
        f"| {counts['false_rejects']:>13} | {acc:>7.1f}% |"
    )


def print_mode_tables(cases: list[dict], results: dict[str, list[str | None]]) -> None:
    header = "| category             | cases | accepts | false accepts | false rejects | accuracy |"
    rule = "|" + "|".join("-" * (len(cell)) for cell in header.split("|")[1:-1]) + "|"
    categories = sorted({c["category"] for c in cases})
    for mode in MODES:
        print(f"\n### {mode}\n")
        print(header)
        print(rule)
        for category in categories:
            print(row(category, tally(cases, results, mode, lambda c, cat=category: c["category"] == cat)))
        print(row("ALL", tally(cases, results, mode, lambda c: True)))


def print_summary(cases: list[dict], results: dict[str, list[str | None]]) -> None:
    micro, strict = results["microcoder"], results["strict"]
    rescued = [c for c, m, s in zip(cases, micro, strict) if c["correct"] and s is None and m is not None]
    lost = [c for c, m, s in zip(cases, micro, strict) if c["correct"] and s is not None and m is None]
    strict_fa = [c for c, s in zip(cases, strict) if not c["correct"] and s is not None]
    totals = {mode: tally(cases, results, mode, lambda c: True) for mode in MODES}
    correct = sum(c["correct"] for c in cases)
    print("\n### summary\n")
    print(f"cases: {len(cases)} ({correct} correct outputs, {len(cases) - correct} wrong)")
    for mode in MODES:
        t = totals[mode]
        print(
            f"{mode:>10}: {t['right']}/{t['cases']} verdicts right "
            f"({100.0 * t['right'] / t['cases']:.1f}%), {t['false_accepts']} false accepts, "
            f"{t['false_rejects']} false rejects"
        )
    print(f"correct outputs strict rejects and microcoder accepts: {len(rescued)} of {correct}")
    print(f"correct outputs strict accepts and microcoder rejects: {len(lost)}")
    print(f"wrong outputs strict accepts (LiveCodeBench's own false accepts): {len(strict_fa)}")
    right_m, right_s = totals["microcoder"]["right"], totals["strict"]["right"]
    if right_s:
        print(
            f"right verdicts, microcoder vs strict: {right_m} vs {right_s} ({100.0 * (right_m / right_s - 1):+.1f}%)"
        )


def print_listing(cases: list[dict], results: dict[str, list[str | None]]) -> None:
    print("\n### cases where the modes disagree or a verdict is wrong\n")
    for case, m, s in zip(cases, results["microcoder"], results["strict"]):
        wrong = (m is not None) != case["correct"] or (s is not None) != case["correct"]
        if m != s and (m is None or s is None) or wrong:
            label = "correct" if case["correct"] else "wrong"
            print(f"- {case['id']} [{label}] microcoder={m} strict={s}: {case['why']}")


def main() -> None:
    parser = common.parser(__doc__)
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES, help="labelled cases (JSONL)")
    parser.add_argument("--list", action="store_true", help="also list each case where the modes disagree")
    args = parser.parse_args()
    cases = load_cases(args.cases)
    results = {mode: [verdict(c, mode) for c in cases] for mode in MODES}
    print(f"judge comparison accuracy on {args.cases.name}")
    print_mode_tables(cases, results)
    print_summary(cases, results)
    if args.list:
        print_listing(cases, results)


if __name__ == "__main__":
    main()
