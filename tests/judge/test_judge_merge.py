"""`mcoder judge --shard i/n` then `--merge`: the merged parts equal one unsharded run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import sandbox_or_skip
from mcoder.cli.app import app
from mcoder.judge.stage import Shard

runner = CliRunner()
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "problems"
PER_FILE = 6  # problems taken from each example file: enough for every shard to get work


def invoke(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    """Example problems, their reference solutions (and a wrong program each) as rollouts,
    judged once whole and once as 3 shards."""
    sandbox_or_skip()
    d = tmp_path_factory.mktemp("merge")
    problems = []
    for name in ("stdin.jsonl", "call.jsonl"):
        problems += read_jsonl(EXAMPLES / name)[:PER_FILE]
    rollouts = []
    for p in problems:
        for j, src in enumerate(p["reference_solutions"]):
            rollouts.append(
                {"id": f"{p['id']}/ref{j}", "problem_id": p["id"], "completion": f"```python\n{src}```"}
            )
        rollouts.append(
            {"id": f"{p['id']}/wrong", "problem_id": p["id"], "completion": "```python\nprint(42)\n```"}
        )
    pfile = write_jsonl(d / "problems.jsonl", problems)
    rfile = write_jsonl(d / "rollouts.jsonl", rollouts)
    common = ("-p", pfile, "-r", rfile, "-w", "2", "-q")
    r = invoke("judge", *common, "-o", d / "whole.jsonl")
    assert r.exit_code == 0, r.output
    parts = []
    for i in range(3):
        parts.append(d / f"part{i}.jsonl")
        r = invoke("judge", *common, "--shard", f"{i}/3", "-o", parts[-1])
        assert r.exit_code == 0, r.output
    return d, rfile, parts, rollouts


def comparable(v: dict) -> dict:
    """A verdict without what depends on timing: elapsed time, whether an earlier candidate
    filled the cache, and the stderr tail of a failing call test (the candidate process runs
    on after its first failure, so how many later tests' errors the tail holds is a race)."""
    out = {k: x for k, x in v.items() if k not in ("elapsed_s", "cached")}
    if out.get("first_failure"):
        out["first_failure"] = {k: x for k, x in out["first_failure"].items() if k != "stderr"}
    return out


def test_three_shards_merged_equal_one_unsharded_run(judged):
    d, rfile, parts, rollouts = judged
    assert all(read_jsonl(p) for p in parts), "each shard judged something"
    out = d / "merged.jsonl"
    r = invoke("judge", "--merge", *parts, "--rollouts", rfile, "-o", out)
    assert r.exit_code == 0, r.output
    merged = {v["rollout_id"]: comparable(v) for v in read_jsonl(out)}
    whole = {v["rollout_id"]: comparable(v) for v in read_jsonl(d / "whole.jsonl")}
    assert len(read_jsonl(out)) == len(rollouts) == len(merged)
    assert merged == whole
    statuses = {v["status"] for v in merged.values()}
    assert "accepted" in statuses and "wrong_answer" in statuses  # the comparison saw both kinds


def test_a_rollout_in_two_parts_is_an_error_naming_both(judged, tmp_path):
    _, _rfile, parts, _ = judged
    extra = write_jsonl(tmp_path / "again.jsonl", read_jsonl(parts[1])[:1])
    r = invoke("judge", "--merge", parts[0], parts[1], extra, "-o", tmp_path / "m.jsonl")
    assert r.exit_code == 3
    assert "judged twice" in r.output and "again.jsonl:1" in r.output and "part1.jsonl" in r.output
    assert not (tmp_path / "m.jsonl").exists()


def test_a_missing_shard_is_named(judged, tmp_path):
    _, rfile, parts, _ = judged
    r = invoke("judge", "--merge", parts[0], parts[2], "--rollouts", rfile, "-o", tmp_path / "m.jsonl")
    assert r.exit_code == 3
    assert "have no verdict in the 2 parts" in r.output and "--shard i/n" in r.output
    n_missing = len(read_jsonl(parts[1]))
    assert f"{n_missing} rollouts" in r.output
    assert not (tmp_path / "m.jsonl").exists()


def test_without_rollouts_merge_only_checks_duplicates(judged, tmp_path):
    _, _rfile, parts, _ = judged
    out = tmp_path / "m.jsonl"
    r = invoke("judge", "--merge", parts[0], parts[2], "-o", out)
    assert r.exit_code == 0, r.output
    assert len(read_jsonl(out)) == len(read_jsonl(parts[0])) + len(read_jsonl(parts[2]))


def test_a_verdict_for_an_unknown_rollout_is_an_error(judged, tmp_path):
    _, rfile, parts, _ = judged
    stray = dict(read_jsonl(parts[0])[0], rollout_id="not-a-rollout")
    extra = write_jsonl(tmp_path / "stray.jsonl", [stray])
    r = invoke("judge", "--merge", *parts, extra, "--rollouts", rfile, "-o", tmp_path / "m.jsonl")
    assert r.exit_code == 3
    assert "stray.jsonl:1" in r.output and "not-a-rollout" in r.output


@pytest.mark.parametrize(
    "args, words",
    [
        (["--merge"], "--merge needs"),
        (["x.jsonl"], "without --merge"),
        (["--merge", "a.jsonl", "-p", "p.jsonl"], "no --problems"),
        ([], "needs --problems and --rollouts"),
    ],
)
def test_usage_errors(args, words, tmp_path):
    r = invoke("judge", *args, "-o", tmp_path / "m.jsonl")
    assert r.exit_code == 2
    assert words in r.output


def test_shard_owner_is_a_stable_hash():
    # Pinned: shards judged on different machines, or resumed by a later mcoder version, must
    # agree on the split (Python's hash() of a str would change with every process).
    assert [Shard.owner(f"r{i}", 3) for i in range(12)] == [1, 2, 1, 0, 2, 1, 1, 0, 2, 2, 1, 2]
    owners = [Shard.owner(f"p/{i}", 4) for i in range(400)]
    assert set(owners) == {0, 1, 2, 3} and min(owners.count(k) for k in range(4)) > 60
    assert all(Shard(Shard.owner(x, 5), 5).owns(x) for x in ("a", "b", "c"))
