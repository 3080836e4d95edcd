"""`mcoder train` on one rollout batch: read rollouts and verdicts, update, save a checkpoint.

    OUT/                 model weights (or the LoRA adapter), tokenizer, train_config.json,
                         optimizer.pt, trainer_state.json (step, policy_version, inputs)
    OUT/samples.jsonl    reward, advantage and truncation-mask decision per sample
    OUT/metrics.json     the metrics of this update (also printed to stdout)

Run again with the same inputs and OUT, it sees the finished checkpoint and does nothing
(``--overwrite`` trains again). ``--model`` may be an earlier checkpoint: AdamW's moments, the
warm-up schedule and the step continue from it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from mcoder.console import info
from mcoder.jsonl import display_name, index_records, read_records
from mcoder.records import Rollout, Verdict
from mcoder.rollout.diversity import batch_diversity
from mcoder.train.config import TrainConfig
from mcoder.train.distributed import make_trainer
from mcoder.train.trainer import read_state


@dataclass
class TrainJob:
    model: str
    """Model folder, or an mcoder checkpoint to continue from."""
    rollouts: Path
    """Rollouts JSONL (with token ids and sampling log-probs)."""
    verdicts: Path
    """Verdicts JSONL, joined to the rollouts on rollout_id."""
    out: Path
    """Checkpoint folder to write."""
    cfg: TrainConfig
    """Resolved training configuration."""
    overwrite: bool = False
    """Train again even when OUT already holds the checkpoint of these inputs."""


def train_once(job: TrainJob) -> dict[str, Any]:
    inputs = {
        "rollouts": str(Path(job.rollouts).resolve()),
        "verdicts": str(Path(job.verdicts).resolve()),
        "model": str(job.model),
    }
    done = read_state(job.out)
    if done and done.get("inputs") == inputs and not job.overwrite:
        info(f"{job.out} already holds the update from these inputs (pass --overwrite to train again)")
        return json.loads((Path(job.out) / "metrics.json").read_text())

    rollouts = list(read_records(job.rollouts, Rollout))
    verdicts = index_records(job.verdicts, Verdict, key=lambda v: v.rollout_id)
    trainer = make_trainer(job.model, job.cfg)  # FSDP2 across ranks when launched by torchrun
    info(
        f"{len(rollouts)} rollouts | algo {job.cfg.algo} | mini-batch {job.cfg.mini_batch_size} groups | "
        f"micro-batch {job.cfg.micro_batch_size} seqs | trainable params {sum(p.numel() for p in trainer.params):,}"
    )
    metrics = trainer.train_on_batch(
        rollouts, verdicts, names=(display_name(job.rollouts), display_name(job.verdicts))
    )
    metrics.update(batch_diversity(rollouts))
    samples = b"".join(orjson.dumps(s.to_row()) + b"\n" for s in trainer.last_samples)
    trainer.save(
        job.out,
        extra_state={"inputs": inputs},
        extra_files={"metrics.json": json.dumps(metrics, indent=2).encode(), "samples.jsonl": samples},
    )
    return metrics
