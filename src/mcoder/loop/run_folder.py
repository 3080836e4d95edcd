"""The run folder of ``train --loop``: every file the loop writes, in one place.

    RUN/config.json                  the resolved configuration (train, sampling, judge, loop)
    RUN/temperature.json             the sampling temperature (with auto: each stage's diversity table)
    RUN/step_NNNN/rollouts.jsonl     what the policy sampled at step N
    RUN/step_NNNN/verdicts.jsonl     what the judge said
    RUN/step_NNNN/samples.jsonl      reward, advantage and truncation-mask decision per sample
    RUN/metrics.jsonl                one line of metrics per step
    RUN/checkpoint/                  the latest policy, optimizer and step (atomic)
    RUN/adapters/step_NNNN/          vllm engine: the LoRA adapter handed to it after step N

Only the main process (rank 0 under torchrun) writes here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from mcoder.errors import UsageError
from mcoder.jsonl import RecordWriter
from mcoder.loop.config import LoopConfig, changed_settings
from mcoder.train.trainer import read_state


class RunFolder:
    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.checkpoint = self.root / "checkpoint"
        self.config = self.root / "config.json"
        self.metrics = self.root / "metrics.jsonl"
        self.temperature = self.root / "temperature.json"
        self.adapters = self.root / "adapters"

    def step_dir(self, step: int) -> Path:
        return self.root / f"step_{step:04d}"

    def prepare(self, cfg: LoopConfig) -> dict[str, Any] | None:
        """Make the folder, read the checkpoint's state (None: a fresh run), refuse a resume with
        other settings, record the settings, and drop metrics of steps that were not checkpointed
        (they are about to be redone)."""
        self.root.mkdir(parents=True, exist_ok=True)
        state = read_state(self.checkpoint)
        if state is not None and self.config.exists():
            diff = changed_settings(json.loads(self.config.read_text()), json.loads(cfg.to_json()))
            if diff:
                raise UsageError(
                    f"{self.root} was started with other settings ({', '.join(diff)})",
                    hint="rerun with the original flags, or use a new --run-dir",
                )
        tmp = self.config.with_name(self.config.name + ".part")
        tmp.write_text(cfg.to_json())
        tmp.replace(self.config)
        self._trim_metrics(last_step=state["loop_step"] if state else 0)
        return state

    def _trim_metrics(self, last_step: int) -> None:
        if not self.metrics.exists():
            return
        keep = [
            ln
            for ln in self.metrics.read_bytes().splitlines(keepends=True)
            if ln.endswith(b"\n") and orjson.loads(ln).get("step", 0) <= last_step
        ]
        self.metrics.write_bytes(b"".join(keep))

    def write_step(self, step: int, name: str, key: str, records: Iterable[Any]) -> None:
        """RUN/step_NNNN/NAME.jsonl, whole (a redone step replaces it)."""
        with RecordWriter(self.step_dir(step) / f"{name}.jsonl", key, resume=False) as w:
            w.write_all(records)

    def append_metrics(self, metrics: dict[str, Any]) -> None:
        with open(self.metrics, "ab") as f:
            f.write(orjson.dumps(metrics) + b"\n")
