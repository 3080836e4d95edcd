"""What ``mcoder bench`` is asked to do: the pass@k table, the training plots, or both."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mcoder.bench.gates import Gates
from mcoder.config import TEXT, ranges
from mcoder.errors import UsageError

DEFAULT_KS = (1,)
# Codeforces-style rating bounds: rating < 1400 is easy, < 2000 medium, anything above hard.
# Codeforces calls 1400 "specialist" and 1900-2100 "candidate master"; the MicroCoder paper's
# tables use easy/medium/hard buckets without giving rating bounds, so these are ours.
DEFAULT_RATING_BOUNDS = (1400.0, 2000.0)


@ranges(ks=">= 1", rating_bounds="> 0")
@dataclass(slots=True)
class BenchConfig:
    problems: Path | None = None
    """Problems JSONL: each verdict's problem_id must name one of these ('-' for stdin)."""
    verdicts: Path | None = None
    """Verdicts JSONL to score ('-' for stdin), or a LiveCodeBench results file (*_eval_all.json)."""
    rollouts: Path | None = None
    """Rollouts JSONL the verdicts were judged from: the outputs and programs of --lcb-out."""
    ks: tuple[int, ...] = field(default=DEFAULT_KS, metadata=TEXT)
    """The k of pass@k, comma-separated; 1 is always included (the summary line reports pass@1)."""
    baseline: Path | None = None
    """Verdicts of another model on the same problems (or a LiveCodeBench results file, e.g. a
    published submission): every cell gets a delta against it."""
    markdown: Path | None = None
    """Write the tables as markdown here ('-' for stdout)."""
    json_out: Path | None = None
    """Write every number as JSON here ('-' for stdout)."""
    lcb_out: Path | None = None
    """Write LiveCodeBench's per-problem results file (*_eval_all.json) here; needs rollouts."""
    junit: Path | None = None
    """Write JUnit XML here ('-' for stdout): a test case per problem, for CI systems to show."""
    gates: Gates = field(default_factory=Gates)
    """CI gates: exit 5 when pass@1 is under a floor or the results regressed against the baseline."""
    rating_bounds: tuple[float, float] = field(default=DEFAULT_RATING_BOUNDS, metadata=TEXT)
    """Numeric difficulty (a rating) below the first bound is easy, below the second medium, else hard: LO,HI."""
    run_dirs: list[Path] = field(default_factory=list)
    """Training run folders, each holding metrics.jsonl, to plot on shared axes."""
    plots: bool = False
    """Draw the training-dynamics figures of the run folders."""
    out_dir: Path | None = None
    """Folder for the PNG figures; default RUN/plots for a single run (required for several)."""

    def __post_init__(self) -> None:
        if isinstance(self.ks, str):  # the command line's '1,4,8'
            self.ks = parse_ks(self.ks)
        if isinstance(self.rating_bounds, str):  # 'LO,HI'
            self.rating_bounds = parse_rating_bounds(self.rating_bounds)
        self.validate()

    @property
    def wants_table(self) -> bool:
        return self.problems is not None or self.verdicts is not None

    def validate(self) -> None:
        if not self.wants_table and not self.plots:
            raise UsageError(
                "nothing to do",
                hint="--problems P --verdicts V for the pass@k table; --run-dir RUN --plots for figures",
            )
        if self.wants_table:
            self._validate_table()
        elif self.gates.any:
            raise UsageError(
                "--fail-under, --fail-on-regression and --max-drop gate the pass@k table",
                hint="add --problems P --verdicts V",
            )
        elif self.baseline or self.markdown or self.json_out or self.lcb_out or self.rollouts or self.junit:
            raise UsageError(
                "--baseline, --markdown, --json, --junit, --rollouts and --lcb-out belong to the pass@k table",
                hint="add --problems P --verdicts V",
            )
        self._validate_plots()

    def _validate_table(self) -> None:
        if self.problems is None or self.verdicts is None:
            raise UsageError("the pass@k table needs both --problems and --verdicts")
        stdin_inputs = [
            p
            for p in (self.problems, self.verdicts, self.baseline, self.rollouts)
            if p is not None and str(p) == "-"
        ]
        if len(stdin_inputs) > 1:
            raise UsageError("only one input can be read from stdin ('-')", hint="save the others to files")
        stdout_outputs = [
            p
            for p in (self.markdown, self.json_out, self.lcb_out, self.junit)
            if p is not None and str(p) == "-"
        ]
        if len(stdout_outputs) > 1:
            raise UsageError("only one of --markdown, --json, --junit and --lcb-out can go to stdout ('-')")
        self._validate_gates()
        if self.rollouts is not None and self.lcb_out is None:
            raise UsageError(
                "--rollouts is only read for --lcb-out", hint="add --lcb-out FILE, or drop --rollouts"
            )
        if self.lcb_out is not None and self.rollouts is None:
            raise UsageError(
                "--lcb-out writes each output and its program: it needs the rollouts",
                hint="add --rollouts ROLLOUTS.jsonl (the file the verdicts were judged from)",
            )
        if self.lcb_out is not None and "-" in (str(self.verdicts), str(self.problems)):
            raise UsageError(
                "--lcb-out reads problems and verdicts twice", hint="save them to files, not stdin"
            )
        if not self.ks or any(k < 1 for k in self.ks) or list(self.ks) != sorted(set(self.ks)):
            raise UsageError(
                f"--k: bad k values {self.ks}", hint="give distinct positive integers, e.g. --k 1,4,8"
            )
        lo, hi = self.rating_bounds
        if not 0 < lo < hi:
            raise UsageError(
                f"--rating-bounds {lo:g},{hi:g}: not two increasing ratings", hint="e.g. 1400,2000"
            )

    def _validate_gates(self) -> None:
        g = self.gates
        if g.need_baseline and self.baseline is None:
            raise UsageError(
                "--fail-on-regression and --max-drop compare against a baseline",
                hint="add --baseline VERDICTS.jsonl (the verdicts of the accepted run)",
            )
        if g.max_drop is not None and not 0 <= g.max_drop <= 100:
            raise UsageError(
                f"--max-drop {g.max_drop:g} is not between 0 and 100 percentage points",
                hint="e.g. --max-drop 2",
            )
        if g.fail_under is not None and not 0 <= g.fail_under <= 1:
            raise UsageError(f"--fail-under {g.fail_under:g} is not between 0 and 1")

    def _validate_plots(self) -> None:
        if self.run_dirs and not self.plots:
            raise UsageError("--run-dir is only read for --plots", hint="add --plots")
        if not self.plots:
            return
        if not self.run_dirs:
            raise UsageError("--plots needs at least one --run-dir RUN (a folder with metrics.jsonl)")
        if len(self.run_dirs) > 1 and self.out_dir is None:
            raise UsageError(
                "several runs are plotted together: say where the figures go",
                hint="add --out-dir DIR",
            )

    @property
    def plots_dir(self) -> Path:
        return self.out_dir if self.out_dir is not None else self.run_dirs[0] / "plots"


def parse_ks(text: str) -> tuple[int, ...]:
    """'1,4,8' -> (1, 4, 8); 1 is always added because the summary line reports pass@1."""
    try:
        ks = {int(part) for part in text.split(",") if part.strip()}
    except ValueError:
        raise UsageError(f"--k {text!r} is not a list of integers", hint="e.g. --k 1,4,8") from None
    if not ks or min(ks) < 1:
        raise UsageError(f"--k {text!r}: every k must be a positive integer", hint="e.g. --k 1,4,8")
    return tuple(sorted(ks | {1}))


def parse_rating_bounds(text: str) -> tuple[float, float]:
    """'1400,2000' -> (1400.0, 2000.0)."""
    parts = [p.strip() for p in text.split(",")]
    try:
        lo, hi = (float(p) for p in parts)
    except ValueError:
        raise UsageError(
            f"--rating-bounds {text!r} is not two numbers", hint="e.g. --rating-bounds 1400,2000"
        ) from None
    return lo, hi
