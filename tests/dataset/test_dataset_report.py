"""The build report: every input problem accounted for, markdown and JSON twins, same bytes on
a rerun, and chunked runs adding up to the same result as one pass."""

from __future__ import annotations

import dataclasses
import json

import pytest
from typer.testing import CliRunner

from helpers.dataset_real import EXAMPLES, examples, real
from mcoder.cli.app import app
from mcoder.dataset import refine
from mcoder.dataset.filter.steps import FilterConfig
from mcoder.dataset.refine import Refiner, run_filter_verify
from mcoder.dataset.report import Removal, StageResult, build_report, summarize, write_report
from mcoder.dataset.verify.step import VerifyConfig
from mcoder.jsonl import RecordWriter
from mcoder.records import Problem, Test


def _without_times(report: dict) -> dict:
    return {**report, "stages": [{**s, "seconds": 0} for s in report["stages"]]}


def _untimed(p: Problem) -> Problem:
    """A problem without its measured reference times: with one run on a busy machine a time can
    land on either side of a step (the rest of the record must not move)."""
    return dataclasses.replace(p, meta={k: v for k, v in p.meta.items() if k != "ref_time_s"})


def test_hand_made_report_adds_up_and_renders(tmp_path):
    a = Problem("a", "src1", "q", [Test("1", "1")], platform="atcoder", difficulty="easy")
    b = Problem("b", "src2", "q", [Test("1", "1")] * 12, platform="leetcode")
    stages = [
        StageResult("convert", 3, 3),
        StageResult(
            "dedup",
            3,
            2,
            [Removal("c", "dedup", "near_duplicate", {"kept": "a", "similarity": 0.91})],
            seconds=0.25,
            notes={"near_clusters": [{"kept": "a", "removed": ["c"]}]},
            params={"threshold": 0.8},
        ),
    ]
    c = dataclasses.replace(a, id="c")
    report = build_report(["x.jsonl"], stages, summarize([a, b, c]), summarize([a, b]))
    assert report["accounted"] and report["problems_in"] == 3 and report["removed"] == 1
    assert report["after"]["platform"] == {"atcoder": 1, "leetcode": 1}
    assert report["after"]["tests_per_problem"] == {"1": 1, "10-49": 1}
    assert report["before"]["difficulty"] == {"easy": 2, "unknown": 1}
    md, js = write_report(tmp_path / "r.md", report)
    assert js.name == "r.json" and json.loads(js.read_text()) == report
    text = md.read_text()
    assert "| dedup | 3 | 2 | 1 | near_duplicate: 1 | 0.25 |" in text
    assert "| c | dedup | near_duplicate | kept=a, similarity=0.91 |" in text
    assert "settings: threshold=0.8" in text and "every input problem accounted for" in text


def test_counts_that_do_not_add_up_are_reported_as_such():
    p = Problem("a", "s", "q", [Test("1", "1")])
    stages = [StageResult("dedup", 3, 1, [Removal("b", "dedup", "near_duplicate")])]  # one problem lost
    report = build_report([], stages, summarize([p] * 3), summarize([p]))
    assert report["accounted"] is False


def test_real_build_accounts_for_every_problem_and_reruns_to_the_same_bytes(problem_sets, tmp_path):
    problems = (
        real(problem_sets, "rllm_codeforces.json")[:80]
        + real(problem_sets, "rllm_leetcode_test.json")[:12]
        + examples()[:6]
    )
    with RecordWriter(tmp_path / "bench.jsonl", "id", resume=False) as w:
        w.write_all(examples()[:3])  # three of the inputs are benchmark problems too
    cfg = FilterConfig(dedup=True, decontaminate=[tmp_path / "bench.jsonl"], max_tests=4)

    outputs = []
    for run in range(2):
        with Refiner(cfg, VerifyConfig(runs=1, workers=2, timeout_s=5)) as refiner:
            kept = list(refiner.run(problems))
        report = refiner.report(["mixed"], [StageResult("convert", len(problems), len(problems))])
        md, js = write_report(tmp_path / f"r{run}.md", _without_times(report))
        assert all("ref_time_s" in p.meta for p in kept if p.meta["verified"])
        outputs.append(([_untimed(p) for p in kept], md.read_bytes(), js.read_bytes()))
    untimed, md_bytes, js_bytes = outputs[0]
    assert outputs[1] == (untimed, md_bytes, js_bytes)
    assert report["accounted"] and report["problems_out"] == len(kept)
    removed = [r["id"] for r in report["removals"]]
    assert sorted(removed + [p.id for p in kept]) == sorted(p.id for p in problems)
    assert {r["id"] for r in report["removals"] if r["stage"] == "decontaminate"} == {
        p.id for p in examples()[:3]
    }
    assert [s["name"] for s in report["stages"]] == [
        "convert",
        "min_tests",
        "special_judge",
        "dedup",
        "decontaminate",
        "cap_tests",
        "verify",
    ]
    assert report["stages"][-1]["notes"]["verified"] == sum(p.meta["verified"] for p in kept) > 0
    assert not {p.id for p in kept} & set(removed)


def test_chunks_add_up_to_the_same_result_as_one_pass(problem_sets, monkeypatch):
    problems = real(problem_sets, "rllm_codeforces.json")[:150]
    cfg = FilterConfig(max_tests=2, min_chars=300)
    whole = run_filter_verify(problems, dataclasses.replace(cfg))  # 150 < CHUNK: one chunk
    monkeypatch.setattr(refine, "CHUNK", 7 if len(problems) > 50 else 2)  # several chunks either way
    chunked = run_filter_verify(problems, dataclasses.replace(cfg))
    assert [p.id for p in whole[0]] == [p.id for p in chunked[0]]
    for a, b in zip(whole[1], chunked[1], strict=True):
        assert (a.name, a.n_in, a.n_out, a.removals, a.notes, a.params) == (
            b.name,
            b.n_in,
            b.n_out,
            b.removals,
            b.notes,
            b.params,
        )


@pytest.mark.parametrize(
    "name, twin", [("r.md", "r.json"), ("report", "report.json"), ("x.json", "x.json.json")]
)
def test_json_twin_name(tmp_path, name, twin):
    p = Problem("a", "s", "q", [Test("1", "1")])
    _, js = write_report(tmp_path / name, build_report([], [], summarize([p]), summarize([p])))
    assert js.name == twin


# ---------------------------------------------------------------- through the command line


@pytest.mark.heavy
def test_cli_build_with_every_stage_writes_a_report_that_accounts_for_every_problem(tmp_path):
    bench = tmp_path / "bench.jsonl"
    with RecordWriter(bench, "id", resume=False) as w:
        w.write_all(examples()[:2])
    out, md = tmp_path / "p.jsonl", tmp_path / "r.md"
    args = [
        "dataset",
        "build",
        str(EXAMPLES),
        "--out",
        str(out),
        "--dedup",
        "--decontaminate",
        str(bench),
        "--verify",
        "--verify-runs",
        "1",
        "--max-tests",
        "6",
        "--report",
        str(md),
        "-q",
    ]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    report = json.loads(md.with_suffix(".json").read_text())
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert r.stdout.strip() == f"{out}\t{len(written)}"
    assert report["accounted"] and report["problems_in"] == len(examples()) == 48
    assert report["problems_out"] == len(written) == 48 - report["removed"]
    assert {x["id"] for x in report["removals"] if x["stage"] == "decontaminate"} == {
        p.id for p in examples()[:2]
    }
    assert all(rec["meta"]["verified"] and len(rec["tests"]) <= 6 for rec in written)
    assert "| verify |" in md.read_text()


def test_cli_band_without_verdicts_is_a_usage_error(tmp_path):
    r = CliRunner().invoke(
        app,
        [
            "dataset",
            "build",
            str(EXAMPLES),
            "--out",
            str(tmp_path / "p.jsonl"),
            "--keep-pass-rate",
            "0.1,0.9",
        ],
    )
    assert r.exit_code == 2 and "--difficulty-from" in r.output


def test_cli_difficulty_band_and_statement_bounds(tmp_path):
    from mcoder.records import Verdict

    ids = [p.id for p in examples()]
    verdicts = tmp_path / "v.jsonl"
    with RecordWriter(verdicts, "rollout_id", resume=False) as w:
        for k, pid in enumerate(ids):  # problem k passes k % 5 of 4 samples (4 of 4 when k % 5 == 4)
            for s in range(4):
                ok = s < k % 5
                w.write(
                    Verdict(
                        f"{pid}/{s}", pid, float(ok), ok, "accepted" if ok else "wrong_answer", int(ok), 1
                    )
                )
    out, md = tmp_path / "p.jsonl", tmp_path / "r.md"
    args = [
        "dataset",
        "build",
        str(EXAMPLES),
        "--out",
        str(out),
        "--difficulty-from",
        str(verdicts),
        "--keep-pass-rate",
        "0.25,0.75",
        "--max-chars",
        "2000",
        "--report",
        str(md),
        "-q",
    ]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    written = [json.loads(line) for line in out.read_text().splitlines()]
    long_ids = {p.id for p in examples() if len(p.question.strip()) > 2000}
    expected = [pid for k, pid in enumerate(ids) if k % 5 in (1, 2, 3) and pid not in long_ids]
    assert [rec["id"] for rec in written] == expected
    assert all(rec["meta"]["pass_rate"] in (0.25, 0.5, 0.75) for rec in written)
    report = json.loads(md.with_suffix(".json").read_text())
    assert report["accounted"] and report["stages"][-1]["name"] == "difficulty"
