"""Write the learning-proof problem family: read two integers, print an expression of them.

    python examples/learn/make_problems.py              # (re)write examples/learn/{train,heldout}.jsonl
    python examples/learn/make_problems.py --out DIR    # write somewhere else

Every problem says "Read two integers a and b. Print E." for an arithmetic expression E over
a and b (+, -, *, constants 1..9, max, min, abs). The reference solution is the two-line
program that computes E. The expressions are shuffled with a fixed seed and split into a train
part and a held-out part that shares no expression with it, so a model that does better on the
held-out part after training on the train part has learnt the family, not the answers.

Expected outputs are computed by evaluating E on the test inputs (the reference solution does
exactly that; tests/loop/test_recipes.py runs it through the judge to keep the two in step).
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
from pathlib import Path

from mcoder.jsonl import RecordWriter
from mcoder.records import Problem, Test, to_dict

HERE = Path(__file__).resolve().parent
SEED = 0
HELDOUT = 100  # expressions kept out of training
TESTS = 4  # input pairs per problem
SOURCE = "mcoder-learn"


def expressions() -> list[str]:
    """All expressions of the family, in a fixed order (duplicates removed).

    The family is wide on purpose (a few hundred expressions): with ~100 a 2-layer model
    memorised the train answers in its warm start instead of learning to copy the expression,
    and RL then sharpened the memorised answers while held-out pass@1 fell."""
    ops = ["+", "-", "*"]
    consts = [str(c) for c in range(1, 10)]
    out = []
    for op in ops:
        out += [f"a {op} b", f"b {op} a"]
        for c in consts:
            for first, second in (("a", "b"), ("b", "a")):
                out += [f"{first} {op} {second} + {c}", f"{first} {op} {second} - {c}"]
                out += [f"{c} * {first} {op} {second}", f"{first} {op} {c} * {second}"]
                out += [f"({first} {op} {second}) * {c}"]
    for fn in ["max", "min"]:
        out += [f"{fn}(a, b)"]
        for op, c in itertools.product(ops, consts):
            out += [f"{fn}(a, b) {op} {c}"]
    for op in ["+", "-"]:
        out += [f"abs(a {op} b)"] + [f"abs(a {op} b) + {c}" for c in consts]
    seen: dict[str, None] = {}
    for e in out:
        seen.setdefault(e, None)
    return list(seen)


def solution(expr: str) -> str:
    return f"a, b = map(int, input().split())\nprint({expr})\n"


def problem(index: int, expr: str, split: str, rng: random.Random) -> Problem:
    tests = []
    for _ in range(TESTS):
        a, b = rng.randint(-20, 20), rng.randint(-20, 20)
        value = eval(expr, {"max": max, "min": min, "abs": abs}, {"a": a, "b": b})  # our own text
        tests.append(Test(input=f"{a} {b}\n", output=f"{value}\n", kind="stdin"))
    return Problem(
        id=f"learn-{split}-{index:03d}",
        source=SOURCE,
        platform="learn",
        difficulty="easy",
        question=f"Read two integers a and b. Print {expr}.",
        tests=tests,
        reference_solutions=[solution(expr)],
        meta={"expression": expr, "split": split},
    )


def build() -> dict[str, list[Problem]]:
    exprs = expressions()
    random.Random(SEED).shuffle(exprs)
    rng = random.Random(SEED + 1)
    heldout, train = exprs[:HELDOUT], exprs[HELDOUT:]
    return {
        "train": [problem(i, e, "train", rng) for i, e in enumerate(train)],
        "heldout": [problem(i, e, "heldout", rng) for i, e in enumerate(heldout)],
    }


def write_splits(splits: dict[str, list[Problem]], doc: str, folder: Path, argv: list[str] | None) -> int:
    """The family's command line: write each split to OUT/<split>.jsonl (--out, default ``folder``)."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=folder)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for split, problems in splits.items():
        with RecordWriter(args.out / f"{split}.jsonl", "id", resume=False) as w:
            w.write_all(to_dict(p) for p in problems)
        print(f"{args.out / f'{split}.jsonl'}\t{len(problems)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    return write_splits(build(), __doc__, HERE, argv)


if __name__ == "__main__":
    sys.exit(main())
