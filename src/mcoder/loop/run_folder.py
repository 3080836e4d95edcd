"""The run folder of ``mcoder loop``: every file the loop writes, in one place.

    RUN/config.json                  the resolved configuration (train, sampling, judge, loop)
    RUN/temperature.json             the sampling temperature (with auto: each stage's diversity table)
    RUN/step_NNNN/rollouts.jsonl     what the policy sampled at step N
    RUN/step_NNNN/verdicts.jsonl     what the judge said
    RUN/step_NNNN/samples.jsonl      reward, advantage and truncation-mask decision per sample
    RUN/metrics.jsonl                one line of metrics per step (the source of truth)
    RUN/tensorboard/, RUN/wandb/     --report-to: the same metrics for TensorBoard and W&B
    RUN/checkpoint/                  the latest policy as a Hugging Face folder, with its model
                                     card; optimizer and step in RUN/checkpoint/trainer/ (atomic)
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
from mcoder.reporting import Reporters
from mcoder.train.trainer import read_state


class RunFolder:
    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.checkpoint = self.root / "checkpoint"
        self.config = self.root / "config.json"
        self.metrics = self.root / "metrics.jsonl"
        self.temperature = self.root / "temperature.json"
        self.adapters = self.root / "adapters"
        self.reporters = Reporters([])  # --report-to: opened by prepare (main process)
        self.data: dict[str, Any] = {}  # fingerprints of the data files, for the checkpoint's card

    def step_dir(self, step: int) -> Path:
        return self.root / f"step_{step:04d}"

    def prepare(self, cfg: LoopConfig) -> dict[str, Any] | None:
        """Make the folder, read the checkpoint's state (None: a fresh run), refuse a resume with
        other settings, record the settings, and drop metrics of steps that were not checkpointed
        (they are about to be redone)."""
        self.root.mkdir(parents=True, exist_ok=True)
        state = read_state(self.checkpoint)
        now = json.loads(cfg.to_json())
        if self.config.exists():
            before = json.loads(self.config.read_text())
            diff = changed_settings(before, now) if state is not None else []
            if diff:
                raise UsageError(
                    f"{self.root} was started with other settings ({', '.join(diff)})",
                    hint="rerun with the original flags, or use a new --run-dir",
                )
            # the record of what the run trained on stays the first run's (the claim checked that
            # the model and problems given now have the same content)
            now.update({k: before[k] for k in ("model", "problems") if k in before})
        tmp = self.config.with_name(self.config.name + ".part")
        tmp.write_text(json.dumps(now, indent=2, sort_keys=True))
        tmp.replace(self.config)
        last_step = state["loop_step"] if state else 0
        self._trim_metrics(last_step)
        if last_step < cfg.steps:
            from mcoder.outputs import fingerprint

            self.data = {"problems": fingerprint(cfg.problems)}
            self._open_reporters(cfg)
        return state

    def _open_reporters(self, cfg: LoopConfig) -> None:
        """--report-to: the loggers start from the checkpointed steps of metrics.jsonl (each writes
        what it lacks), then get each step as it is appended."""
        from mcoder.console import is_quiet
        from mcoder.reporting import open_reporters

        history = (
            [orjson.loads(ln) for ln in self.metrics.read_bytes().splitlines()]
            if self.metrics.exists()
            else []
        )
        self.reporters = open_reporters(
            cfg.train.report_to, self.root, purge_from=1, history=history, name=self.root.name,
            config=json.loads(cfg.to_json()), quiet=is_quiet(),
        )  # fmt: skip

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
        """One step's metrics: a line of metrics.jsonl, then the --report-to loggers."""
        with open(self.metrics, "ab") as f:
            f.write(orjson.dumps(metrics) + b"\n")
        self.reporters.log(metrics, metrics["step"])

    def checkpoint_state(self, step: int) -> dict[str, Any]:
        """What the checkpoint after ``step`` records beside its step counts (and its card shows)."""
        return {"loop_step": step, **({"data": self.data} if self.data else {})}

    def close(self) -> None:
        """Close the --report-to loggers (the end of the run)."""
        self.reporters.close()
