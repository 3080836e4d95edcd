"""A reward function for TRL's ``GRPOTrainer``, backed by one long-lived mcoder ``Judge``::

    from mcoder.integrations.trl_reward import JudgeReward

    reward = JudgeReward("problems.jsonl")            # or no file: problems come as dataset columns
    trainer = GRPOTrainer(model=..., reward_funcs=[reward], train_dataset=dataset, args=GRPOConfig(...))

TRL calls ``reward(prompts=..., completions=..., completion_ids=..., **columns)`` with every
dataset column (but the prompt) repeated per completion; the reward is ``mcoder judge``'s, one
float per completion. Each row names its problem as ``columns.problem_from_row`` reads it. The
judge's sandboxed workers start at the first call and stay up until ``close()`` (or exit); with
``judge=RemoteJudge([...urls])`` the rewards come from ``mcoder judge serve`` services instead.

Under ``accelerate``/``torchrun`` each process calls its own reward with its share of the batch:
give each judge its share of the cores (``JudgeConfig(workers=cores // processes)``), or send all
of them to one service.
"""

from __future__ import annotations

import atexit
import itertools
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcoder.errors import DataError
from mcoder.integrations.columns import completion_text, load_problems, problem_from_row
from mcoder.judge.config import JudgeConfig
from mcoder.records import Problem, Rollout, Verdict


class JudgeReward:
    """``reward(prompts, completions, **columns) -> list[float]``: mcoder's verdict rewards."""

    def __init__(
        self,
        problems: str | Path | Mapping[str, Problem] | list[Problem] | None = None,
        cfg: JudgeConfig | None = None,
        *,
        judge: Any = None,
        name: str = "mcoder_judge",
    ):
        """``problems``: a problems file (or records) that ``problem_id`` columns refer to;
        ``cfg``: the judge's limits and reward (binary by default); ``judge``: an object with
        ``Judge``'s ``judge(problems_by_id, rollouts)`` (a ``RemoteJudge``), used instead of a
        local one; ``name``: what TRL logs the reward as."""
        self.problems = load_problems(problems)
        self.cfg = cfg or JudgeConfig()
        self.__name__ = name  # TRL names the reward's metrics after it
        self._judge = judge
        self._owned = judge is None
        self._lock = threading.Lock()
        self._calls = itertools.count()
        atexit.register(self.close)

    def __call__(
        self, prompts: list | None = None, completions: list | None = None, **columns: Any
    ) -> list[float]:
        verdicts = self.verdicts(completions or [], **columns)
        log_metric = columns.get("log_metric")
        if callable(log_metric) and verdicts:
            log_metric("mcoder/pass_rate", sum(v.passed for v in verdicts) / len(verdicts))
        return [v.reward for v in verdicts]

    def verdicts(self, completions: list, **columns: Any) -> list[Verdict]:
        """One verdict per completion, in order (what ``__call__`` takes the rewards from)."""
        n = len(completions)
        rows = [
            {k: v[i] for k, v in columns.items() if isinstance(v, list) and len(v) == n} for i in range(n)
        ]
        call = next(self._calls)
        by_id: dict[str, Problem] = {}
        rollouts = []
        for i, (completion, row) in enumerate(zip(completions, rows, strict=True)):
            problem = problem_from_row(row, self.problems)
            seen = by_id.setdefault(problem.id, problem)
            if seen is not problem and seen != problem:
                raise DataError(
                    f"two different problems share the id {problem.id!r} in one batch",
                    field="id",
                    hint="give each problem its own id",
                )
            rollouts.append(
                Rollout(id=f"trl-{call}-{i}", problem_id=problem.id, completion=completion_text(completion))
            )
        return self._started().judge(by_id, rollouts)

    def _started(self):
        with self._lock:
            if self._judge is None:
                from mcoder.judge.core import Judge

                self._judge = Judge(self.cfg).__enter__()
            return self._judge

    def close(self) -> None:
        """Stop the judge's workers (when this reward started them); the next call starts them again."""
        with self._lock:
            judge, self._judge = self._judge, None
            if judge is not None and self._owned:
                judge.close()
            elif judge is not None:
                self._judge = judge  # not ours to close

    def __getstate__(self) -> dict:
        """Picklable (TRL and multiprocessing may copy reward functions): the copy starts its own judge."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("_lock", "_calls")}
        if self._owned:
            state["_judge"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._calls = itertools.count()
