"""Run by test_gpu_path.py under ``torchrun --nproc-per-node 2`` with a collective timeout of
TIMEOUT seconds: rank 0 works alone for WORK > TIMEOUT seconds three times (a probe whose result
every rank needs, a checkpoint write that ends in a barrier, uneven sampling gathered from
every rank), then arrives WORK seconds late at a plain all-reduce of the default group. Each
rank writes OUT/rank<N>.json: which phases passed, and whether the late all-reduce timed out.

    python -m torch.distributed.run --standalone --nproc-per-node 2 lone_work_run.py TIMEOUT WORK OUT
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import torch
import torch.distributed as dist

from mcoder.train import distributed as D


def main(timeout: float, work: float, out: Path) -> None:
    D.setup(timeout)
    me = D.rank()
    report: dict = {"passed": []}
    D.broadcast_result(lambda: time.sleep(work) or "T")  # the temperature probe
    report["passed"].append("probe")
    if D.is_main():
        time.sleep(work)  # writing a checkpoint
    D.barrier()
    report["passed"].append("checkpoint")
    D.gather_results(lambda: time.sleep(work if me == 0 else 0) or me)  # uneven sampling
    report["passed"].append("gather")
    if D.is_main():
        time.sleep(work)
    t0 = time.perf_counter()
    try:
        dist.all_reduce(torch.ones(1, device=D.HOST))  # the default group: its timeout applies
        report["late_all_reduce"] = "completed"
    except Exception as e:  # noqa: BLE001 - what the test reads
        report["late_all_reduce"] = f"failed after {time.perf_counter() - t0:.1f}s: {type(e).__name__}"
    (out / f"rank{me}.json").write_text(json.dumps(report))
    sys.stdout.flush()
    os._exit(0)  # a group whose collective timed out may hang in its teardown


if __name__ == "__main__":
    main(float(sys.argv[1]), float(sys.argv[2]), Path(sys.argv[3]))
