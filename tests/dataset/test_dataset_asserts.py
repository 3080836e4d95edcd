"""check(candidate) asserts -> call tests, and the functional form where they cannot be."""

import json

from mcoder.dataset.process.asserts import check_tests, signature_params, split_invocation


def test_literal_asserts_become_call_tests_with_keywords_put_in_place():
    src = (
        "def check(candidate):\n"
        "    assert candidate(k = 2, nums = [3,1,5]) == 4\n"
        "    assert candidate([1], k=(1, 2)) == (0, 'x')\n"
        "    assert [1, None] == candidate(nums=[], k={'a': 1.5})\n"
    )
    tests = check_tests(src, ["nums", "k"])
    assert [t.kind for t in tests] == ["call"] * 3
    assert [t.input for t in tests] == ["[3, 1, 5]\n2", "[1]\n[1, 2]", '[]\n{"a": 1.5}']
    assert [json.loads(t.output) for t in tests] == [4, [0, "x"], [1, None]]


def test_any_unconvertible_assert_keeps_the_whole_check_as_one_functional_test():
    base = "def check(candidate):\n    assert candidate(1) == 2\n"
    for extra in (
        "    assert candidate(2) == {1, 2}\n",  # a set: JSON has none
        "    assert candidate(float('inf')) == 1\n",  # not a literal
        "    assert candidate(1e999) == 1\n",  # inf
        "    assert abs(candidate(3) - 1.5) < 1e-6\n",  # a tolerance
        "    for x in range(3):\n        assert candidate(x) == x\n",
        "    assert candidate(*[1]) == 1\n",
        "    assert candidate(1) != 2\n",
        "    assert candidate({1: 2}) == 1\n",  # int keys would turn into strings
    ):
        src = "import math\n\n" + base + extra
        tests = check_tests(src, ["x"])
        assert len(tests) == 1 and tests[0].kind == "functional", extra
        assert tests[0].input == src and tests[0].output == ""


def test_keywords_need_a_signature_that_names_every_parameter():
    src = "def check(candidate):\n    assert candidate(a=1) == 1\n"
    assert check_tests(src, None)[0].kind == "functional"  # no signature known
    assert check_tests(src, ["a", "b"])[0].kind == "functional"  # b left to its default
    assert check_tests(src, ["b"])[0].kind == "functional"  # no such parameter
    assert check_tests(src, ["a"])[0].input == "1"


def test_docstrings_and_pass_are_not_asserts_but_do_not_block_conversion():
    src = 'def check(candidate):\n    """doc"""\n    pass\n    assert candidate("a") == True\n'
    (test,) = check_tests(src, ["s"])
    assert (test.kind, test.input, test.output) == ("call", '"a"', "true")


def test_split_invocation_finds_the_method_and_cuts_the_call():
    src = "def check(candidate):\n    assert candidate(1) == 1\n\n\ncheck(Solution().maxSum)"
    kept, name = split_invocation(src)
    assert name == "maxSum"
    assert kept == "def check(candidate):\n    assert candidate(1) == 1\n"
    assert split_invocation("def check(c):\n    pass\ncheck(f)\n")[1] == "f"
    assert split_invocation("def check(c):\n    pass\n")[1] is None


def test_signature_params_reads_body_less_starter_code():
    starter = "class Solution:\n    def minOps(self, nums: List[int],\n               k: int = 3) -> int:\n"
    assert signature_params(starter, "minOps") == ["nums", "k"]
    assert signature_params("def f(a, b):\n", "f") == ["a", "b"]
    assert signature_params(starter, "other") is None
    assert signature_params("def f(*args):\n", "f") is None
