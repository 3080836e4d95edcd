"""How a policy is sampled: group size, length limit, temperature and its choice by diversity.

One declaration for the settings ``mcoder loop`` and ``mcoder rollout`` sample with
(``RolloutConfig`` extends this class); each field's docstring is its ``--help`` text. Defaults
are the loop's (small batches on one machine); rollout's own larger ones are set there.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mcoder.config import TEXT, check_choices, check_ranges, ranges, setting_when
from mcoder.errors import UsageError
from mcoder.rollout.diversity import MEASURES
from mcoder.rollout.temperature_rules import (
    DEFAULT_CANDIDATES,
    DEFAULT_GUARD,
    DEFAULT_RISE,
    TemperatureRule,
    TemperatureSpec,
    parse_candidates,
    temperature_spec,
)

AUTO_ONLY = setting_when(
    lambda cfg: cfg.temperature == "auto", "how T is chosen: no effect unless the temperature is auto"
)
"""Metadata of the temperature choice's fields: a setting of an output only with temperature auto."""


@ranges(
    n=">= 1", max_tokens=">= 1", diversity_rise="(0, 1]", pass_guard="[0, 1]", diversity_target=">= 0",
    temperature_candidates="> 0", probe_problems=">= 0", temperature_stage_steps=">= 0",
)  # fmt: skip
@dataclass
class SamplingConfig:
    # --- sampling
    n: int = 4
    """Samples per problem (GRPO's group size G)."""
    max_tokens: int = 512
    """L_max: most completion tokens; a sample cut here has finish_reason 'length'."""
    temperature: TemperatureSpec | None = field(default=TemperatureSpec("1.0"), metadata=TEXT)
    """Sampling temperature: a number, 'auto' (chosen by measured diversity) or a staged schedule 'T@STEP,...' (not given: 1.0)."""

    # --- temperature selection
    temperature_rule: TemperatureRule = field(default="spread", metadata=AUTO_ONLY)
    """With temperature auto: how T is chosen: spread (the loop's default: the T whose judged probe groups have the largest within-group reward spread, GRPO's signal), knee of the model's D(T) curve (where it bends: before diversity takes off, or where it saturates; rollout's default) or rise (see --diversity-rise)."""
    diversity_rise: float = field(default=DEFAULT_RISE, metadata=AUTO_ONLY)
    """With temperature auto: the rise rule's fraction: the smallest T whose D has risen this share of the way from D(coolest) to the highest D (also knee's fallback for an even curve)."""
    pass_guard: float = field(default=DEFAULT_GUARD, metadata=AUTO_ONLY)
    """With temperature auto in the loop (which judges the probe and records its pass rate at each candidate): cap T at the hottest candidate whose probe pass rate stays at least this share of the best candidate's, e.g. 0.9 (0: off, diversity alone)."""
    # The 0.5 of its help: benchmarks/diversity_target.py on human-written solutions, G = 8, put groups
    # of one program renamed at a median 0.14 (HumanEval) / 0.41 (LeetCode) and groups of eight
    # different programs at 0.77 / 0.62; 0.5 is about halfway. Short answers that share their
    # boilerplate never reach it (examples/learn's warm start stayed under it up to T 1.8).
    diversity_target: float | None = field(default=None, metadata=AUTO_ONLY)
    """With temperature auto: an absolute diversity the chosen T must reach instead (the rule of earlier mcoder versions, e.g. 0.5); overrides --temperature-rule."""
    temperature_candidates: tuple[float, ...] = field(default=DEFAULT_CANDIDATES, metadata={**TEXT, **AUTO_ONLY})
    """With temperature auto: the temperatures probed, lowest first (START:STOP:STEP or a,b,c)."""
    probe_problems: int = field(default=0, metadata=AUTO_ONLY)
    """With temperature auto: problems sampled at each candidate temperature (0: 32 for the spread rule, 8 otherwise)."""
    diversity_measure: str = field(default="lexical", metadata=AUTO_ONLY)
    """With temperature auto: lexical (distinct n-grams) or program (distinct normalised programs)."""
    temperature_stage_steps: int = field(default=0, metadata=AUTO_ONLY)
    """With temperature auto: measure diversity again every K steps and re-pick T (a new stage; 0: once, before step 1)."""

    def __post_init__(self) -> None:
        self._parse()

    def _parse(self) -> None:
        """The temperature (given as text, a number or a spec) as a TemperatureSpec, the
        candidates (a tuple, a list, or their text) as a tuple: parsed once, here."""
        self.temperature = temperature_spec(self.temperature)
        if isinstance(self.temperature_candidates, str):
            self.temperature_candidates = parse_candidates(self.temperature_candidates)
        self.temperature_candidates = tuple(self.temperature_candidates)

    def validate(self) -> SamplingConfig:
        check_choices(self)
        self._parse()  # again: a field may have been set after construction
        spec = self.spec
        check_ranges(self)  # the declared ranges (@ranges), again: a field may have been set since
        if spec.auto and self.n < 2:
            raise UsageError("--temperature auto measures diversity within groups", hint="pass --n 2 or more")
        if self.diversity_measure not in MEASURES:
            raise UsageError(
                f"unknown --diversity-measure {self.diversity_measure!r}",
                hint=f"use one of {', '.join(MEASURES)}",
            )
        return self

    @property
    def spec(self) -> TemperatureSpec:
        """The temperature as given (None: not given, 1.0)."""
        return TemperatureSpec("1.0" if self.temperature is None else self.temperature)

    @property
    def probe_size(self) -> int:
        """Problems in the temperature probe: --probe-problems, or the rule's default."""
        from mcoder.rollout.temperature_rules import SPREAD_PROBE_PROBLEMS

        if self.probe_problems > 0:
            return self.probe_problems
        return SPREAD_PROBE_PROBLEMS if self.temperature_rule == "spread" else 8

    def temperature_from_probe(self, engine, tokenizer, probe, seed: int, judge=None, spread=None):
        """(TemperatureChoice, D(T) table): the probe problems sampled at every candidate
        temperature, and T read off by this config's rule; with a ``judge`` the probe is judged
        too (its pass rates and reward spreads recorded in the choice; the spread rule needs
        them) and ``pass_guard`` > 0 caps T. ``spread``: how the probe is dealt out
        (``temperature_rules.probe_temperatures``)."""
        from mcoder.rollout.temperature_rules import apply_temperature_rule, probe_temperatures

        table, rates, spreads = probe_temperatures(
            engine,
            tokenizer,
            probe,
            candidates=self.temperature_candidates,
            n=max(self.n, 2),
            max_tokens=self.max_tokens,
            seed=seed,
            measure=self.diversity_measure,
            judge=judge,
            spread=spread,
        )
        choice = apply_temperature_rule(
            table,
            rule=self.temperature_rule,
            target=self.diversity_target,
            rise=self.diversity_rise,
            pass_rates=rates,
            guard=self.pass_guard,
            spreads=spreads,
        )
        return choice, table
