"""A build over hostile or sloppy source rows: budgets on what a row may expand to, every error
about a row a data error naming it, the writer never handed what it cannot write, ids that
cannot collide. Each test is one defect of an audit of ``dataset build`` (it failed before)."""

from __future__ import annotations

import json
import pickle

import pytest

from dataset_rows import (
    CALL,
    CODEFORCES,
    CONTESTS,
    STDIN,
    billion_laughs,
    compressed_pickle,
    hub_cc_row,
    lcb_row,
    memo_bomb_cases,
    nested_json,
    rllm_cf_row,
    sandboxfusion_lcb_row,
    taco_row,
    write_rows,
    zlib_bomb,
)
from mcoder.dataset.budget import Limits
from mcoder.dataset.build import build
from mcoder.dataset.config import BuildConfig
from mcoder.errors import DataError, UsageError
from mcoder.jsonl import read_records
from mcoder.records import Problem


def run(tmp_path, *sources, limits=None, report=True, **kw):
    out = tmp_path / "out.jsonl"
    cfg = BuildConfig(
        sources=[str(s) for s in sources],
        out=str(out),
        report=str(tmp_path / "report.md") if report else None,
        limits=limits or Limits(),
        **kw,
    )
    tally = build(cfg)
    rep = json.loads((tmp_path / "report.json").read_text()) if report else None
    return tally, list(read_records(out, Problem)), rep


def skipped(rep) -> dict[str, int]:
    """The convert stage's removals by reason."""
    stage = next(s for s in rep["stages"] if s["name"] == "convert")
    return stage["reasons"]


def test_two_same_named_files_in_different_folders_keep_every_problem(tmp_path):
    """H1: ids were stem/row-index, so splitA/codeforces.json and splitB/codeforces.json collided
    row by row and the second file's problems were dropped as duplicates, exit 0."""
    a = [rllm_cf_row(p) for p in CODEFORCES]
    b = [rllm_cf_row(p) for p in reversed(CODEFORCES)]
    for split, rows in (("splitA", a), ("splitB", b)):
        (tmp_path / split).mkdir()
        write_rows(tmp_path / split / "codeforces.json", rows)
    tally, got, _ = run(tmp_path, tmp_path / "splitA", tmp_path / "splitB")
    assert len(got) == len(a) + len(b) and tally.skipped == 0
    assert {p.id for p in got} == {f"split{s}/codeforces/{i}" for s in "AB" for i in range(len(a))}


def test_one_file_keeps_the_ids_it_always_had(tmp_path):
    write_rows(tmp_path / "codeforces.json", [rllm_cf_row(p) for p in CODEFORCES])
    _, got, _ = run(tmp_path, tmp_path / "codeforces.json")
    assert [p.id for p in got] == [f"codeforces/{i}" for i in range(len(CODEFORCES))]


def test_an_id_given_to_two_different_problems_is_an_error_naming_both_rows(tmp_path):
    rows = [lcb_row(STDIN[0], 0), lcb_row(STDIN[1], 0)]  # same question_id, different problems
    write_rows(tmp_path / "lcb.jsonl", rows)
    with pytest.raises(DataError) as e:
        run(tmp_path, tmp_path / "lcb.jsonl", report=False)
    assert e.value.line == 2 and e.value.field == "id" and "lcb.jsonl:1" in e.value.message


def test_the_same_problem_twice_is_set_aside_as_a_duplicate(tmp_path):
    write_rows(tmp_path / "lcb.jsonl", [lcb_row(STDIN[0], 0), lcb_row(STDIN[0], 0)])
    _, got, rep = run(tmp_path, tmp_path / "lcb.jsonl")
    assert len(got) == 1 and skipped(rep) == {"duplicate id": 1}


def test_a_memo_reference_bomb_in_compressed_tests_is_skipped_with_a_warning(tmp_path, capsys):
    """H2: a 1 KB row became a problem with 300,000 tests (615 MB), exit 0, no warning."""
    bomb = lcb_row(STDIN[0], 0) | {"private_test_cases": compressed_pickle(memo_bomb_cases(300_000))}
    assert len(json.dumps(bomb)) < 3000
    write_rows(tmp_path / "lcb.jsonl", [bomb, lcb_row(STDIN[1], 1)])
    _, got, rep = run(tmp_path, tmp_path / "lcb.jsonl")
    assert [p.id for p in got] == ["abc901_a"] and skipped(rep) == {"over budget: tests": 1}
    err = capsys.readouterr().err
    assert "lcb.jsonl:1" in err and "private_test_cases" in err and "tests budget" in err


def test_a_billion_laughs_pickle_is_skipped_at_the_decoded_size_budget(tmp_path, capsys):
    """H3: 527 bytes expanded to 2^40 x 8 characters: minutes and gigabytes, then MemoryError."""
    row = sandboxfusion_lcb_row(STDIN[0], 0) | {"test": compressed_pickle({"input_output": billion_laughs()})}
    write_rows(tmp_path / "sf.jsonl", [row, sandboxfusion_lcb_row(STDIN[1], 1)])
    _, got, rep = run(tmp_path, tmp_path / "sf.jsonl")
    assert len(got) == 1 and skipped(rep) == {"over budget: decoded_size": 1}
    assert "field 'test'" in capsys.readouterr().err


def test_a_zlib_bomb_stops_at_the_decompressed_budget(tmp_path):
    """zlib.decompress had no bound (4 MB of base64 inflated to 3 GiB)."""
    row = lcb_row(STDIN[0], 0) | {"private_test_cases": zlib_bomb(5 << 20)}
    write_rows(tmp_path / "lcb.jsonl", [row, lcb_row(STDIN[1], 1)])
    _, got, rep = run(tmp_path, tmp_path / "lcb.jsonl", limits=Limits(decompressed_bytes=1 << 20))
    assert len(got) == 1 and skipped(rep) == {"over budget: decompressed_bytes": 1}


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(pickle.dumps(ValueError("x")), id="a class"),
        pytest.param(b"\x80\x04K\x01K\x02\x93.", id="stack_global"),
        pytest.param(b"\x80\x04(K\x01R.", id="reduce"),
        pytest.param(b"\x80\x04]\x94h\x00a.", id="a list in itself"),
        pytest.param(b"\x80\x04\x8c\x02ab", id="truncated"),
        pytest.param(b"\x80\x04\x8c\x02\xff\xfe\x94.", id="not utf-8"),
        pytest.param(b"\x80\x04}\x94]\x94K\x01s.", id="a list as a dict key"),
    ],
)
def test_every_pickle_that_is_not_plain_data_is_a_data_error_about_the_row(tmp_path, payload):
    """Pickle errors other than three types escaped as internal errors (exit 1)."""
    import base64
    import zlib

    row = lcb_row(STDIN[0], 0) | {"private_test_cases": base64.b64encode(zlib.compress(payload)).decode()}
    write_rows(tmp_path / "lcb.jsonl", [row])
    with pytest.raises(DataError) as e:
        run(tmp_path, tmp_path / "lcb.jsonl", report=False)
    assert e.value.line == 1 and e.value.field == "private_test_cases"


def test_deep_nesting_in_a_json_text_field_is_over_the_depth_budget(tmp_path):
    """A RecursionError escaped from json.loads (an internal error)."""
    row = lcb_row(STDIN[0], 0) | {"metadata": nested_json(100_000)}
    shallow = lcb_row(STDIN[1], 1) | {"metadata": json.dumps({"x": json.loads(nested_json(100))})}
    write_rows(tmp_path / "lcb.jsonl", [row, shallow, lcb_row(STDIN[2], 2)])
    _, got, rep = run(tmp_path, tmp_path / "lcb.jsonl")
    assert len(got) == 1 and skipped(rep) == {"over budget: depth": 2}


def test_a_deeply_nested_pickle_is_over_the_depth_budget(tmp_path):
    """5.5 KB of pickled nesting crashed the process inside the JSON writer, leaving the lock and
    partial files; now the row stops at the depth budget while it is decoded."""
    import base64
    import zlib

    deep = b"\x80\x04" + b"]" * 3000 + b"a" * 2999 + b"."
    row = lcb_row(STDIN[0], 0) | {"private_test_cases": base64.b64encode(zlib.compress(deep)).decode()}
    write_rows(tmp_path / "lcb.jsonl", [row, lcb_row(STDIN[1], 1)])
    _, got, rep = run(tmp_path, tmp_path / "lcb.jsonl")
    assert len(got) == 1 and skipped(rep) == {"over budget: depth": 1}


def test_a_lone_surrogate_in_a_json_text_field_is_a_data_error_naming_the_field(tmp_path):
    """The writer crashed on the string, naming no row."""
    cases = json.loads(lcb_row(STDIN[0], 0)["public_test_cases"])
    text = json.dumps(cases).replace('"input": "', '"input": "\\ud800', 1)
    write_rows(tmp_path / "lcb.jsonl", [lcb_row(STDIN[0], 0) | {"public_test_cases": text}])
    with pytest.raises(DataError) as e:
        run(tmp_path, tmp_path / "lcb.jsonl", report=False)
    assert e.value.line == 1 and e.value.field == "tests[0].input" and "surrogate" in e.value.message
    assert not (tmp_path / "out.jsonl.part").exists()


def test_an_integer_of_more_digits_than_python_converts_is_over_a_budget(tmp_path):
    """TACO: json.loads raised an internal ValueError past 4,300 digits."""
    io = {"fn_name": "f", "inputs": [[int("9" * 4000)], [1]], "outputs": [[1], [1]]}
    huge = json.dumps(io).replace("9" * 4000, "9" * 5000)
    row = taco_row(CALL[0]) | {"input_output": huge}
    write_rows(tmp_path / "taco.jsonl", [row, taco_row(CALL[1]) | {"input_output": json.dumps(io)}])
    _, got, rep = run(tmp_path, tmp_path / "taco.jsonl", format="taco")
    assert len(got) == 1 and skipped(rep) == {"over budget: int_digits": 1}
    assert got[0].tests[0].input == "9" * 4000


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_nan_and_infinity_in_json_text_are_data_errors_not_written(tmp_path, text):
    """inf and NaN were written as non-standard JSON (Infinity, NaN) into call tests."""
    io = json.dumps({"fn_name": "f", "inputs": [[1]], "outputs": [[2]]}).replace("2", text)
    write_rows(tmp_path / "taco.jsonl", [taco_row(CALL[0]) | {"input_output": io}])
    with pytest.raises(DataError) as e:
        run(tmp_path, tmp_path / "taco.jsonl", format="taco", report=False)
    assert e.value.field == "input_output"


@pytest.mark.parametrize(
    "change",
    [
        {"time_limit": "2 seconds"},
        {"time_limit": {"seconds": "2"}},
        {"solutions": ["print(1)"]},
        {"solutions": {"language": 3, "solution": "x"}},
        {"difficulty": [1]},
        {"source": {"a": 1}},
        {"memory_limit_bytes": "256MB"},
        {"cf_rating": [800]},
        {"name": ["a"]},
        {"public_tests": ["1"]},
    ],
    ids=str,
)
def test_codecontests_hub_rows_with_other_field_types_are_data_errors(tmp_path, change):
    """These raised AttributeError or TypeError (internal errors)."""
    write_rows(tmp_path / "cc.jsonl", [hub_cc_row(CONTESTS[0], 0) | change])
    with pytest.raises(DataError) as e:
        run(tmp_path, tmp_path / "cc.jsonl", report=False)
    assert e.value.line == 1 and e.value.field


@pytest.mark.parametrize("bad_id", ["", "  "])
def test_an_empty_id_is_refused(tmp_path, bad_id):
    write_rows(tmp_path / "lcb.jsonl", [lcb_row(STDIN[0], 0) | {"question_id": bad_id}])
    with pytest.raises(DataError) as e:
        run(tmp_path, tmp_path / "lcb.jsonl", report=False)
    assert e.value.field == "question_id"


def test_a_line_over_the_row_budget_is_skipped_unread_and_the_rest_is_read(tmp_path, capsys):
    """A valid 300 MB line under a memory cap was reported as "invalid JSON"; now a line over
    the row budget is passed over in bounded pieces and counted."""
    long_row = lcb_row(STDIN[0], 0) | {"question_content": "x" * 50_000}
    write_rows(tmp_path / "lcb.jsonl", [long_row, lcb_row(STDIN[1], 1), lcb_row(STDIN[2], 2)])
    _, got, rep = run(tmp_path, tmp_path / "lcb.jsonl", limits=Limits(row_bytes=10_000))
    assert len(got) == 2 and skipped(rep) == {"over budget: row_bytes": 1}
    assert "lcb.jsonl:1" in capsys.readouterr().err


def test_a_gzip_bomb_as_a_json_file_stops_at_the_file_budget(tmp_path):
    """A .json(.gz) file is read whole: gzip expanded it without a bound."""
    import gzip

    with gzip.open(tmp_path / "rows.json.gz", "wb") as f:
        f.write(b"[" + b" " * (3 << 20) + b"]")
    with pytest.raises(DataError) as e:
        run(tmp_path, tmp_path / "rows.json.gz", limits=Limits(json_file_bytes=1 << 20), report=False)
    assert "json_file_bytes" in e.value.message


@pytest.mark.parametrize(
    ("name", "content"),
    [("rows.parquet", b"not parquet"), ("rows.jsonl.gz", b"\x1f\x8b\x08\x00cut"), ("rows.json.gz", b"plain")],
)
def test_a_broken_file_is_a_data_error_naming_it(tmp_path, name, content):
    """A corrupt parquet or a cut gzip file ended in an internal error (ArrowInvalid, EOFError)."""
    (tmp_path / name).write_bytes(content)
    with pytest.raises(DataError) as e:
        run(tmp_path, tmp_path / name, report=False)
    assert name in e.value.message and "cannot read the file" in e.value.message


def test_a_problem_over_the_test_size_budget_is_skipped(tmp_path):
    write_rows(tmp_path / "lcb.jsonl", [lcb_row(STDIN[0], 0) | {"question_id": "big"}, lcb_row(STDIN[1], 1)])
    big = json.loads((tmp_path / "lcb.jsonl").read_text().splitlines()[0])
    big["public_test_cases"] = json.dumps([{"input": "1" * 5000, "output": "1", "testtype": "stdin"}])
    write_rows(tmp_path / "lcb.jsonl", [big, lcb_row(STDIN[1], 1)])
    _, got, rep = run(tmp_path, tmp_path / "lcb.jsonl", limits=Limits(test_bytes=1000))
    assert len(got) == 1 and skipped(rep) == {"over budget: test_bytes": 1}


def test_an_internal_error_leaves_no_empty_part_or_settings_file(tmp_path, monkeypatch):
    """An internal error left an empty .part and .meta.json (only bad data cleaned up)."""
    from mcoder.dataset import build as build_module

    def broken(*a, **k):  # a fake: an internal error cannot be caused on purpose once fixed
        raise RuntimeError("a bug")

    monkeypatch.setattr(build_module, "_converted", broken)
    write_rows(tmp_path / "cf.json", [rllm_cf_row(p) for p in CODEFORCES])
    with pytest.raises(RuntimeError):
        run(tmp_path, tmp_path / "cf.json", report=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cf.json"]


def test_limit_option_values_are_checked():
    assert Limits.parse(["tests=5", "row-bytes=100"]) == Limits(tests=5, row_bytes=100)
    for bad in ("tests", "tests=0", "nope=3", "tests=x"):
        with pytest.raises(UsageError):
            Limits.parse([bad])


@pytest.mark.parametrize("points", [[[1.0, 1.5]], [[1.0, -0.1]], [[1.0, True]]], ids=str)
def test_a_calibration_with_pass_rates_outside_0_1_is_refused(tmp_path, points):
    """Pass rates outside [0, 1] (and booleans) were accepted as a calibration."""
    from mcoder.dataset.difficulty.calibrate import Calibration

    path = tmp_path / "cal.json"
    path.write_text(json.dumps({"points": [[0.0, 0.5], *points], "dimensions": []}) + "\n")
    with pytest.raises(DataError) as e:
        Calibration.read(str(path))
    assert e.value.field == "points"


@pytest.mark.slow
def test_a_valid_line_too_big_for_the_memory_left_is_reported_as_such_not_as_invalid_json(tmp_path):
    """A valid 300 MB line under a memory cap was reported as "invalid JSON"."""
    import subprocess
    import sys

    row = lcb_row(STDIN[0], 0)
    line = json.dumps(row | {"question_title": "x" * (200 << 20)})
    (tmp_path / "big.jsonl").write_text(line + "\n")
    script = (
        "import resource, sys\n"
        "from mcoder.cli.app import main\n"
        "used = int(open('/proc/self/statm').read().split()[0]) * resource.getpagesize()\n"
        "resource.setrlimit(resource.RLIMIT_AS, (used + (450 << 20), resource.RLIM_INFINITY))\n"
        "sys.argv = ['mcoder', 'dataset', 'build', sys.argv[1], '--out', sys.argv[2], '--quiet']\n"
        "main()\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "big.jsonl"), str(tmp_path / "out.jsonl")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert r.returncode == 3, r.stderr
    assert "not enough memory to read this row" in r.stderr and "invalid JSON" not in r.stderr
