"""Run by test_train_distributed.py under ``torchrun --nproc-per-node 2`` (gloo, CPU): π_old and
π_ref of one batch (recomputed, a LoRA reference), with every scoring forward counted; each rank
writes the log-probs it ends up holding and how many sequences it scored to OUT/rank<N>.json.

    python -m torch.distributed.run --standalone --nproc-per-node 2 scoring_run.py MODEL BATCH OUT
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import mcoder.train.trainer as trainer_module
from mcoder.jsonl import read_records
from mcoder.records import Rollout, Verdict
from mcoder.train import distributed as D
from mcoder.train.config import resolve

SETTINGS = {"lora_rank": 4, "beta": 0.04, "recompute_old_logprobs": True, "truncation": "none", "micro_batch_size": 3}


def scored_logprobs(model: str, batch: Path) -> tuple[dict, int]:
    """({rollout id: (π_old, π_ref)}, sequences this process scored) of the batch in ``batch``."""
    rollouts = list(read_records(batch / "r.jsonl", Rollout))
    verdicts = {v.rollout_id: v for v in read_records(batch / "v.jsonl", Verdict)}
    trainer = D.make_trainer(model, resolve("grpo", SETTINGS))
    rows = [0]
    score = trainer_module.score

    def counted(model, batch, *args, **kwargs):
        rows[0] += batch.completion_ids.shape[0]
        return score(model, batch, *args, **kwargs)

    trainer_module.score = counted
    prepared = trainer.prepare_samples(rollouts, verdicts)
    return {s.rollout.id: (s.old_logprobs, s.ref_logprobs) for s in prepared.samples}, rows[0]


def main(model: str, batch: str, out: str) -> None:
    logprobs, rows = scored_logprobs(model, Path(batch))
    (Path(out) / f"rank{D.rank()}.json").write_text(json.dumps({"rows": rows, "logprobs": logprobs}))


if __name__ == "__main__":
    main(*sys.argv[1:4])
