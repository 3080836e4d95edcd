"""Run by test_gpu_path.py under ``torchrun --nproc-per-node 2`` (gloo, CPU): the FSDP2
trainer's update, checkpoint and weight stream, and the loop's waits on rank 0's lone work, with
every collective recorded; each rank writes what it saw to OUT/rank<N>.json.

    python -m torch.distributed.run --standalone --nproc-per-node 2 collectives_run.py MODEL BATCH OUT
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the helpers package

from helpers.collectives import Recorder
from mcoder.jsonl import read_records
from mcoder.loop.samplers import policy_weights
from mcoder.records import Rollout, Verdict
from mcoder.train import distributed as D
from mcoder.train.config import resolve


def main(model: str, batch: str, out: str) -> None:
    cfg = resolve("microcoder-grpo", {"lr": 1e-3, "mini_batch_size": 2, "micro_batch_size": 3, "truncation": "none"})
    rollouts = list(read_records(Path(batch) / "r.jsonl", Rollout))
    verdicts = {v.rollout_id: v for v in read_records(Path(batch) / "v.jsonl", Verdict)}
    with Recorder() as rec:
        trainer = D.make_trainer(model, cfg)
        trainer.train_on_batch(rollouts, verdicts)
        trainer.save(Path(out) / "ck")
        for _ in policy_weights(trainer):
            pass
        D.broadcast_result(lambda: "probe")
        D.gather_results(lambda: D.rank())
        D.barrier()
    rows = [c.to_json() for c in rec.seen]
    (Path(out) / f"rank{D.rank()}.json").write_text(json.dumps(rows))


if __name__ == "__main__":
    main(*sys.argv[1:4])
