"""`mcoder train` under a real `torchrun --nproc-per-node 2` (gloo, CPU): one FSDP2 update equals
the single-process update on the same batch, checkpoints move between 1 and 2 processes, and a
2-process `--loop` killed after a step resumes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from conftest import sandbox_or_skip
from mcoder.jsonl import RecordWriter
from train_records import sample_rollouts, verdicts_for

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "problems"
TOL = 1e-5


def _env() -> dict:
    # one thread per rank: two ranks on a shared 2-core machine, and reductions in one order
    return {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def torchrun(nproc: int) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}"]


def mcoder(*args, nproc: int = 1, timeout: int = 300, **kw) -> subprocess.CompletedProcess:
    launch = [*torchrun(nproc), "-m", "mcoder"] if nproc > 1 else [sys.executable, "-m", "mcoder"]
    return subprocess.run(
        [*launch, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_env(),
        check=False,
        **kw,
    )


@pytest.fixture(scope="module")
def batch(tiny_model, tmp_path_factory):
    """3 prompt groups of 4 real samples of the tiny model, rewards 0/1 within each group."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    d = tmp_path_factory.mktemp("dist-batch")
    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    tok = AutoTokenizer.from_pretrained(tiny_model)
    prompts = {"a": "sum", "b": "sort", "c": "max"}
    rollouts = sample_rollouts(model, tok, prompts, n=4, max_tokens=10, temperature=0.9)
    verdicts = verdicts_for(rollouts, lambda r: r.sample_index % 2)
    with RecordWriter(d / "r.jsonl", "id") as w:
        w.write_all(rollouts)
    with RecordWriter(d / "v.jsonl", "rollout_id") as w:
        w.write_all(verdicts.values())
    return d


def train(model, batch: Path, out: Path, *extra, nproc: int = 1) -> dict:
    # 3 groups, mini-batches of 2 groups: the second mini-batch leaves rank 1 without a group
    # (its idle forward/backward keeps the collectives in step); micro-batches of 3 of 4 samples
    r = mcoder(
        "train", "--model", model, "--rollouts", batch / "r.jsonl", "--verdicts", batch / "v.jsonl",
        "--out", out, "--lr", "1e-3", "--truncation", "none", "--mini-batch-size", "2",
        "--micro-batch-size", "3", "-q", "--overwrite", *extra, nproc=nproc,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.splitlines()
    assert lines[-1] == str(out), "one line of results and the path, printed once (rank 0)"
    return json.loads(lines[-2])


def weights(ck: Path) -> dict[str, torch.Tensor]:
    name = "adapter_model.safetensors" if (ck / "adapter_model.safetensors").exists() else "model.safetensors"
    return load_file(ck / name)


def assert_same_checkpoint(a: Path, b: Path, base: dict[str, torch.Tensor] | None = None) -> None:
    wa, wb = weights(a), weights(b)
    assert sorted(wa) == sorted(wb)
    worst = max((wa[k] - wb[k]).abs().max().item() for k in wa)
    assert worst < TOL, f"parameters differ by {worst}"
    if base is not None:  # the update did something, far above the tolerance
        moved = max((wa[k] - base[k]).abs().max().item() for k in wa if k in base)
        assert moved > 100 * TOL
    (sa, ga, ka), (sb, gb, kb) = saved_training_state(a), saved_training_state(b)
    assert ga == gb and ka == kb
    assert sorted(sa) == sorted(sb)
    for k in sa:
        for name in ("exp_avg", "exp_avg_sq", "step"):
            assert torch.allclose(sa[k][name], sb[k][name], atol=TOL, rtol=0), (k, name)
    for c in (a, b):
        assert json.loads((c / "trainer" / "trainer_state.json").read_text())["step"] == 2


def saved_training_state(ck: Path) -> tuple[dict, list, dict]:
    """AdamW's state by parameter name, its hyper-parameters and the schedule, from either
    format: one process's optimizer.pt (keyed by parameter index) or torchrun's sharded
    trainer/dcp/ (keyed by name) with trainer/scheduler.pt."""
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    from mcoder.train.config import TrainConfig
    from mcoder.train.models import empty_policy

    if (ck / "trainer" / "dcp").is_dir():
        dcp_to_torch_save(ck / "trainer" / "dcp", ck.parent / f"{ck.name}-state.pt")
        optim = torch.load(ck.parent / f"{ck.name}-state.pt", weights_only=False)["optimizer"]
        schedule = torch.load(ck / "trainer" / "scheduler.pt", weights_only=True)["scheduler"]
    else:
        saved = torch.load(ck / "trainer" / "optimizer.pt", weights_only=True)
        cfg = TrainConfig.load(ck / "trainer" / "train_config.json")
        names = [n for n, p in empty_policy(str(ck), cfg).named_parameters() if p.requires_grad]
        optim, schedule = saved["optimizer"], saved["scheduler"]
        optim = {"state": {names[int(i)]: v for i, v in optim["state"].items()}, "param_groups": optim["param_groups"]}
    groups = [{k: v for k, v in g.items() if k != "params"} for g in optim["param_groups"]]
    return optim["state"], groups, schedule


def test_two_processes_update_equals_one_full_weights(tiny_model, batch, tmp_path):
    m1 = train(tiny_model, batch, tmp_path / "one", "--lora-rank", "0")
    m2 = train(tiny_model, batch, tmp_path / "two", "--lora-rank", "0", nproc=2)
    assert_same_checkpoint(
        tmp_path / "one", tmp_path / "two", base=load_file(tiny_model / "model.safetensors")
    )
    assert m1["updates"] == m2["updates"] == 2 and m1["tokens"] == m2["tokens"]
    for k in ("loss", "grad_norm", "ratio/mean", "clip/low", "clip/high", "entropy"):
        assert abs(m1[k] - m2[k]) < 1e-4 * max(1.0, abs(m1[k])), k  # metrics summed over ranks


@pytest.mark.slow
def test_two_processes_update_equals_one_lora_and_checkpoints_cross(tiny_model, batch, tmp_path):
    train(tiny_model, batch, tmp_path / "one", "--lora-rank", "4")
    train(tiny_model, batch, tmp_path / "two", "--lora-rank", "4", nproc=2)
    assert_same_checkpoint(tmp_path / "one", tmp_path / "two")
    # a 2-process checkpoint continued by 1 process == a 1-process one continued by 2
    train(tmp_path / "two", batch, tmp_path / "two-then-one")
    train(tmp_path / "one", batch, tmp_path / "one-then-two", nproc=2)
    wa, wb = weights(tmp_path / "two-then-one"), weights(tmp_path / "one-then-two")
    assert max((wa[k] - wb[k]).abs().max().item() for k in wa) < TOL
    for c in ("two-then-one", "one-then-two"):
        assert json.loads((tmp_path / c / "trainer" / "trainer_state.json").read_text())["step"] == 4  # AdamW continued


def _loop_args(model: Path, run: Path, steps: int) -> list:
    # -n, not --n: torchrun's own parser would take --n for an abbreviation of its flags
    return [
        "loop", "--model", model, "--problems", EXAMPLES / "stdin.jsonl", "--run-dir", run,
        "--steps", steps, "-n", "2", "--train-batch-size", "2", "--max-tokens", "12", "--temperature", "1.0",
        "--lr", "1e-3", "--workers", "1", "--seed", "5", "--lora-rank", "4",
    ]  # fmt: skip


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            kids = [int(x) for x in Path(f"/proc/{p}/task/{p}/children").read_text().split()]
        except OSError:
            kids = []
        out += kids
        todo += kids
    return out


def _loop_step(run: Path) -> int:
    try:
        return json.loads((run / "checkpoint" / "trainer" / "trainer_state.json").read_text())["loop_step"]
    except (FileNotFoundError, json.JSONDecodeError, KeyError):
        return 0


@pytest.mark.slow
def test_two_process_loop_killed_after_a_step_resumes(tiny_model, tmp_path):

    sandbox_or_skip()
    run = tmp_path / "run"
    launch = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node=2",
        "-m",
        "mcoder",
    ]
    proc = subprocess.Popen(
        [*launch, *map(str, _loop_args(tiny_model, run, 40))],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env(), start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while _loop_step(run) < 1 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert _loop_step(run) >= 1, "the 2-process loop checkpointed a step"
    finally:
        # the ranks run in sessions of their own: kill them (mid-step) and then the launcher
        for pid in _descendants(proc.pid):
            os.kill(pid, signal.SIGKILL)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    killed_at = _loop_step(run)
    assert killed_at < 40
    done = mcoder(*_loop_args(tiny_model, run, killed_at + 1), nproc=2)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"resuming after step {killed_at}" in done.stderr
    state = json.loads((run / "checkpoint" / "trainer" / "trainer_state.json").read_text())
    assert state["loop_step"] == killed_at + 1 and state["policy_version"] == killed_at + 1
    steps = [json.loads(x)["step"] for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert steps == list(range(1, killed_at + 2)), "redone steps' metrics lines dropped, none twice"
    assert all(json.loads(x)["processes"] == 2 for x in (run / "metrics.jsonl").read_text().splitlines()[-1:])
    # and one process takes the same run over (a torchrun checkpoint is a plain one)
    more = mcoder(*_loop_args(tiny_model, run, killed_at + 2))
    assert more.returncode == 0, more.stderr[-3000:]
    assert _loop_step(run) == killed_at + 2


GROUP_AT_EXIT = """
import atexit, os, sys
import torch.distributed as dist
from mcoder.train.distributed import broadcast, setup

out = sys.argv[1]
rank = os.environ["RANK"]
# registered before setup(): runs after every exit handler setup() registers
atexit.register(lambda: open(os.path.join(out, f"rank{rank}"), "w").write(str(dist.is_initialized())))
assert setup()
assert broadcast({"from": rank})["from"] == "0"
"""


@pytest.mark.slow
def test_process_group_is_destroyed_before_interpreter_shutdown(tmp_path):
    """A run that never destroyed its gloo group sometimes died at exit with "terminate called
    without an active exception" (SIGABRT on one rank, after the work was done), which made
    torchrun report a finished training run as failed. setup() now tears the group down at exit."""
    script = tmp_path / "group_at_exit.py"
    script.write_text(GROUP_AT_EXIT)
    done = subprocess.run(
        [*torchrun(2), str(script), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(),
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert {p.name: p.read_text() for p in tmp_path.glob("rank*")} == {"rank0": "False", "rank1": "False"}


@pytest.mark.slow
def test_each_rank_scores_its_share_of_pi_old_and_pi_ref_and_every_rank_gets_all(tiny_model, batch, tmp_path):
    """π_old (recomputed) and π_ref (LoRA's base) of 12 samples in 3 groups: each of 2 ranks
    scores only its groups' sequences (counted at the scoring forward; before, each scored all 12
    twice over) and ends up holding every sample's log-probs, equal to one process's."""
    from helpers.scoring_run import scored_logprobs

    one, rows_one = scored_logprobs(str(tiny_model), batch)
    assert rows_one == 2 * 12, "one process scores π_old and π_ref of every sample"
    script = Path(__file__).resolve().parents[1] / "helpers" / "scoring_run.py"
    done = subprocess.run([*torchrun(2), str(script), str(tiny_model), str(batch), str(tmp_path)],
                          capture_output=True, text=True, timeout=300, env=_env(), check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    # groups dealt round robin: rank 0 scores groups a and c (8 samples), rank 1 group b (4), each
    # forward of π_old and of π_ref, plus the idle forwards that keep rank 1's count in step
    assert [r["rows"] for r in ranks] == [2 * 8, 2 * 4 + 2 * 1], [r["rows"] for r in ranks]
    for r in ranks:
        assert sorted(r["logprobs"]) == sorted(one)
        for rid, (old, ref) in one.items():
            got_old, got_ref = r["logprobs"][rid]
            assert max(abs(a - b) for a, b in zip(old, got_old, strict=True)) < TOL
            assert max(abs(a - b) for a, b in zip(ref, got_ref, strict=True)) < TOL


@pytest.mark.slow
def test_the_temperature_probe_is_dealt_over_the_ranks(tiny_model, tmp_path):
    """The diversity probe of ``temperature auto`` (5 problems x 3 candidates): under 2 ranks each
    rank's engine samples its round-robin share (3 + 2 problems a candidate; before, rank 0
    sampled all 15 while the other GPUs waited), and T and the D(T) table are one process's."""
    from helpers.probe_run import probe

    problems = EXAMPLES / "stdin.jsonl"
    (tmp_path / "one").mkdir()
    T, prompts = probe(str(tiny_model), str(problems), tmp_path / "one")
    assert prompts == 15
    script = Path(__file__).resolve().parents[1] / "helpers" / "probe_run.py"
    done = subprocess.run([*torchrun(2), str(script), str(tiny_model), str(problems), str(tmp_path)],
                          capture_output=True, text=True, timeout=300, env=_env(), check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["prompts"] for r in ranks] == [9, 6]
    assert [r["T"] for r in ranks] == [T, T]
    one = json.loads((tmp_path / "one" / "temperature.json").read_text())
    two = json.loads((tmp_path / "temperature.json").read_text())
    assert two["table"] == one["table"] and two["temperature"] == one["temperature"]


@pytest.mark.slow
def test_a_sharded_checkpoint_killed_after_and_resumed_equals_the_run_straight_through(tiny_model, batch, tmp_path):
    """2 gloo ranks, full fine-tuning: a mid-run save writes torch.distributed.checkpoint's
    shards, each rank its own file (in the background), and no whole weights or optimizer file;
    the ranks killed (SIGKILL) right after it and a new launch resumed from it reach, after the
    next update, the weights and AdamW state of a run that went straight through."""
    script = Path(__file__).resolve().parents[1] / "helpers" / "resume_run.py"

    def launch(mode: str, out: Path) -> subprocess.CompletedProcess:
        out.mkdir(exist_ok=True)
        return subprocess.run([*torchrun(2), str(script), mode, str(tiny_model), str(batch), str(out)],
                              capture_output=True, text=True, timeout=600, env=_env(), check=False)  # fmt: skip

    straight, cut = tmp_path / "straight", tmp_path / "cut"
    done = launch("straight", straight)
    assert done.returncode == 0, done.stderr[-3000:]
    killed = launch("killed", cut)
    assert killed.returncode != 0 and "(SIGKILL)" in killed.stderr, killed.stderr[-2000:]
    first = cut / "first"
    assert sorted(p.name for p in (first / "trainer" / "dcp").iterdir()) == [".metadata", "__0_0.distcp", "__1_0.distcp"]
    assert not list(first.glob("*.safetensors")) and not (first / "trainer" / "optimizer.pt").exists()
    assert json.loads((cut / "first-background.json").read_text()) is True, "written in the background"
    resumed = launch("resumed", cut)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    (sa, ga, ka), (sb, gb, kb) = saved_training_state(straight / "second"), saved_training_state(cut / "resumed")
    assert ga == gb and ka == kb and sorted(sa) == sorted(sb)
    for k in sa:
        for name in ("exp_avg", "exp_avg_sq", "step"):
            assert torch.equal(sa[k][name], sb[k][name]), (k, name)
    wa, wb = sharded_weights(straight / "second"), sharded_weights(cut / "resumed")
    assert sorted(wa) == sorted(wb) and all(torch.equal(wa[k], wb[k]) for k in wa)
    moved = sharded_weights(first)
    assert any(not torch.equal(wa[k], moved[k]) for k in wa), "the second update moved the weights"


def sharded_weights(ck: Path) -> dict[str, torch.Tensor]:
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    dcp_to_torch_save(ck / "trainer" / "dcp", ck.parent / f"{ck.name}-weights.pt")
    return torch.load(ck.parent / f"{ck.name}-weights.pt", weights_only=False)["model"]


@pytest.mark.slow
def test_a_two_rank_start_holds_a_shard_and_a_unit_more_than_one_process(tmp_path):
    """benchmarks/start_memory.py: peak resident memory while the trainer starts, one process
    against 2 ranks together (a 32-layer, 447 MiB float32 policy). Each rank loaded the whole
    policy before sharding it: the two held 631 MiB where one process held 267 (16 layers) and
    the bound, one process + a shard + the largest unit, was 457."""
    from helpers.standin import standin_env

    out = tmp_path / "start.json"
    # under the CUDA stand-in (tests/train/test_process_groups.py): the group the ranks make is the GPU's
    done = subprocess.run([sys.executable, "benchmarks/start_memory.py", "--json", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=900, env=standin_env(), check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    m = json.loads(out.read_text())
    assert m["group"] == "cpu:gloo,cuda:gloo", "the cpu:gloo,cuda:nccl group, NCCL stood in for"
    assert m["two_ranks_sum"] <= m["one_process"] + m["policy"] // 2 + m["unit"], done.stdout
    assert m["one_process"] >= m["policy"], "the one process's weights were read: the baseline holds them"
