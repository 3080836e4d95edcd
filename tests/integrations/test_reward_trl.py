"""mcoder's reward in TRL: a real GRPOTrainer trains the tiny model with ``JudgeReward``, and every
reward it was given equals ``mcoder judge``'s on the same completions.

The trainer samples through TRL's ``rollout_func`` hook with fixed completions (each problem's
reference solution and a wrong program), so that the rewards are a real mix of 1 and 0 and the
update has a signal; TRL decodes them, hands them to the reward as chat messages with the
dataset's columns, and trains on the advantages as it would on its own samples.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import sandbox_or_skip
from helpers.large import ANSWER, large_json, retained_bytes
from mcoder.cli.app import app
from mcoder.integrations.columns import completion_text
from mcoder.integrations.trl_reward import JudgeReward
from mcoder.judge.config import JudgeConfig
from mcoder.records import Problem, from_dict, to_dict

trl = pytest.importorskip("trl")


@pytest.fixture(autouse=True)
def _sandbox():
    sandbox_or_skip()


EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "problems"
WRONG = "```python\nprint(0)\n```"


def _problems(n: int = 4) -> list[Problem]:
    lines = (EXAMPLES / "stdin.jsonl").read_text().splitlines()[:n]
    return [from_dict(Problem, json.loads(line)) for line in lines]


def _answer(p: Problem) -> str:
    return f"Here it is.\n```python\n{p.reference_solutions[0]}```\n"


def mcoder_judge(
    tmp_path: Path, problems: list[Problem], completions: list[str], workers: int = 2
) -> list[dict]:
    """Verdicts of `mcoder judge` (the CLI) on ``completions[i]`` for ``problems[i]``."""
    pfile, rfile, out = tmp_path / "p.jsonl", tmp_path / "r.jsonl", tmp_path / "v.jsonl"
    unique = {p.id: p for p in problems}
    pfile.write_text("".join(json.dumps(to_dict(p)) + "\n" for p in unique.values()))
    rows = [
        {"id": f"r{i}", "problem_id": p.id, "completion": c}
        for i, (p, c) in enumerate(zip(problems, completions))
    ]
    rfile.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = CliRunner().invoke(
        app, ["judge", "-p", str(pfile), "-r", str(rfile), "-o", str(out), "-w", str(workers), "-q"]
    )
    assert res.exit_code == 0, res.output
    by_id = {v["rollout_id"]: v for v in map(json.loads, out.read_text().splitlines())}
    return [by_id[f"r{i}"] for i in range(len(rows))]


def test_rewards_from_every_column_format_equal_mcoder_judges(tmp_path):
    problems = _problems(3)
    pfile = tmp_path / "problems.jsonl"
    pfile.write_text("".join(json.dumps(to_dict(p)) + "\n" for p in problems))
    completions = [_answer(p) for p in problems] + [
        WRONG,
        "no code at all",
        [{"role": "assistant", "content": _answer(problems[2])}],
    ]
    rows = problems + [problems[0], problems[1], problems[2]]
    reward = JudgeReward(pfile, JudgeConfig(workers=2))
    try:
        by_id = reward(completions=completions, problem_id=[p.id for p in rows], trainer_state=None)
        record = reward(completions=completions, problem=[json.dumps(to_dict(p)) for p in rows])
        cols = {k: [to_dict(p)[k] for p in rows] for k in ("id", "tests", "fn_name")}
        columns = reward(completions=completions, **cols)
        judge_object = reward._judge
        reward(completions=completions[:1], problem_id=[rows[0].id])
        assert reward._judge is judge_object and judge_object.pool is not None  # started once, kept
    finally:
        reward.close()
    assert judge_object.pool is None  # closed
    expected = [v["reward"] for v in mcoder_judge(tmp_path, rows, [completion_text(c) for c in completions])]
    assert expected == [1.0, 1.0, 1.0, 0.0, 0.0, 1.0]
    assert by_id == record == columns == expected


def test_a_large_problem_column_call_after_call_is_held_once():
    """Each call's ``problem`` column is parsed into a fresh problem object: the judge kept every
    one (by object), +2 MiB a call with a 1 MiB test."""
    reward = JudgeReward(cfg=JudgeConfig(workers=1))
    record = large_json(1.0)
    call = lambda i: reward(prompts=["p"], completions=[ANSWER], problem=[record])
    try:
        assert call(0) == [1.0]
        assert retained_bytes(call, 20) < 4 << 20
    finally:
        reward.close()


def test_a_row_that_names_no_problem_is_a_data_error():
    from mcoder.errors import DataError

    reward = JudgeReward()
    with pytest.raises(DataError, match="names no problem"):
        reward(completions=["x"], other=[1])
    with pytest.raises(DataError, match="no problem with id"):
        reward(completions=["x"], problem_id=["nope"])


class Recording(JudgeReward):
    """The real reward, keeping what TRL gave it and what it answered (to check against the CLI)."""

    seen: list

    def __call__(self, prompts=None, completions=None, **columns):
        rewards = super().__call__(prompts=prompts, completions=completions, **columns)
        self.seen.extend(zip(columns["problem_id"], completions, rewards, strict=True))
        return rewards


def test_grpo_trainer_trains_with_mcoders_reward(tmp_path, tiny_model):
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    problems = _problems(4)
    by_question = {p.question: p for p in problems}
    tok = AutoTokenizer.from_pretrained(tiny_model)

    def rollout_func(prompts, trainer):
        out = {"prompt_ids": [], "completion_ids": [], "logprobs": []}
        for i, messages in enumerate(prompts):
            p = by_question[messages[-1]["content"]]
            text = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
            ids = tok(_answer(p) if i % 2 == 0 else WRONG, add_special_tokens=False)["input_ids"] + [
                tok.eos_token_id
            ]
            out["prompt_ids"].append(tok(text, add_special_tokens=False)["input_ids"])
            out["completion_ids"].append(ids)
            out["logprobs"].append([0.0] * len(ids))
        return out

    reward = Recording(problems, JudgeConfig(workers=2))
    reward.seen = []
    args = GRPOConfig(
        output_dir=str(tmp_path / "trl"), per_device_train_batch_size=4, num_generations=2,
        max_completion_length=256, max_steps=2, learning_rate=1e-3, report_to="none", use_cpu=True,
        bf16=False, seed=0, logging_steps=1, save_strategy="no",
    )  # fmt: skip
    ds = Dataset.from_list(
        [{"prompt": [{"role": "user", "content": p.question}], "problem_id": p.id} for p in problems]
    )
    trainer = GRPOTrainer(
        model=str(tiny_model), reward_funcs=[reward], args=args, train_dataset=ds, processing_class=tok,
        rollout_func=rollout_func,
    )  # fmt: skip
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    try:
        trainer.train()
    finally:
        reward.close()
    assert trainer.state.global_step == 2
    assert any(not (p == before[n]).all() for n, p in trainer.model.named_parameters())
    assert isinstance(reward.seen[0][1], list)  # conversational: chat messages
    rewards = [r for _, _, r in reward.seen]
    assert len(rewards) == 8 and set(rewards) == {0.0, 1.0}
    logged = [
        h["rewards/mcoder_judge/mean"] for h in trainer.state.log_history if "rewards/mcoder_judge/mean" in h
    ]
    assert logged == [0.5, 0.5]
    by_id = {p.id: p for p in problems}
    verdicts = mcoder_judge(
        tmp_path, [by_id[pid] for pid, _, _ in reward.seen], [completion_text(c) for _, c, _ in reward.seen]
    )
    assert [v["reward"] for v in verdicts] == rewards
