"""One stage protocol and one settings marker.

Every stage that writes a resumable output claims it through ``outputs.execute`` (a ``Job`` and a
``Stage``), the only caller of ``claim_output`` besides the loop's run folder. What an output
records as its settings is read from the config dataclasses' fields: a field changes the output
unless it is marked (``mcoder.config.not_setting``), so a new field is recorded by default.
"""

from __future__ import annotations

import ast
import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from mcoder.config import not_setting, output_settings, setting_when
from mcoder.errors import UsageError
from mcoder.judge.config import JudgeConfig
from mcoder.outputs import Job, execute, read_sidecar
from mcoder.rollout.config import RolloutConfig
from mcoder.train.config import TrainConfig

SRC = Path(__file__).resolve().parents[2] / "src"
# Where claim_output may be named: execute, and the loop's run folder (claimed for the whole run,
# its settings compared through RUN/config.json, which a resume may partly change)
ALLOWED = {("mcoder/outputs.py", "execute.hold"), ("mcoder/loop/loop.py", "claim_run_folder")}


def _uses(path: Path) -> list[tuple[str, int]]:
    """(enclosing function, line) of every use of the name claim_output in a file: a call, a
    reference, an import."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, scope: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = scope
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = f"{scope}.{child.name}" if scope else child.name
            named = (
                isinstance(child, ast.Name) and child.id == "claim_output"
                or isinstance(child, ast.Attribute) and child.attr == "claim_output"
                or isinstance(child, ast.alias) and child.name == "claim_output"
            )  # fmt: skip
            if named:
                found.append((scope, getattr(child, "lineno", 0)))
            visit(child, inner)

    visit(ast.parse(path.read_text(encoding="utf-8")), "")
    return found


def test_claim_output_is_called_only_by_execute_and_the_loop():
    where = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        for scope, line in _uses(path):
            where.setdefault((rel, scope), []).append(line)
    outside = {k: v for k, v in where.items() if k not in ALLOWED}
    assert not outside, (
        f"claim_output used outside outputs.execute and the loop: {outside}; "
        "a stage claims its output with execute(stage, Job(...)) (ARCHITECTURE.md, 'A stage')"
    )
    assert set(where) == ALLOWED  # the two places are still there (the test looks where it should)


def test_the_structural_check_sees_a_stage_that_claims_its_own_output(tmp_path):
    module = tmp_path / "stage.py"
    module.write_text(
        "from mcoder.outputs import claim_output\n\n"
        "def run(cfg):\n    with claim_output(cfg.out, stage='x', settings={}) as claim:\n        pass\n"
    )
    assert _uses(module) == [("", 1), ("run", 4)]


# ----------------------------------------------------------------------------- execute


@dataclass
class Lines:
    """A stage for the test: writes ``rows`` lines of JSON into a claimed JSONL output."""

    rows: int
    ran: int = 0
    name = "lines"
    kind = "jsonl"
    expect = ("i",)

    def finished(self, job, claim):
        return "finished"

    def run(self, job, claim):
        self.ran += 1
        Path(job.out).write_text("".join(json.dumps({"i": i}) + "\n" for i in range(self.rows)))
        return self.rows


def test_execute_runs_a_stage_once_then_finds_it_finished(tmp_path):
    out = tmp_path / "o.jsonl"
    stage = Lines(3)
    assert execute(stage, Job(out=out, inputs={}, settings={"rows": 3})) == 3
    meta = read_sidecar(out)
    assert meta["stage"] == "lines" and meta["settings"] == {"rows": 3} and meta["finished"]["size"] > 0
    assert execute(stage, Job(out=out, inputs={}, settings={"rows": 3})) == "finished"
    assert stage.ran == 1
    with pytest.raises(UsageError, match="rows 3 -> 4"):
        execute(Lines(4), Job(out=out, inputs={}, settings={"rows": 4}))
    assert execute(Lines(4), Job(out=out, inputs={}, settings={"rows": 4}, overwrite=True)) == 4
    assert len(out.read_text().splitlines()) == 4


def test_execute_shares_the_claim_and_only_its_holder_marks_it_finished(tmp_path):
    # under torchrun rank 0 claims and every rank gets the claim (train.distributed.broadcast_result);
    # a rank that did not claim never writes the sidecar
    out = tmp_path / "o.jsonl"
    shared = []
    assert execute(Lines(2), Job(out=out, inputs={}, settings={}), share=lambda hold: shared.append(1) or hold()) == 2
    assert shared == [1] and read_sidecar(out)["finished"]

    other = tmp_path / "other.jsonl"
    claim = type("Claim", (), {"finished": False, "resume": False})()  # another rank's copy of rank 0's claim
    assert execute(Lines(2), Job(out=other, inputs={}, settings={}), share=lambda hold: claim) == 2
    assert read_sidecar(other) is None


# ----------------------------------------------------------------------------- the settings marker


@dataclass
class Knobs:
    width: int = 3
    workers: int = dataclasses.field(default=2, metadata=not_setting("how many at once"))
    probe: int = dataclasses.field(default=5, metadata=setting_when(lambda k: k.width > 3, "only when wide"))


def test_a_field_is_a_setting_unless_marked():
    assert output_settings(Knobs()) == {"width": 3}
    assert output_settings(Knobs(width=4)) == {"width": 4, "probe": 5}


def test_a_new_field_without_the_marker_is_recorded_by_every_stage(tmp_path):
    from mcoder.judge.cache import limits_key
    from mcoder.judge.stage import Shard, judge_settings
    from mcoder.rollout.stage import rollout_settings
    from mcoder.train.card import model_card

    @dataclass(kw_only=True)
    class NewRollout(RolloutConfig):
        new_knob: int = 7

    @dataclass(slots=True)
    class NewJudge(JudgeConfig):
        new_knob: int = 7

    @dataclass
    class NewTrain(TrainConfig):
        new_knob: int = 7

    assert rollout_settings(NewRollout(problems=tmp_path / "p", model="m", out=tmp_path / "o"))["new_knob"] == 7
    assert judge_settings(NewJudge(workers=1), Shard())["new_knob"] == 7
    assert "('new_knob', 7)" in limits_key(NewJudge(workers=1))  # a new judge field is in the cache key
    assert output_settings(NewTrain())["new_knob"] == 7
    card = model_card({}, json.loads(json.dumps(dataclasses.asdict(NewTrain()))), weights="w", bench=None)
    assert "| new_knob | `7` |" in card


# What each stage recorded before the marker, as lists (judge/stage.NOT_SETTINGS,
# train/config.RUNTIME_ONLY, train/card.NOT_SETTINGS, rollout/stage.rollout_settings): the marker
# must give the same keys, so that every output made before still resumes.
ROLLOUT_BEFORE = [
    "n", "max_tokens", "temperature", "temperature_schedule", "step", "top_k", "top_p", "seed",
    "policy_version", "limit", "engine", "long_prompts",
]  # fmt: skip
ROLLOUT_AUTO_BEFORE = [
    "diversity_target", "temperature_candidates", "probe_problems", "diversity_measure", "temperature_rule",
    "diversity_rise",
]  # fmt: skip


def test_the_recorded_settings_are_those_recorded_before_the_marker(tmp_path):
    from mcoder.judge.stage import Shard, judge_settings
    from mcoder.rollout.stage import rollout_settings

    paths = {"problems": tmp_path / "p", "model": "m", "out": tmp_path / "o"}
    assert set(rollout_settings(RolloutConfig(**paths))) == set(ROLLOUT_BEFORE)
    auto = rollout_settings(RolloutConfig(**paths, temperature="auto"))
    assert set(auto) == set(ROLLOUT_BEFORE + ROLLOUT_AUTO_BEFORE)
    judge = [f.name for f in dataclasses.fields(JudgeConfig) if f.name not in ("workers", "first_uid", "cache_size")]
    assert list(judge_settings(JudgeConfig(workers=1), Shard())) == [*judge, "shard"]
    runtime = ("report_to", "dist_timeout_s", "activation_checkpointing", "logprob_chunk_tokens")
    assert list(output_settings(TrainConfig())) == [f.name for f in dataclasses.fields(TrainConfig) if f.name not in runtime]


def test_the_model_card_shows_the_settings_it_showed_before():
    from mcoder.train.card import model_card

    settings = json.loads(TrainConfig().to_json())
    card = model_card({}, settings, weights="w", bench=None)
    table = card.split("## Settings")[1].split("## Bench")[0].splitlines()
    rows = [ln.split(" | ")[0].removeprefix("| ") for ln in table if ln.startswith("| ") and ln != "| setting | value |"]
    assert rows == sorted(k for k in settings if k not in ("report_to", "device"))


def test_the_dataset_stages_and_export_record_what_they_recorded_before():
    from mcoder.dataset.config import BuildConfig, CalibrateConfig, PredictConfig, SelectConfig
    from mcoder.dataset.verify.step import VerifyConfig
    from mcoder.export import ExportJob

    predict = PredictConfig(problems="p", model="m", out="o", adapter="a", limit=3)
    assert set(predict.settings()) == {"limit", "dimension", "max_tokens", "temperature", "retries",
                                       "retry_temperature", "seed", "engine"}  # fmt: skip
    expected = PredictConfig(problems="p", model="m", out="o", scoring="expected")
    assert set(expected.settings()) == {"limit", "dimension", "scoring", "engine"}
    calibrate = CalibrateConfig(scores="s", verdicts=("v",), out="o")
    assert output_settings(calibrate) == {"heldout_share": 0.25, "min_samples": 1, "seed": 0}
    select = SelectConfig(problems="p", scores="s", calibration="c", out="o")
    assert set(output_settings(select)) == {"keep_predicted", "easy_share", "easy_above", "hard_below", "unscored"}
    assert output_settings(ExportJob(checkpoint=Path("c"), out=Path("o"), merge_lora=True)) == {"merge_lora": True}
    build = BuildConfig(sources=["x"], verify=VerifyConfig(workers=3)).settings()
    assert "verify_workers" not in build and build["verify_runs"] == 3
