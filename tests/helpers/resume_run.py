"""Run by test_train_distributed.py under ``torchrun --nproc-per-node 2`` (gloo, CPU): two updates of
the FSDP2 trainer with a sharded checkpoint after each, straight through, or killed right after
the first checkpoint is written and resumed from it.

    python -m torch.distributed.run --standalone --nproc-per-node 2 resume_run.py MODE MODEL BATCH OUT

MODE straight: update, save OUT/first, update, save OUT/second. killed: update, save OUT/first,
wait until it is in place, then SIGKILL (each rank itself). resumed: a trainer from OUT/first,
update, save OUT/resumed. Each save is a mid-run one (``final=False``: sharded state only).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

from mcoder.jsonl import read_records
from mcoder.records import Rollout, Verdict
from mcoder.train import distributed as D
from mcoder.train.config import resolve

SETTINGS = {"lr": 1e-3, "mini_batch_size": 2, "micro_batch_size": 3, "truncation": "none", "weight_decay": 0.1}


def main(mode: str, model: str, batch: str, out: str) -> None:
    rollouts = list(read_records(Path(batch) / "r.jsonl", Rollout))
    verdicts = {v.rollout_id: v for v in read_records(Path(batch) / "v.jsonl", Verdict)}
    out = Path(out)
    start = str(out / "first") if mode == "resumed" else model
    trainer = D.make_trainer(start, resolve("microcoder-grpo", SETTINGS))
    if mode != "resumed":
        trainer.train_on_batch(rollouts, verdicts)
        trainer.save(out / "first", final=False)
        background = getattr(trainer, "_saving", None) is not None
        if D.is_main():
            (out / "first-background.json").write_text(json.dumps(background))
        if mode == "killed":
            trainer.wait_for_saves()
            os.kill(os.getpid(), signal.SIGKILL)
    trainer.train_on_batch(rollouts, verdicts)
    trainer.save(out / ("second" if mode == "straight" else "resumed"), final=False)
    trainer.wait_for_saves()


if __name__ == "__main__":
    main(*sys.argv[1:5])
