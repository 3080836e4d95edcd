"""`mcoder rollout` through the CLI: records, resume after a kill, temperature flags, exit codes."""

from __future__ import annotations

import dataclasses
import importlib.util
import json

import orjson
import pytest
from tests.rollout_models import one_torch_thread, problems
from typer.testing import CliRunner

from mcoder.cli.app import app
from mcoder.jsonl import read_records
from mcoder.records import Rollout

runner = CliRunner()
_one_thread = pytest.fixture(autouse=True, scope="module")(one_torch_thread)


@pytest.fixture
def src(tmp_path):
    path = tmp_path / "problems.jsonl"
    path.write_bytes(b"".join(orjson.dumps(dataclasses.asdict(p)) + b"\n" for p in problems(3)))
    return path


def rollout(tiny_model, src, out, *extra):
    args = ["rollout", "--problems", str(src), "--model", str(tiny_model), "--out", str(out),
            "--n", "4", "--max-tokens", "8", "--engine", "hf", "--seed", "3", *extra]
    return runner.invoke(app, args)


def test_writes_n_rollouts_per_problem_and_prints_the_path(tiny_model, src, tmp_path):
    out = tmp_path / "r.jsonl"
    res = rollout(tiny_model, src, out)
    assert res.exit_code == 0, res.output
    assert res.stdout.strip() == str(out)
    recs = list(read_records(out, Rollout))
    assert [r.id for r in recs] == [f"{p.id}/0/{j}" for p in problems(3) for j in range(4)]
    for r in recs:
        assert r.temperature == 1.0 and r.seed == 3 and r.model == str(tiny_model) and r.policy_version == 0
        assert r.finish_reason in ("stop", "length")
        assert len(r.completion_token_ids) == len(r.sampling_logprobs) <= 8
    assert "rollout summary" in res.stderr and "truncated share" in res.stderr
    assert not (tmp_path / "r.jsonl.part").exists()


def test_resume_after_a_kill_completes_the_same_samples(tiny_model, src, tmp_path):
    full = tmp_path / "full.jsonl"
    assert rollout(tiny_model, src, full).exit_code == 0
    lines = full.read_bytes().splitlines(keepends=True)
    killed = tmp_path / "killed.jsonl"
    (tmp_path / "killed.jsonl.part").write_bytes(b"".join(lines[:5]) + lines[5][:30])  # torn 6th line
    meta = json.loads((tmp_path / "full.jsonl.meta.json").read_text())  # as a killed run leaves it
    (tmp_path / "killed.jsonl.meta.json").write_text(json.dumps({**meta, "finished": None}))
    res = rollout(tiny_model, src, killed)
    assert res.exit_code == 0, res.output
    assert "resuming" in res.stderr
    a, b = list(read_records(full, Rollout)), list(read_records(killed, Rollout))
    assert [r.id for r in a] == [r.id for r in b]
    assert [r.completion_token_ids for r in a] == [r.completion_token_ids for r in b]
    for x, y in zip(a, b):  # other batches -> other padding -> float rounding only
        assert max(abs(p - q) for p, q in zip(x.sampling_logprobs, y.sampling_logprobs)) < 1e-4


def test_a_finished_output_is_not_sampled_again_unless_overwritten(tiny_model, src, tmp_path):
    out = tmp_path / "r.jsonl"
    assert rollout(tiny_model, src, out, "--limit", "2").exit_code == 0
    before = out.read_bytes()
    assert len(before.splitlines()) == 8
    res = rollout(tiny_model, src, out, "--limit", "2")  # the same settings and inputs: nothing to do
    assert res.exit_code == 0 and "already finished" in res.stderr and out.read_bytes() == before
    res = rollout(tiny_model, src, out, "--overwrite", "--limit", "1")
    assert res.exit_code == 0 and len(out.read_text().splitlines()) == 4


@pytest.mark.parametrize(
    "changed, words",
    [
        (["--temperature", "0.7"], 'temperature null -> "0.7"'),
        (["--max-tokens", "9"], "max_tokens 8 -> 9"),
        (["--seed", "4"], "seed 3 -> 4"),
        (["--n", "2"], "n 4 -> 2"),
    ],
)
def test_a_rerun_with_other_settings_is_refused_listing_them(tiny_model, src, tmp_path, changed, words):
    out = tmp_path / "r.jsonl"
    assert rollout(tiny_model, src, out, "--limit", "1").exit_code == 0
    before = out.read_bytes()
    res = rollout(tiny_model, src, out, "--limit", "1", *changed)
    assert res.exit_code == 2 and words in res.stderr and "--overwrite" in res.stderr, res.output
    assert out.read_bytes() == before


def test_a_rerun_with_another_model_or_problems_is_refused(tiny_model, src, tmp_path):
    out = tmp_path / "r.jsonl"
    assert rollout(tiny_model, src, out, "--limit", "1").exit_code == 0
    original = src.read_text()
    src.write_text(original.replace("squared", "cubed"))
    res = rollout(tiny_model, src, out, "--limit", "1")
    assert res.exit_code == 2 and "input problems changed" in res.stderr, res.output
    src.write_text(original)
    other = tmp_path / "model-copy"
    other.mkdir()
    for f in tiny_model.iterdir():
        (other / f.name).write_bytes(f.read_bytes())
    res = rollout(other, src, out, "--limit", "1")  # a copy is the same model: nothing to do
    assert res.exit_code == 0 and "nothing to do" in res.stderr, res.output
    (other / "config.json").write_text((other / "config.json").read_text() + " ")
    res = rollout(other, src, out, "--limit", "1")
    assert res.exit_code == 2 and "input model changed" in res.stderr, res.output


def test_temperature_auto_prints_the_table_and_records_the_choice(tiny_model, src, tmp_path):
    out = tmp_path / "r.jsonl"
    res = rollout(tiny_model, src, out, "--temperature", "auto", "--temperature-candidates", "0.6,1.2",
                  "--probe-problems", "2", "--diversity-target", "0.5")
    assert res.exit_code == 0, res.output
    assert "D(T)" in res.stderr
    choice = json.loads((tmp_path / "r.jsonl.temperature.json").read_text())
    assert [t for t, _ in choice["table"]] == [0.6, 1.2] and choice["target"] == 0.5
    assert {r.temperature for r in read_records(out, Rollout)} == {choice["temperature"]}
    out.unlink()  # made again with the same flags: the recorded choice is reused
    res = rollout(tiny_model, src, out, "--temperature", "auto", "--temperature-candidates", "0.6,1.2",
                  "--probe-problems", "2", "--diversity-target", "0.5")
    assert res.exit_code == 0 and "chosen earlier" in res.stderr, res.output


def test_schedule_gives_the_stage_temperature(tiny_model, src, tmp_path):
    out = tmp_path / "r.jsonl"
    res = rollout(tiny_model, src, out, "--temperature-schedule", "0.6@0,1.3@5", "--step", "7", "--limit", "1")
    assert res.exit_code == 0, res.output
    assert {r.temperature for r in read_records(out, Rollout)} == {1.3}


@pytest.mark.parametrize(
    "extra, code, words",
    [
        (["--temperature", "hot"], 2, "not a number"),
        (["--n", "0"], 2, "--n 0: is out of range: it must be >= 1"),
        (["--temperature", "1.0", "--temperature-schedule", "0.6@0"], 2, "both given"),
        (["--temperature-schedule", "0.6@3"], 2, "step 0"),
        (["--engine", "tpu"], 2, "unknown --engine"),
        (["--long-prompts", "truncate"], 2, "unknown --long-prompts"),
    ],
)
def test_bad_flags_exit_2(tiny_model, src, tmp_path, extra, code, words):
    res = rollout(tiny_model, src, tmp_path / "r.jsonl", *extra)
    assert res.exit_code == code and words in res.stderr, res.output


def test_missing_inputs_exit_2(tiny_model, src, tmp_path):
    res = rollout(tiny_model, tmp_path / "nope.jsonl", tmp_path / "r.jsonl")
    assert res.exit_code == 2 and "no such file" in res.stderr
    res = rollout(tmp_path, src, tmp_path / "r.jsonl")
    assert res.exit_code == 2 and "no config.json" in res.stderr
    res = rollout(tiny_model, src, tmp_path / "r.jsonl", "--adapter", str(tmp_path))
    assert res.exit_code == 2 and "adapter_config.json" in res.stderr


def test_bad_problem_data_exits_3_naming_file_and_line(tiny_model, src, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(src.read_text() + '{"id": "x", "source": "t", "question": 5, "tests": []}\n')
    res = rollout(tiny_model, bad, tmp_path / "r.jsonl")
    assert res.exit_code == 3
    assert f"{bad}:4" in res.stderr and "question" in res.stderr


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed here")
def test_engine_vllm_without_vllm_exits_4_with_an_install_hint(tiny_model, src, tmp_path):
    res = rollout(tiny_model, src, tmp_path / "r.jsonl", "--engine", "vllm")
    assert res.exit_code == 4
    assert "not installed" in res.stderr and "pip install" in res.stderr


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="test_rollout_vllm covers auto -> vllm")
def test_engine_auto_says_which_engine(tiny_model, src, tmp_path):
    res = rollout(tiny_model, src, tmp_path / "r.jsonl", "--engine", "auto", "--limit", "1")
    assert res.exit_code == 0 and "engine: hf (vllm is not installed)" in res.stderr


# ---- issue 15: prompts measured (row 4), input checked before the model (row 9)


@pytest.fixture
def with_long(tmp_path):
    """The three problems, and one whose prompt alone is longer than the tiny model's context."""
    path = tmp_path / "long.jsonl"
    long = dataclasses.replace(problems(1)[0], id="huge", question="xq zv " * 2500)
    rows = [problems(3)[0], long, *problems(3)[1:]]
    path.write_bytes(b"".join(orjson.dumps(dataclasses.asdict(p)) + b"\n" for p in rows))
    return path


def test_a_prompt_longer_than_the_context_is_skipped_counted_and_named(tiny_model, with_long, tmp_path):
    out = tmp_path / "r.jsonl"
    res = rollout(tiny_model, with_long, out)
    assert res.exit_code == 0, res.output
    assert {r.problem_id for r in read_records(out, Rollout)} == {p.id for p in problems(3)}
    assert "prompts too long (skipped)" in res.stderr and "huge" in res.stderr
    assert "1 problems skipped" in res.stderr and "context of 2048" in res.stderr


def test_long_prompts_error_refuses_before_sampling(tiny_model, with_long, tmp_path):
    out = tmp_path / "r.jsonl"
    res = rollout(tiny_model, with_long, out, "--long-prompts", "error")
    assert res.exit_code == 3, res.output
    assert f"{with_long}:2" in res.stderr and "'huge'" in res.stderr and "--long-prompts skip" in res.stderr
    assert not out.exists() and not (tmp_path / "r.jsonl.part").exists()


def test_max_tokens_beyond_the_context_is_a_usage_error(tiny_model, src, tmp_path):
    res = rollout(tiny_model, src, tmp_path / "r.jsonl", "--max-tokens", "4096")
    assert res.exit_code == 2 and "context is 2048" in res.stderr


def test_empty_problems_exit_3_before_any_model_is_loaded(tiny_model, tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    res = rollout(tiny_model, empty, tmp_path / "r.jsonl")
    assert res.exit_code == 3 and f"{empty}: no problems in the file" in res.stderr
    assert "engine:" not in res.stderr and not (tmp_path / "r.jsonl.part").exists()


def test_duplicate_problem_ids_name_the_line_before_any_model_is_loaded(tiny_model, src, tmp_path):
    dup = tmp_path / "dup.jsonl"
    dup.write_text(src.read_text() + src.read_text().splitlines(keepends=True)[1])
    res = rollout(tiny_model, dup, tmp_path / "r.jsonl")
    assert res.exit_code == 3 and f"{dup}:4" in res.stderr and "first on line 2" in res.stderr


def test_problems_from_stdin_are_read_once_and_sampled(tiny_model, src, tmp_path):
    out = tmp_path / "r.jsonl"
    args = ["rollout", "-p", "-", "-m", str(tiny_model), "-o", str(out), "--n", "2", "--max-tokens", "4",
            "--engine", "hf", "-q"]  # fmt: skip
    res = runner.invoke(app, args, input=src.read_text())
    assert res.exit_code == 0, res.output
    assert len(list(read_records(out, Rollout))) == 6


def test_out_naming_the_problems_file_is_refused(tiny_model, src):
    before = src.read_bytes()
    res = rollout(tiny_model, src, src)
    assert res.exit_code == 2 and "is also the problems input" in res.stderr
    assert src.read_bytes() == before


def test_summary_diversity_is_the_batch_mean_added_up_call_by_call(tiny_model, src, tmp_path):
    from mcoder.rollout.config import RolloutConfig
    from mcoder.rollout.diversity import batch_diversity
    from mcoder.rollout.stage import run_rollout

    out = tmp_path / "r.jsonl"
    cfg = RolloutConfig(problems=src, model=str(tiny_model), out=out, n=4, max_tokens=8, engine="hf", seed=3,
                        batch_size=4, quiet=True)  # fmt: skip  (one problem per engine call)
    summary = run_rollout(cfg)
    assert summary.diversity == pytest.approx(batch_diversity(read_records(out, Rollout)))
    assert summary.problems == 3 and summary.samples == 12


def test_temperature_auto_leaves_a_record_file_it_did_not_write_alone(tiny_model, src, tmp_path):
    """OUT.temperature.json goes through the output guard like OUT: a file of the user's at that
    name is neither read as a choice nor replaced (before, it was read, or overwritten)."""
    out = tmp_path / "r.jsonl"
    theirs = tmp_path / "r.jsonl.temperature.json"
    theirs.write_text('{"temperature": 9.0, "table": []}\n')
    res = rollout(tiny_model, src, out, "--temperature", "auto", "--temperature-candidates", "0.6,1.2",
                  "--probe-problems", "2", "--diversity-target", "0.5")
    assert res.exit_code == 2 and "mcoder did not write it" in res.stderr, res.output
    assert theirs.read_text() == '{"temperature": 9.0, "table": []}\n'


def test_the_temperature_is_parsed_once_and_saved_as_its_text():
    """A temperature enters as text or a number and is parsed where the config is made (a bad one
    refused there); it is saved, compared and read back as the text it was given, so a run's
    RUN/config.json and an output's settings are the same as before it was typed."""
    from mcoder.config import from_dict
    from mcoder.errors import UsageError
    from mcoder.loop.config import LoopConfig
    from mcoder.rollout.sampling import SamplingConfig
    from mcoder.rollout.temperature_rules import TemperatureSpec

    staged = SamplingConfig(temperature="0.6@0,1.2@140")
    assert isinstance(staged.temperature, TemperatureSpec) and staged.temperature.schedule.at(140) == 1.2
    assert SamplingConfig(temperature=0.7).temperature.fixed == 0.7
    assert SamplingConfig(temperature="auto").spec.auto and SamplingConfig().spec.fixed == 1.0
    with pytest.raises(UsageError, match="not a number"):
        SamplingConfig(temperature="hot")
    saved = json.loads(json.dumps(dataclasses.asdict(staged)))
    assert saved["temperature"] == "0.6@0,1.2@140" and orjson.dumps(staged.temperature) == b'"0.6@0,1.2@140"'
    back = from_dict(SamplingConfig, saved)
    assert back == staged and back.temperature.schedule == staged.temperature.schedule
    run = LoopConfig(model="m", problems="p.jsonl", run_dir="r", sampling=SamplingConfig(temperature="auto"))
    assert json.loads(run.to_json())["sampling"]["temperature"] == "auto"
    # set after construction (as a command may), it is parsed when the config is validated
    later = SamplingConfig()
    later.temperature = "0.9"
    assert later.validate().temperature.fixed == 0.9 and isinstance(later.temperature, TemperatureSpec)


def test_temperature_candidates_are_given_as_text_and_kept_as_a_tuple(tiny_model, src, tmp_path):
    """--temperature-candidates START:STOP:STEP or a,b,c: the config parses it (same result as before)."""
    import typer.main

    from mcoder.cli.rollout import make_config

    command = typer.main.get_command(app).commands["rollout"]  # type: ignore[attr-defined]
    base = ["-p", "p.jsonl", "-m", "m", "-o", "o.jsonl"]
    cfg = make_config(command.make_context("rollout", [*base, "--temperature-candidates", "0.6:1.0:0.2"]).params)
    assert cfg.temperature_candidates == (0.6, 0.8, 1.0)
    cfg = make_config(command.make_context("rollout", [*base, "--temperature-candidates", "0.5,1.5"]).params)
    assert cfg.temperature_candidates == (0.5, 1.5)
    res = rollout(tiny_model, src, tmp_path / "r.jsonl", "--temperature", "auto", "--temperature-candidates", "x")
    assert res.exit_code == 2 and "bad temperature candidates" in res.stderr
