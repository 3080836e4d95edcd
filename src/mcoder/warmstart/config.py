"""The warm start's settings (``WarmStartConfig``, one field per setting: ``python -m
mcoder.warmstart`` generates its options from the fields) and its schedule (``Schedule``: when
the gate is read and at which learning rate the pass goes on)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from mcoder.config import check_choices, ranges


@ranges(
    steps=">= 1", batch=">= 1", lr="> 0", weight_decay=">= 0", layers=">= 1", seed="finite",
    target_pass="[0, 1]", check_every=">= 1", first_check=">= 0", check_problems=">= 1", check_n=">= 1",
    max_tokens=">= 1", approach=">= 0", approach_lr="> 0", fine_every=">= 1", look_back=">= 0",
    overshoot=">= 0",
)  # fmt: skip
@dataclass
class WarmStartConfig:
    """The supervised pass: its size, its optimizer, and the gate that stops it."""

    # --- supervised pass
    steps: int = 500
    """optimizer steps (the most, with --target-pass)"""
    batch: int = 16
    """sequences per step"""
    lr: float = 2e-3
    """AdamW learning rate"""
    weight_decay: float = 0.0
    """AdamW weight decay"""
    layers: int = 2
    """transformer layers of the tiny model"""
    seed: int = 0
    """seed of the random init and the batches"""

    # --- gate
    target_pass: float = 0.0
    """stop once the gate reads this on its unseen train problems: the mean probability of their
    reference programs (--gate likelihood) or their samples' pass rate (--gate sampled); 0: no gate,
    train on every problem for all --steps"""
    gate: Literal["likelihood", "sampled"] = "likelihood"
    """what the gate reads: the probability of the reference programs (no sampling) or the judged
    pass rate of --check-n samples per problem"""
    check_every: int = 5
    """steps between gate checks"""
    first_check: int = 0
    """no gate check before this step"""
    check_problems: int = 48
    """train problems kept out of the pass for the gate"""
    check_n: int = 8
    """--gate sampled: samples per gate problem per check (T = 1.0)"""
    max_tokens: int = 64
    """sampling limit of the checks"""

    # --- approach
    approach: float = 0.5
    """from the first check at this fraction of --target-pass on, the pass slows down"""
    approach_lr: float = 0.25
    """learning-rate factor once the pass slows down"""
    fine_every: int = 1
    """steps between checks once it slows down"""
    look_back: int = 0
    """keep the weights every this many steps between checks; a check past the target by more than
    --overshoot is looked back from (0: never)"""
    overshoot: float = 0.1
    """how far past --target-pass a check must read to look back"""

    def __post_init__(self) -> None:
        check_choices(self)


@dataclass
class Schedule:
    """When the pass reads its gate, and at which learning rate it trains.

    Checks come every ``check_every`` steps from step ``first_check`` on. From the first check
    whose gate value reaches ``approach`` x ``target_pass`` on (the approach phase, ``near``), the
    learning rate is multiplied by ``approach_lr`` and checks come every ``fine_every`` steps. With
    ``look_back``, a copy of the weights is kept every ``look_back`` steps between checks (and
    before the first one, from the start)."""

    config: WarmStartConfig
    near: bool = field(default=False, init=False)
    """In the approach phase: a slower pass, finer checks."""

    def checks_at(self, step: int) -> bool:
        """Whether the gate is read after ``step``."""
        c = self.config
        every = c.fine_every if self.near else c.check_every
        return step >= c.first_check and step % every == 0

    def copies_at(self, step: int) -> bool:
        """Whether the weights after ``step`` (not a check) are kept for a look-back."""
        return bool(self.config.look_back) and step % self.config.look_back == 0

    def approach(self, rate: float, optimizer) -> None:
        """After a check that read ``rate``: the first one at ``approach`` x target or more starts
        the approach phase (the optimizer's learning rate drops, once)."""
        c = self.config
        if not self.near and rate >= c.approach * c.target_pass:
            self.near = True
            for group in optimizer.param_groups:
                group["lr"] = c.lr * c.approach_lr

    def looks_back(self, rate: float) -> bool:
        """Whether a check that reached the target at ``rate`` is far enough past it to look back."""
        return bool(self.config.look_back) and rate > self.config.target_pass + self.config.overshoot
