"""``mcoder judge``: run each rollout's program in the sandbox against its problem's tests."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from mcoder.cli.common import (
    FLAG,
    INPUT,
    IO_PANEL,
    HelpFlag,
    OutPath,
    Overwrite,
    Quiet,
    apply_quiet,
    command_options,
    guarded,
)

MERGE = "Shards"
LIMITS = "Limits per test"
GRADING = "Grading"
POOL = "Workers and isolation"


def register(app: typer.Typer) -> None:
    @app.command(
        **command_options(
            "judge",
            help="Judge ROLLOUTS against PROBLEMS into OUT (verdicts JSONL): one verdict per rollout.",
            example="mcoder judge -p problems.jsonl -r rollouts.jsonl -o verdicts.jsonl --workers 8",
        )
    )  # fmt: skip
    @guarded
    def judge(
        out: OutPath,
        problems: Annotated[
            Path | None,
            typer.Option(
                "--problems", "-p", rich_help_panel=IO_PANEL, help="Problems JSONL ('-' for stdin)."
            ),
            INPUT,
        ] = None,
        rollouts: Annotated[
            Path | None,
            typer.Option(
                "--rollouts",
                "-r",
                rich_help_panel=IO_PANEL,
                help="Rollouts JSONL ('-' for stdin), or a LiveCodeBench results file (*_eval_all.json) to re-judge; with --merge, the check list.",
            ),
            INPUT,
        ] = None,
        merge: Annotated[
            bool,
            typer.Option(
                "--merge",
                metavar=FLAG,
                rich_help_panel=MERGE,
                help="Join the verdict files PARTS of --shard runs into OUT, checking that no rollout "
                "is judged twice (and, with --rollouts, that every one is judged).",
            ),
        ] = False,
        parts: Annotated[
            list[Path] | None,
            typer.Argument(metavar="PARTS", help="With --merge: the shards' verdict files."),
            INPUT,
        ] = None,
        workers: Annotated[
            int,
            typer.Option(
                "--workers", "-w", rich_help_panel=POOL, help="Candidates run at once (0 = one per core)."
            ),
        ] = 0,
        timeout: Annotated[
            float,
            typer.Option(
                "--timeout",
                rich_help_panel=LIMITS,
                help="CPU-time limit per test (whole process tree), seconds.",
            ),
        ] = 6.0,
        wall_factor: Annotated[
            float,
            typer.Option(
                "--wall-factor",
                rich_help_panel=LIMITS,
                help="Wall-clock backstop per test, as a multiple of --timeout (the limit itself is CPU time).",
            ),
        ] = 3.0,
        slot_cpus: Annotated[
            float,
            typer.Option(
                "--slot-cpus",
                rich_help_panel=LIMITS,
                help="CPUs one program's process tree may use at once, where the judge can make a cgroup "
                "(0: no quota); each worker slot also gets an equal share of a busy machine.",
            ),
        ] = 1.0,
        memory_mb: Annotated[
            int,
            typer.Option(
                "--memory-mb",
                rich_help_panel=LIMITS,
                help="Each process's address space, and the whole tree's memory where cgroups allow, MiB.",
            ),
        ] = 1024,
        allow_package: Annotated[
            list[str] | None,
            typer.Option(
                "--allow-package",
                rich_help_panel=LIMITS,
                help="A third-party package programs may import (repeatable), beyond --libraries.",
            ),
        ] = None,
        libraries: Annotated[
            str,
            typer.Option(
                "--libraries",
                rich_help_panel=LIMITS,
                help="The contest platform libraries programs see where installed: contest (AtCoder's "
                "and LeetCode's), atcoder (numpy, scipy, networkx, sortedcontainers, ...), leetcode "
                "(sortedcontainers) or none (the standard library only).",
            ),
        ] = "contest",
        no_cache: Annotated[
            bool,
            typer.Option(
                "--no-cache",
                metavar=FLAG,
                rich_help_panel=POOL,
                help="Run every rollout, identical programs too (by default a program's first outcome is "
                "replayed for identical text, random or time-dependent programs included).",
            ),
        ] = False,
        compare: Annotated[
            str,
            typer.Option(
                "--compare",
                rich_help_panel=GRADING,
                help="microcoder (tolerant, never wrong) or strict (LiveCodeBench's rules).",
            ),
        ] = "microcoder",
        reward: Annotated[
            str,
            typer.Option(
                "--reward",
                rich_help_panel=GRADING,
                help="binary (all tests pass) or fraction (share passed).",
            ),
        ] = "binary",
        shard: Annotated[
            str | None,
            typer.Option(
                "--shard", rich_help_panel=MERGE, help="Judge only shard i of n (i/n, by rollout id)."
            ),
        ] = None,
        no_early_exit: Annotated[
            bool,
            typer.Option(
                "--no-early-exit",
                metavar=FLAG,
                rich_help_panel=GRADING,
                help="Run every test even after a failure (for --reward fraction).",
            ),
        ] = False,
        unsafe_no_sandbox: Annotated[
            bool,
            typer.Option(
                "--unsafe-no-sandbox",
                metavar=FLAG,
                rich_help_panel=POOL,
                help="Run candidates without isolation: only inside a VM or container "
                "that isolates the judge already.",
            ),
        ] = False,
        overwrite: Overwrite = False,
        quiet: Quiet = False,
        help_: HelpFlag = False,
    ) -> None:
        """Judge ROLLOUTS against PROBLEMS into OUT (verdicts JSONL): one verdict per rollout.

        With --merge, join the verdict files of shards instead: mcoder judge --merge v.*.jsonl -o v.jsonl
        """
        from mcoder.console import emit
        from mcoder.errors import UsageError
        from mcoder.judge.config import JudgeConfig
        from mcoder.judge.stage import Shard, judge_files

        apply_quiet(quiet)
        if merge or parts:
            from mcoder.judge.merge import merge_verdicts

            if not merge:
                raise UsageError("verdict files given without --merge", hint="add --merge to join them")
            if problems is not None or shard is not None:
                raise UsageError("--merge joins verdict files; it takes no --problems or --shard")
            merge_verdicts(parts or [], out, rollouts, overwrite=overwrite)
            if str(out) != "-":
                emit(str(out))
            return
        if problems is None or rollouts is None:
            raise UsageError(
                "judging needs --problems and --rollouts", hint="or --merge PARTS... to join shards"
            )
        if str(problems) == "-" and str(rollouts) == "-":
            raise UsageError(
                "--problems - and --rollouts - both read stdin", hint="pass one of them as a file"
            )
        cfg = JudgeConfig(
            workers=workers,
            timeout_s=timeout,
            memory_mb=memory_mb,
            compare=compare,
            reward=reward,
            early_exit=False if no_early_exit else None,
            unsafe_no_sandbox=unsafe_no_sandbox,
            wall_factor=wall_factor,
            slot_cpus=slot_cpus,
            allow_packages=tuple(allow_package or ()),
            libraries=libraries,
            cache=not no_cache,
        )
        judge_files(cfg, problems, rollouts, out, Shard.parse(shard), overwrite=overwrite)
        if str(out) != "-":
            emit(str(out))
