"""`mcoder bench` through the real CLI: exit codes, stdout summary, written files, messages."""

import json

from typer.testing import CliRunner

from bench_data import BASELINE, verdict_lines, write_problems, write_verdicts
from mcoder.cli.app import app

runner = CliRunner()


def bench(*args):
    return runner.invoke(app, ["bench", *map(str, args)])


def test_table_with_baseline_markdown_and_json(tmp_path):
    problems = write_problems(tmp_path / "problems.jsonl")
    verdicts = write_verdicts(tmp_path / "verdicts.jsonl")
    base = write_verdicts(tmp_path / "base.jsonl", BASELINE)
    md, js = tmp_path / "out" / "bench.md", tmp_path / "bench.json"
    r = bench(
        "--problems",
        problems,
        "--verdicts",
        verdicts,
        "--k",
        "2",
        "--baseline",
        base,
        "--markdown",
        md,
        "--json",
        js,
    )
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith(
        "pass@1 all: 60.0% over 5 problems (13 samples), 1 unevaluated; baseline 35.0%"
    )
    assert lines[1:] == [str(md), str(js)]
    assert "pass@2 is not computable for 1 of 5 evaluated problems" in r.stderr
    assert "unevaluated" in r.stderr and "p5" in r.stderr
    doc = json.loads(js.read_text())
    assert doc["ks"] == [1, 2]  # 1 is always reported
    assert "| Δ | +12.5 | +75.0 | -50.0 | +25.0 |  |" in md.read_text()


def test_quiet_keeps_stderr_free_of_tables(tmp_path):
    problems = write_problems(tmp_path / "problems.jsonl")
    r = bench("-p", problems, "--verdicts", write_verdicts(tmp_path / "v.jsonl"), "--quiet")
    assert r.exit_code == 0
    assert "pass@1 (%" not in r.stderr
    assert r.stdout.startswith("pass@1 all: 60.0%")


def test_json_to_stdout_stays_parseable(tmp_path):
    problems = write_problems(tmp_path / "problems.jsonl")
    r = bench("-p", problems, "--verdicts", write_verdicts(tmp_path / "v.jsonl"), "--json", "-", "-q")
    assert r.exit_code == 0
    assert json.loads(r.stdout)["unevaluated"]["count"] == 1


def test_bad_k_is_a_usage_error(tmp_path):
    problems = write_problems(tmp_path / "problems.jsonl")
    verdicts = write_verdicts(tmp_path / "v.jsonl")
    for bad in ("0", "1,x", "-3", ","):
        r = bench("-p", problems, "--verdicts", verdicts, "--k", bad)
        assert r.exit_code == 2, (bad, r.stderr)
        assert "error:" in r.stderr and "--k" in r.stderr


def test_bad_verdicts_line_exits_3_naming_file_and_line(tmp_path):
    problems = write_problems(tmp_path / "problems.jsonl")
    lines = verdict_lines({"p1": ["accepted", "wrong_answer"]})
    bad = tmp_path / "v.jsonl"
    bad.write_text("\n".join([*lines, lines[0].replace('"p1"', '"gone"').replace("p1-0", "x")]) + "\n")
    r = bench("-p", problems, "--verdicts", bad)
    assert r.exit_code == 3
    assert f"{bad}:3" in r.stderr and "'gone'" in r.stderr
    bad.write_text(lines[0] + "\n" + '{"rollout_id": "r", "problem_id": "p1", "passed": "yes"}\n')
    r = bench("-p", problems, "--verdicts", bad)
    assert r.exit_code == 3 and f"{bad}:2" in r.stderr


def test_mode_flags_that_do_not_fit(tmp_path):
    problems = write_problems(tmp_path / "problems.jsonl")
    assert bench().exit_code == 2
    assert bench("-p", problems).exit_code == 2  # no --verdicts
    assert bench("--plots").exit_code == 2  # no --run-dir
    assert bench("--run-dir", tmp_path).exit_code == 2  # no --plots
    r = bench("--run-dir", tmp_path, "--run-dir", tmp_path / "b", "--plots")
    assert r.exit_code == 2 and "--out-dir" in r.stderr
    assert bench("--run-dir", tmp_path, "--plots").exit_code == 2  # no metrics.jsonl there


def test_verdicts_from_stdin_and_names_that_look_like_markup(tmp_path):
    problems = write_problems(tmp_path / "p.jsonl", [("[/x]", "[weird]", "easy"), ("ok", "[weird]", "easy")])
    stdin = "\n".join(verdict_lines({"ok": ["accepted", "wrong_answer"]})) + "\n"
    r = runner.invoke(app, ["bench", "-p", str(problems), "--verdicts", "-"], input=stdin)
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith("pass@1 all: 50.0% over 1 problems (2 samples), 1 unevaluated")
    assert "[weird]" in r.stderr and "(no verdicts, not counted): 1 of 2 problems: [/x]" in r.stderr
