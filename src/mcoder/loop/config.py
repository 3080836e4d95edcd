"""What ``mcoder loop`` runs with: a ``TrainConfig`` (the update), a ``SamplingConfig``
(the rollouts), a ``JudgeConfig`` (the rewards), and the few settings of the loop itself.

The resolved whole is saved as ``RUN/config.json``; a resumed run must match it (``steps`` may
grow, and how many judge workers or how often to save may change: they change no result). The
same shape, as TOML or JSON, is a recipe (``mcoder loop --config``, ``mcoder.loop.recipe``).
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mcoder.config import check_choices, check_ranges, ranges
from mcoder.errors import UsageError
from mcoder.judge.config import JudgeConfig
from mcoder.rollout.sampling import SamplingConfig
from mcoder.train.config import TrainConfig

Engine = Literal["hf", "vllm"]

# Settings a resumed run may change: they decide how long or how fast, never what is computed.
RESUMABLE_CHANGES = frozenset(
    {"steps", "save_every", "workers", "tensor_parallel_size", "vllm_sleep", "vllm_gpu_memory", "report_to", "judge_url"}
)


@ranges(
    steps=">= 1", train_batch_size=">= 1", save_every=">= 0", max_resample_rounds=">= 0",
    tensor_parallel_size=">= 1", vllm_gpu_memory="(0, 1]", off_policy="[0, 1]",
)  # fmt: skip
@dataclass
class LoopConfig:
    model: str
    """Model folder to start from (ignored when RUN/checkpoint exists: the run resumes)."""
    problems: Path
    """Training problems JSONL."""
    run_dir: Path
    """Run folder: per-step files, metrics and the checkpoint."""

    # --- loop
    steps: int = 1
    """Rollout -> judge -> update steps to run (a finished run may be extended)."""
    train_batch_size: int = 4
    """Problems sampled per step."""
    save_every: int | None = None
    """Save a checkpoint every this many steps (and at the end); None: every step while a checkpoint (12 bytes a trainable parameter) is under 2 GB, else every 10; 0: never (a run that cannot be resumed: measurements)."""
    max_resample_rounds: int = 3
    """With dynamic sampling: how many extra sampling rounds may be taken to fill a batch."""
    engine: Engine = "hf"
    """Rollout engine: hf (the live policy) or vllm (the new weights, or the LoRA adapter, reach it each step)."""
    tensor_parallel_size: int = 1
    """vllm: GPUs each rollout engine's model copy is split over (LoRA only: full weights go to one GPU's engine per process)."""
    vllm_sleep: bool = True
    """vllm on a GPU: the engine frees its memory while the trainer updates (no effect on a CPU)."""
    vllm_gpu_memory: float | None = None
    """vllm on a GPU: the share of it the engine takes for its weights and KV cache (0-1); None: measured when it starts, what is free less what the trainer holds while it samples (weights, AdamW's moments)."""
    off_policy: int = 0
    """Steps the sampling policy may trail the trained one: 1 samples step k+1 while step k trains (π_old: the recorded sampling log-probs)."""
    judge_url: tuple[str, ...] = ()
    """Judge on these `mcoder judge serve` services (repeatable; round robin, a failed one's work goes to the others; token from MCODER_JUDGE_TOKEN) instead of this machine's cores."""

    train: TrainConfig = field(default_factory=TrainConfig)
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    judge: JudgeConfig = field(default_factory=JudgeConfig)

    def validate(self) -> LoopConfig:
        check_choices(self)
        check_ranges(self)
        self.sampling.validate()
        # L_max of the update is the limit the rollouts were sampled with, not their longest one:
        # the overlong penalty and the constant loss normaliser depend on it.
        self.train.max_tokens = self.sampling.max_tokens
        # bf16 compute on a GPU; IS correction when vLLM samples on-policy (off-policy, π_old is the sampler's)
        self.train.settle(vllm_sampling=self.engine == "vllm" and not self.off_policy)
        self.train.validate()
        if self.engine == "vllm" and self.train.lora_rank <= 0:
            self._check_full_vllm()
        self._check_tensor_parallel()
        self._check_off_policy()
        return self

    def _check_tensor_parallel(self) -> None:
        """Under torchrun each rank's engine is pinned to that rank's GPU (loop/samplers.py):
        an engine spanning several GPUs would need sub-groups of ranks, which mcoder does not build."""
        from mcoder.train.distributed import world_size

        if self.tensor_parallel_size > 1 and world_size() > 1:
            raise UsageError(
                f"--tensor-parallel-size {self.tensor_parallel_size} under torchrun: each of the "
                f"{world_size()} processes samples with an engine on its own GPU",
                hint="use --tensor-parallel-size 1 under torchrun (every GPU samples its share), or "
                "launch one process (no torchrun) for a tensor-parallel engine",
            )

    def _check_full_vllm(self) -> None:
        """Full fine-tuning with vLLM streams the new weights into one engine per process
        (loop/samplers.py), not into a tensor-parallel one."""
        if self.tensor_parallel_size > 1:
            raise UsageError(
                "full fine-tuning with --engine vllm samples on one GPU (--tensor-parallel-size 1)",
                hint="the new weights are streamed into one engine per process; use "
                "--tensor-parallel-size 1, or LoRA (--lora-rank R) for a tensor-parallel engine",
            )

    def _check_off_policy(self) -> None:
        """One step off-policy: the batch of step k+1 is sampled from the policy before step k's
        update, so its π_old can only be what the sampler recorded."""
        if not self.off_policy:  # 0 or 1 (its declared range)
            return
        if self.train.recompute_old_logprobs or self.train.importance_sampling_cap > 0:
            raise UsageError(
                "--off-policy 1 takes π_old from the sampling log-probs; --recompute-old-logprobs "
                "(or --importance-sampling-cap, which recomputes it) would take the policy of the update instead",
                hint="drop one of the two",
            )
        if self.engine == "vllm" and self.train.lora_rank > 0:
            raise UsageError(
                "--off-policy 1 with --engine vllm needs full fine-tuning for now",
                hint="the LoRA engine takes each step's adapter while it samples; use --lora-rank 0 or --engine hf",
            )

    def settings(self) -> dict[str, Any]:
        """Everything that decides the run's results, by section (saved as RUN/config.json). The
        problems file and a model folder are saved as absolute paths: the file is read from
        wherever the run is shown or restarted (a hub model name stays as it is)."""
        loop = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name not in ("train", "sampling", "judge", "model", "problems", "run_dir")
        }
        return {
            "model": os.path.abspath(self.model) if os.path.exists(self.model) else self.model,
            "problems": os.path.abspath(self.problems) if str(self.problems) != "-" else "-",
            "loop": loop,
            "train": dataclasses.asdict(self.train),
            "sampling": dataclasses.asdict(self.sampling),
            "judge": dataclasses.asdict(self.judge),
        }

    def to_json(self) -> str:
        return json.dumps(self.settings(), indent=2, sort_keys=True, default=str)


def changed_settings(before: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """The settings that differ between two ``settings()`` dicts, each with its values as
    ``n 2 -> 4`` (a plain name; a name shared by two sections is written section.name)."""

    def flat(d: dict[str, Any]) -> dict[str, Any]:
        out = {}
        for section in ("loop", "train", "sampling", "judge"):
            for k, v in (d.get(section) or {}).items():
                out[f"{section}.{k}"] = v
        return out

    a, b = flat(json.loads(json.dumps(before, default=str))), flat(json.loads(json.dumps(now, default=str)))
    names = sorted(k for k in b if k.split(".", 1)[1] not in RESUMABLE_CHANGES and a.get(k) != b[k])
    short = [k.split(".", 1)[1] for k in names]
    return [
        f"{s if short.count(s) == 1 else k} {_shown(a.get(k, '<unset>'))} -> {_shown(b[k])}"
        for s, k in zip(short, names, strict=True)
    ]


def _shown(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."
