"""Each source adapter on rows in its source's exact format: the project's own rows
(``dataset_rows``) always, and the third-party sets of ../shared/data where they exist
(``problem_sets`` runs a test on both; ``shared_data`` tests check facts of the real rows)."""

import base64
import json
import pickle
import re
import zlib
from typing import Any

import pytest

import dataset_rows as own
from mcoder.dataset.collect.sources import RowRef, Source
from mcoder.dataset.process.adapters import ADAPTERS, detect
from mcoder.dataset.process.adapters.humaneval import package_file
from mcoder.errors import DataError
from mcoder.records import Problem


def rows(path) -> list[tuple[RowRef, dict[str, Any]]]:
    kind = "jsonl" if str(path).endswith(".jsonl") else "json"
    return list(Source(str(path), kind).rows())


def convert(fmt: str, ref: RowRef, row: dict[str, Any]) -> Problem:
    return ADAPTERS[fmt].convert(row, ref)


lcb_compress = own.lcb_compress


def exec_call(problem: Problem, code: str) -> list[tuple[Any, Any]]:
    """(got, expected) for each call test, running ``code`` in this process (reference code only)."""
    preamble = (
        "from typing import *\nfrom collections import *\nfrom itertools import *\nfrom functools import *\n"
    )
    preamble += "from heapq import *\nfrom bisect import *\nfrom math import *\nfrom string import *\n"
    ns: dict[str, Any] = {}
    exec(preamble + code, ns)  # noqa: S102 - reference solutions of the data set, on purpose
    fn = getattr(ns["Solution"](), problem.fn_name) if "Solution" in ns else ns[problem.fn_name]
    out = []
    for t in problem.tests:
        got = fn(*[json.loads(line) for line in t.input.split("\n")])
        out.append(
            (json.loads(json.dumps(list(got) if isinstance(got, tuple) else got)), json.loads(t.output))
        )
    return out


# ------------------------------------------------------------------ LiveCodeBench


def test_sandboxfusion_lcb_rows_decode_their_compressed_tests(problem_sets):
    for ref, row in rows(problem_sets / "sandboxfusion_lcb_v1.jsonl"):
        p = convert("lcb", ref, row)
        blob = pickle.loads(zlib.decompress(base64.b64decode(row["test"])))
        io = json.loads(blob["input_output"])
        assert [t.input for t in p.tests] == io["inputs"] and [t.output for t in p.tests] == io["outputs"]
        labels = json.loads(row["labels"])
        assert p.id == labels["task_id"] and (p.platform, p.difficulty) == (
            labels["category"],
            labels["difficulty"],
        )
        assert p.reference_solutions == []  # 'import sys; sys.exit(0)' is a placeholder, not a solution
        assert "### Question" not in p.question and "### Format" not in p.question
        if io["fn_name"]:
            assert p.fn_name == io["fn_name"] and p.test_kinds == {"call"}
            assert p.starter_code.startswith(f"class Solution:\n    def {io['fn_name']}(self, ")
        else:
            assert p.test_kinds == {"stdin"} and p.starter_code == "" and p.fn_name is None


def test_sandboxfusion_lcb_real_rows(shared_data):
    by_id = {
        convert("lcb", *r).id: convert("lcb", *r) for r in rows(shared_data / "sandboxfusion_lcb_v1.jsonl")
    }
    seniors = by_id["leetcode/2727"]
    assert seniors.fn_name == "countSeniors" and seniors.test_kinds == {"call"}
    assert seniors.starter_code.startswith(
        "class Solution:\n    def countSeniors(self, details: List[str]) -> int:"
    )
    assert (seniors.platform, seniors.difficulty) == ("leetcode", "easy")
    assert by_id["atcoder/abc301_a"].test_kinds == {"stdin"} and by_id["atcoder/abc301_a"].starter_code == ""


def _as_lcb_row(row: dict[str, Any], *, compressed: bool) -> dict[str, Any]:
    """A SandboxFusion LCB row re-shaped as a LiveCodeBench code_generation row."""
    labels = json.loads(row["labels"])
    io = json.loads(pickle.loads(zlib.decompress(base64.b64decode(row["test"])))["input_output"])
    testtype = "functional" if io["fn_name"] else "stdin"
    cases = [{"input": i, "output": o, "testtype": testtype} for i, o in zip(io["inputs"], io["outputs"])]
    private = cases[2:]
    return {
        "question_title": "t",
        "question_content": "statement",
        "platform": labels["category"],
        "question_id": labels["task_id"].split("/")[1],
        "contest_id": "c1",
        "contest_date": "2023-08-21T00:00:00",
        "starter_code": "",
        "difficulty": labels["difficulty"],
        "public_test_cases": json.dumps(cases[:2]),
        "private_test_cases": lcb_compress(private) if compressed else json.dumps(private),
        "metadata": json.dumps({"func_name": io["fn_name"]} if io["fn_name"] else {}),
    }


@pytest.mark.parametrize("compressed", [True, False])
def test_livecodebench_rows_with_json_or_compressed_private_tests(problem_sets, compressed):
    for ref, sf_row in rows(problem_sets / "sandboxfusion_lcb_v1.jsonl"):
        row = _as_lcb_row(sf_row, compressed=compressed)
        assert detect(row).name == "lcb"
        p = convert("lcb", ref, row)
        expected = convert("lcb", ref, sf_row)
        assert [(t.input, t.output, t.kind) for t in p.tests] == [
            (t.input, t.output, t.kind) for t in expected.tests
        ]
        assert p.date == "2023-08-21" and p.meta["public_tests"] == 2 and p.fn_name == expected.fn_name


def test_lcb_call_tests_without_a_function_name_name_the_field(problem_sets):
    ref, sf_row = rows(problem_sets / "sandboxfusion_lcb_v1.jsonl")[1]
    row = _as_lcb_row(sf_row, compressed=True) | {"metadata": "{}"}
    with pytest.raises(DataError) as e:
        convert("lcb", ref, row)
    assert e.value.field == "metadata.func_name" and f"{ref.path}:2" in e.value.message


def test_a_pickle_that_loads_a_class_is_refused(problem_sets):
    ref, row = rows(problem_sets / "sandboxfusion_lcb_v1.jsonl")[0]
    hostile = base64.b64encode(zlib.compress(pickle.dumps(ValueError("x")))).decode()
    with pytest.raises(DataError) as e:
        convert("lcb", ref, row | {"test": hostile})
    assert e.value.field == "test" and "refusing" in e.value.message


# ------------------------------------------------------------------ CodeContests, Codeforces


def test_sandboxfusion_code_contests_keeps_every_test_and_its_labels(problem_sets):
    for ref, row in rows(problem_sets / "sandboxfusion_code_contests.jsonl"):
        p = convert("codecontests", ref, row)
        cases = json.loads(row["test"])
        assert [(t.input, t.output) for t in p.tests] == [
            (c["input"]["stdin"], c["output"]["stdout"]) for c in cases
        ]
        labels = json.loads(row["labels"])
        assert p.id == labels["name"] and p.platform == labels["source"].lower()
        letter = labels["difficulty"]
        if len(letter) == 1:  # A-B easy, C-D medium, later hard; the letter kept
            assert p.meta["source_difficulty"] == letter
            assert p.difficulty == ("easy" if letter in "AB" else "medium" if letter in "CD" else "hard")


def test_sandboxfusion_code_contests_real_row(shared_data):
    first = convert("codecontests", *rows(shared_data / "sandboxfusion_code_contests.jsonl")[3])
    assert (first.id, first.difficulty, first.meta["source_difficulty"]) == (
        "1000_A. Codehorses T-shirts",
        "easy",
        "A",
    )


def test_rllm_code_contests_parse_limits_and_get_derived_ids(problem_sets):
    got = [convert("codecontests", ref, row) for ref, row in rows(problem_sets / "rllm_code_contests.json")]
    raw = json.loads((problem_sets / "rllm_code_contests.json").read_text())
    assert [len(p.tests) for p in got] == [len(r["tests"]["inputs"]) for r in raw]
    assert got[0].id == "rllm_code_contests/0" and got[0].tests[0].input == raw[0]["tests"]["inputs"][0]
    assert (got[0].meta["time_limit_s"], got[0].meta["memory_limit_mb"]) == (
        2.0,
        512.0,
    )  # {'seconds': 2}, 512000000 Bytes
    assert len({p.id for p in got}) == len(got)


def test_codeforces_samples_with_limits_and_tags(problem_sets):
    raw = json.loads((problem_sets / "rllm_codeforces.json").read_text())
    got = [convert("codeforces", ref, row) for ref, row in rows(problem_sets / "rllm_codeforces.json")]
    for p, r in zip(got, raw, strict=True):
        assert [(t.input, t.output) for t in p.tests] == [(c["input"], c["output"]) for c in r["tests"]]
        tags = re.search(r"Tags:\n(\[.*\])\n", r["problem"]).group(1)
        assert p.meta["tags"] == json.loads(tags.replace("'", '"')) and p.platform == "codeforces"
        assert p.meta["samples_only"] and p.question == r["problem"].strip()
    assert sum("time_limit_s" in p.meta for p in got) == len(got) == len(raw)


def test_codeforces_real_rows(shared_data):
    got = [convert("codeforces", ref, row) for ref, row in rows(shared_data / "rllm_codeforces.json")]
    first = got[0]
    assert first.tests[0].input.startswith("10\n1 9\n8 4") and first.tests[0].output.startswith("1 9\n4 8")
    assert first.meta["time_limit_s"] == 1.0 and first.meta["memory_limit_mb"] == 256.0
    assert first.meta["tags"] == ["implementation", "sortings"] and first.platform == "codeforces"
    assert sum("time_limit_s" in p.meta for p in got) == len(got) == 408


# ------------------------------------------------------------------ LeetCode


def test_leetcode_asserts_become_call_tests_with_keywords_in_place(shared_data):
    ref, row = rows(shared_data / "rllm_leetcode_test.json")[0]
    p = convert("leetcode", ref, row)
    # assert candidate(nums = [3,1,5,4,2], k = 2) == 4
    assert (p.tests[0].input, p.tests[0].output, p.tests[0].kind) == ("[3, 1, 5, 4, 2]\n2", "4", "call")
    assert p.fn_name == "minOperations" and p.platform == "leetcode"
    assert p.starter_code == "class Solution:\n    def minOperations(self, nums: List[int], k: int) -> int:\n"
    assert "Please complete" not in p.question and p.question.startswith("You are given an array nums")
    # Keywords in another order than the signature land in the same places.
    swapped = row["tests"]["functional"].replace("nums = [3,1,5,4,2], k = 2", "k = 2, nums = [3,1,5,4,2]")
    q = convert("leetcode", ref, row | {"tests": {"functional": swapped}})
    assert q.tests == p.tests


def test_leetcode_references_pass_every_converted_call_test(problem_sets):
    got = [convert("leetcode", ref, row) for ref, row in rows(problem_sets / "rllm_leetcode_test.json")]
    assert all(p.test_kinds == {"call"} for p in got) and len(got) == len(
        rows(problem_sets / "rllm_leetcode_test.json")
    )
    for p in got:
        for have, want in exec_call(p, p.reference_solutions[0]):
            assert have == want, p.id


def test_leetcode_unconvertible_assert_keeps_the_check_functional(problem_sets):
    ref, row = rows(problem_sets / "rllm_leetcode_test.json")[0]
    last = re.findall(r"== (\d+)\n", row["tests"]["functional"])[-1]
    src = row["tests"]["functional"].replace(f"== {last}\n", f"== {{{last}}}\n")  # a set cannot be JSON
    p = convert("leetcode", ref, row | {"tests": {"functional": src}})
    (test,) = p.tests
    assert test.kind == "functional" and test.input.startswith("def check(candidate):")
    assert f"== {{{last}}}" in test.input and "check(Solution()" not in test.input


# ------------------------------------------------------------------ TACO / APPS (real rows re-shaped)


def test_taco_and_apps_rows(problem_sets):
    for ref, row in rows(problem_sets / "sandboxfusion_lcb_v1.jsonl"):
        io = json.loads(pickle.loads(zlib.decompress(base64.b64decode(row["test"])))["input_output"])
        if io["fn_name"]:  # TACO/APPS call rows: a list of arguments in, the value wrapped in a list out
            io = io | {
                "inputs": [[json.loads(x) for x in i.split("\n")] for i in io["inputs"]],
                "outputs": [[json.loads(o)] for o in io["outputs"]],
            }
        taco = {
            "question": "q",
            "input_output": json.dumps(io),
            "solutions": json.dumps(["print(1)", ""]),
            "starter_code": "",
            "difficulty": "EASY",
            "source": "codeforces",
            "date": "2023-01-02",
            "time_limit": "2 seconds",
            "memory_limit": "256 megabytes",
            "tags": ["math"],
        }
        apps = {
            "problem_id": 7,
            "question": "q",
            "input_output": json.dumps(io),
            "solutions": "[]",
            "starter_code": "",
            "difficulty": "interview",
            "url": "https://atcoder.jp/contests/abc301/tasks/a",
        }
        expected = convert("lcb", ref, row)
        for fmt, r in (("taco", taco), ("apps", apps)):
            assert detect(r).name == fmt
            p = convert(fmt, ref, r)
            assert [(t.input, t.kind) for t in p.tests] == [(t.input, t.kind) for t in expected.tests]
            assert [json.loads(t.output) if t.kind == "call" else t.output for t in p.tests] == [
                json.loads(t.output) if t.kind == "call" else t.output for t in expected.tests
            ]
        t = convert("taco", ref, taco)
        assert (
            t.reference_solutions == ["print(1)"] and t.meta["time_limit_s"] == 2.0 and t.date == "2023-01-02"
        )
        assert convert("apps", ref, apps).platform == "atcoder" and convert("apps", ref, apps).id == "7"


# ------------------------------------------------------------------ HumanEval, mcoder


def test_humaneval_from_the_installed_package():
    src = Source(str(package_file()), "jsonl")
    got = [convert("humaneval", ref, row) for ref, row in src.rows()]
    assert len(got) == 164 and got[0].id == "HumanEval/0" and len({p.id for p in got}) == 164
    for p in got:
        assert p.tests[0].kind == "functional" and p.starter_code == p.question and p.fn_name
        ns: dict[str, Any] = {}
        exec(p.reference_solutions[0], ns)  # noqa: S102 - the canonical solution, on purpose
        exec(p.tests[0].input, ns)  # noqa: S102 - helpers of the prompt (poly for HumanEval/32) come along
        ns["check"](ns[p.fn_name])


def test_mcoder_format_is_read_strictly(tmp_path):
    good = {"id": "a", "source": "s", "question": "q", "tests": [{"input": "1", "output": "1"}], "schema": 1}
    ref = RowRef("x.jsonl", "x", 0, line=9)
    assert convert("mcoder", ref, good).tests[0].kind == "stdin"
    with pytest.raises(DataError) as e:
        convert("mcoder", ref, good | {"tests": [{"input": 1, "output": "1"}]})
    assert e.value.message.startswith("x.jsonl:9, field 'tests[0].input'")


def test_code_contests_hub_rows(problem_sets):
    """SandboxFusion's CodeContests rows re-shaped as the Hub dataset stores them (enum codes)."""
    lettered = [
        (ref, row)
        for ref, row in rows(problem_sets / "sandboxfusion_code_contests.jsonl")
        if len(json.loads(row["labels"])["difficulty"]) == 1  # Codeforces rows: a letter, not a level
    ]
    assert lettered
    for ref, row in lettered[:3]:
        labels = json.loads(row["labels"])
        cases = json.loads(row["test"])
        ins = [c["input"]["stdin"] for c in cases]
        outs = [c["output"]["stdout"] for c in cases]
        hub = {
            "name": labels["name"],
            "description": row["content"],
            "public_tests": {"input": ins[:1], "output": outs[:1]},
            "private_tests": {"input": ins[1:], "output": outs[1:]},
            "generated_tests": {"input": [], "output": []},
            "source": 2,  # CODEFORCES
            "difficulty": 7 + "ABCDEFGH".index(labels["difficulty"]),
            "solutions": {"language": [2, 3, 1], "solution": ["int main(){}", "print(input())", "print 1"]},
            "cf_rating": 1200,
            "cf_tags": ["math"],
            "time_limit": {"seconds": 2, "nanos": 500000000},
            "memory_limit_bytes": 256000000,
        }
        assert detect(hub).name == "codecontests"
        p = convert("codecontests", ref, hub)
        assert [(t.input, t.output) for t in p.tests] == list(zip(ins, outs))
        assert (p.id, p.platform, p.difficulty) == (labels["name"], "codeforces", "1200")
        assert p.reference_solutions == ["print(input())"]  # Python 3 only
        assert (p.meta["time_limit_s"], p.meta["memory_limit_mb"], p.meta["public_tests"]) == (2.5, 256.0, 1)


def test_detection_on_source_rows_is_unambiguous(problem_sets):
    expected = {
        "sandboxfusion_lcb_v1.jsonl": "lcb",
        "sandboxfusion_code_contests.jsonl": "codecontests",
        "rllm_code_contests.json": "codecontests",
        "rllm_codeforces.json": "codeforces",
        "rllm_leetcode_test.json": "leetcode",
    }
    firsts = {name: rows(problem_sets / name)[0][1] for name in expected}
    firsts["HumanEval.jsonl.gz"] = next(Source(str(package_file()), "jsonl").rows())[1]
    expected["HumanEval.jsonl.gz"] = "humaneval"
    for name, row in firsts.items():
        claimed = [a.name for a in ADAPTERS.values() if a.detect(row)]
        assert claimed == [expected[name]], name


# ------------------------------------------------------------------ shapes only the project's rows have here


def test_leetcode_keywords_in_place_on_own_rows():
    ref = RowRef("lc.json", "lc", 0)
    c = own.CALL[0]  # countMultiples(nums, k)
    row = own.leetcode_row(c)
    p = convert("leetcode", ref, row)
    (kw, result), *_ = c.cases
    assert (p.tests[0].input, p.tests[0].output, p.tests[0].kind) == (
        f"{json.dumps(kw['nums'])}\n{kw['k']}",
        str(result),
        "call",
    )
    assert p.starter_code == c.starter and p.fn_name == c.fn and p.reference_solutions == [c.solution]
    assert "Please complete" not in p.question and p.question.startswith(c.statement.split("\n")[0])
    swapped = row["tests"]["functional"].replace("nums = [3,6,7,9], k = 3", "k = 3, nums = [3,6,7,9]")
    assert swapped != row["tests"]["functional"]
    assert convert("leetcode", ref, row | {"tests": {"functional": swapped}}).tests == p.tests


def test_own_livecodebench_rows_of_both_kinds():
    for compressed in (True, False):
        for i, row in enumerate(own.lcb_rows(compressed=compressed)):
            assert detect(row).name == "lcb"
            p = convert("lcb", RowRef("lcb.jsonl", "lcb", i, line=i + 1), row)
            want = own.lcb_cases([*own.STDIN[:3], *own.CALL[:3]][i])
            assert [(t.input, t.output) for t in p.tests] == [(c["input"], c["output"]) for c in want]
            assert p.meta["public_tests"] == 1 and p.date == "2023-08-21"
            assert p.starter_code == row["starter_code"] and p.id == row["question_id"]


def test_own_hub_code_contests_rows():
    for i, p_own in enumerate(own.CONTESTS):
        row = own.hub_cc_row(p_own, i)
        assert detect(row).name == "codecontests"
        p = convert("codecontests", RowRef("cc.parquet", "cc", i), row)
        assert [(t.input, t.output) for t in p.tests] == list(p_own.tests)
        assert (p.platform, p.difficulty, p.reference_solutions) == (
            "codeforces",
            str(800 + 100 * i),
            [p_own.solution],
        )
        assert (p.meta["time_limit_s"], p.meta["memory_limit_mb"], p.meta["tags"]) == (
            2.5,
            256.0,
            list(p_own.tags),
        )


def test_own_taco_and_apps_rows_keep_their_solutions():
    for i, src in enumerate([*own.STDIN[:2], *own.CALL[:2]]):
        for fmt, row in (("taco", own.taco_row(src)), ("apps", own.apps_row(src, 100 + i))):
            assert detect(row).name == fmt
            p = convert(fmt, RowRef(f"{fmt}.jsonl", fmt, i, line=i + 1), row)
            assert p.reference_solutions == [src.solution]
            if isinstance(src, own.Call):
                assert p.fn_name == src.fn and p.test_kinds == {"call"}
                for have, want in exec_call(p, src.solution):
                    assert have == want, p.id
            else:
                assert [(t.input, t.output) for t in p.tests] == list(src.tests)


def test_own_humaneval_rows_check_their_reference():
    for i, c in enumerate(own.CALL):
        row = own.humaneval_row(c, i)
        assert detect(row).name == "humaneval"
        p = convert("humaneval", RowRef("he.jsonl", "he", i, line=i + 1), row)
        assert p.id == f"Own/{i}" and p.starter_code == row["prompt"] and p.fn_name == c.fn
        assert "_helper_unused" in p.tests[0].input  # the prompt's helpers come before check()
        ns: dict[str, Any] = {}
        exec(p.reference_solutions[0], ns)  # noqa: S102 - our own reference, on purpose
        exec(p.tests[0].input, ns)  # noqa: S102
        ns["check"](ns[p.fn_name])


def test_detection_of_every_own_shape_is_unambiguous():
    shapes = {
        "lcb": own.lcb_rows()[0],
        "codecontests": own.hub_cc_row(own.STDIN[0], 0),
        "taco": own.taco_row(own.STDIN[0]),
        "apps": own.apps_row(own.STDIN[0], 1),
        "humaneval": own.humaneval_row(own.CALL[0], 0),
        "leetcode": own.leetcode_row(own.CALL[0]),
        "codeforces": own.rllm_cf_row(own.STDIN[0]),
    }
    for fmt, row in shapes.items():
        assert [a.name for a in ADAPTERS.values() if a.detect(row)] == [fmt], fmt
