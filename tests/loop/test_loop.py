"""`mcoder loop`: one loop for one process and torchrun, the length limit it trains with,
and `loop --help` generated from the configuration's own declarations."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
import torch
from safetensors.torch import load_file
from typer.testing import CliRunner

from conftest import sandbox_or_skip
from mcoder.cli.app import app
from mcoder.cli.judge import PREFIX
from mcoder.cli.options import NEGATED
from mcoder.config import field_docs
from mcoder.errors import UsageError
from mcoder.judge.config import JudgeConfig
from mcoder.loop.config import LoopConfig
from mcoder.rollout.sampling import SamplingConfig
from mcoder.train.config import TrainConfig

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "problems"


def _sandbox_or_skip():

    sandbox_or_skip()


def _loop(model: Path, run: Path, *extra: str, nproc: int = 1, steps: int = 2) -> subprocess.CompletedProcess:
    launch = (
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc-per-node={nproc}",
            "-m",
            "mcoder",
        ]
        if nproc > 1
        else [sys.executable, "-m", "mcoder"]
    )
    # -n, not --n: torchrun's own parser would take --n for an abbreviation of its flags
    args = [
        "loop", "--model", str(model), "--problems", str(EXAMPLES / "stdin.jsonl"), "--run-dir", str(run),
        "--steps", str(steps), "-n", "2", "--train-batch-size", "2", "--max-tokens", "10", "--temperature", "1.0",
        "--lr", "1e-3", "--workers", "1", "--seed", "5", "--mini-batch-size", "1", "-q", *extra,
    ]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    return subprocess.run([*launch, *args], capture_output=True, text=True, env=env, timeout=600, check=False)


def _records(path: Path, drop: tuple[str, ...] = ()) -> list[dict]:
    rows = [orjson.loads(x) for x in path.read_bytes().splitlines()]
    return [{k: v for k, v in r.items() if k not in drop} for r in rows]


def test_the_loop_trains_with_the_sampling_limit_as_l_max():
    """The bug: --max-tokens reached the sampler but never TrainConfig.max_tokens, so the update
    took L_max as the longest completion of the batch (the overlong penalty and --loss-agg
    constant then used the wrong length)."""
    cfg = LoopConfig(
        model="m",
        problems=Path("p"),
        run_dir=Path("r"),
        train=TrainConfig(),
        sampling=SamplingConfig(max_tokens=37),
    ).validate()
    assert cfg.train.max_tokens == 37
    assert json.loads(cfg.to_json())["train"]["max_tokens"] == 37


def _stopping_model(tiny_model: Path, out: Path, p_eos: float = 0.12) -> Path:
    """The tiny model made to stop: a constant added to one dimension of every token embedding
    carries through to the final hidden state, and the (untied) output row of end-of-sequence
    reads that dimension alone, so about ``p_eos`` of tokens end the sample whatever came before.
    Completions then differ in length and the overlong penalty gives each group rewards to learn
    from (random text never passes a test)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from mcoder.models import eos_ids

    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    tok = AutoTokenizer.from_pretrained(tiny_model)
    eos = min(eos_ids(tok, model))
    model.config.tie_word_embeddings = False
    emb = model.model.embed_tokens.weight
    head = torch.nn.Linear(model.lm_head.in_features, model.lm_head.out_features, bias=False)
    ids = torch.randint(0, len(tok), (8, 32), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        head.weight.copy_(model.lm_head.weight)
        head.weight[:, 0] = 0.0
        model.lm_head = head
        emb[:, 0] = 5 * emb.std() * emb.shape[1] ** 0.5
        hidden = model.model(ids).last_hidden_state.reshape(-1, head.in_features)  # (B*S, H)
        lo, hi = -50.0, 50.0
        for _ in range(40):  # the weight that gives the asked mean P(eos)
            c = (lo + hi) / 2
            head.weight[eos] = 0.0
            head.weight[eos, 0] = c / hidden[:, 0].mean()
            p = torch.softmax(head(hidden), -1)[:, eos].mean().item()
            lo, hi = (c, hi) if p < p_eos else (lo, c)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


@pytest.mark.slow
def test_one_and_two_processes_write_the_same_steps(tiny_model, tmp_path):
    """The same loop, launched as one process and as torchrun with 2 gloo ranks, each rank
    sampling and judging half of the groups with its own engine: the same step files (rollouts,
    verdicts, sample decisions) and the same parameters within 1e-5."""
    _sandbox_or_skip()
    model = _stopping_model(tiny_model, tmp_path / "model")
    one, two = tmp_path / "one", tmp_path / "two"
    signal = ("--overlong-penalty", "--overlong-cache", "10", "--truncation", "none")
    # Each rank samples its own groups, in batches of other shapes than one process's: the tokens
    # are the same, their sampling log-probs only to float rounding (checked below). π_old is
    # recomputed by the trainer so that the update is a function of the step files alone.
    signal += ("--recompute-old-logprobs",)
    r1 = _loop(model, one, *signal)
    assert r1.returncode == 0, r1.stderr[-3000:]
    r2 = _loop(model, two, *signal, nproc=2)
    assert r2.returncode == 0, r2.stderr[-3000:]
    for step in ("step_0001", "step_0002"):
        a = _records(one / step / "rollouts.jsonl", drop=("sampling_logprobs",))
        b = _records(two / step / "rollouts.jsonl", drop=("sampling_logprobs",))
        assert a == b, f"{step}: the two runs sampled different completions"
        la = [x["sampling_logprobs"] for x in _records(one / step / "rollouts.jsonl")]
        lb = [x["sampling_logprobs"] for x in _records(two / step / "rollouts.jsonl")]
        assert max(abs(x - y) for p, q in zip(la, lb, strict=True) for x, y in zip(p, q, strict=True)) < 1e-4
        timing = ("elapsed_s", "cached")
        assert _records(one / step / "verdicts.jsonl", timing) == _records(
            two / step / "verdicts.jsonl", timing
        )
        sa = _records(one / step / "samples.jsonl")
        sb = _records(two / step / "samples.jsonl")
        assert [(s["rollout_id"], s["masked"], s["reward"]) for s in sa] == [
            (s["rollout_id"], s["masked"], s["reward"]) for s in sb
        ]
    wa, wb = (
        load_file(one / "checkpoint" / "model.safetensors"),
        load_file(two / "checkpoint" / "model.safetensors"),
    )
    base = load_file(model / "model.safetensors")
    assert sorted(wa) == sorted(wb)
    assert max((wa[k] - wb[k]).abs().max().item() for k in wa) < 1e-5
    assert max((wa[k] - base[k]).abs().max().item() for k in wa if k in base) > 1e-3, "the loop trained"
    m1 = [orjson.loads(x) for x in (one / "metrics.jsonl").read_bytes().splitlines()]
    m2 = [orjson.loads(x) for x in (two / "metrics.jsonl").read_bytes().splitlines()]
    assert [m["step"] for m in m1] == [m["step"] for m in m2] == [1, 2]
    assert [m["processes"] for m in m2] == [2, 2]
    # every rank sampled (and judged) its share of the groups: one each, of the batch's two
    assert [(m["rollout/rank0_groups"], m["rollout/rank1_groups"]) for m in m2] == [(1, 1), (1, 1)]
    assert [m["rollout/rank0_groups"] for m in m1] == [2, 2] and "rollout/rank1_groups" not in m1[0]
    assert all(m["time/update"] > 0 and m["time/judge_hidden"] <= m["time/judge"] for m in m1 + m2)
    assert all(m["L_max"] == 10 for m in m1 + m2), "L_max is the sampling limit, in both"
    assert torch.isfinite(torch.tensor([m["loss"] for m in m1 + m2])).all()


# ---------------------------------------------------------------- one declaration per setting


def _params(name: str = "loop") -> dict[str, object]:
    import typer.main

    command = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
    return {p.name: p for p in command.params}


# fields a command sets itself, not offered as its options
NOT_OPTIONS = {
    ("loop", TrainConfig): {"max_tokens", "logprob_temperature"},  # the sampling limit, the rollouts' T
    ("loop", LoopConfig): {"model", "problems", "run_dir"},  # hand-written inputs
    ("train", TrainConfig): {"dist_timeout_s"},
}


@pytest.mark.parametrize(
    "command, cls",
    [("loop", TrainConfig), ("loop", SamplingConfig), ("loop", LoopConfig), ("loop", JudgeConfig), ("train", TrainConfig)],
)
def test_help_is_the_config_docstrings(command, cls):
    """Every setting's --help text is its field's docstring: change one and the other follows."""
    params = _params(command)
    docs = field_docs(cls)
    covered = 0
    for f in dataclasses.fields(cls):
        if not docs[f.name].help or f.name in NOT_OPTIONS.get((command, cls), ()):
            continue
        field = (PREFIX if cls is JudgeConfig else "") + f.name  # the judge's options: mcoder judge's names
        name = field if field in params else NEGATED + field  # (a --no-X switch)
        if name not in params:
            assert dataclasses.is_dataclass(f.type) or f.name in ("train", "sampling", "judge", "temperature_candidates"), f.name
            continue
        assert params[name].help.removeprefix("Turn off: ").startswith(docs[f.name].help), f.name
        covered += 1
    assert covered >= {TrainConfig: 36, SamplingConfig: 10, LoopConfig: 9, JudgeConfig: 17}[cls]


def test_loop_help_shows_presets():
    """(Its width, every flag whole: tests/cli/test_cli.py.)"""
    r = CliRunner().invoke(app, ["loop", "-h"], env={"COLUMNS": "80"}, terminal_width=80)
    assert r.exit_code == 0, r.output
    text = r.stdout
    flat = " ".join(text.split()).replace("│ ", "")
    assert "(grpo 0.2, dapo 0.28, microcoder-grpo 0.28)" in flat
    assert "(grpo 1.0, dapo 1.0, microcoder-grpo auto)" in flat, "the temperature each preset samples at"
    for panel in ("Objective", "Truncated outputs", "Optimisation", "Loop", "Sampling", "Judge"):
        assert panel in text
    assert "mcoder loop --config recipes/microcoder-grpo.toml" in flat, "an example"


def test_train_help_shows_its_example():
    r = CliRunner().invoke(app, ["train", "-h"], env={"COLUMNS": "80"}, terminal_width=80)
    assert r.exit_code == 0
    assert "mcoder train -m MODEL" in r.stdout and "mcoder loop" in r.stdout


def test_a_bad_choice_is_refused_by_the_config_whoever_builds_it():
    r = CliRunner().invoke(app, ["loop", "-m", "x", "-p", "p", "--run-dir", "r", "--steps", "1",
                                 "--loss-agg", "mean"])  # fmt: skip
    assert r.exit_code == 2 and "--loss-agg" in r.stderr and "token, sequence, constant" in r.stderr

    with pytest.raises(UsageError, match="--engine"):
        LoopConfig(model="m", problems=Path("p"), run_dir=Path("r"), engine="tgi").validate()  # type: ignore[arg-type]


def test_generated_switches_and_repeated_options_read_back():
    """Options not given leave the config's defaults alone (a repeated option comes back empty,
    not as "no modules"); a setting on by default is turned off by its --no- switch."""
    import typer.main

    from mcoder.cli.options import given

    command = typer.main.get_command(app).commands["loop"]  # type: ignore[attr-defined]
    plain = command.make_context("loop", ["-m", "x"]).params
    assert given(TrainConfig, plain) == {} and given(JudgeConfig, plain, prefix=PREFIX) == {}
    args = ["-m", "x", "--no-shuffle", "--no-cache", "--allow-package", "numpy",
            "--allow-package", "scipy", "--lora-target-modules", "q_proj", "--adam-betas", "0.8", "0.9"]  # fmt: skip
    params = command.make_context("loop", args).params
    assert given(TrainConfig, params) == {
        "shuffle": False, "lora_target_modules": ["q_proj"], "adam_betas": (0.8, 0.9)
    }  # fmt: skip
    assert given(JudgeConfig, params, prefix=PREFIX) == {
        "cache": False,
        "allow_packages": ("numpy", "scipy"),
    }


def test_rollout_and_the_loop_share_one_sampling_declaration(tmp_path):
    """`mcoder rollout` and the loop sample with the same declared settings (one rule for the
    diversity-determined temperature), rollout only changing defaults."""
    import typer.main

    from mcoder.cli.rollout import make_config
    from mcoder.rollout.config import RolloutConfig

    shared = {f.name for f in dataclasses.fields(SamplingConfig)}
    assert issubclass(RolloutConfig, SamplingConfig) and shared <= {
        f.name for f in dataclasses.fields(RolloutConfig)
    }
    assert field_docs(RolloutConfig)["n"] == field_docs(SamplingConfig)["n"]
    command = typer.main.get_command(app).commands["rollout"]  # type: ignore[attr-defined]
    args = ["-p", "p.jsonl", "-m", "m", "-o", "o.jsonl", "--temperature", "auto", "--temperature-rule", "rise",
            "--diversity-rise", "0.3"]  # fmt: skip
    cfg = make_config(command.make_context("rollout", list(args)).params)  # (the parser consumes its list)
    assert (cfg.temperature_rule, cfg.diversity_rise, cfg.diversity_target, cfg.n) == ("rise", 0.3, None, 8)
    assert make_config(command.make_context("rollout", args[:6]).params).spec.fixed == 1.0
    # rollout's own default rule: the loop's (spread) needs a judge, which rollout does not have
    assert make_config(command.make_context("rollout", args[:8]).params).temperature_rule == "knee"


# ---------------------------------------------------------------- where a step's time goes


def test_step_time_figure_stacks_the_loop_s_stages_and_hatches_the_hidden_judging(tmp_path):
    from mcoder.bench.metrics import read_run
    from mcoder.bench.plots import build_figures

    rows = [
        {"step": 1, "time/sync": 0.0, "time/rollout": 4.0, "time/judge": 3.0, "time/judge_hidden": 2.5, "time/update": 2.0},
        {"step": 2, "time/sync": 0.5, "time/rollout": 5.0, "time/judge": 1.0, "time/judge_hidden": 1.0, "time/update": 2.0},
    ]  # fmt: skip
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    figures, _ = build_figures([read_run(tmp_path, "run")])
    ax = figures["step_time"].axes[0]
    bars = {}  # label -> [(bottom, height) per step]
    for container in ax.containers:
        bars[container.get_label()] = [(b.get_y(), b.get_height()) for b in container.patches]
    assert bars["sampling"] == [(0.0, 4.0), (0.5, 5.0)]
    assert bars["judging hidden behind sampling"] == [(0.0, 2.5), (0.5, 1.0)]  # inside the sampling bar
    assert bars["judging after sampling"] == [(4.0, 0.5), (5.5, 0.0)]
    assert bars["update"] == [(4.5, 2.0), (5.5, 2.0)]  # a step's bar is its time: 6.5 s, 7.5 s


def test_judging_starts_while_the_engine_still_samples_and_changes_no_record(tiny_model):
    """One rank's share of a step: the engine hands over each group as it finishes and the judge
    takes the first groups while the engine samples the rest (its first chunk is judged before
    sampling ends). The records are those of sampling the whole share at once, then judging."""
    _sandbox_or_skip()
    from tests.rollout_models import problems

    from mcoder.engines.hf_engine import HFEngine
    from mcoder.judge.core import Judge
    from mcoder.loop.sample_judge import sample_and_judge_part
    from mcoder.records import to_dict
    from mcoder.rollout.sample import make_rollouts
    from mcoder.train.trainer import Trainer

    cfg = LoopConfig(
        model=str(tiny_model), problems=Path("p"), run_dir=Path("r"),
        sampling=SamplingConfig(n=2, max_tokens=24), judge=JudgeConfig(workers=1),
    ).validate()  # fmt: skip
    trainer = Trainer(str(tiny_model), cfg.train)
    engine = HFEngine(trainer.model, trainer.tokenizer, batch_size=2)  # one group a batch
    share = problems(4)
    with Judge(cfg.judge) as judge:
        part = sample_and_judge_part(
            cfg, share, engine, judge, trainer.tokenizer, 1.0, 11, trainer.policy_version
        )
        whole = make_rollouts(
            share, engine, trainer.tokenizer, n=2, max_tokens=24, temperature=1.0, seed=11,
            model_name=cfg.model, policy_version=trainer.policy_version,
        )  # fmt: skip
        verdicts = judge.judge({p.id: p for p in share}, whole)
    assert [to_dict(r) for r in part.rollouts] == [to_dict(r) for r in whole]
    strip = ("elapsed_s", "cached")
    assert [{k: x for k, x in to_dict(v).items() if k not in strip} for v in part.verdicts] == [
        {k: x for k, x in to_dict(v).items() if k not in strip} for v in verdicts
    ]
    assert part.groups == 4 and part.sample_s > 0
    assert 0 < part.hidden_s <= part.judge_s, "the first groups were judged while the engine sampled"


# ---------------------------------------------------------------- one step off-policy


@pytest.mark.parametrize("nproc", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_off_policy_samples_the_next_step_while_this_one_trains(tiny_model, tmp_path, nproc):
    """--off-policy 1: step k+1's batch is sampled (and judged) while step k trains, from the
    policy before step k's update; the update's π_old is what the sampler recorded. Under
    torchrun the sampling thread gathers over a process group of its own, beside the trainer's."""
    _sandbox_or_skip()
    run = tmp_path / "run"
    r = _loop(tiny_model, run, "--off-policy", "1", steps=3, nproc=nproc)
    assert r.returncode == 0, r.stderr[-3000:]
    versions = [
        {x["policy_version"] for x in _records(run / f"step_{s:04d}" / "rollouts.jsonl")} for s in (1, 2, 3)
    ]
    assert versions == [{0}, {0}, {1}], "steps 2 and 3 sampled from the policy one update behind"
    metrics = _records(run / "metrics.jsonl")
    assert [m["step"] for m in metrics] == [1, 2, 3]
    assert "time/sample_wait" not in metrics[0] and all(m["time/sample_wait"] >= 0 for m in metrics[1:])
    with pytest.raises(UsageError, match="--recompute-old-logprobs"):
        LoopConfig(
            model="m", problems=Path("p"), run_dir=Path("r"), off_policy=1,
            train=TrainConfig(recompute_old_logprobs=True),
        ).validate()  # fmt: skip


def test_dynamic_sampling_counts_the_rewards_the_update_will_see():
    """DAPO's top-up keeps a group with two different rewards. Under --truncated-reward zero a
    cut-off accepted sample scores 0, so a group of it and a wrong one carries no signal and more
    problems are drawn; as judged (1 and 0) it does."""
    import random

    from mcoder.loop.sample_judge import _top_up
    from mcoder.records import Problem, Rollout, Verdict

    def part(pid: str):
        rollouts = [
            Rollout(id=f"{pid}-0", problem_id=pid, completion="x", completion_token_ids=[1] * 8, finish_reason="length"),
            Rollout(id=f"{pid}-1", problem_id=pid, completion="y", completion_token_ids=[1] * 3, finish_reason="stop"),
        ]
        verdicts = [
            Verdict(rollout_id=f"{pid}-0", problem_id=pid, reward=1.0, passed=True, status="accepted",
                    tests_passed=1, tests_total=1),
            Verdict(rollout_id=f"{pid}-1", problem_id=pid, reward=0.0, passed=False, status="wrong_answer",
                    tests_passed=0, tests_total=1),
        ]
        return rollouts, verdicts, None

    problems = [Problem(id=f"p{i}", source="t", question="q", tests=[]) for i in range(4)]
    for reward, expect_more in (("verdict", False), ("zero", True)):
        cfg = LoopConfig(model="m", problems=Path("p.jsonl"), run_dir=Path("r"), train_batch_size=1)
        cfg.train = TrainConfig(dynamic_sampling=True, truncated_reward=reward)
        cfg.sampling.max_tokens = 8
        more = _top_up(cfg, random.Random(0), problems, [part("p0")], 0)
        assert (more is not None) is expect_more, reward


@pytest.mark.slow
def test_a_run_is_shown_and_restarted_from_another_folder(tiny_model, tmp_path, monkeypatch):
    """RUN/config.json records the problems file and the model folder as absolute paths: `show`
    from elsewhere finds the statements, `--config RUN/config.json` from elsewhere resumes; with
    the problems file gone, the refusal says it is missing (it said "changed")."""
    import shutil


    sandbox_or_skip()
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    here.mkdir()
    elsewhere.mkdir()
    shutil.copy(Path(__file__).parents[2] / "examples" / "problems" / "stdin.jsonl", here / "problems.jsonl")
    shutil.copytree(tiny_model, here / "model")
    monkeypatch.chdir(here)
    r = CliRunner().invoke(app, ["loop", "-m", "model", "-p", "problems.jsonl", "--run-dir", "run", "--steps", "1",
                                 "-n", "2", "--max-tokens", "4", "--train-batch-size", "2", "--temperature", "1.0",
                                 "--workers", "1", "-q"])  # fmt: skip
    assert r.exit_code == 0, r.output
    saved = json.loads((here / "run" / "config.json").read_text())
    assert saved["problems"] == str(here / "problems.jsonl") and saved["model"] == str(here / "model")
    monkeypatch.chdir(elsewhere)
    run = here / "run"
    shown = CliRunner().invoke(app, ["show", str(run), "--full", "--limit", "1"])
    assert shown.exit_code == 0 and "is not here" not in shown.stderr and "problem" in shown.stdout, shown.output
    again = CliRunner().invoke(app, ["loop", "--config", str(run / "config.json"), "--run-dir", str(run),
                                     "--steps", "2", "-q"])  # fmt: skip
    assert again.exit_code == 0, again.output
    (here / "problems.jsonl").rename(here / "moved.jsonl")
    gone = CliRunner().invoke(app, ["loop", "--config", str(run / "config.json"), "--run-dir", str(run),
                                    "--steps", "3"])  # fmt: skip
    assert gone.exit_code == 2 and "input problems is missing" in gone.stderr and "changed" not in gone.stderr, gone.stderr
