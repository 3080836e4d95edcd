"""One build pipeline: a report flag never changes the data, a rerun continues only what the same
settings and inputs started (else exit 2 listing what changed), --verify writes problems as they
finish, and the smaller row-level reasons (no statement, empty statement, duplicates, bad bytes,
empty input)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from helpers.dataset_real import EXAMPLES
from mcoder.cli.app import app

runner = CliRunner()


def dataset_build(*args):
    return runner.invoke(app, ["dataset", "build", *map(str, args)])


def ids(path) -> list[str]:
    return [json.loads(line)["id"] for line in path.read_text().splitlines()]


def test_a_report_flag_never_changes_the_data(problem_sets, tmp_path):
    rows = json.loads((problem_sets / "rllm_codeforces.json").read_text())
    special = [r for r in rows if "print any of them" in r["problem"]][:1]
    plain_rows = [r for r in rows if "any of them" not in r["problem"] and "any" not in r["problem"]][:1]
    assert special and plain_rows
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(special))
    b.write_text(json.dumps(plain_rows))
    r = dataset_build(a, b, "-o", tmp_path / "x.jsonl", "-q")
    assert r.exit_code == 0, r.output
    r = dataset_build(a, b, "-o", tmp_path / "y.jsonl", "--report", tmp_path / "r.md", "-q")
    assert r.exit_code == 0, r.output
    assert len(ids(tmp_path / "x.jsonl")) == 2
    assert (tmp_path / "x.jsonl").read_bytes() == (tmp_path / "y.jsonl").read_bytes()
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["accounted"] and report["problems_out"] == 2
    sj = next(s for s in report["stages"] if s["name"] == "special_judge")
    assert sj["notes"]["flagged"] == 1 and sj["removed"] == 0
    # Removing them is asked for by name.
    r = dataset_build(a, b, "-o", tmp_path / "z.jsonl", "--special-judge", "drop", "-q")
    assert r.exit_code == 0, r.output
    assert len(ids(tmp_path / "z.jsonl")) == 1


# ---------------------------------------------------------------- rerun into an existing output


def test_a_rerun_with_other_filters_is_refused_listing_what_changed(tmp_path):
    out = tmp_path / "p.jsonl"
    assert dataset_build(EXAMPLES, "-o", out, "-q").exit_code == 0
    first = out.read_bytes()
    meta = json.loads((tmp_path / "p.jsonl.meta.json").read_text())
    assert meta["finished"]["size"] == len(first)
    assert meta["settings"]["min_tests"] == 0 and all(len(v["sha256"]) == 64 for v in meta["inputs"].values())

    r = dataset_build(EXAMPLES, "-o", out, "--min-tests", "8", "--decontaminate", EXAMPLES / "call.jsonl")
    assert r.exit_code == 2, r.output
    assert "min_tests 0 -> 8" in r.stderr and "decontaminate" in r.stderr and "--overwrite" in r.stderr
    assert out.read_bytes() == first  # refused before anything was touched

    r = dataset_build(EXAMPLES, "-o", out, "--min-tests", "8", "--overwrite", "-q")
    assert r.exit_code == 0, r.output
    kept = [json.loads(line) for line in out.read_text().splitlines()]
    assert kept and len(kept) < 48 and all(len(p["tests"]) >= 8 for p in kept)

    r = dataset_build(EXAMPLES, "-o", out, "--min-tests", "8")
    assert r.exit_code == 0 and "nothing to do" in r.stderr
    assert r.stdout == f"{out}\t{len(kept)}\n"


def test_a_folder_of_built_problems_is_read_without_their_settings_records(tmp_path):
    built = tmp_path / "built"
    assert dataset_build(EXAMPLES, "-o", built / "p.jsonl", "-q").exit_code == 0
    assert (built / "p.jsonl.meta.json").exists()
    r = dataset_build(built, "-o", tmp_path / "again.jsonl")
    assert r.exit_code == 0, r.output
    assert "p.jsonl.meta.json" in r.stderr and "not data" in r.stderr
    assert (tmp_path / "again.jsonl").read_bytes() == (built / "p.jsonl").read_bytes()


def test_a_changed_input_or_a_foreign_output_is_refused(tmp_path):
    src = tmp_path / "src.jsonl"
    lines = (EXAMPLES / "stdin.jsonl").read_text().splitlines(keepends=True)
    src.write_text("".join(lines[:5]))
    out = tmp_path / "p.jsonl"
    assert dataset_build(src, "-o", out, "-q").exit_code == 0
    src.write_text("".join(lines[:6]))
    r = dataset_build(src, "-o", out, "-q")
    assert r.exit_code == 2 and f"input source {src} changed" in r.stderr.replace("\n", "")

    other = tmp_path / "other.jsonl"
    other.write_text('{"rollout_id": "r1"}\n')
    r = dataset_build(src, "-o", other, "-q")
    assert r.exit_code == 2 and "not an output of this stage" in r.stderr
    assert other.read_text() == '{"rollout_id": "r1"}\n'


def test_a_second_writer_of_the_same_output_exits_2_naming_the_holder(tmp_path):
    from mcoder.outputs import hold_lock

    out = tmp_path / "p.jsonl"
    with hold_lock(out):
        r = dataset_build(EXAMPLES, "-o", out, "-q")
    assert r.exit_code == 2 and f"pid {os.getpid()}" in r.stderr
    assert dataset_build(EXAMPLES, "-o", out, "-q").exit_code == 0


# ---------------------------------------------------------------- --verify writes as it goes


@pytest.mark.heavy
def test_verify_writes_problems_as_they_finish_and_a_rerun_continues(tmp_path):
    out, part = tmp_path / "p.jsonl", tmp_path / "p.jsonl.part"
    cmd = [sys.executable, "-m", "mcoder", "dataset", "build", str(EXAMPLES), "--out", str(out)]
    cmd += ["--verify", "--verify-runs", "2", "--report", str(tmp_path / "r.md"), "--quiet"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        with contextlib.suppress(FileNotFoundError):  # renamed away at the end
            if part.read_bytes().count(b"\n") >= 1:
                break
        time.sleep(0.01)
    time.sleep(0.2)  # the next batch is still being judged: the first one was written alone
    assert proc.poll() is None, "verify finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    written_before = part.read_bytes().count(b"\n")
    assert 0 < written_before < 48

    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    report = json.loads((tmp_path / "r.json").read_text())
    verify = next(s for s in report["stages"] if s["name"] == "verify")
    assert verify["notes"]["resumed"] == written_before  # not verified again
    assert verify["notes"]["verified"] == 48 - written_before
    from helpers.dataset_real import examples

    assert ids(out) == [p.id for p in examples()]


# ---------------------------------------------------------------- row-level reasons


def _cc_rows(problem_sets, n):
    return [
        json.loads(x)
        for x in (problem_sets / "sandboxfusion_code_contests.jsonl").read_text().splitlines()[:n]
    ]


def test_a_codecontests_row_without_a_statement_names_the_missing_field(problem_sets, tmp_path):
    rows = _cc_rows(problem_sets, 3)
    del rows[1]["content"]
    src = tmp_path / "cc.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    r = dataset_build(src, "-o", tmp_path / "o.jsonl", "-q")
    assert r.exit_code == 3 and f"{src}:2, field 'content'" in r.stderr.replace("\n", "")
    assert "no tests" not in r.stderr


def test_an_empty_statement_is_skipped_with_its_reason(problem_sets, tmp_path):
    rows = _cc_rows(problem_sets, 3)
    rows[2]["content"] = "  \n"
    src = tmp_path / "cc.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    from mcoder.dataset.build import build
    from mcoder.dataset.config import BuildConfig

    tally = build(BuildConfig(sources=[str(src)], out=str(tmp_path / "o.jsonl")))
    assert {r: n for (_, r), n in tally.skips.items()} == {"empty statement": 1}
    assert len(ids(tmp_path / "o.jsonl")) == 2


def test_a_duplicate_id_is_reported_with_the_file_and_line_of_both(problem_sets, tmp_path):
    rows = _cc_rows(problem_sets, 2)
    src = tmp_path / "cc.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in [*rows, rows[0]]))
    r = dataset_build(src, "-o", tmp_path / "o.jsonl", "--report", tmp_path / "r.md", "-q")
    assert r.exit_code == 0, r.output
    (removal,) = json.loads((tmp_path / "r.json").read_text())["removals"]
    assert removal["id"] == f"{src}:3" and removal["reason"] == "duplicate id"
    assert removal["detail"]["first"] == f"{src}:1"


def test_bad_utf8_names_the_real_line(problem_sets, tmp_path):
    good = (problem_sets / "sandboxfusion_code_contests.jsonl").read_bytes().splitlines(keepends=True)[:3]
    src = tmp_path / "cc.jsonl"
    src.write_bytes(b"".join(good) + b'{"content": "caf\xe9", "test": "[]", "labels": "{}"}\n')
    r = dataset_build(src, "-o", tmp_path / "o.jsonl", "-q")
    assert r.exit_code == 3 and f"{src}:4" in r.stderr and "line 1 column 1" not in r.stderr
    assert "UTF-8" in r.stderr

    whole = tmp_path / "cf.json"
    whole.write_bytes(b'[\n{"problem": "a",\n "tests": [{"input": "\xff", "output": "1"}]}\n]\n')
    r = dataset_build(whole, "-o", tmp_path / "o2.jsonl", "-q")
    assert r.exit_code == 3 and f"{whole}:3" in r.stderr and "line 1 column 1" not in r.stderr


def test_no_problems_is_bad_input_data_exit_3(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    out = tmp_path / "o.jsonl"
    r = dataset_build(empty, "-o", out, "-q")
    assert r.exit_code == 3 and "no problems" in r.stderr and "no rows" in r.stderr
    r = dataset_build(EXAMPLES, "-o", out, "--after", "2999-01-01", "-q")
    assert r.exit_code == 3 and "no problems" in r.stderr and "48" in r.stderr
    assert not out.exists() and not (tmp_path / "o.jsonl.part").exists()
