"""`mcoder train` on one rollout batch: read rollouts and verdicts, update, save a checkpoint.

    OUT/                 the policy as a Hugging Face folder: model weights (or the LoRA
                         adapter), tokenizer, README.md (the model card)
    OUT/trainer/         train_config.json, optimizer.pt, trainer_state.json (step,
                         policy_version, inputs and their fingerprints)
    OUT/samples.jsonl    reward, advantage and truncation-mask decision per sample
    OUT/metrics.json     the metrics of this update (also printed to stdout)

OUT is claimed first (``mcoder.outputs``): one writer at a time, and ``OUT.meta.json`` records the
settings and the fingerprints of the model, rollouts and verdicts. Run again with the same ones,
it sees the finished checkpoint and does nothing; with others it refuses and lists them
(``--overwrite`` trains again). ``--model`` may be an earlier checkpoint: AdamW's moments, the
warm-up schedule and the step continue from it.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from mcoder.config import output_settings
from mcoder.console import info
from mcoder.errors import DataError
from mcoder.jsonl import UniqueIds, display_name, index_records, read_numbered
from mcoder.records import Rollout, Verdict
from mcoder.rollout.diversity import batch_diversity
from mcoder.train.config import TrainConfig
from mcoder.train.distributed import make_trainer


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
    from mcoder.outputs import Job, execute
    from mcoder.train.distributed import broadcast_result, setup

    setup(job.cfg.dist_timeout_s)  # under torchrun: the process group first, then rank 0 alone claims OUT
    job.cfg.settle()  # the dtype of this machine's device: what OUT's settings record
    claimed = Job(
        out=job.out, inputs={"model": job.model, "rollouts": job.rollouts, "verdicts": job.verdicts},
        settings=output_settings(job.cfg), overwrite=job.overwrite,
    )  # fmt: skip
    # rank 0 (or the one process) holds OUT for the whole update
    return execute(TrainStage(job), claimed, share=broadcast_result)


@dataclass
class TrainStage:
    """``mcoder train`` as a stage (``mcoder.outputs.Stage``): the update's metrics."""

    job: TrainJob
    name = "train"
    kind = "dir"
    expect = ("trainer/trainer_state.json",)

    def finished(self, claimed, claim) -> dict[str, Any]:
        info(claim.finished_message)
        return json.loads((Path(self.job.out) / "metrics.json").read_text())

    def run(self, claimed, claim) -> dict[str, Any]:
        from mcoder.outputs import fingerprint

        job = self.job
        rollouts = list(index_records(job.rollouts, Rollout, key=lambda r: r.id).values())  # unique ids
        verdicts = read_verdicts(job.verdicts, {r.id for r in rollouts})
        trainer = make_trainer(job.model, job.cfg)  # FSDP2 across ranks when launched by torchrun
        with contextlib.closing(_reporters(job, trainer.policy_version + 1)) as reporters:
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
                extra_state={
                    "inputs": {"rollouts": str(job.rollouts), "verdicts": str(job.verdicts), "model": job.model},
                    "data": {"rollouts": fingerprint(job.rollouts), "verdicts": fingerprint(job.verdicts)},
                },
                extra_files={"metrics.json": json.dumps(metrics, indent=2).encode(), "samples.jsonl": samples},
            )
            reporters.log(metrics, trainer.policy_version)
        return metrics


def read_verdicts(path: Path, rollout_ids: set[str]) -> dict[str, Verdict]:
    """The verdicts by rollout id: a repeated one, or one of a rollout not in the batch (verdicts
    of another batch?), is a data error naming the line and the field."""
    ids = UniqueIds(path, field="rollout_id")
    out = {}
    for lineno, v in read_numbered(path, Verdict):
        ids.add(v.rollout_id, lineno)
        if v.rollout_id not in rollout_ids:
            raise DataError(
                f"verdict of rollout {v.rollout_id!r}, which is not in the rollouts file",
                path=display_name(path), line=lineno, field="rollout_id",
                hint="pass the verdicts judged from these rollouts",
            )  # fmt: skip
        out[v.rollout_id] = v
    return out


def _reporters(job: TrainJob, step: int):
    """--report-to: the loggers of this update, in the folder that holds OUT (RUN/tensorboard,
    RUN/wandb beside RUN/checkpoint: updates chained from checkpoint to checkpoint in one folder
    draw one curve), the step being the count of rollout batches the policy has trained on."""
    from mcoder.console import is_quiet
    from mcoder.reporting import Reporters, open_reporters
    from mcoder.train.distributed import is_main

    if not is_main():
        return Reporters([])
    folder = Path(job.out).resolve().parent
    config = {**json.loads(job.cfg.to_json()), "model": job.model}
    return open_reporters(
        job.cfg.report_to, folder, purge_from=step, name=folder.name, config=config, quiet=is_quiet()
    )
