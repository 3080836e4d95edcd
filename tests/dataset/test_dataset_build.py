"""The build pipeline: inputs of every container (parquet, save_to_disk folders, folders of files,
gzip), format detection, ids, skips, filters, determinism and the mcoder-format round trip, on the
project's own rows and the third-party sets (``problem_sets``)."""

import gzip
import json
import shutil

import pytest

from mcoder.dataset.build import build
from mcoder.dataset.config import BuildConfig
from mcoder.dataset.filter.steps import FilterConfig
from mcoder.errors import DataError, UsageError
from mcoder.jsonl import read_records
from mcoder.records import Problem, to_dict
from test_dataset_adapters import _as_lcb_row


def run(tmp_path, *sources, name="out.jsonl", **kw):
    out = tmp_path / name
    tally = build(BuildConfig(sources=[str(s) for s in sources], out=str(out), **kw))
    return tally, list(read_records(out, Problem))


def test_parquet_and_saved_datasets_give_the_same_problems_as_json(problem_sets, tmp_path):
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    raw = json.loads((problem_sets / "rllm_leetcode_test.json").read_text())[:20]
    pq.write_table(pa.Table.from_pylist(raw), tmp_path / "lc.parquet")
    datasets.Dataset.from_list(raw).save_to_disk(str(tmp_path / "lc_saved"))
    datasets.DatasetDict({"test": datasets.Dataset.from_list(raw)}).save_to_disk(str(tmp_path / "lc_dict"))
    (tmp_path / "lc.json").write_text(json.dumps(raw))

    _, from_json = run(tmp_path, tmp_path / "lc.json", name="a.jsonl")
    for src in ("lc.parquet", "lc_saved", "lc_dict"):
        tally, got = run(tmp_path, tmp_path / src, name=f"{src}.out.jsonl")
        assert tally.files[0].format == "leetcode" and tally.converted == len(raw)
        assert [(p.question, p.tests, p.fn_name, p.reference_solutions) for p in got] == [
            (p.question, p.tests, p.fn_name, p.reference_solutions) for p in from_json
        ]
    _, got = run(tmp_path, tmp_path / "lc_dict", name="d.jsonl")
    assert got[3].id == "lc_dict/test/3" and got[3].meta["source_split"] == "test"


def test_a_folder_of_files_is_read_in_sorted_order_and_a_readme_is_passed_over(problem_sets, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(problem_sets / "sandboxfusion_lcb_v1.jsonl", folder / "b.jsonl")
    with gzip.open(folder / "a.json.gz", "wt") as f:
        f.write((problem_sets / "rllm_codeforces.json").read_text())
    (folder / "README.md").write_text("not data")
    tally, got = run(tmp_path, folder)
    assert [f.format for f in tally.files] == ["codeforces", "lcb"]
    assert tally.ignored and tally.ignored[0][0].endswith("README.md")
    assert got[0].id == "a/0" and got[-1].source == "livecodebench"
    cf_rows = len(json.loads((problem_sets / "rllm_codeforces.json").read_text()))
    lcb_rows = len((problem_sets / "sandboxfusion_lcb_v1.jsonl").read_text().splitlines())
    assert tally.files[0].rows == cf_rows and tally.files[1].converted == lcb_rows


def test_same_inputs_give_the_same_bytes(problem_sets, tmp_path):
    srcs = [problem_sets / "sandboxfusion_code_contests.jsonl", problem_sets / "rllm_leetcode_test.json"]
    run(tmp_path, *srcs, name="one.jsonl")
    run(tmp_path, *srcs, name="two.jsonl")
    assert (tmp_path / "one.jsonl").read_bytes() == (tmp_path / "two.jsonl").read_bytes()


def test_mcoder_format_round_trip(problem_sets, tmp_path):
    _, first = run(
        tmp_path, problem_sets / "sandboxfusion_lcb_v1.jsonl", problem_sets / "rllm_leetcode_test.json"
    )
    tally, again = run(tmp_path, tmp_path / "out.jsonl", name="again.jsonl")
    assert tally.files[0].format == "mcoder"
    assert [to_dict(p) for p in again] == [to_dict(p) for p in first]
    assert (tmp_path / "again.jsonl").read_bytes() == (tmp_path / "out.jsonl").read_bytes()


def test_a_broken_mcoder_line_is_reported_by_its_number_with_its_field(problem_sets, tmp_path):
    run(tmp_path, problem_sets / "rllm_codeforces.json")
    lines = (tmp_path / "out.jsonl").read_text().splitlines()
    bad = min(57, len(lines) - 1)  # line 57 of the real set; the last but one of a short one
    record = json.loads(lines[bad - 1])
    record["tests"][0]["kind"] = "sdtin"
    lines[bad - 1] = json.dumps(record)
    (tmp_path / "broken.jsonl").write_text("\n".join(lines[:80]) + "\n")
    with pytest.raises(DataError) as e:
        run(tmp_path, tmp_path / "broken.jsonl", name="x.jsonl")
    assert e.value.line == bad and e.value.field == "tests[0].kind"
    assert f"broken.jsonl:{bad}, field 'tests[0].kind'" in e.value.message
    # What was converted before the bad line stays in the part file for a rerun.
    assert len((tmp_path / "x.jsonl.part").read_text().splitlines()) == bad - 1


def test_a_malformed_json_list_row_names_its_index_and_field(problem_sets, tmp_path):
    raw = json.loads((problem_sets / "rllm_codeforces.json").read_text())[:5]
    raw[3]["tests"] = [{"input": "1"}]
    (tmp_path / "cf.json").write_text(json.dumps(raw))
    with pytest.raises(DataError) as e:
        run(tmp_path, tmp_path / "cf.json")
    assert "cf.json row 3" in e.value.message and e.value.field == "tests[0]"


def test_unknown_shapes_and_formats_say_what_exists(tmp_path):
    (tmp_path / "odd.jsonl").write_text('{"foo": 1, "bar": 2}\n')
    with pytest.raises(DataError) as e:
        run(tmp_path, tmp_path / "odd.jsonl")
    assert "odd.jsonl:1" in e.value.message and "foo, bar" in e.value.message
    assert "codecontests" in e.value.hint and "humaneval" in e.value.hint
    with pytest.raises(UsageError) as u:
        BuildConfig(sources=["x"], format="kaggle")
    assert "lcb" in u.value.hint and "mcoder" in u.value.hint
    with pytest.raises(UsageError):
        BuildConfig(sources=[], format="lcb")


def test_skips_are_counted_with_their_reason(problem_sets, tmp_path):
    raw = json.loads((problem_sets / "rllm_code_contests.json").read_text())[:6]
    raw[1]["tests"] = {"inputs": [], "outputs": []}
    raw[2]["tests"]["outputs"] = raw[2]["tests"]["outputs"] + ["extra"]
    (tmp_path / "cc.json").write_text(json.dumps(raw))
    tally, got = run(tmp_path, tmp_path / "cc.json", tmp_path / "cc.json", filter=FilterConfig(min_tests=2))
    reasons = {r: n for (_, r), n in tally.skips.items()}
    # Both copies of the file skip rows 1 and 2; the second copy's other rows repeat ids.
    assert reasons["no tests"] == 2 and reasons["inputs and outputs differ in count"] == 2
    assert reasons["duplicate id"] == len(raw) - 2
    assert sum(n for r, n in reasons.items() if r.startswith("fewer than 2")) == sum(
        1
        for r in raw
        if 0 < len(r["tests"]["inputs"]) < 2 and len(r["tests"]["inputs"]) == len(r["tests"]["outputs"])
    )
    assert all(len(p.tests) >= 2 for p in got)
    for f in tally.files:
        assert f.rows == f.converted + f.skipped


def test_after_keeps_dated_problems_from_that_day(problem_sets, tmp_path):
    rows = [
        json.loads(line) for line in (problem_sets / "sandboxfusion_lcb_v1.jsonl").read_text().splitlines()
    ]
    lcb = [_as_lcb_row(r, compressed=True) for r in rows]
    lcb[0]["contest_date"] = "2023-01-01T00:00:00"
    lcb[1]["contest_date"] = None
    (tmp_path / "lcb.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lcb))
    tally, got = run(tmp_path, tmp_path / "lcb.jsonl", filter=FilterConfig(after="2023-05-01"))
    assert [p.date for p in got] == ["2023-08-21"] * (len(lcb) - 2)
    assert {r for (_, r) in tally.skips} == {"dated before 2023-05-01 (--after)", "no date (--after)"}


def test_a_link_loop_is_read_once(tmp_path):
    """A folder holding a link to itself: before, each file was read again at every depth the
    link allowed (41 reads of one file), every copy set aside as a duplicate."""
    from pathlib import Path

    from mcoder.dataset.collect.sources import expand

    examples = Path(__file__).resolve().parents[2] / "examples" / "problems" / "stdin.jsonl"
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(examples, data / "a.jsonl")
    (data / "loop").symlink_to(data)
    sources, ignored = expand([str(data)])
    assert [s.path for s in sources] == [str(data / "a.jsonl")]
    assert ignored == [(str(data / "loop"), f"already read as {data} (a link to a folder taken before)")]
    tally, problems = run(tmp_path, data)
    rows = sum(1 for line in examples.read_text().splitlines() if line.strip())
    assert tally.problems == rows == len(problems)


def test_a_key_given_twice_in_a_row_is_a_data_error_naming_it(tmp_path):
    """A row with two "question"s (or two "tests"): JSON readers differ on which wins, and
    orjson kept the last one silently."""
    row = '{"id": "a", "source": "s", "question": "Print 1.", "tests": [{"input": "", "output": "1\\n"}], "schema": 1'
    (tmp_path / "rows.jsonl").write_text(row + "}\n" + row + ', "question": "Print 2."}\n')
    with pytest.raises(DataError) as e:
        run(tmp_path, tmp_path / "rows.jsonl")
    assert e.value.message.startswith(f"{tmp_path / 'rows.jsonl'}:2, field 'question': key 'question' is given twice")
    (tmp_path / "rows.json").write_text("[\n" + row + "},\n" + row + ',\n "tests": []}\n]\n')
    with pytest.raises(DataError) as e:
        run(tmp_path, tmp_path / "rows.json", name="again.jsonl")
    assert e.value.message == f"{tmp_path / 'rows.json'} row 1, field 'tests': key 'tests' is given twice in one object"


def test_a_problem_whose_every_test_expects_no_output_is_set_aside(tmp_path):
    """Empty input and empty output in every test: a program that prints nothing passes it."""
    rows = [{"id": "silent", "source": "s", "question": "Do nothing.", "schema": 1,
             "tests": [{"input": "", "output": ""}, {"input": "\n", "output": "  \n"}]},
            {"id": "real", "source": "s", "question": "Print 1.", "schema": 1,
             "tests": [{"input": "", "output": ""}, {"input": "", "output": "1\n"}]}]  # fmt: skip
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    tally, problems = run(tmp_path, tmp_path / "rows.jsonl")
    assert [p.id for p in problems] == ["real"]
    assert {r for (_, r), n in tally.skips.items()} == {
        "every test expects no output (a program that prints nothing would pass)"
    }


def test_a_minimal_mcoder_row_without_schema_is_read_as_mcoders(tmp_path):
    """The row `mcoder judge` reads (id, source, question, tests): dataset build could not tell
    its format without `schema`."""
    row = {"id": "a", "source": "s", "question": "Print 1.", "tests": [{"input": "", "output": "1\n"}]}
    (tmp_path / "rows.jsonl").write_text(json.dumps(row) + "\n")
    tally, problems = run(tmp_path, tmp_path / "rows.jsonl")
    assert [p.id for p in problems] == ["a"] and tally.files[0].format == "mcoder"
