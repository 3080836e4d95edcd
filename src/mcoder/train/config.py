"""Training configuration: one dataclass, a preset per algorithm, every knob overridable.

Fields are grouped by concern (``# --- name``: the help panel); each docstring line is the
``--help`` text (``mcoder train``'s and ``mcoder loop``'s options are generated from these fields,
``mcoder.cli.options``)
and a ``Literal`` type is the list of allowed values. A preset is a recipe file of the package
(``mcoder/recipes/ALGO.toml``: its ``[train]`` table, ``presets``); ``resolve(algo, overrides)``
starts from one and applies the user's values; the resolved config is saved beside every checkpoint
(``train_config.json``) so a run can be read back exactly. What the loop adds (steps, batch of
problems, sampling, judging) is in ``mcoder.loop.config``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mcoder.config import check_choices, check_ranges, from_dict, not_setting, ranges
from mcoder.errors import UsageError
from mcoder.train.terms import TermWeights

LossAgg = Literal["token", "sequence", "constant"]
TruncationMode = Literal["none", "all", "conditional"]
NonIncorrect = Literal["accepted_or_unfinished", "accepted_or_cut_off", "accepted", "accepted_or_no_code"]
TruncatedReward = Literal["verdict", "zero"]
MaskMode = Literal["zero_advantage", "drop"]
Dtype = Literal["auto", "float32", "bfloat16"]
Checkpointing = Literal["auto", "on", "off"]
ReportTo = Literal["tensorboard", "wandb", "none"]
# The truncated importance-sampling cap C on by default when vLLM samples (TRL's TIS default, from
# "Your Efficient RL Framework Secretly Brings You Off-Policy RL Training").
VLLM_IMPORTANCE_SAMPLING_CAP = 2.0
# Metadata of a field the model card leaves out (``train.card``): where the run ran and how it was
# watched, not what it computed. (Knobs that leave the result as it is are ``not_setting``.)
NOT_ON_CARD = {"card": False}

# The recipe files shipped in the package (``recipes/`` in the repository is this folder):
# ``mcoder loop --config NAME`` reads one by its name, and a recipe whose ``[train]`` names an
# algorithm (``algo``, its file's name) is that algorithm's preset.
RECIPES = Path(__file__).resolve().parents[1] / "recipes"
DEFAULT_ALGO = "microcoder-grpo"


@functools.cache
def _recipe_text(name: str) -> str:
    return (RECIPES / f"{name}.toml").read_text(encoding="utf-8")


def recipe_names() -> list[str]:
    """The names of the package's recipe files (``--config NAME``), sorted."""
    return sorted(p.stem for p in RECIPES.glob("*.toml"))


def recipe(name: str) -> dict[str, Any]:
    """The tables of the package's recipe ``name`` as written (unchecked: ``mcoder.loop.recipe``
    checks a recipe it reads)."""
    return tomllib.loads(_recipe_text(name))


# The help lists the paper's three algorithms in its order, then any other preset by name.
_PAPER_ORDER = ("grpo", "dapo", "microcoder-grpo")


def _algorithms() -> tuple[str, ...]:
    """The presets: the package's recipes whose ``[train]`` names an algorithm, their own name."""
    names = [n for n in recipe_names() if recipe(n).get("train", {}).get("algo") == n]
    rank = {name: i for i, name in enumerate(_PAPER_ORDER)}
    return tuple(sorted(names, key=lambda n: (rank.get(n, len(rank)), n)))


ALGOS: tuple[str, ...] = _algorithms()


class Algo(str):
    """An algorithm's name: its choices are the recipe files that are presets (``ALGOS``), so a
    new preset is its recipe file and nothing else here."""

    @staticmethod
    def __choices__() -> tuple[str, ...]:
        return ALGOS


def preset(algo: str) -> dict[str, Any]:
    """What the preset ``algo`` sets: its recipe's ``[train]`` table (the objective), less the
    name. The recipe's other tables are a run's sizes, read with ``--config`` only."""
    return {k: v for k, v in recipe(algo)["train"].items() if k != "algo"}


def presets() -> dict[str, dict[str, Any]]:
    """Every preset (algo -> its values), in the order of ``ALGOS``."""
    return {algo: preset(algo) for algo in ALGOS}


def preset_temperature(algo: str) -> str:
    """The sampling temperature the loop of ``algo`` uses (its recipe's ``[sampling]``; a
    --temperature spec)."""
    return str(recipe(algo)["sampling"]["temperature"])


# A field that a preset sets defaults to the value of the default algorithm's preset.
_DEFAULT = preset(DEFAULT_ALGO)


@ranges(
    eps_low="[0, 1)", eps_high=">= 0", beta=">= 0", adv_eps="> 0", logprob_temperature="> 0", max_tokens=">= 1",
    mask_rho="[0, 1]", mask_repeat_m=">= 1", overlong_cache=">= 1", lr="> 0", weight_decay=">= 0",
    adam_betas="[0, 1)", warmup_steps=">= 0", max_grad_norm=">= 0", mini_batch_size=">= 1",
    micro_batch_size=">= 1", micro_batch_tokens=">= 0", importance_sampling_cap=">= 0", seed="finite",
    lora_rank=">= 0", lora_alpha=">= 1", lora_dropout="[0, 1)", logprob_chunk_tokens=">= 0",
    dist_timeout_s="> 0",
)  # fmt: skip
@dataclass
class TrainConfig(TermWeights):
    # --- objective
    algo: Algo = DEFAULT_ALGO
    """Preset the other values started from: grpo, dapo, microcoder-grpo or another recipe that names an algorithm."""
    eps_low: float = _DEFAULT["eps_low"]
    """ε: the ratio is clipped below at 1-ε (for A < 0)."""
    eps_high: float = _DEFAULT["eps_high"]
    """ε_high: the ratio is clipped above at 1+ε_high (for A > 0); above ε: DAPO's clip-higher."""
    beta: float = _DEFAULT["beta"]
    """β: weight of the k3 KL to the reference model. 0 loads no reference model."""
    kl_ratio_weighted: bool = False
    """Multiply the KL term by the ratio (DeepSeek-V3.2 unbiased KL gradient; TRL's use_bias_correction_kl)."""
    loss_agg: LossAgg = _DEFAULT["loss_agg"]
    """Loss aggregation: token (Σ/tokens, DAPO), sequence (per-sequence mean, GRPO), constant (Σ/(B·L_max), Dr. GRPO)."""
    adv_eps: float = 1e-4
    """eps in A = (R - mean) / (std + eps)."""
    logprob_temperature: float | None = None
    """T of the log-probs log π^T (the rollouts' sampling temperature); None reads it from the rollout records."""
    max_tokens: int | None = None
    """L_max, the completion length limit; None reads it from the rollouts (their longest completion). The loop sets it to its sampling limit."""

    # --- truncated outputs
    truncation: TruncationMode = _DEFAULT["truncation"]
    """What to do with outputs cut at L_max: none, all (DAPO: mask every one), conditional (MicroCoder)."""
    mask_rho: float = _DEFAULT["mask_rho"]
    """ρ: probability that an eligible truncated output is masked (conditional mode)."""
    mask_repeat_m: int = _DEFAULT["mask_repeat_m"]
    """m: an output whose last m tokens repeat the m before them is never masked."""
    mask_non_incorrect: NonIncorrect = _DEFAULT["mask_non_incorrect"]
    """Truncated outputs that count as not incorrect: accepted_or_unfinished (accepted, or stopped before a program that parses: no code, or open code that does not parse), accepted_or_cut_off (accepted, or its code block still open or no code: a whole program cut at its closing fence too), accepted, accepted_or_no_code."""
    truncated_reward: TruncatedReward = "verdict"
    """What an output cut at L_max scores: verdict (the judge's reward) or zero (0 whatever its program did, as where a cut-off never holds a finished answer)."""
    mask_mode: MaskMode = _DEFAULT["mask_mode"]
    """How a masked output leaves the loss: zero_advantage (the paper's equation, verl: its tokens stay in the token count) or drop (removed from the loss and its count, TRL)."""
    overlong_penalty: bool = False
    """DAPO's soft overlong punishment: reward falls linearly to -1 over the last overlong_cache tokens."""
    overlong_cache: int = 64
    """L_cache: length of the soft punishment zone before L_max."""

    # --- dynamic sampling
    dynamic_sampling: bool = False
    """DAPO: drop groups whose rewards are all equal (no signal); the loop samples more problems."""

    # --- optimisation
    lr: float = 1e-6
    """AdamW learning rate (peak, after warm-up)."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    adam_betas: tuple[float, float] = (0.9, 0.999)
    """AdamW betas."""
    warmup_steps: int = 0
    """Optimizer steps of linear warm-up from 0 to lr."""
    max_grad_norm: float = 1.0
    """Gradient clipping by global norm (0 turns it off)."""
    mini_batch_size: int = 8
    """Prompt groups per optimizer step; a rollout batch gives ceil(groups / this) updates."""
    micro_batch_size: int = 4
    """Sequences per forward/backward; gradients accumulate over a mini-batch."""
    micro_batch_tokens: int = 0
    """T > 0: micro-batches by tokens instead of --micro-batch-size: samples sorted by length, packed up to T padded tokens each (prompt + completion)."""
    recompute_old_logprobs: bool = False
    """Compute π_old with the model before the first update instead of reading the rollouts' sampling_logprobs."""
    importance_sampling_cap: float | None = None
    """C > 0: truncated importance sampling for the sampler/trainer mismatch (as TRL): π_old is recomputed by the trainer and each token's surrogate is weighted by min(π_old / π_sampler, C); 0 turns it off. None: 2.0 with the loop's vLLM engine (on by default there, as TRL), 0 otherwise."""
    shuffle: bool = True
    """Shuffle prompt groups (seeded) before splitting them into mini-batches."""
    seed: int = 0
    """Seed of shuffling, masking coins and the loop's problem sampling."""

    # --- model
    lora_rank: int = 0
    """LoRA rank; 0 trains every parameter."""
    lora_alpha: int | None = None
    """LoRA alpha; None means 2 × rank."""
    lora_dropout: float = 0.0
    """LoRA dropout."""
    lora_target_modules: list[str] = field(default_factory=lambda: ["all-linear"])
    """Modules LoRA adapts (PEFT names); all-linear adapts every linear layer but the head."""
    dtype: Dtype = "auto"
    """Compute dtype: float32, or bfloat16 (forward and backward in bf16; master weights, optimizer moments and the gradient reduction stay float32, matmuls of what stays float32 may use TF32); auto: bfloat16 when training on a GPU, float32 on a CPU."""
    device: str = field(default="auto", metadata=NOT_ON_CARD)
    """Where to train: auto (cuda when present, else cpu), cpu, cuda or cuda:N."""
    activation_checkpointing: Checkpointing = field(default="auto", metadata=not_setting("same gradients"))
    """Recompute each decoder layer's activations in the backward instead of keeping them: auto (on a GPU), on, off. Same gradients, less memory, ~30% more compute."""
    logprob_chunk_tokens: int = field(default=1024, metadata=not_setting("same log-probs, in pieces"))
    """Tokens whose full-vocabulary logits exist at once when log-probs and entropy are computed from the last hidden states (0: all at once)."""
    dist_timeout_s: float = field(default=1800.0, metadata=not_setting("how long to wait"))
    """Under torchrun: seconds a collective among all ranks may wait before the run fails (rank 0's lone work, a probe or a checkpoint write, is waited for apart from this)."""

    # --- reporting
    report_to: tuple[ReportTo, ...] = field(default=("none",), metadata=not_setting("where metrics go", **NOT_ON_CARD))
    """Loggers that get every metric of metrics.jsonl too (repeat for several): tensorboard or wandb (W&B; WANDB_MODE=offline needs no network), in RUN/ (the loop) or the folder that holds OUT; or none."""

    def validate(self) -> TrainConfig:
        check_choices(self)
        check_ranges(self)  # again: a field may have been set after construction (the loop's max_tokens)
        if "none" in self.report_to and len(set(self.report_to)) > 1:
            raise UsageError("--report-to none goes alone", hint="name the loggers, or none")
        return self

    def settle(self, vllm_sampling: bool = False) -> TrainConfig:
        """Fill the defaults that depend on where and how the run trains, in place: dtype auto
        (bfloat16 when ``device`` is a GPU, float32 on a CPU) and importance_sampling_cap None
        (VLLM_IMPORTANCE_SAMPLING_CAP when ``vllm_sampling``: the loop's vLLM engine samples the
        batch on-policy; else 0). What a run saves and compares is the settled value; a value
        already given stays."""
        if self.dtype == "auto":
            from mcoder.models import resolve_device

            self.dtype = "bfloat16" if resolve_device(self.device).type == "cuda" else "float32"
        if self.importance_sampling_cap is None:
            self.importance_sampling_cap = VLLM_IMPORTANCE_SAMPLING_CAP if vllm_sampling else 0.0
        return self

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True)

    @classmethod
    def load(cls, path: str | Path) -> TrainConfig:
        return from_dict(cls, json.loads(Path(path).read_text()))


def resolve(algo: str, overrides: dict[str, Any] | None = None) -> TrainConfig:
    """The preset ``algo`` with ``overrides`` (None values mean "not given") applied, validated."""
    if algo not in ALGOS:
        raise UsageError(f"unknown --algo {algo!r}", hint=f"choose one of {', '.join(ALGOS)}")
    values = {"algo": algo, **preset(algo)}
    known = {f.name for f in dataclasses.fields(TrainConfig)}
    for k, v in (overrides or {}).items():
        if k not in known:
            raise UsageError(f"unknown training option {k!r}")
        if v is not None:
            values[k] = v
    return TrainConfig(**values).validate()
