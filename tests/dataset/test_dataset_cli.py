"""`mcoder dataset build` through the CLI: exit codes 0/2/3 and their messages, the whole
shared data folder, HumanEval from the package, and resume after a real SIGKILL."""

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mcoder.cli.app import app
from mcoder.dataset.build import build
from mcoder.dataset.config import BuildConfig
from mcoder.dataset.process.adapters import FORMATS

runner = CliRunner()


def dataset_build(*args):
    return runner.invoke(app, ["dataset", "build", *map(str, args)])


def rows_in(path: Path) -> int:
    if path.suffix == ".jsonl":
        return sum(1 for line in path.read_text().splitlines() if line.strip())
    return len(json.loads(path.read_text()))


@pytest.mark.heavy
def test_everything_in_a_sets_folder_converts_or_is_skipped_with_a_reason(problem_sets, tmp_path):
    out = tmp_path / "p.jsonl"
    sources = sorted(problem_sets.iterdir())  # what the shell makes of shared/data/*, README included
    r = dataset_build(*sources, "--out", out)
    assert r.exit_code == 0, r.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert r.stdout == f"{out}\t{len(records)}\n"
    assert len({rec["id"] for rec in records}) == len(records)
    for name, fmt in [
        ("sandboxfusion_lcb_v1.jsonl", "lcb"),
        ("rllm_leetcode_test.json", "leetcode"),
        ("rllm_codeforces.json", "codeforces"),
        ("rllm_code_contests.json", "codecontests"),
    ]:
        assert f"{name}: format {fmt} (detected)" in r.stderr.replace("\n", " ")
    assert "README.md" in r.stderr and "not a data file" in r.stderr

    tally = build(BuildConfig(sources=[str(s) for s in sources], out=str(tmp_path / "again.jsonl")))
    converted = Counter(rec["meta"]["source_file"] for rec in records)
    data_files = [s for s in sources if s.suffix in (".json", ".jsonl")]
    assert [Path(f.path).name for f in tally.files] == [s.name for s in data_files]
    for f in tally.files:
        path = Path(f.path)
        assert converted[path.name] == f.converted
        assert converted[path.name] + f.skipped == rows_in(path) == f.rows, path.name
    assert {reason for (_, reason) in tally.skips} <= {
        "interactive (judged by an interactor, not by stdin tests)"
    }
    for name in ("rllm_leetcode_test.json", "sandboxfusion_lcb_v1.jsonl"):  # no row of these is skipped
        assert converted[name] == rows_in(problem_sets / name)
    assert not any("This is an interactive problem" in rec["question"] for rec in records)
    assert sum(f.skipped for f in tally.files) > 0  # the interactive ones, counted with their reason


def test_humaneval_without_a_source_reads_the_package(tmp_path):
    out = tmp_path / "he.jsonl"
    r = dataset_build("--format", "humaneval", "--out", out, "--quiet")
    assert r.exit_code == 0, r.stderr
    assert r.stdout == f"{out}\t164\n" and r.stderr == ""
    assert len(out.read_text().splitlines()) == 164


def test_out_dash_writes_records_to_stdout(problem_sets):
    src = problem_sets / "sandboxfusion_lcb_v1.jsonl"
    r = dataset_build(src, "--out", "-", "-q")
    assert r.exit_code == 0, r.stderr
    assert [json.loads(line)["id"] for line in r.stdout.splitlines()] == [
        json.loads(json.loads(line)["labels"])["task_id"] for line in src.read_text().splitlines()
    ]


def test_dash_reads_rows_from_stdin(problem_sets, tmp_path):
    rows = (problem_sets / "sandboxfusion_lcb_v1.jsonl").read_text()
    r = runner.invoke(app, ["dataset", "build", "-", "--out", str(tmp_path / "o.jsonl")], input=rows)
    assert r.exit_code == 0, r.stderr
    n = len(rows.splitlines())
    assert r.stdout == f"{tmp_path / 'o.jsonl'}\t{n}\n" and "-: format lcb (detected)" in r.stderr


def test_usage_errors_exit_2_and_say_what_to_do(problem_sets, tmp_path):
    out = tmp_path / "o.jsonl"
    r = dataset_build(problem_sets / "sandboxfusion_lcb_v1.jsonl", "--out", out, "--format", "kaggle")
    assert r.exit_code == 2 and "unknown format 'kaggle'" in r.stderr
    assert ", ".join(FORMATS) in r.stderr and "codecontests" in r.stderr
    r = dataset_build("--out", out)
    assert r.exit_code == 2 and "no SOURCE given" in r.stderr
    r = dataset_build(problem_sets / "sandboxfusion_lcb_v1.jsonl")
    assert r.exit_code == 2 and "--out" in r.stderr
    r = dataset_build(tmp_path / "missing.jsonl", "--out", out)
    assert r.exit_code == 2 and "no such file or folder" in r.stderr
    r = dataset_build(problem_sets / "README.md", "--out", out)
    assert r.exit_code == 2 and "no data files" in r.stderr
    r = dataset_build(problem_sets / "sandboxfusion_lcb_v1.jsonl", "--out", out, "--after", "May 2024")
    assert r.exit_code == 2 and "YYYY-MM-DD" in r.stderr
    assert not out.exists()


def test_bad_data_exits_3_naming_file_line_and_field(problem_sets, tmp_path):
    lines = (problem_sets / "sandboxfusion_code_contests.jsonl").read_text().splitlines()
    row = json.loads(lines[4])
    row["test"] = row["test"][:-5]  # cut JSON text
    lines[4] = json.dumps(row)
    bad = tmp_path / "cc.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    r = dataset_build(bad, "--out", tmp_path / "o.jsonl")
    assert r.exit_code == 3
    assert f"{bad}:5, field 'test': invalid JSON text" in r.stderr.replace("\n", "")
    assert "Traceback" not in r.stderr

    odd = tmp_path / "odd.json"
    odd.write_text('[{"title": "x"}]')
    r = dataset_build(odd, "--out", tmp_path / "o2.jsonl")  # o.jsonl.part holds the rows before line 5
    assert r.exit_code == 3 and "cannot tell the format" in r.stderr and "hint: pass --format" in r.stderr


@pytest.mark.heavy
def test_resume_after_a_kill_mid_write_gives_the_same_records(problem_sets, tmp_path):
    rows = json.loads((problem_sets / "rllm_codeforces.json").read_text())
    big = tmp_path / "big.jsonl"
    copies = max(6, -(-2400 // len(rows)))  # some 2,400 rows: 6 copies of the real set
    with big.open("w") as f:
        for _ in range(copies):  # ids derive from the row index, so repeated rows stay distinct problems
            for row in rows:
                f.write(json.dumps(row) + "\n")
    out, part = tmp_path / "out.jsonl", tmp_path / "out.jsonl.part"
    cmd = [sys.executable, "-m", "mcoder", "dataset", "build", str(big), "--out", str(out), "--quiet"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if part.exists() and part.stat().st_size > 100_000:  # some tens of records written
            break
        time.sleep(0.005)
    assert proc.poll() is None, "the build finished before it could be killed; make the input bigger"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert part.exists() and not out.exists()
    written_before = len(part.read_bytes().splitlines())
    assert 0 < written_before < copies * len(rows)

    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    reference = tmp_path / "reference.jsonl"
    build(BuildConfig(sources=[str(big)], out=str(reference)))  # uninterrupted
    assert out.read_bytes() == reference.read_bytes()
    ids = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert len(ids) == len(set(ids)) > written_before


def test_limit_lowers_a_budget_and_a_bad_one_is_a_usage_error(tmp_path):
    from dataset_rows import CODEFORCES, rllm_cf_row, write_rows

    rows = [rllm_cf_row(p) for p in CODEFORCES]
    rows[0]["tests"] = rows[0]["tests"][:1]
    src = write_rows(tmp_path / "cf.json", rows)
    r = dataset_build(src, "--out", tmp_path / "p.jsonl", "--limit", "tests=1")
    assert r.exit_code == 0, r.stderr
    assert "over the tests budget of 1" in r.stderr and "--limit tests=N" in r.stderr
    kept = [json.loads(line) for line in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert kept and all(len(p["tests"]) == 1 for p in kept)
    r = dataset_build(src, "--out", tmp_path / "q.jsonl", "--limit", "tests=lots")
    assert r.exit_code == 2 and "NAME=N" in r.stderr
