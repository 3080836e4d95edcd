"""The rollout stage's configuration: one field per flag, validated with hints.

The sampling settings (group size, length limit, temperature and its choice by diversity) are
``SamplingConfig``'s, declared once for rollout and the loop; rollout adds its inputs, outputs,
engine and sampler settings, and its own larger defaults."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from mcoder.config import TEXT, not_setting, ranges
from mcoder.errors import UsageError
from mcoder.rollout.sampling import AUTO_ONLY, SamplingConfig
from mcoder.rollout.temperature_rules import TemperatureRule, TemperatureSchedule, TemperatureSpec

Engine = Literal["auto", "hf", "vllm"]
INPUT = not_setting("an input, compared by content (moving or copying it is no change)")
LongPrompts = Literal["skip", "error"]


@ranges(
    limit=">= 0", step=">= 0", top_k=">= 0", top_p="(0, 1]", seed="finite", policy_version=">= 0",
    batch_size=">= 1", tensor_parallel_size=">= 1", data_parallel_size=">= 1",
)  # fmt: skip
@dataclass(kw_only=True)
class RolloutConfig(SamplingConfig):
    # --- inputs and outputs
    problems: Path = field(metadata=INPUT)
    """Problems JSONL ('-' for stdin)."""
    model: str = field(metadata=INPUT)
    """Model folder in transformers format (weights, config, tokenizer with a chat template)."""
    out: Path = field(metadata=not_setting("the output"))
    """Rollouts JSONL ('-' for stdout); resumed when an unfinished run left OUT.part."""
    adapter: Path | None = field(default=None, metadata=INPUT)
    """PEFT LoRA adapter folder: attached in hf, hot-loaded per request in vLLM."""
    limit: int | None = None
    """Use only the first N problems."""
    overwrite: bool = field(default=False, metadata=not_setting("whether to start over"))
    """Start over instead of resuming."""

    # --- sampling
    # (SamplingConfig's fields, with rollout's own defaults)
    n: int = 8
    max_tokens: int = 1024
    temperature: TemperatureSpec | None = field(default=None, metadata=TEXT)
    probe_problems: int = field(default=16, metadata=AUTO_ONLY)
    temperature_rule: TemperatureRule = field(default="knee", metadata=AUTO_ONLY)  # spread is the loop's: it needs the probe judged
    temperature_schedule: TemperatureSpec | None = field(default=None, metadata=TEXT)
    """Staged temperatures 'T@STEP,...' (e.g. '0.6@0,1.2@140'); with --step, picks the stage's T."""
    step: int = 0
    """Training step whose stage of --temperature-schedule applies."""
    top_k: int = 0
    """Keep only the k likeliest tokens (0: off; plain temperature sampling)."""
    top_p: float = 1.0
    """Nucleus sampling mass (1.0: off)."""
    seed: int = 0
    """Run seed; each problem's samples are seeded from it and the problem id."""
    policy_version: int = 0
    """Policy version written into each record and its id (the trainer's step)."""
    # the loop's temperature-choice fields (their defaults the loop's): unused by rollout
    pass_guard: float = field(
        default=SamplingConfig.pass_guard, metadata=not_setting("the loop's: rollout judges no probe")
    )
    temperature_stage_steps: int = field(
        default=SamplingConfig.temperature_stage_steps, metadata=not_setting("the loop's: rollout runs one step")
    )
    long_prompts: LongPrompts = "skip"
    """A prompt longer than the model's context minus max_tokens: skip (counted and named in the
    summary) or error (exit 3 before any sampling)."""

    # --- engine
    engine: Engine = "auto"
    """auto (vLLM when installed, else hf), hf or vllm."""
    batch_size: int = field(default=32, metadata=not_setting("how many rows go through at once (seeded per problem)"))
    """hf: rows (problem x sample) decoded together; problems handed to the engine per call."""
    tensor_parallel_size: int = field(default=1, metadata=not_setting("how a model copy is split over GPUs"))
    """vllm: GPUs one model copy is split over (vLLM tensor parallelism)."""
    data_parallel_size: int = field(default=1, metadata=not_setting("how many replicas share the problems"))
    """vllm: engine replicas, each a process on its own tensor_parallel_size GPUs (problems dealt out)."""
    quiet: bool = field(default=False, metadata=not_setting("what is shown"))
    """No progress bar or tables."""

    def _parse(self) -> None:
        super()._parse()
        staged = self.temperature_schedule
        if staged is not None and not isinstance(staged, TemperatureSpec):
            TemperatureSchedule.parse(str(staged))  # a schedule, or the error naming its bad stage
            self.temperature_schedule = TemperatureSpec(staged)

    def validate(self) -> RolloutConfig:
        SamplingConfig.validate(self)
        if self.spec.auto and self.temperature_rule == "spread" and self.diversity_target is None:
            raise UsageError(
                "--temperature-rule spread reads judged probe rewards, and mcoder rollout does not judge",
                hint="it is the loop's rule (mcoder loop); here use knee or rise",
            )
        if self.tensor_parallel_size > 1 and self.engine == "hf":
            raise UsageError(
                "--tensor-parallel-size > 1 needs the vllm engine",
                hint="pass --engine vllm (the hf engine runs one model copy on one device)",
            )
        if self.data_parallel_size > 1:
            if self.engine == "hf":
                raise UsageError(
                    "--data-parallel-size > 1 needs the vllm engine",
                    hint="pass --engine vllm; for hf, run one `mcoder rollout` per part of the problems",
                )
            if self.temperature == "auto":
                raise UsageError(
                    "--temperature auto with --data-parallel-size > 1: each replica would choose its own T",
                    hint="choose T once (a run with --temperature auto, see its summary), then pass it",
                )
            if str(self.out) == "-":
                raise UsageError(
                    "--data-parallel-size > 1 writes part files beside --out", hint="pass a path"
                )
        if self.temperature_schedule is not None and self.temperature is not None:
            raise UsageError("--temperature and --temperature-schedule both given", hint="pass one of them")
        return self

    def fixed_temperature(self) -> float:
        """The temperature when it is neither 'auto' nor scheduled."""
        return self.spec.fixed
