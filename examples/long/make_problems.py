"""Write the long-answer problem family: read two integers, print several expressions of them.

    python examples/long/make_problems.py              # (re)write examples/long/{train,heldout}.jsonl
    python examples/long/make_problems.py --out DIR    # write somewhere else

The learning family of examples/learn/ has ~28-token answers against a 64-token limit, so almost
nothing is cut off and truncation masking has nothing to act on. Here a problem asks for 2 to 4
expressions of the same family, one per line ("Read two integers a and b. Print on separate
lines: E1; E2; E3."), so a correct program is 3 to 5 lines and its length spreads over most of
the sampling limit: the benchmark's L_max (`benchmarks/long_ablation.py`) sits a little above the
longest reference, and a policy that pads or wanders runs into it.

The expressions are the learning family's, split the same way: held-out problems are built from
expressions that no train problem contains, so held-out pass@1 measures the family, not answers.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

from mcoder.records import Problem, Test

HERE = Path(__file__).resolve().parent
SEED = 0
TRAIN = 240  # problems built from the train expressions
HELDOUT = 100  # problems built from the held-out expressions
COUNTS = (2, 3, 4)  # expressions per problem
TESTS = 4  # input pairs per problem
SOURCE = "mcoder-long"


def learn_family():
    """examples/learn/make_problems.py as a module (its expressions and its split)."""
    path = HERE.parent / "learn" / "make_problems.py"
    spec = importlib.util.spec_from_file_location("learn_make_problems", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def solution(exprs: list[str]) -> str:
    return "a, b = map(int, input().split())\n" + "".join(f"print({e})\n" for e in exprs)


def problem(index: int, exprs: list[str], split: str, rng: random.Random) -> Problem:
    tests = []
    for _ in range(TESTS):
        a, b = rng.randint(-20, 20), rng.randint(-20, 20)
        env = {"max": max, "min": min, "abs": abs}
        values = [eval(e, env, {"a": a, "b": b}) for e in exprs]  # our own text
        tests.append(Test(input=f"{a} {b}\n", output="".join(f"{v}\n" for v in values), kind="stdin"))
    return Problem(
        id=f"long-{split}-{index:03d}",
        source=SOURCE,
        platform="long",
        difficulty="easy",
        question="Read two integers a and b. Print on separate lines: " + "; ".join(exprs) + ".",
        tests=tests,
        reference_solutions=[solution(exprs)],
        meta={"expressions": exprs, "split": split},
    )


def build() -> dict[str, list[Problem]]:
    learn = learn_family()
    exprs = learn.expressions()
    random.Random(learn.SEED).shuffle(exprs)  # the learning family's split, unchanged
    heldout_pool, train_pool = exprs[: learn.HELDOUT], exprs[learn.HELDOUT :]
    rng = random.Random(SEED)
    out: dict[str, list[Problem]] = {}
    for split, pool, count in (("train", train_pool, TRAIN), ("heldout", heldout_pool, HELDOUT)):
        problems = []
        for i in range(count):
            k = COUNTS[i % len(COUNTS)]
            problems.append(problem(i, rng.sample(pool, k), split, rng))
        out[split] = problems
    return out


def main(argv: list[str] | None = None) -> int:
    return learn_family().write_splits(build(), __doc__, HERE, argv)


if __name__ == "__main__":
    sys.exit(main())
