"""LiveCodeBench's per-problem results file (``Scenario.codegeneration_*_eval_all.json``), both ways.

Real LiveCodeBench problems (SandboxFusion's copy of three LCB v1 problems, in the shared data),
real programs judged in the sandbox, ``mcoder bench --lcb-out``, and then the file read back:

- by LiveCodeBench's own reader when its code is installed (the PyPI package
  ``nvidia-livecodebench`` ships lcb_runner's ``compute_scores`` unchanged as
  ``livecodebench.evaluation.compute_scores``; ``pip install --no-deps nvidia-livecodebench``),
  otherwise that test skips;
- always, by ``lcb_read_path`` below: a line-by-line mirror of what LiveCodeBench does with the
  file, written from reading its code (lcb_runner/evaluation/compute_scores.py: dates parsed with
  ``datetime.fromisoformat``, filters by date and platform, per-problem totals and corrects from
  ``graded_list``, the unbiased pass@k of evaluation/pass_k_utils.py, the mean of ``pass@1``, the
  easy/medium/hard split; runner/custom_evaluator.py: ``code_list`` per problem sorted by
  ``str(question_id)``; runner/main.py --continue_existing: problems whose ``output_list`` has a
  non-empty output count as done; the leaderboard's build_leaderboard_json.py in the
  LiveCodeBench/submissions repository: per problem question_id, contest_date, difficulty,
  pass@1 x 100 and the platform). Nothing of LiveCodeBench's code is copied.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
from argparse import Namespace
from datetime import datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import sandbox_or_skip
from mcoder.cli.app import app
from mcoder.formats import lcb_results
from mcoder.records import Problem, Rollout, from_dict, to_dict

runner = CliRunner()

# Programs written for the three problems of sandboxfusion_lcb_v1.jsonl: (accepted, wrong) each.
PROGRAMS = {
    "codeforces/1873_A": (
        (
            "t = int(input())\nfor _ in range(t):\n    s = input().strip()\n"
            '    d = sum(x != y for x, y in zip(s, "abc"))\n    print("YES" if d in (0, 2) else "NO")\n'
        ),
        't = int(input())\nfor _ in range(t):\n    input()\n    print("YES")\n',
    ),
    "leetcode/2727": (
        "class Solution:\n    def countSeniors(self, details: List[str]) -> int:\n"
        + "        return sum(int(d[11:13]) > 60 for d in details)\n",
        "class Solution:\n    def countSeniors(self, details: List[str]) -> int:\n"
        + "        return sum(int(d[11:13]) >= 60 for d in details) + 1\n",
    ),
    "atcoder/abc301_a": (
        "n = int(input())\ns = input().strip()\nt, a = s.count('T'), s.count('A')\n"
        + "if t != a:\n    print('T' if t > a else 'A')\nelse:\n    print('A' if s[-1] == 'T' else 'T')\n",
        "n = int(input())\ns = input().strip()\nprint(s[0]\n",  # a syntax error
    ),
}
DATES = {"codeforces/1873_A": "2023-08-21", "leetcode/2727": "2023-05-13", "atcoder/abc301_a": "2023-05-13"}


def _needs_sandbox():

    sandbox_or_skip()


def mc(command: str, *args):
    """``mcoder COMMAND ARGS...`` through the CLI (COMMAND may hold spaces: "dataset build")."""
    return runner.invoke(app, [*command.split(), *map(str, args)])


def _ok(r):
    assert r.exit_code == 0, r.stderr
    return r


@pytest.fixture(scope="module")
def bench_run(shared_data, tmp_path_factory) -> dict[str, Path]:
    """problems (dated, as LCB's rows are), rollouts (an accepted and a failing program, then a
    reply without code), verdicts from the sandbox, and the LCB file bench writes from them."""
    _needs_sandbox()
    d = tmp_path_factory.mktemp("lcb")
    built = d / "built.jsonl"
    _ok(mc("dataset build", shared_data / "sandboxfusion_lcb_v1.jsonl", "--out", built, "-q"))
    problems = d / "problems.jsonl"
    rows = [from_dict(Problem, json.loads(x)) for x in built.read_text().splitlines()]
    for p in rows:
        p.date = DATES[p.id]
    problems.write_text("".join(json.dumps(to_dict(p)) + "\n" for p in rows))
    rollouts = d / "rollouts.jsonl"
    with rollouts.open("w") as f:
        for p in rows:
            replies = [f"Here it is:\n```python\n{c}```\n" for c in PROGRAMS[p.id]] + ["I cannot solve this."]
            for j, text in enumerate(replies):
                r = Rollout(id=f"{p.id}/0/{j}", problem_id=p.id, completion=text, sample_index=j)
                f.write(json.dumps(to_dict(r)) + "\n")
    verdicts = d / "verdicts.jsonl"
    _ok(mc("judge", "-p", problems, "-r", rollouts, "-o", verdicts, "--workers", 1, "-q"))
    lcb = d / lcb_results.file_name(3, 0.2)
    r = _ok(
        mc("bench", "-p", problems, "--verdicts", verdicts, "--rollouts", rollouts, "--lcb-out", lcb, "-q")
    )
    assert str(lcb) in r.stdout
    return {
        "dir": d,
        "problems": problems,
        "rollouts": rollouts,
        "verdicts": verdicts,
        "lcb": lcb,
        "summary": r.stdout,
    }


# The keys of one problem, in the order lcb_runner writes them (CodeGenerationProblem.insert_output,
# then insert_output_evaluation: graded_list, pass@1, then metadata).
LCB_KEYS = [
    "question_title", "question_content", "platform", "question_id", "contest_id", "contest_date", "starter_code",
    "difficulty", "output_list", "code_list", "graded_list", "pass@1", "metadata",
]  # fmt: skip


def test_the_file_has_lcb_s_schema(bench_run):
    assert bench_run["lcb"].name == "Scenario.codegeneration_3_0.2_eval_all.json"
    data = json.loads(bench_run["lcb"].read_text())
    assert [e["question_id"] for e in data] == sorted(DATES)  # sorted by question_id, as lcb_runner
    for e in data:
        assert list(e) == LCB_KEYS
        assert e["platform"] in ("codeforces", "leetcode", "atcoder") and e["difficulty"] == "easy"
        assert datetime.fromisoformat(e["contest_date"]).date().isoformat() == DATES[e["question_id"]]
        assert e["graded_list"] == [True, False, False]
        assert e["pass@1"] == e["graded_list"].count(True) / len(e["graded_list"])
        assert e["code_list"][0] == PROGRAMS[e["question_id"]][0] and e["code_list"][2] == ""
        assert e["output_list"][2] == "I cannot solve this."
        meta = [json.loads(m) for m in e["metadata"]]  # JSON strings, one per output
        assert "execution time" in meta[0]
        assert meta[1]["error_code"] in (-2, -4) and meta[1]["error_message"]
        assert {"inputs", "expected"} <= set(meta[1])
    by_id = {e["question_id"]: e for e in data}
    wa = json.loads(by_id["codeforces/1873_A"]["metadata"][1])  # prints YES for every case
    assert wa["error_code"] == -2 and wa["error_message"] == "Wrong Answer" and "NO" in wa["expected"]


# ------------------------------------------------------------------ LiveCodeBench's read path


def _pass_at_k(n: int, c: int, k: int) -> float:
    """pass_k_utils.estimate_pass_at_k's estimator: 1 - C(n-c, k) / C(n, k)."""
    return 1.0 if n - c < k else 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def lcb_read_path(path: Path, start=None, end=None, platform=None) -> dict:
    """What LiveCodeBench does with an eval_all file (see the module docstring)."""
    results = json.loads(path.read_text())
    for res in results:
        res["contest_date"] = datetime.fromisoformat(res["contest_date"])
    if start is not None:
        results = [r for r in results if datetime.strptime(start, "%Y-%m-%d") <= r["contest_date"]]
    if end is not None:
        results = [r for r in results if r["contest_date"] <= datetime.strptime(end, "%Y-%m-%d")]
    if platform is not None:
        results = [r for r in results if r["platform"] == platform]
    totals = [len(r["graded_list"]) for r in results]
    corrects = [sum(r["graded_list"]) for r in results]
    out = {"problems": len(results)}
    for k in (1, 2, 3):
        out[f"Pass@{k}"] = sum(_pass_at_k(n, c, k) for n, c in zip(totals, corrects)) / len(results)
    out["Pass@1 mean"] = sum(r["pass@1"] for r in results) / len(results)
    for level in ("easy", "medium", "hard"):
        own = [r["pass@1"] for r in results if "difficulty" in r and r["difficulty"] == level]
        if own:
            out[f"{level} Pass@1"] = sum(own) / len(own)
    by_id = sorted(results, key=lambda x: str(x["question_id"]))  # custom_evaluator's order
    out["code_lists"] = [r["code_list"] for r in by_id]
    out["done"] = [
        r["question_id"] for r in results if r["output_list"] and [x for x in r["output_list"] if x]
    ]
    out["leaderboard"] = [
        {
            "question_id": r["question_id"],
            "date": int(r["contest_date"].timestamp() * 1000),
            "difficulty": r["difficulty"],
            "pass@1": r["pass1"] * 100 if "pass1" in r else r["pass@1"] * 100,
            "platform": "leetcode"
            if isinstance(r["question_id"], int)
            else ("codeforces" if r["question_id"][0] == "1" else r["platform"]),
        }
        for r in results
    ]
    return out


def test_lcb_read_path_gives_the_bench_numbers(bench_run):
    got = lcb_read_path(bench_run["lcb"])
    assert got["problems"] == 3
    assert got["Pass@1"] == pytest.approx(1 / 3) and got["Pass@1 mean"] == pytest.approx(1 / 3)
    assert got["Pass@3"] == pytest.approx(1.0) and got["easy Pass@1"] == pytest.approx(1 / 3)
    assert "pass@1 all: 33.3% over 3 problems (9 samples)" in bench_run["summary"]
    assert [c[0] for c in got["code_lists"]] == [PROGRAMS[q][0] for q in sorted(PROGRAMS)]
    assert len(got["done"]) == 3
    board = {row["question_id"]: row for row in got["leaderboard"]}
    assert board["leetcode/2727"]["pass@1"] == pytest.approx(100 / 3)
    assert {row["platform"] for row in board.values()} == {"atcoder", "codeforces", "leetcode"}
    assert lcb_read_path(bench_run["lcb"], platform="leetcode")["problems"] == 1
    assert lcb_read_path(bench_run["lcb"], start="2023-06-01")["problems"] == 1


def test_lcb_s_own_compute_scores_reads_the_file(bench_run):
    scores = pytest.importorskip(
        "livecodebench.evaluation.compute_scores",
        reason="LiveCodeBench's code is not installed (pip install --no-deps nvidia-livecodebench)",
    )
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        scores.compute_scores(
            Namespace(eval_all_file=str(bench_run["lcb"]), start_date=None, end_date=None, platform=None)
        )
    text = out.getvalue()
    assert re.search(r"^Pass@1: 0\.333", text, re.MULTILINE), text
    assert text.splitlines()[0] == "3", text  # problems read
    assert re.search(r"^Pass@1 =  0\.333", text, re.MULTILINE), text  # the estimator over graded_list
    assert re.search(r"^Easy Pass@1: 0\.333", text, re.MULTILINE), text


# ------------------------------------------------------------------ read back by mcoder


def test_judge_rejudges_the_file_to_the_same_grades(bench_run):
    out = bench_run["dir"] / "rejudged.jsonl"
    _ok(mc("judge", "-p", bench_run["problems"], "-r", bench_run["lcb"], "-o", out, "--workers", 1, "-q"))
    verdicts = {v["rollout_id"]: v for v in map(json.loads, out.read_text().splitlines())}
    for e in json.loads(bench_run["lcb"].read_text()):
        got = [verdicts[lcb_results.rollout_id(e["question_id"], j)]["passed"] for j in range(3)]
        assert got == e["graded_list"]
    assert verdicts["atcoder/abc301_a/lcb/1"]["status"] == "compile_error"
    assert verdicts["leetcode/2727/lcb/2"]["status"] == "no_code"


def test_bench_tables_the_file_as_verdicts_problems_and_baseline(bench_run):
    lcb, problems, verdicts = (str(bench_run[k]) for k in ("lcb", "problems", "verdicts"))
    r = _ok(mc("bench", "-p", lcb, "--verdicts", lcb, "--json", "-", "-q"))
    cell = next(c for c in json.loads(r.stdout)["cells"] if c["platform"] == c["difficulty"] == "all")
    assert cell["problems"] == 3 and cell["samples"] == 9
    r = _ok(mc("bench", "-p", problems, "--verdicts", verdicts, "--baseline", lcb, "-q"))
    assert "baseline 33.3% (+0.0 points)" in r.stdout


def test_show_reads_a_submission_with_its_statements(bench_run):
    out = _ok(mc("show", bench_run["lcb"], "--id", "leetcode/2727/lcb/0")).stdout
    assert "─ problem ─" in out and "details" in out  # the statement, from the file
    assert "countSeniors" in out and "verdict accepted" in out and "reward 1" in out
    page = bench_run["dir"] / "submission.html"
    _ok(mc("show", bench_run["lcb"], "--html", page))
    text = page.read_text()
    assert text.count('<details class="sample"') == 9 and "<td>leetcode</td>" in text


def test_statuses_survive_the_round_trip(bench_run):
    statuses = {v.rollout_id: v.status for _, v in lcb_results.as_verdicts(bench_run["lcb"])}
    assert statuses["atcoder/abc301_a/lcb/1"] == "compile_error"
    assert statuses["leetcode/2727/lcb/2"] == "no_code"
    assert statuses["codeforces/1873_A/lcb/1"] == "wrong_answer"


def test_dataset_build_reads_grades_and_statements(bench_run):
    d, lcb, problems = bench_run["dir"], str(bench_run["lcb"]), str(bench_run["problems"])
    out = d / "kept.jsonl"
    r = mc("dataset build", problems, "--out", out, "--decontaminate", lcb, "-q")
    assert r.exit_code == 3 and "no problems" in r.stderr  # every statement is in the submission
    _ok(
        mc(
            "dataset build",
            problems,
            "--out",
            out,
            "--difficulty-from",
            lcb,
            "--keep-pass-rate",
            "0.3,0.4",
            "-q",
        )
    )
    kept = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(kept) == 3 and all(p["meta"]["pass_rate"] == pytest.approx(1 / 3) for p in kept)


# ------------------------------------------------------------------ refusals


def test_lcb_out_needs_the_rollouts(tmp_path):
    p, v = tmp_path / "p.jsonl", tmp_path / "v.jsonl"
    p.write_text("")
    v.write_text("")
    r = mc("bench", "-p", p, "--verdicts", v, "--lcb-out", tmp_path / "x.json")
    assert r.exit_code == 2 and "--rollouts" in r.stderr
    r = mc("bench", "-p", p, "--verdicts", v, "--rollouts", v)
    assert r.exit_code == 2 and "only read for --lcb-out" in r.stderr


def test_a_malformed_results_file_names_the_entry_and_field(tmp_path):
    bad = tmp_path / "Scenario.codegeneration_1_0.2_eval_all.json"
    good = {"question_id": "a", "code_list": ["print(1)"], "graded_list": [True]}
    bad.write_text(json.dumps([good, {**good, "question_id": "b", "graded_list": [True, False]}]))
    r = mc("bench", "-p", bad, "--verdicts", bad)
    assert r.exit_code == 3
    assert (
        "eval_all.json:2" in r.stderr and "graded_list" in r.stderr and "2 grades for 1 programs" in r.stderr
    )


def test_fenced_program_survives_backticks_inside_it():
    from mcoder.extract import extract_code

    code = 's = """\n```\n"""\nprint(s)\n'
    assert extract_code(lcb_results.fenced(code)) == code
    assert lcb_results.fenced("  \n") == ""
