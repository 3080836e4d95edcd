"""``--report-to tensorboard|wandb``: every metric of every step, under the names metrics.jsonl
gives it, in the loggers people watch curves in, written through those libraries themselves.

``metrics.jsonl`` stays the source of truth; the loggers follow it, and a resumed run never
logs a step twice:

- **TensorBoard** (``torch.utils.tensorboard``; needs the ``tensorboard`` package): events in
  ``FOLDER/tensorboard``, one scalar per metric at ``global_step`` = the step. A writer opened
  on a folder that already has events asks TensorBoard to drop every earlier event from step
  ``purge_from`` on (``purge_step``) and writes those steps again from metrics.jsonl, so a step
  redone after a kill, or one a killed writer never flushed, is shown once, as the file has it.
- **Weights & Biases** (``wandb``; ``WANDB_MODE=offline`` runs without a network, ``wandb sync``
  uploads later): the run lives in ``FOLDER/wandb``, its id kept in ``FOLDER/wandb/mcoder.json``,
  so a resumed run continues the same W&B run. W&B cannot take a step back, so the resumed run
  asks W&B which steps it holds (offline: W&B's own reader of the earlier runs' logs, ``wandb
  leet inspect``; online: the run's starting step) and logs only the others: a step W&B kept
  from before a kill keeps those values, a step it lost (its writer buffers a few seconds) is
  written from metrics.jsonl.

Each logger writes a step as soon as it is given one (TensorBoard flushed at once: a kill
loses nothing already written to metrics.jsonl).

Both folders go through the output guard (``mcoder.outputs.claim_folder``) before a logger opens
them: a ``tensorboard/`` or ``wandb/`` that is someone else's (a non-empty folder without
mcoder's mark: ``tensorboard/.mcoder-tensorboard``, ``wandb/mcoder.json``), a link, a file or a
device is refused (exit 2), never written into; a folder mcoder cannot write in is the
environment (exit 4, naming it), found before the logger's own writer thread would fail on it.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterable, Sequence
from numbers import Real
from pathlib import Path
from typing import Any

from mcoder.errors import EnvironmentMissing

TENSORBOARD_DIR = "tensorboard"
TENSORBOARD_MARK = ".mcoder-tensorboard"  # in every tensorboard/ mcoder made: a rerun may go on in it
WANDB_DIR = "wandb"
WANDB_STATE = "mcoder.json"


def claim_logger_folder(folder: Path, marker: str, kind: str, *, make: bool = True) -> None:
    """``folder`` for the ``kind`` logger, through the output guard (see the module): refused
    when it is not mcoder's, an EnvironmentMissing naming it when it cannot be written."""
    from mcoder.errors import UsageError
    from mcoder.outputs import claim_folder

    flag = f"--report-to {kind}"
    try:
        claim_folder(folder, marker, flag=flag, make=make)
        if not make and not folder.exists():
            folder.mkdir(parents=True)
    except UsageError as e:
        raise UsageError(
            f"{flag}: {e.message}",
            hint=f"{folder} is not a folder mcoder made for its curves: move it aside, or start the run elsewhere",
        ) from None
    except OSError as e:
        raise EnvironmentMissing(
            f"{flag}: cannot write in {folder} ({e.strerror or e})",
            hint="fix its permissions or free the disk, or drop --report-to " + kind,
        ) from None


def scalars(metrics: dict[str, Any]) -> dict[str, float]:
    """The metrics a logger can plot: every number but the step itself."""
    return {k: float(v) for k, v in metrics.items() if k != "step" and isinstance(v, Real)}


class Reporters:
    """The loggers of one run: ``log(metrics, step)`` each step, ``close()`` at the end."""

    def __init__(self, loggers: Sequence[Any]):
        self.loggers = list(loggers)

    def log(self, metrics: dict[str, Any], step: int) -> None:
        values = scalars(metrics)
        for logger in self.loggers:
            logger.log(values, step)

    def close(self) -> None:
        for logger in self.loggers:
            logger.close()
        self.loggers = []


def open_reporters(
    kinds: Iterable[str],
    folder: str | os.PathLike,
    *,
    purge_from: int,
    history: Sequence[dict[str, Any]] = (),
    name: str | None = None,
    config: dict[str, Any] | None = None,
    quiet: bool = False,
) -> Reporters:
    """The loggers named in ``kinds`` ("none" names none), writing under ``folder``.

    ``purge_from``: the first step this run logs (a step a logger holds from an earlier run at or
    after it is replaced or skipped); ``history``: the earlier steps' metrics (with their "step"),
    given again to a logger that may lack them."""
    folder = Path(folder)
    loggers: list[Any] = []
    try:
        for kind in dict.fromkeys(kinds):
            if kind == "tensorboard":
                loggers.append(TensorBoard(folder / TENSORBOARD_DIR, purge_from))
            elif kind == "wandb":
                loggers.append(WandB(folder, name=name or folder.name, config=config or {}, quiet=quiet))
        reporters = Reporters(loggers)
        for metrics in history:
            if metrics.get("step", 0) >= 1:
                reporters.log(metrics, int(metrics["step"]))
    except BaseException:
        Reporters(loggers).close()
        raise
    return reporters


class TensorBoard:
    def __init__(self, folder: Path, purge_from: int):
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:
            raise EnvironmentMissing(
                "--report-to tensorboard needs the tensorboard package",
                hint="pip install tensorboard (or pip install 'mcoder[report]')",
            ) from None
        claim_logger_folder(folder, TENSORBOARD_MARK, "tensorboard")
        earlier = folder.is_dir() and any(folder.glob("events.out.tfevents.*"))
        # purge_step: TensorBoard hides the earlier events from that step on (they are written again)
        self.writer = SummaryWriter(log_dir=str(folder), purge_step=purge_from if earlier else None)

    def log(self, values: dict[str, float], step: int) -> None:
        for name, value in values.items():
            self.writer.add_scalar(name, value, global_step=step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class WandB:
    def __init__(self, folder: Path, *, name: str, config: dict[str, Any], quiet: bool):
        try:
            import wandb
        except ImportError:
            raise EnvironmentMissing(
                "--report-to wandb needs the wandb package",
                hint="pip install wandb (or pip install 'mcoder[report]')",
            ) from None
        self.folder = folder / WANDB_DIR
        state_file = self.folder / WANDB_STATE
        claim_logger_folder(self.folder, WANDB_STATE, "wandb", make=False)  # the state file is the mark
        state = json.loads(state_file.read_text()) if state_file.is_file() else {}
        self.run_id = state.get("id") or uuid.uuid4().hex[:12]
        if "id" not in state:  # first: a run killed before its first step resumes the same W&B run
            state_file.write_text(json.dumps({"id": self.run_id}))
        settings = wandb.Settings(console="off", silent=quiet, quiet=quiet)
        try:
            self.run = wandb.init(
                project=os.environ.get("WANDB_PROJECT", "mcoder"),
                dir=str(folder),
                id=self.run_id,
                name=name,
                resume="allow",
                config=config,
                settings=settings,
            )
        except Exception as e:  # noqa: BLE001  (not logged in, no network: W&B's message says which)
            raise EnvironmentMissing(
                f"--report-to wandb: W&B did not start a run ({type(e).__name__}: {e})",
                hint="run `wandb login`, or set WANDB_MODE=offline (and `wandb sync` the run folder later)",
            ) from None
        try:
            self.held = self._held_steps()
        except BaseException:
            self.run.finish()
            raise

    def _held_steps(self) -> set[int] | int:
        """The steps W&B has of this run already: a set (offline), or all below a number (online)."""
        if not self.run.offline:
            return int(self.run.starting_step or 0)
        held: set[int] = set()
        current = Path(self.run.dir).parent.name
        for log in sorted(self.folder.glob(f"offline-run-*-{self.run_id}/run-{self.run_id}.wandb")):
            if log.parent.name != current:
                held |= set(history_steps(log))
        return held

    def log(self, values: dict[str, float], step: int) -> None:
        if step in self.held if isinstance(self.held, set) else step < self.held:
            return  # W&B has this step already (from the run before a kill)
        self.run.log(values, step=step)

    def close(self) -> None:
        self.run.finish()


def history_steps(log: Path) -> list[int]:
    """The steps of the history records in an offline run's .wandb log, read by W&B itself."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "wandb", "leet", "inspect", str(log), "--json"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    if out.returncode != 0:  # logging the steps again would put them twice in the W&B run
        raise EnvironmentMissing(
            f"--report-to wandb: W&B could not read its earlier log {log} to resume the run "
            f"({out.stderr.strip()[-300:]})",
            hint="install wandb >= 0.31 (its `wandb leet inspect` reads the log), or move RUN/wandb aside",
        )
    steps = []
    for line in out.stdout.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue  # the torn end of a log whose writer was killed
        if record.get("type") == "history":
            steps.append(int(record["history"]["item"]["_step"]))
    return steps
