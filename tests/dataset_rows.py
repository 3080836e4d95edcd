"""Source rows the project writes itself, in each public set's exact format.

The problems are our own (short, each with a reference solution); only the shapes follow the
sources: LiveCodeBench (private tests as base64 of zlib of a pickled JSON string), SandboxFusion's
copies of LiveCodeBench and CodeContests, rLLM's CodeContests, Codeforces and LeetCode files,
CodeContests as the Hub stores it (enum codes), TACO, APPS and HumanEval. ``write_sets(folder)``
writes files named like the third-party ones in ``../shared/data/`` (README included), so that a
test can run on either folder; the real ones are an additional layer where they exist.
"""

from __future__ import annotations

import base64
import json
import pickle
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# ------------------------------------------------------------------ the problems


@dataclass(frozen=True)
class Stdin:
    """A problem read from stdin: statement, (input, output) tests, a reference program."""

    slug: str
    title: str
    statement: str  # the story and the task, without input/output sections
    input_spec: str
    output_spec: str
    tests: tuple[tuple[str, str], ...]
    solution: str
    tags: tuple[str, ...] = ("implementation",)


@dataclass(frozen=True)
class Call:
    """A LeetCode-style problem: ``class Solution`` with method ``fn``, and (kwargs, result) cases."""

    slug: str
    title: str
    statement: str
    fn: str
    params: tuple[tuple[str, str], ...]  # (name, annotation)
    returns: str
    cases: tuple[tuple[dict[str, Any], Any], ...]
    body: str  # the method's body, indented 8 spaces

    @property
    def starter(self) -> str:
        args = ", ".join(f"{n}: {a}" for n, a in self.params)
        return f"class Solution:\n    def {self.fn}(self, {args}) -> {self.returns}:\n"

    @property
    def solution(self) -> str:
        return self.starter + self.body

    def args(self, kwargs: dict[str, Any]) -> list[Any]:
        return [kwargs[n] for n, _ in self.params]


STDIN: tuple[Stdin, ...] = (
    Stdin(
        "parity-report",
        "Parity Report",
        "A clerk receives $t$ whole numbers and must label each one. Write EVEN for a number "
        "divisible by two and ODD otherwise.",
        "The first line holds $t$ ($1 \\le t \\le 100$). Each of the next $t$ lines holds one integer "
        "$n$ ($-10^9 \\le n \\le 10^9$).",
        "Print $t$ lines, the label of each number in order.",
        (("3\n4\n7\n0\n", "EVEN\nODD\nEVEN\n"), ("2\n-3\n10\n", "ODD\nEVEN\n"), ("1\n1\n", "ODD\n")),
        "t = int(input())\nfor _ in range(t):\n    print('EVEN' if int(input()) % 2 == 0 else 'ODD')\n",
        ("math",),
    ),
    Stdin(
        "rotate-the-banner",
        "Rotate the Banner",
        "A shop banner shows a word of lowercase letters. Every night the first letter is moved to "
        "the end. Show the banner after $k$ nights.",
        "The first line holds the word $s$ ($1 \\le |s| \\le 100$); the second the number $k$ "
        "($0 \\le k \\le 10^9$).",
        "Print the word after $k$ rotations.",
        (("abcde\n2\n", "cdeab\n"), ("zz\n5\n", "zz\n"), ("mango\n0\n", "mango\n"), ("xy\n3\n", "yx\n")),
        "s = input().strip()\nk = int(input()) % len(s)\nprint(s[k:] + s[:k])\n",
        ("strings",),
    ),
    Stdin(
        "lightest-and-heaviest",
        "Lightest and Heaviest Parcel",
        "A courier weighs $n$ parcels. Report the total of the lightest and the heaviest weight, "
        "which decides the price of the van.",
        "The first line holds $n$ ($1 \\le n \\le 1000$), the second $n$ integers $w_i$ "
        "($1 \\le w_i \\le 10^6$).",
        "Print one integer: the smallest weight plus the largest.",
        (("4\n3 9 1 4\n", "10\n"), ("1\n5\n", "10\n"), ("3\n2 2 2\n", "4\n")),
        "input()\nw = list(map(int, input().split()))\nprint(min(w) + max(w))\n",
        ("greedy", "sortings"),
    ),
    Stdin(
        "count-the-words",
        "Count the Words",
        "An editor pays by the word. Given one line of text with words separated by one or more "
        "spaces, count its words \u2014 a word is a maximal run of non-space characters.",
        "One line of at most 1000 characters.",
        "Print the number of words.",
        (("the quick  brown fox\n", "4\n"), ("  alone \n", "1\n"), ("a b c d e f\n", "6\n")),
        "print(len(input().split()))\n",
        ("strings", "implementation"),
    ),
    Stdin(
        "staircase-of-hashes",
        "Staircase of Hashes",
        "A mason draws a staircase of $n$ steps with the character #: step $i$ is $i$ characters "
        "wide, drawn from the top step down.",
        "One integer $n$ ($1 \\le n \\le 50$).",
        "Print $n$ lines; line $i$ holds $i$ characters #.",
        (("3\n", "#\n##\n###\n"), ("1\n", "#\n")),
        "n = int(input())\nfor i in range(1, n + 1):\n    print('#' * i)\n",
    ),
    Stdin(
        "balanced-brackets-game",
        "Balanced Brackets Game",
        "Two friends write a string of round brackets. They win a point if the string is balanced: "
        "every prefix has at least as many opening as closing brackets, and the counts end equal.",
        "One line with a string of ( and ) of length at most $10^5$.",
        "Print YES if the string is balanced and NO otherwise.",
        (("(())()\n", "YES\n"), ("())(\n", "NO\n"), ("((\n", "NO\n"), ("()\n", "YES\n")),
        "d = 0\nok = True\nfor c in input().strip():\n    d += 1 if c == '(' else -1\n    ok = ok and d >= 0\n"
        "print('YES' if ok and d == 0 else 'NO')\n",
        ("stack",),
    ),
    Stdin(
        "any-pair-with-sum",
        "Any Pair With Sum",
        "Given $n$ distinct integers and a target $x$, find two positions whose values add up to $x$. "
        "If there are multiple answers, print any of them.",
        "The first line holds $n$ and $x$; the second the $n$ integers.",
        "Print two 1-based positions $i < j$, or -1 if there is no such pair.",
        (("4 9\n2 7 11 15\n", "1 2\n"), ("3 100\n1 2 3\n", "-1\n")),
        "n, x = map(int, input().split())\na = list(map(int, input().split()))\nseen = {}\n"
        "for j, v in enumerate(a):\n    if x - v in seen:\n        print(seen[x - v] + 1, j + 1)\n        break\n"
        "    seen[v] = j\nelse:\n    print(-1)\n",
        ("hashing",),
    ),
    Stdin(
        "average-speed",
        "Average Speed",
        "A cyclist rides $n$ legs, each of length $d_i$ kilometres at speed $v_i$. Print the average "
        "speed over the whole ride. Your answer is accepted if its absolute or relative error does "
        "not exceed $10^{-6}$.",
        "The first line holds $n$; each of the next $n$ lines holds $d_i$ and $v_i$.",
        "Print the average speed.",
        (("2\n10 10\n10 20\n", "13.3333333333\n"), ("1\n5 5\n", "5.0000000000\n")),
        "n = int(input())\nd = t = 0.0\nfor _ in range(n):\n    a, b = map(float, input().split())\n"
        "    d += a\n    t += a / b\nprint(f'{d / t:.10f}')\n",
        ("math",),
    ),
    Stdin(
        "longest-calm-stretch",
        "Longest Calm Stretch",
        "A weather station logs the wind speed every hour. A calm hour has speed below 5. Find the "
        "length of the longest run of consecutive calm hours.",
        "The first line holds $n$ ($1 \\le n \\le 10^5$); the second the $n$ speeds.",
        "Print the length of the longest calm run (0 if no hour is calm).",
        (("6\n1 7 2 3 9 4\n", "2\n"), ("3\n8 8 8\n", "0\n"), ("2\n0 0\n", "2\n")),
        "input()\nbest = run = 0\nfor v in map(int, input().split()):\n    run = run + 1 if v < 5 else 0\n"
        "    best = max(best, run)\nprint(best)\n",
        ("two pointers",),
    ),
    Stdin(
        "library-fines",
        "Library Fines",
        "A library charges a fine of $c$ coins for each day a book is late. A reader returns a book "
        "$d$ days after borrowing it, and the loan lasts $l$ days. Compute the fine.",
        "One line with three integers $d$, $l$ and $c$ ($0 \\le d, l, c \\le 10^4$).",
        "Print the fine in coins.",
        (("10 7 3\n", "9\n"), ("5 7 3\n", "0\n"), ("8 8 100\n", "0\n")),
        "d, l, c = map(int, input().split())\nprint(max(0, d - l) * c)\n",
        ("math",),
    ),
)

# The CodeContests files hold the first five, the Codeforces file the others (and an interactive
# one): different problems, as in the real sets, so that decontaminating one against the other
# finds only what a test plants.
CONTESTS, CODEFORCES = STDIN[:5], STDIN[5:]

# An interactive problem: its 'tests' are a transcript, so the build sets it aside.
INTERACTIVE = Stdin(
    "guess-the-hidden-number",
    "Guess the Hidden Number",
    "This is an interactive problem. The jury hides an integer between 1 and 100; ask at most 7 "
    "questions of the form ? y and the jury answers < or >= .",
    "Read the jury's answers from stdin.",
    "Print ! x when you know the number.",
    (("50\n", "! 50\n"),),
    "print('! 50')\n",
    ("interactive", "binary search"),
)

CALL: tuple[Call, ...] = (
    Call(
        "count-multiples",
        "Count Multiples",
        "You are given an integer array nums and an integer k.\nReturn how many elements of nums are "
        "divisible by k.",
        "countMultiples",
        (("nums", "List[int]"), ("k", "int")),
        "int",
        (({"nums": [3, 6, 7, 9], "k": 3}, 3), ({"nums": [1, 2], "k": 5}, 0), ({"nums": [10], "k": 1}, 1)),
        "        return sum(1 for x in nums if x % k == 0)\n",
    ),
    Call(
        "join-reversed",
        "Join Reversed",
        "You are given a list of strings words.\nReturn one string: the words in reverse order joined "
        "by single dashes.",
        "joinReversed",
        (("words", "List[str]"),),
        "str",
        (
            ({"words": ["a", "bc", "d"]}, "d-bc-a"),
            ({"words": ["solo"]}, "solo"),
            ({"words": ["x", "y"]}, "y-x"),
        ),
        "        return '-'.join(reversed(words))\n",
    ),
    Call(
        "prefix-totals",
        "Prefix Totals",
        "You are given an integer array nums.\nReturn the array whose i-th element is the sum of nums[0..i].",
        "prefixTotals",
        (("nums", "List[int]"),),
        "List[int]",
        (({"nums": [1, 2, 3]}, [1, 3, 6]), ({"nums": [5]}, [5]), ({"nums": [-1, 1, -1]}, [-1, 0, -1])),
        "        out, s = [], 0\n        for x in nums:\n            s += x\n            out.append(s)\n"
        "        return out\n",
    ),
    Call(
        "first-repeated-letter",
        "First Repeated Letter",
        "You are given a string s of lowercase letters that has a repeated letter.\nReturn the first "
        "letter whose second occurrence comes earliest.",
        "firstRepeated",
        (("s", "str"),),
        "str",
        (({"s": "abcb"}, "b"), ({"s": "zz"}, "z"), ({"s": "abcdeca"}, "c")),
        "        seen = set()\n        for c in s:\n            if c in seen:\n                return c\n"
        "            seen.add(c)\n        return ''\n",
    ),
    Call(
        "distinct-in-any-order",
        "Distinct Values",
        "You are given an integer array nums.\nReturn the distinct values of nums, in any order.",
        "distinctValues",
        (("nums", "List[int]"),),
        "List[int]",
        (({"nums": [3, 1, 3]}, [1, 3]), ({"nums": [2]}, [2]), ({"nums": [4, 4, 4, 5]}, [4, 5])),
        "        return sorted(set(nums))\n",
    ),
)

# ------------------------------------------------------------------ helpers of the formats


def lcb_compress(obj: Any) -> str:
    """LiveCodeBench's compressed form: base64 of zlib of a pickled JSON string."""
    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(obj)))).decode()


def _cf_statement(p: Stdin, *, time_ms: int = 1000, memory_mb: int = 256) -> str:
    """rLLM's Codeforces problem text: statement, input and output formats, tags, limits."""
    return (
        f"\n{p.statement}\n\nInput Format:\n{p.input_spec}\n\nOutput Format:\n{p.output_spec}\n\n"
        f"Tags:\n{list(p.tags)!r}\n\nTime Limit: {time_ms} ms\nMemory Limit: {memory_mb} MB\n"
    )


def _cc_statement(p: Stdin) -> str:
    """CodeContests' description: statement, Input, Output and an Example section."""
    first_in, first_out = p.tests[0]
    return (
        f"{p.statement}\n\nInput\n\n{p.input_spec}\n\nOutput\n\n{p.output_spec}\n\nExample\n\n"
        f"Input\n\n{first_in}\n\nOutput\n\n{first_out}"
    )


def _call_input(c: Call, kwargs: dict[str, Any]) -> str:
    return "\n".join(json.dumps(a) for a in c.args(kwargs))


LCB_INSTRUCTION = (
    "You are an expert Python programmer. You will be given a question (problem specification) and "
    "will generate a correct Python program that matches the specification and passes all tests. "
    "You will NOT return anything except for the program.\n"
)


def _lcb_prompt(question: str, starter: str) -> str:
    if starter:
        fmt = (
            "### Format: You will use the following starter code to write the solution to the problem "
            f"and enclose your code within delimiters.\n```python\n{starter}        \n```\n\n"
        )
    else:
        fmt = (
            "### Format: Read the inputs from stdin solve the problem and write the answer to stdout (do "
            "not directly test on the sample inputs). Enclose your code within delimiters as follows.\n"
            "```python\n# YOUR CODE HERE\n```\n\n"
        )
    return f"{LCB_INSTRUCTION}### Question:\n{question}\n\n{fmt}### Answer: (use the provided format with backticks)\n\n"


# ------------------------------------------------------------------ LiveCodeBench


def lcb_cases(problem: Stdin | Call) -> list[dict[str, str]]:
    if isinstance(problem, Stdin):
        return [{"input": i, "output": o, "testtype": "stdin"} for i, o in problem.tests]
    return [
        {"input": _call_input(problem, kw), "output": json.dumps(r), "testtype": "functional"}
        for kw, r in problem.cases
    ]


def lcb_row(problem: Stdin | Call, index: int, *, compressed: bool = True, date: str = "2023-08-21") -> dict:
    """A LiveCodeBench code_generation row: the first test public, the others private (compressed)."""
    cases = lcb_cases(problem)
    call = isinstance(problem, Call)
    private = cases[1:]
    return {
        "question_title": problem.title,
        "question_content": problem.statement,
        "platform": "leetcode" if call else "atcoder",
        "question_id": f"{9000 + index}" if call else f"abc{900 + index}_a",
        "contest_id": f"weekly-contest-{400 + index}" if call else f"abc{900 + index}",
        "contest_date": f"{date}T00:00:00",
        "starter_code": problem.starter if call else "",
        "difficulty": ("easy", "medium", "hard")[index % 3],
        "public_test_cases": json.dumps(cases[:1]),
        "private_test_cases": lcb_compress(private) if compressed else json.dumps(private),
        "metadata": json.dumps({"func_name": problem.fn} if call else {}),
    }


def sandboxfusion_lcb_row(problem: Stdin | Call, index: int) -> dict:
    """SandboxFusion's LiveCodeBench row: the LCB prompt in ``content``, the compressed tests in
    ``test`` ({input_output: JSON {inputs, outputs, fn_name}}), a placeholder solution."""
    call = isinstance(problem, Call)
    if call:
        io = {
            "inputs": [_call_input(problem, kw) for kw, _ in problem.cases],
            "outputs": [json.dumps(r) for _, r in problem.cases],
            "fn_name": problem.fn,
        }
        task, category = f"leetcode/{9000 + index}", "leetcode"
        question = problem.statement
    else:
        io = {
            "inputs": [i for i, _ in problem.tests],
            "outputs": [o for _, o in problem.tests],
            "fn_name": None,
        }
        task, category = f"atcoder/abc{900 + index}_a", "atcoder"
        question = f"{problem.statement}\n\nInput\n\n{problem.input_spec}\n\nOutput\n\n{problem.output_spec}"
    blob = {"input_output": json.dumps(io)}
    labels = {
        "task_id": task,
        "programming_language": "python",
        "execution_language": "python",
        "category": category,
        "difficulty": ("easy", "medium", "hard")[index % 3],
        "fewshot": False,
    }
    return {
        "id": index,
        "content": _lcb_prompt(question, problem.starter if call else ""),
        "canonical_solution": "import sys; sys.exit(0)",
        "test": base64.b64encode(zlib.compress(pickle.dumps(blob))).decode(),
        "labels": json.dumps(labels),
    }


# ------------------------------------------------------------------ CodeContests, Codeforces

_CC_LETTERS = "ABCDEFGH"


def sandboxfusion_cc_row(p: Stdin, index: int) -> dict:
    """SandboxFusion's CodeContests row: ``content``, ``test`` (JSON text), ``labels`` (JSON text)."""
    if index % 2:
        labels = {"difficulty": "MEDIUM", "name": p.slug.replace("-", "")[:8], "source": "CODECHEF"}
    else:
        letter = _CC_LETTERS[index % len(_CC_LETTERS)]
        labels = {"difficulty": letter, "name": f"{1900 + index}_{letter}. {p.title}", "source": "CODEFORCES"}
    cases = [{"input": {"stdin": i}, "output": {"stdout": o}} for i, o in p.tests]
    return {
        "content": _cc_statement(p),
        "id": index,
        "labels": json.dumps(labels),
        "test": json.dumps(cases),
        "__internal_uuid__": f"00000000-0000-4000-8000-{index:012d}",
    }


def rllm_cc_row(p: Stdin) -> dict:
    """rLLM's CodeContests row: statement with CodeContests' limit lines, tests {inputs, outputs}."""
    problem = (
        f"\n{_cc_statement(p)}\n\nTime Limit: {{'seconds': 2, 'nanos': 0}}\nMemory Limit: 512000000 Bytes\n"
    )
    return {
        "problem": problem,
        "tests": {"inputs": [i for i, _ in p.tests], "outputs": [o for _, o in p.tests]},
    }


def hub_cc_row(p: Stdin, index: int) -> dict:
    """deepmind/code_contests as the Hub stores it: enum-coded source, difficulty and language."""
    ins, outs = [i for i, _ in p.tests], [o for _, o in p.tests]
    return {
        "name": f"{1900 + index}_A. {p.title}",
        "description": _cc_statement(p),
        "public_tests": {"input": ins[:1], "output": outs[:1]},
        "private_tests": {"input": ins[1:], "output": outs[1:]},
        "generated_tests": {"input": [], "output": []},
        "source": 2,  # CODEFORCES
        "difficulty": 7,  # A
        "solutions": {"language": [2, 3, 1], "solution": ["int main(){}", p.solution, "print 1"]},
        "incorrect_solutions": {"language": [], "solution": []},
        "cf_contest_id": 1900 + index,
        "cf_index": "A",
        "cf_points": 500.0,
        "cf_rating": 800 + 100 * index,
        "cf_tags": list(p.tags),
        "is_description_translated": False,
        "untranslated_description": "",
        "time_limit": {"seconds": 2, "nanos": 500000000},
        "memory_limit_bytes": 256000000,
        "input_file": "",
        "output_file": "",
    }


def rllm_cf_row(p: Stdin) -> dict:
    """rLLM's Codeforces row: statement with format sections, tags and limits; statement samples."""
    return {"problem": _cf_statement(p), "tests": [{"input": i, "output": o} for i, o in p.tests[:2]]}


# ------------------------------------------------------------------ LeetCode, TACO/APPS, HumanEval

LEETCODE_PREFIX = "Please solve the programming task below using a self-contained code snippet in a markdown code block.\n\n"


def _kwargs_text(kwargs: dict[str, Any]) -> str:
    return ", ".join(f"{k} = {json.dumps(v).replace(', ', ',')}" for k, v in kwargs.items())


def leetcode_row(c: Call) -> dict:
    """rLLM's LeetCode row: prompt ending in the starter block, a reference, check() asserts."""
    asserts = "".join(f"    assert candidate({_kwargs_text(kw)}) == {json.dumps(r)}\n" for kw, r in c.cases)
    return {
        "problem": f"{LEETCODE_PREFIX}{c.statement}\n\u00a0\nPlease complete the following python code "
        f"precisely:\n```python\n{c.starter}```",
        "solutions": c.solution,
        "tests": {"functional": f"def check(candidate):\n{asserts}\n\ncheck(Solution().{c.fn})"},
    }


def taco_row(problem: Stdin | Call) -> dict:
    """A TACO row: ``input_output`` JSON (call inputs are argument lists, outputs wrapped in a list)."""
    return {
        "question": problem.statement,
        "solutions": json.dumps([problem.solution]),
        "starter_code": problem.starter if isinstance(problem, Call) else "",
        "input_output": json.dumps(_taco_io(problem)),
        "difficulty": "EASY",
        "raw_tags": "[]",
        "name": problem.title,
        "source": "codeforces",
        "tags": ["Implementation"],
        "skill_types": [],
        "url": f"https://codeforces.com/problemset/problem/1/{problem.slug}",
        "Expected Auxiliary Space": None,
        "time_limit": "2 seconds",
        "date": "2021-05-04",
        "picture_num": "0",
        "memory_limit": "256 megabytes",
        "Expected Time Complexity": None,
    }


def apps_row(problem: Stdin | Call, problem_id: int) -> dict:
    """An APPS row: ``problem_id``, ``url`` and TACO's ``input_output``."""
    return {
        "problem_id": problem_id,
        "question": problem.statement,
        "solutions": json.dumps([problem.solution]),
        "input_output": json.dumps(_taco_io(problem)),
        "difficulty": "interview",
        "url": f"https://atcoder.jp/contests/abc{problem_id}/tasks/a",
        "starter_code": problem.starter if isinstance(problem, Call) else "",
    }


def _taco_io(problem: Stdin | Call) -> dict:
    if isinstance(problem, Stdin):
        return {"inputs": [i for i, _ in problem.tests], "outputs": [o for _, o in problem.tests]}
    return {
        "fn_name": problem.fn,
        "inputs": [problem.args(kw) for kw, _ in problem.cases],
        "outputs": [[r] for _, r in problem.cases],
    }


def humaneval_row(c: Call, index: int) -> dict:
    """A HumanEval row: a function prompt with a docstring, its body, and check(candidate)."""
    args = ", ".join(f"{n}: {a}" for n, a in c.params)
    prompt = (
        "from typing import List\n\n\ndef _helper_unused(x):\n    return x\n\n\n"
        f'def {c.fn}({args}) -> {c.returns}:\n    """{c.statement.replace(chr(10), " ")}"""\n'
    )
    body = c.body.replace("\n        ", "\n    ").removeprefix("    ")
    asserts = "".join(
        f"    assert candidate({', '.join(map(repr, c.args(kw)))}) == {r!r}\n" for kw, r in c.cases
    )
    return {
        "task_id": f"Own/{index}",
        "prompt": prompt,
        "canonical_solution": body,
        "test": f"\n\nMETADATA = {{}}\n\n\ndef check(candidate):\n{asserts}",
        "entry_point": c.fn,
    }


# ------------------------------------------------------------------ files


def lcb_rows(compressed: bool = True) -> list[dict]:
    return [lcb_row(p, i, compressed=compressed) for i, p in enumerate([*STDIN[:3], *CALL[:3]])]


def sandboxfusion_lcb_rows() -> list[dict]:
    return [sandboxfusion_lcb_row(p, i) for i, p in enumerate([STDIN[0], CALL[0], STDIN[1], CALL[1]])]


def sandboxfusion_cc_rows() -> list[dict]:
    return [sandboxfusion_cc_row(p, i) for i, p in enumerate(CONTESTS)]


def rllm_cc_rows() -> list[dict]:
    return [rllm_cc_row(p) for p in CONTESTS]


def rllm_cf_rows() -> list[dict]:
    return [rllm_cf_row(p) for p in (*CODEFORCES, INTERACTIVE)]


def leetcode_rows() -> list[dict]:
    return [leetcode_row(c) for c in CALL]


# Named like the third-party files of ../shared/data, so a test reads either folder the same way.
FILES = {
    "sandboxfusion_lcb_v1.jsonl": sandboxfusion_lcb_rows,
    "sandboxfusion_code_contests.jsonl": sandboxfusion_cc_rows,
    "rllm_code_contests.json": rllm_cc_rows,
    "rllm_codeforces.json": rllm_cf_rows,
    "rllm_leetcode_test.json": leetcode_rows,
}


def write_rows(path: Path, rows: list[dict]) -> Path:
    """JSONL for a .jsonl name, one JSON list otherwise."""
    if path.name.endswith(".jsonl"):
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        path.write_text(json.dumps(rows, indent=1))
    return path


def write_sets(folder: Path) -> Path:
    """Every file of ``FILES`` and a README under ``folder``; returns ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in FILES.items():
        write_rows(folder / name, rows())
    (folder / "README.md").write_text("Problems the project wrote, in the shapes of public sets.\n")
    return folder


# ------------------------------------------------------------------ hostile rows
# What a careless publisher or an attacker could put in a source file; the pickles are made by
# pickle itself: shared references are what it writes as memo references.


def compressed_pickle(obj: Any) -> str:
    """base64 of zlib of ``pickle.dumps(obj)`` (no JSON step: a pickle that builds the value)."""
    return base64.b64encode(zlib.compress(pickle.dumps(obj), 9)).decode()


def memo_bomb_cases(n: int) -> list[dict[str, str]]:
    """LiveCodeBench cases: one case referenced ``n`` times (a few bytes per reference pickled)."""
    case = {"input": "1\n", "output": "1\n", "testtype": "stdin"}
    return [case] * n


def billion_laughs(levels: int = 40, width: int = 10) -> list:
    """``width ** levels`` copies of an 8-character string in a few hundred pickled bytes."""
    value: Any = ["x" * 8] * width
    for _ in range(levels):
        value = [value] * width
    return value


def zlib_bomb(size: int) -> str:
    """base64 of zlib data that inflates to ``size`` zero bytes."""
    return base64.b64encode(zlib.compress(b"\0" * size, 9)).decode()


def nested_json(depth: int) -> str:
    """JSON text of lists nested ``depth`` deep."""
    return "[" * depth + "]" * depth
