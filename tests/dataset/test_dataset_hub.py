"""Sources by name (``hf:NAME[@CONFIG][:SPLIT]``): the real ``datasets.load_dataset`` call on
hub-style folders the tests write (data files per split, configs in the README's YAML header),
the same adapters as local files, and the exit-4 message of an offline machine."""

from __future__ import annotations

import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import dataset_rows as own
from mcoder.cli.app import app
from mcoder.dataset.build import build
from mcoder.dataset.collect import hub
from mcoder.dataset.collect.hub import HubSpec
from mcoder.dataset.config import BuildConfig
from mcoder.errors import UsageError
from mcoder.jsonl import read_records
from mcoder.records import Problem

runner = CliRunner()


@pytest.fixture(autouse=True)
def datasets_cache(tmp_path, monkeypatch):
    """load_dataset's cache in the test's folder (not the user's)."""
    import datasets

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")


def hub_folder(root, splits: dict[str, list[dict]], ext: str = "parquet"):
    """A dataset folder laid out as on the hub: data/SPLIT-00000-of-00001.EXT."""
    (root / "data").mkdir(parents=True)
    for split, rows in splits.items():
        path = root / "data" / f"{split}-00000-of-00001.{ext}"
        if ext == "parquet":
            pq.write_table(pa.Table.from_pylist(rows), path)
        else:
            own.write_rows(path, rows)
    return root


def run(tmp_path, source: str, name: str = "out.jsonl"):
    out = tmp_path / name
    tally = build(BuildConfig(sources=[source], out=str(out)))
    return tally, list(read_records(out, Problem))


def test_hub_code_contests_parquet_by_split(tmp_path):
    rows = [own.hub_cc_row(p, i) for i, p in enumerate(own.CONTESTS)]
    folder = hub_folder(tmp_path / "code_contests", {"train": rows[:3], "test": rows[3:]})
    local = tmp_path / "local.parquet"
    pq.write_table(pa.Table.from_pylist(rows[3:]), local)

    tally, got = run(tmp_path, f"hf:{folder}:test")
    _, want = run(tmp_path, str(local), name="local.jsonl")
    assert tally.files[0].format == "codecontests" and tally.files[0].rows == 2
    assert [(p.id, p.question, p.tests, p.reference_solutions) for p in got] == [
        (p.id, p.question, p.tests, p.reference_solutions) for p in want
    ]
    assert got[0].meta["source_file"] == f"hf:{folder}:test" and got[0].meta["source_split"] == "test"

    tally, both = run(tmp_path, f"hf:{folder}", name="all.jsonl")  # every split, in the dataset's order
    assert [p.meta["source_split"] for p in both] == ["train"] * 3 + ["test"] * 2
    assert {p.id for p in both} == {r["name"] for r in rows}


def test_hub_jsonl_rows_derive_ids_from_name_split_and_row(tmp_path):
    folder = hub_folder(tmp_path / "TACO", {"train": [own.taco_row(p) for p in own.STDIN[:3]]}, ext="jsonl")
    tally, got = run(tmp_path, f"hf:{folder}:train[1:]")  # a slice of the split, as datasets reads it
    assert tally.files[0].format == "taco"
    assert [p.id for p in got] == ["TACO/train[1:]/0", "TACO/train[1:]/1"]
    assert [p.tests[0].input for p in got] == [own.STDIN[1].tests[0][0], own.STDIN[2].tests[0][0]]


def test_hub_configs_from_the_readme_header(tmp_path):
    folder = tmp_path / "code_generation"
    for config, problems in (("stdin", own.STDIN[:2]), ("call", own.CALL[:2])):
        (folder / config).mkdir(parents=True)
        own.write_rows(folder / config / "test.jsonl", [own.lcb_row(p, i) for i, p in enumerate(problems)])
    (folder / "README.md").write_text(
        "---\nconfigs:\n"
        "- config_name: stdin\n  data_files:\n  - split: test\n    path: stdin/test.jsonl\n"
        "- config_name: call\n  data_files:\n  - split: test\n    path: call/test.jsonl\n"
        "---\nProblems the tests wrote.\n"
    )
    tally, got = run(tmp_path, f"hf:{folder}@call:test")
    assert tally.files[0].format == "lcb"
    assert [p.fn_name for p in got] == [c.fn for c in own.CALL[:2]] and all(
        p.test_kinds == {"call"} for p in got
    )
    assert len(got[0].tests) == len(own.CALL[0].cases)  # the public test and the compressed private ones


def test_hub_sources_through_the_cli_and_a_finished_rerun(tmp_path):
    folder = hub_folder(tmp_path / "lc", {"test": own.leetcode_rows()}, ext="jsonl")
    out = tmp_path / "o.jsonl"
    args = ["dataset", "build", f"hf:{folder}:test", "--out", str(out)]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.stderr
    assert r.stdout == f"{out}\t{len(own.CALL)}\n" and "format leetcode (detected)" in r.stderr
    r = runner.invoke(app, args)
    assert r.exit_code == 0 and "nothing to do" in r.stderr.replace("\n", " ")


@pytest.mark.parametrize(
    "source, message",
    [
        ("hf:", "cannot read the dataset name"),
        ("hf:name@", "cannot read the dataset name"),
        ("hf:name:", "cannot read the dataset name"),
    ],
)
def test_malformed_names_are_usage_errors(source, message):
    with pytest.raises(UsageError) as e:
        HubSpec.parse(source)
    assert message in e.value.message and "hf:NAME@CONFIG:SPLIT" in e.value.hint


def test_names_parse_into_name_config_and_split():
    assert HubSpec.parse("hf:deepmind/code_contests") == HubSpec("deepmind/code_contests")
    assert HubSpec.parse("hf:open-r1/codeforces@verifiable:train[:100]") == HubSpec(
        "open-r1/codeforces", "verifiable", "train[:100]"
    )
    assert HubSpec.parse("hf:BAAI/TACO@ALL").stem == "TACO-ALL"


def test_an_unknown_split_or_config_exits_2_naming_it(tmp_path):
    folder = hub_folder(tmp_path / "cf", {"train": own.rllm_cf_rows()}, ext="jsonl")
    r = runner.invoke(
        app, ["dataset", "build", f"hf:{folder}:validation", "--out", str(tmp_path / "o.jsonl")]
    )
    assert r.exit_code == 2 and "validation" in r.stderr and "train" in r.stderr
    r = runner.invoke(app, ["dataset", "build", f"hf:{folder}@nope", "--out", str(tmp_path / "o.jsonl")])
    assert r.exit_code == 2 and "nope" in r.stderr
    assert not (tmp_path / "o.jsonl").exists() and not (tmp_path / "o.jsonl.meta.json").exists()


@pytest.mark.heavy
def test_offline_machine_exits_4_naming_the_dataset_and_the_setting(tmp_path):
    """A fresh process, so that datasets reads HF_DATASETS_OFFLINE as it starts."""
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf-home")}
    out = tmp_path / "o.jsonl"
    name = "mcoder-tests/no-such-dataset"
    cmd = [sys.executable, "-m", "mcoder", "dataset", "build", f"hf:{name}:test", "--out", str(out)]
    r = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 4, r.stderr
    assert name in r.stderr and "HF_DATASETS_OFFLINE" in r.stderr and "Traceback" not in r.stderr
    assert not out.exists() and not (tmp_path / "o.jsonl.meta.json").exists()


def test_a_local_loading_script_folder_gets_a_hint_without_a_machine_path(tmp_path):
    """The hint told to `hf download` the local folder, naming its path on this machine."""
    folder = tmp_path / "myset"
    folder.mkdir()
    (folder / "myset.py").write_text("import datasets\n\nclass M(datasets.GeneratorBasedBuilder):\n    pass\n")
    with pytest.raises(UsageError) as e:
        hub.load(f"hf:{folder}")
    assert "loading script" in e.value.message
    assert str(tmp_path) not in e.value.hint and "hf download" not in e.value.hint
