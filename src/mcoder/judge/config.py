"""JudgeConfig: the limits, the comparison rules and the pool size of one judge run."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Literal

from mcoder.config import check_choices, check_ranges, not_setting, ranges
from mcoder.errors import UsageError
from mcoder.judge.libraries import platform_packages

Reward = Literal["binary", "fraction"]
LibraryProfile = Literal["auto", "contest", "atcoder", "leetcode", "none"]
NOT_AN_OUTCOME = "outcome"


def not_an_outcome(why: str) -> dict:
    """A field's metadata: a setting of the verdicts that leaves a program's outcome (what the
    cache keeps) as it is; left out of the cache key (``judge.cache.limits_key``)."""
    return {NOT_AN_OUTCOME: False, "why": why}


class Compare(str):
    """The name of a comparison rule: its choices are the names registered in ``compare.RULES``
    (``@compare.rule(name)``), read when asked, so that a rule is named in one place only."""

    @staticmethod
    def __choices__() -> tuple[str, ...]:
        from mcoder.judge.compare import RULES  # here: importing the config stays light

        return tuple(RULES)


def default_workers() -> int:
    """One worker per core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


@ranges(
    workers=">= 0", timeout_s="(0, 3600]", wall_factor="[1, 100]", slot_cpus="[0, 1024]", memory_mb=">= 64",
    max_processes=">= 1", max_output_mb="> 0", max_disk_mb=">= 1", first_uid="[1000, 2147482624]",
    cache_size=">= 0", rollout_wall_s="[0, 86400]",
)  # fmt: skip
@dataclass(slots=True)
class JudgeConfig:
    # --- pool
    workers: int = field(default=0, metadata=not_setting(
        "how many candidates run at once, not how one runs (each slot has its own CPU share)"
    ))
    """Candidates judged at once, each in its own warm worker (0 = one per core)."""

    # --- limits, per test
    timeout_s: float = 6.0
    """CPU-time limit of one test in seconds, counted over the program's whole process tree (so a
    busy machine does not turn a correct program into a time limit)."""
    wall_factor: float = 3.0
    """Wall-clock backstop of a test, as a multiple of ``timeout_s`` (for programs that sleep or
    block, which use no CPU)."""
    slot_cpus: float = 1.0
    """CPUs a candidate's process tree may use at once (a cgroup quota, where the host lets the
    judge make one; 0 = no quota). Each slot also gets an equal share of a busy machine."""
    memory_mb: int = 1024
    """Memory limit in MiB: the address space of each process, and (where the host lets the judge
    make cgroups) the resident memory of the program's whole process tree together."""
    max_processes: int = 32
    """Processes and threads a candidate may run at once (RLIMIT_NPROC of its user id)."""
    max_output_mb: float = 16.0
    """Standard output (or return value text) a test may produce before it is stopped."""
    max_disk_mb: int = 64
    """Disk a candidate may fill in its own directory (a tmpfs of this size per worker, in memory)."""
    rollout_wall_s: float = 300.0
    """Wall-clock seconds all the tests of one rollout may take together (0: no bound): past it
    the test running is stopped, the tests left are time_limit, and the verdict is returned."""

    # --- grading
    compare: Compare = "microcoder"
    """Output comparison: microcoder (tolerant chain) or strict (LiveCodeBench's rules)."""
    reward: Reward = field(default="binary", metadata=not_an_outcome(
        "turns an outcome into a reward after the cache; the outcome does not depend on it "
        "(early_exit, which it sets by default, is keyed)"
    ))
    """binary: 1 when every test passes, else 0; fraction: the share of tests passed."""
    early_exit: bool | None = None
    """Stop a candidate at its first failing test (None: on for binary rewards, off for fraction)."""

    # --- isolation
    unsafe_no_sandbox: bool = False
    """Run candidates as this user, with network and files reachable: only inside outer isolation."""
    first_uid: int = field(default=61000, metadata=not_setting("which unused user id a slot's candidates run as"))
    """First of the unused user ids that candidates run as (two per worker slot: programs, checks)."""
    allow_packages: tuple[str, ...] = ()
    """Installed third-party packages a program may import beyond ``libraries``
    (``--allow-package rich``)."""
    libraries: LibraryProfile = "auto"
    """Which contest platform's libraries a program sees, read-only, where they are installed:
    ``auto`` (each problem's own platform's: AtCoder's or LeetCode's, every platform's for a
    problem of another platform or none), ``atcoder`` (numpy, scipy, networkx, sortedcontainers,
    ...), ``leetcode`` (sortedcontainers), ``contest`` (both) or ``none`` (the standard library
    only). Nothing else of the host's Python."""

    process_per_test: bool = False
    """Run every stdin test in a process of its own, as a fresh interpreter would (slower where
    tests are many and fast). By default a rollout's stdin tests share one process, each run as a
    fresh ``__main__`` with what a run leaves in the interpreter put back, and a fresh process
    after any test that failed or left a thread, child process or open file behind."""

    # --- speed
    cache_size: int = field(default=20_000, metadata=not_setting("how many outcomes are kept, not what they are"))
    """Outcomes kept by (program, tests, limits) so that identical programs run once (~4 KB each at most)."""
    cache: bool = field(default=True, metadata=not_an_outcome("whether outcomes are kept at all"))
    """Reuse outcomes of identical programs (within a batch and across batches). A program whose
    outcome varies between runs (random, time-dependent) then keeps its first outcome for the
    whole run; ``cache=False`` (``--no-cache``) runs every rollout."""

    def __post_init__(self) -> None:
        if self.workers < 0:  # 0 is "one per core"; a negative count is a typo, not a default
            raise UsageError(f"--workers {self.workers} is negative", hint="give a count, or 0 for one per core")
        if self.workers == 0:
            self.workers = default_workers()
        if self.early_exit is None:
            self.early_exit = self.reward == "binary"
        self.validate()

    def validate(self) -> None:
        check_choices(self)  # compare, reward, libraries
        check_ranges(self)  # the limits' declared ranges (@ranges above the class)
        self.allow_packages = tuple(self.allow_packages)

    def visible_packages(self, profile: str | None = None) -> tuple[str, ...]:
        """The third-party packages a program may import: the installed ones of ``profile``
        (default ``libraries``; ``auto`` resolves per problem, ``libraries.profile_for``), then
        ``allow_packages``."""
        profile = self.libraries if profile is None else profile
        return tuple(dict.fromkeys([*platform_packages(profile), *self.allow_packages]))
