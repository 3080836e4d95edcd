"""Model folders (mcoder.models) on real copies of the tiny model with a piece removed or changed:
what a folder must hold, the one tokenizer rule, adapters, the end-of-sequence ids both engines
use, and `rollout` / `train` exiting 2 with what is missing instead of an internal error."""

from __future__ import annotations

import json
import shutil

import pytest
from tests.rollout_models import make_lora_adapter, one_torch_thread
from typer.testing import CliRunner

from mcoder.cli.app import app
from mcoder.errors import UsageError
from mcoder.jsonl import RecordWriter
from mcoder.records import Rollout, Verdict

_one_thread = pytest.fixture(autouse=True, scope="module")(one_torch_thread)


@pytest.fixture(scope="module")
def folders(tiny_model, tmp_path_factory):
    """Copies of the tiny model: without weights, with a shard of its index missing, without
    tokenizer, with extra EOS ids, with no pad token; and a LoRA adapter on it."""
    root = tmp_path_factory.mktemp("model-folders")

    def copy(name, drop=()):
        out = root / name
        shutil.copytree(tiny_model, out, ignore=shutil.ignore_patterns(*drop))
        return out

    eos = copy("eos")
    _edit_json(eos / "config.json", eos_token_id=5)
    _edit_json(eos / "generation_config.json", eos_token_id=[2, 7])
    half = copy("half-sharded")
    shards = {"weight_map": {"a": "model.safetensors", "b": "model-00002-of-00002.safetensors"}}
    (half / "model.safetensors.index.json").write_text(json.dumps(shards))
    no_pad = copy("no-pad")
    _edit_json(no_pad / "tokenizer_config.json", pad_token=None)
    return {
        "no-weights": copy("no-weights", ["*.safetensors"]),
        "no-tokenizer": copy("no-tokenizer", ["tokenizer.json"]),
        "half-sharded": half,
        "eos": eos,
        "no-pad": no_pad,
        "adapter": make_lora_adapter(tiny_model, root / "adapter"),
    }


def _edit_json(path, **changes):
    data = json.loads(path.read_text())
    for k, v in changes.items():
        if v is None:
            data.pop(k, None)
        else:
            data[k] = v
    path.write_text(json.dumps(data))


# ------------------------------------------------------------------ what a folder must hold


def test_a_full_folder_is_its_own_base_and_tokenizer(tiny_model):
    from mcoder.models import check_model_dir

    folder = check_model_dir(tiny_model)
    assert (folder.base, folder.adapter, folder.tokenizer) == (tiny_model, None, tiny_model)


def test_an_adapter_folder_resolves_to_its_base(tiny_model, folders):
    from mcoder.models import check_model_dir

    folder = check_model_dir(folders["adapter"])
    assert folder.adapter == folders["adapter"] and folder.base == tiny_model
    assert folder.tokenizer == tiny_model  # saved without a tokenizer: the base's


@pytest.mark.parametrize(
    "name, words",
    [
        ("nowhere", "no such folder"),
        ("empty", "no config.json"),
        ("no-weights", "no weights"),
        ("half-sharded", "no weights model-00002-of-00002.safetensors"),
        ("no-tokenizer", "no tokenizer"),
    ],
)
def test_incomplete_folders_are_usage_errors_naming_the_missing_piece(folders, tmp_path, name, words):
    from mcoder.models import check_model_dir

    (tmp_path / "empty").mkdir()
    path = folders.get(name, tmp_path / name)
    with pytest.raises(UsageError) as e:
        check_model_dir(path)
    assert words in e.value.message and str(path) in e.value.message and e.value.hint


def test_an_adapter_whose_base_is_gone_or_without_weights_is_refused(folders, tmp_path):
    from mcoder.models import check_adapter_dir, check_model_dir

    moved = shutil.copytree(folders["adapter"], tmp_path / "moved")
    _edit_json(moved / "adapter_config.json", base_model_name_or_path=str(tmp_path / "gone"))
    with pytest.raises(UsageError, match="base model"):
        check_model_dir(moved)
    no_weights = shutil.ignore_patterns("adapter_model.*")
    bare = shutil.copytree(folders["adapter"], tmp_path / "bare", ignore=no_weights)
    with pytest.raises(UsageError, match="no adapter weights"):
        check_adapter_dir(bare)
    with pytest.raises(UsageError, match="adapter_config.json"):
        check_adapter_dir(tmp_path)


# ------------------------------------------------------------------ tokenizer, model, adapters


def test_tokenizer_pads_left_and_falls_back_to_eos_for_padding(tiny_model, folders):
    from mcoder.models import load_tokenizer

    tok = load_tokenizer(tiny_model)
    assert tok.padding_side == "left" and tok.pad_token_id not in (None, tok.eos_token_id)
    bare = load_tokenizer(folders["no-pad"])
    assert bare.padding_side == "left" and bare.pad_token_id == bare.eos_token_id


def test_adapter_folder_loads_as_base_plus_adapter(folders):
    import torch

    from mcoder.models import load_model, load_tokenizer

    tok = load_tokenizer(folders["adapter"])  # the base's tokenizer
    model = load_model(folders["adapter"], device="cpu")
    assert hasattr(model, "disable_adapter") and not model.training
    assert next(model.parameters()).dtype == torch.float32
    assert not any(p.requires_grad for n, p in model.named_parameters() if "lora_" in n)
    trainable = load_model(folders["adapter"], dtype="bfloat16", device=None, trainable=True)
    assert any(p.requires_grad for n, p in trainable.named_parameters() if "lora_" in n)
    assert next(trainable.parameters()).dtype == torch.bfloat16
    assert tok.eos_token_id is not None


def test_model_and_adapter_folder_together_are_refused(folders):
    from mcoder.models import check_model_dir

    with pytest.raises(UsageError, match="adapter"):
        check_model_dir(folders["adapter"], adapter=folders["adapter"])


# ------------------------------------------------------------------ end-of-sequence ids


def test_eos_ids_are_the_union_of_tokenizer_config_and_generation_config(folders):
    from mcoder.models import eos_ids, load_model, load_tokenizer

    tok = load_tokenizer(folders["eos"])
    assert tok.eos_token_id == 2
    from_folder = eos_ids(tok, folders["eos"])  # what the vllm engine uses (it holds no model)
    from_model = eos_ids(tok, load_model(folders["eos"], device="cpu"))  # the hf engine's live model
    assert from_folder == from_model == {2, 5, 7}


def test_engines_share_the_eos_ids(tiny_model, folders):
    from mcoder.engines import make_engine
    from mcoder.models import eos_ids, load_tokenizer

    tok = load_tokenizer(folders["eos"])
    assert make_engine("hf", folders["eos"], tokenizer=tok).eos_ids == {2, 5, 7}
    assert make_engine("hf", folders["adapter"]).eos_ids == eos_ids(tok, tiny_model) == {2}


# ------------------------------------------------------------------ the CLI: exit 2, not a bug


@pytest.fixture(scope="module")
def train_inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("train-inputs")
    rollouts = [
        Rollout(
            id=f"p-{i}", problem_id="p", completion="x", sample_index=i, prompt="q",
            prompt_token_ids=[10, 11, 12], completion_token_ids=[20 + i, 2], sampling_logprobs=[-1.0, -0.5],
            finish_reason="stop", temperature=1.0, seed=0,
        )
        for i in range(2)
    ]
    verdicts = [
        Verdict(rollout_id=r.id, problem_id="p", reward=float(i), passed=bool(i),
                status="accepted" if i else "wrong_answer", tests_passed=i, tests_total=1)
        for i, r in enumerate(rollouts)
    ]
    with RecordWriter(d / "r.jsonl", "id") as w:
        w.write_all(rollouts)
    with RecordWriter(d / "v.jsonl", "rollout_id") as w:
        w.write_all(verdicts)
    (d / "p.jsonl").write_text(json.dumps({"id": "p", "source": "t", "question": "q", "tests": []}) + "\n")
    return d


@pytest.mark.parametrize("command", ["rollout", "train"])
@pytest.mark.parametrize("broken, words", [("no-weights", "no weights"), ("no-tokenizer", "no tokenizer")])
def test_cli_names_the_missing_piece_and_exits_2(folders, train_inputs, tmp_path, command, broken, words):
    model = str(folders[broken])
    if command == "rollout":
        args = ["rollout", "--problems", str(train_inputs / "p.jsonl"), "--model", model,
                "--out", str(tmp_path / "r.jsonl"), "--engine", "hf", "--n", "1", "--max-tokens", "2"]
    else:
        args = ["train", "--model", model, "--rollouts", str(train_inputs / "r.jsonl"),
                "--verdicts", str(train_inputs / "v.jsonl"), "--out", str(tmp_path / "ck")]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2, res.output
    assert words in res.stderr and model in res.stderr and "hint:" in res.stderr
    assert "internal error" not in res.stderr


def test_rollout_from_an_adapter_folder_equals_base_plus_adapter(tiny_model, folders, train_inputs, tmp_path):
    def rollout(out, *model_args):
        args = ["rollout", "--problems", str(train_inputs / "p.jsonl"), *model_args, "--out", str(out),
                "--engine", "hf", "--n", "2", "--max-tokens", "6", "--seed", "1", "-q"]
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 0, res.output
        return [json.loads(line)["completion_token_ids"] for line in out.read_text().splitlines()]

    adapter = str(folders["adapter"])
    alone = rollout(tmp_path / "a.jsonl", "--model", adapter)
    assert alone == rollout(tmp_path / "b.jsonl", "--model", str(tiny_model), "--adapter", adapter)
