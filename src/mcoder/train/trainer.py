"""One rollout batch -> policy updates; checkpoints that save atomically and resume.

``Trainer(model_path, cfg)`` loads the policy (and π_ref when beta > 0), AdamW and the warm-up
schedule; when ``model_path`` is an mcoder checkpoint it also restores the optimizer state and
step, so chained single-batch runs continue one schedule. ``train_on_batch`` does:

    prepare samples (rewards, advantages, masks)  ->  π_old, π_ref log-probs (no grad)
    -> for each mini-batch of prompt groups: micro-batches forward/backward, clip, one AdamW step
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from mcoder.errors import DataError, UsageError
from mcoder.models import load_tokenizer, resolve_device, resolve_dtype
from mcoder.records import STATUSES, Rollout, Verdict
from mcoder.train import grpo
from mcoder.train.batching import (
    Sample,
    collate,
    groups,
    is_truncated,
    join,
    microbatches,
    minibatches,
    prepare,
)
from mcoder.train.card import write_model_card
from mcoder.train.config import TrainConfig
from mcoder.train.masking import scored_reward
from mcoder.train.models import completion_logprobs, load_policy, load_reference, score
from mcoder.train.terms import metric_names

# A checkpoint folder is the policy as a plain Hugging Face folder (weights or LoRA adapter,
# tokenizer, README.md model card), loadable by from_pretrained and vLLM as it is; what only
# training needs to continue lies beside the model files, in its own subfolder:
STATE_DIR = "trainer"  # CKPT/trainer/: trainer_state.json, optimizer.pt, train_config.json
STATE_FILE = "trainer_state.json"
OPTIM_FILE = "optimizer.pt"
CONFIG_FILE = "train_config.json"
# Under torchrun the training state is sharded instead (train/distributed.py): CKPT/trainer/dcp/ is
# a torch.distributed.checkpoint folder, each rank's part of the trainable weights and AdamW's
# moments in a file of its own, and CKPT/trainer/scheduler.pt the schedule. A checkpoint saved
# mid-run that way has no weights files: its weights load from its base model, then from dcp/.
SHARDED_DIR = "dcp"
SCHEDULER_FILE = "scheduler.pt"


@dataclass
class Prepared:
    samples: list[Sample]  # after dynamic sampling; each carries its reward, advantage and mask decision
    T: float  # sampling temperature
    L_max: int
    metrics: dict[str, Any]


class Trainer:
    def __init__(self, model_path: str, cfg: TrainConfig):
        self.cfg = cfg.settle()  # dtype auto and the IS cap resolved (in place: the caller sees them)
        self.model_path = str(model_path)
        torch.manual_seed(cfg.seed)
        self.source = weights_folder(self.model_path)  # the checkpoint, or the base of a sharded one
        self.tokenizer = load_tokenizer(self.source)
        self.device = resolve_device(cfg.device)
        self.compute_dtype = resolve_dtype(cfg.dtype)  # master weights and moments stay float32
        self.model = self.load_policy_model()
        self.model.train()
        if checkpointing_on(cfg, self.device):
            # non-reentrant: gradients reach a LoRA adapter with a frozen embedding before it
            self.model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        self.reference = self.load_reference_model()
        self.model = self.wrap_policy(self.model)
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(
            self.params, lr=cfg.lr, betas=tuple(cfg.adam_betas), weight_decay=cfg.weight_decay
        )
        warmup = max(cfg.warmup_steps, 0)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda s: 1.0 if warmup == 0 else min(1.0, (s + 1) / warmup)
        )
        self.step = 0  # optimizer steps taken
        self.policy_version = 0  # rollout batches trained on
        self.base_model = self.model_path
        self.last_samples: list[Sample] = []
        self._restore(Path(self.model_path))

    # ------------------------------------------------------------ one rollout batch

    def train_on_batch(
        self,
        rollouts: Sequence[Rollout],
        verdicts: dict[str, Verdict],
        *,
        names: tuple[str, str] = ("-", "-"),
    ) -> dict[str, Any]:
        """Every update one rollout batch gives; returns the step's metrics."""
        t0 = time.perf_counter()
        allow_tf32(self.device)
        prepared = self.prepare_samples(rollouts, verdicts, names=names)
        metrics = dict(prepared.metrics)
        if prepared.samples:
            metrics.update(self._updates(prepared.samples, prepared.T, prepared.L_max))
        self.policy_version += 1
        elapsed = time.perf_counter() - t0
        metrics["time/train"] = elapsed
        metrics["tokens_per_s"] = metrics.get("tokens", 0) / elapsed if elapsed > 0 else 0.0
        return metrics

    def prepare_samples(
        self,
        rollouts: Sequence[Rollout],
        verdicts: dict[str, Verdict],
        *,
        names: tuple[str, str] = ("-", "-"),
    ) -> Prepared:
        """Join, reward, advantage, mask, and fill π_old / π_ref log-probs (before any update)."""
        pairs = join(rollouts, verdicts, rollouts_name=names[0], verdicts_name=names[1])
        T = self._temperature(pairs, names[0])
        L_max = self.cfg.max_tokens or max(len(r.completion_token_ids) for r, _ in pairs)
        # fresh masking coins for every rollout batch, the same ones when a batch is redone
        samples = prepare(pairs, self.cfg, L_max, coin_seed=self.cfg.seed * 1_000_003 + self.policy_version)
        self.last_samples = samples
        metrics = batch_metrics(pairs, samples, L_max, self.cfg.truncated_reward)
        metrics["temperature"] = T
        if samples:
            self._fill_logprobs(samples, T)
            metrics.update(importance_weights(samples, self.cfg.importance_sampling_cap))
        return Prepared(samples, T, L_max, metrics)

    def _temperature(self, pairs, rollouts_name: str) -> float:
        if self.cfg.logprob_temperature is not None:
            return self.cfg.logprob_temperature
        temps = {r.temperature for r, _ in pairs}
        if None in temps or len(temps) != 1:
            raise DataError(
                f"the rollouts carry {'no' if None in temps else 'several'} sampling temperature(s)",
                path=rollouts_name,
                field="temperature",
                hint="pass --temperature T: log-probs are taken of the logits divided by the sampling temperature",
            )
        return float(temps.pop())

    def _fill_logprobs(self, samples: list[Sample], T: float) -> None:
        """π_old (recomputed when asked or missing) and π_ref, before any update: each process
        scores its share of the groups (all of them in one process), then every process gets
        every sample's (``share_logprobs``)."""
        recompute = (
            self.cfg.recompute_old_logprobs
            or self.cfg.importance_sampling_cap > 0  # the correction compares the trainer's π_old with the sampler's
            or any(s.old_logprobs is None for s in samples)
        )
        if not recompute and self.reference is None:
            return
        mine = self.my_share(samples)
        micros = microbatches(mine, self.cfg.micro_batch_size, self.cfg.micro_batch_tokens)
        idle = self.idle_steps(len(micros))  # agreed before the first forward: each is a collective
        for micro in micros:
            self._score_micro(micro, T, recompute)
        for _ in range(idle):
            self._score_micro([samples[0]], T, recompute, keep=False)
        self.share_logprobs(samples, mine, recompute)

    def _score_micro(self, micro: list[Sample], T: float, recompute: bool, keep: bool = True) -> None:
        batch = collate(micro, self.tokenizer.pad_token_id)
        lens = [s.num_tokens for s in micro]
        chunk = self.cfg.logprob_chunk_tokens
        if recompute:
            with self.compute():
                old = score(self.model, batch, T, chunk=chunk)  # (B, C)
            for s, row, n in zip(micro, old, lens, strict=True):
                if keep:
                    s.old_logprobs = row[:n].tolist()
        if self.reference is not None:
            with self.compute():
                ref = score(self.reference, batch, T, reference=True, chunk=chunk)  # (B, C)
            for s, row, n in zip(micro, ref, lens, strict=True):
                if keep:
                    s.ref_logprobs = row[:n].tolist()

    def _updates(self, samples: list[Sample], T: float, L_max: int) -> dict[str, float]:
        cfg = self.cfg
        sums: Counter[str] = Counter()
        seed = cfg.seed + self.policy_version
        for mini in minibatches(groups(samples), cfg.mini_batch_size, shuffle=cfg.shuffle, seed=seed):
            if all(s.masked for s in mini):
                continue  # every sample masked: nothing to learn, and no step on stale moments
            sums.update(self.accumulate_gradients(mini, T, L_max))
            sums["lr"] += self.scheduler.get_last_lr()[0]
            sums["grad_norm"] += self._optimizer_step()
            sums["updates"] += 1
        tok, n = max(sums["tokens"], 1.0), max(sums["updates"], 1)
        return {
            "loss": sums["loss"] / n,
            **{name: sums[name] / tok for name in metric_names()},  # each loss term's, per token
            "entropy": sums["entropy"] / tok,
            "grad_norm": sums["grad_norm"] / n,
            "lr": sums["lr"] / n,
            "updates": int(sums["updates"]),
            "tokens": int(sums["tokens"]),
            "optimizer_step": self.step,
        }

    def accumulate_gradients(self, mini: list[Sample], T: float, L_max: int) -> Counter[str]:
        """Zero the gradients, then forward/backward each micro-batch of one mini-batch.

        Each micro-batch's loss is divided by the mini-batch's token/sequence count (over the
        whole mini-batch, whichever part of it this process trains on), so the summed gradient
        does not depend on how the mini-batch is cut into micro-batches or processes.
        A masked sample counts unless it is dropped (mask_mode drop, as TRL): under the paper's
        form (zero_advantage, as verl) its tokens add 0 to the sum but stay in the count."""
        num_tokens = float(sum(s.num_tokens for s in mini if not s.dropped))
        num_seqs = sum(not s.dropped for s in mini)
        micros = microbatches(self.my_share(mini), self.cfg.micro_batch_size, self.cfg.micro_batch_tokens)
        idle = self.idle_steps(len(micros))  # agreed before the first forward: each is a collective
        sums: Counter[str] = Counter()
        self.optimizer.zero_grad(set_to_none=True)
        for micro in micros:
            parts, entropy = self._micro_step(micro, T, L_max, num_tokens, num_seqs)
            for k, v in (("tokens", parts.tokens), *parts.metrics.items(), ("entropy", entropy)):
                sums[k] += v
            sums["loss"] += float(parts.loss.detach())
        for _ in range(idle):
            self.idle_step(mini[:1])
        return self.sum_over_processes(sums)

    # Hooks of the FSDP2 trainer (train/distributed.py): which groups this process trains on,
    # keeping every process's collectives in step, and metric sums over all processes.
    def my_share(self, mini: list[Sample]) -> list[Sample]:
        return mini

    def idle_steps(self, count: int) -> int:
        """Zero-weight micro-steps to run after this process's ``count`` real ones."""
        return 0

    def idle_step(self, micro: list[Sample]) -> None:
        """A forward/backward that adds nothing (loss x 0): it keeps this process in step with
        the collectives of processes that have one more micro-batch."""
        batch = collate(micro, self.tokenizer.pad_token_id).to(self.device)
        with self.compute():
            logp, _ = completion_logprobs(self.model, batch, 1.0, chunk=self.cfg.logprob_chunk_tokens)  # (1, C)
        (logp.sum() * 0.0).backward()

    def sum_over_processes(self, sums: Counter[str]) -> Counter[str]:
        return sums

    def share_logprobs(self, samples: list[Sample], mine: list[Sample], recompute: bool) -> None:
        """Every sample's π_old / π_ref on every process, each having scored ``mine``."""

    def _micro_step(self, micro: list[Sample], T: float, L_max: int, num_tokens: float, num_seqs: int):
        batch = collate(micro, self.tokenizer.pad_token_id).to(self.device)
        with self.compute():
            logp, entropy = completion_logprobs(self.model, batch, T, chunk=self.cfg.logprob_chunk_tokens)  # (B, C)
        parts = grpo.policy_loss(
            logp,
            batch.old_logprobs,
            batch.advantages,
            batch.completion_mask,
            self.cfg,
            ref_logp=batch.ref_logprobs,
            is_weights=batch.is_weights,
            num_tokens=num_tokens,
            num_seqs=num_seqs,
            L_max=L_max,
        )
        parts.loss.backward()
        return parts, float((entropy * batch.completion_mask).sum())

    def _optimizer_step(self) -> float:
        if self.cfg.max_grad_norm > 0:
            norm = torch.nn.utils.clip_grad_norm_(self.params, self.cfg.max_grad_norm)
        else:
            norm = torch.nn.utils.get_total_norm([p.grad for p in self.params if p.grad is not None])
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)  # freed now: between updates (while vLLM samples) no gradient is held
        self.scheduler.step()
        self.step += 1
        return self.scalar(norm)

    def scalar(self, t) -> float:
        """A tensor of the trainer's as a float (the FSDP2 trainer gathers a sharded one first)."""
        return float(t)

    def compute(self):
        """Forwards in the compute dtype: autocast over the float32 master weights (as TRL); the
        FSDP2 trainer casts in its sharding instead (a mixed-precision policy)."""
        bf16 = self.compute_dtype != torch.float32
        return torch.autocast(self.device.type, dtype=self.compute_dtype, enabled=bf16)

    # ------------------------------------------------------------ checkpoints

    def save(
        self,
        out: str | os.PathLike,
        extra_state: dict[str, Any] | None = None,
        extra_files: dict[str, bytes] | None = None,
        final: bool = True,
    ) -> Path:
        """Write the policy (weights or adapter, tokenizer, model card) and, in ``trainer/``, the
        resolved config, optimizer state and step, to a temporary folder beside ``out``, then swap
        it into place: a kill leaves the old one whole. ``final``: the last save of a run (the
        FSDP2 trainer writes whole weights then only)."""
        out = Path(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        from mcoder.outputs import temp_folder

        tmp = temp_folder(out)  # removes what a save killed half-way left
        self.save_weights(tmp)
        self.write_training_files(tmp, out, extra_state, extra_files)
        torch.save(
            {"optimizer": self.optimizer_state(), "scheduler": self.scheduler.state_dict()},
            tmp / STATE_DIR / OPTIM_FILE,
        )
        commit(tmp, out)
        return out

    def write_training_files(
        self, tmp: Path, out: Path, extra_state: dict[str, Any] | None, extra_files: dict[str, bytes] | None
    ) -> None:
        """The tokenizer, ``trainer/`` (config, step record), ``extra_files`` and the model card."""
        self.tokenizer.save_pretrained(tmp)
        keep = tmp / STATE_DIR
        keep.mkdir()
        (keep / CONFIG_FILE).write_text(self.cfg.to_json())
        state = {
            "step": self.step,
            "policy_version": self.policy_version,
            "base_model": self.base_model,
            **(extra_state or {}),
        }
        (keep / STATE_FILE).write_text(json.dumps(state, indent=2))
        for name, data in (extra_files or {}).items():
            (tmp / name).write_bytes(data)
        write_model_card(tmp, state, json.loads(self.cfg.to_json()), bench=out.parent / "bench.md")

    def wait_for_saves(self) -> None:
        """Return once every save begun is in place (the FSDP2 trainer writes in the background)."""

    # Hooks that the FSDP2 trainer (train/distributed.py) overrides: wrap the policy, and move
    # weights and optimizer state between sharded tensors and the single-process checkpoint format.
    def load_policy_model(self):
        """The trainable policy on this process's device (the FSDP2 trainer: rank 0 loads it on
        the host, the others build it empty, and ``wrap_policy`` deals the shards)."""
        return load_policy(self.source, self.cfg).to(self.device)

    def load_reference_model(self):
        return load_reference(self.source, self.model, self.cfg)

    def wrap_policy(self, model):
        return model

    def full_weights(self):
        """A context in which ``save_weights`` writes whole weights (every rank enters it)."""
        return contextlib.nullcontext()

    def full_state_dict(self) -> dict:
        """The policy's whole state dict (every rank calls this)."""
        return self.model.state_dict()

    def save_weights(self, folder: Path) -> None:
        self.model.save_pretrained(folder)

    def optimizer_state(self) -> dict:
        return self.optimizer.state_dict()

    def load_optimizer_state(self, state: dict) -> None:
        self.optimizer.load_state_dict(state)

    def checkpoint_collectives(self) -> dict[str, Any]:
        """How torch.distributed.checkpoint coordinates this trainer's processes: not at all in
        one process (even where a library made a process group of its own)."""
        return {"no_dist": True}

    def _restore(self, path: Path) -> None:
        state = read_state(path)
        if state is None:
            return
        self.step = int(state["step"])
        self.policy_version = int(state["policy_version"])
        self.base_model = state.get("base_model", self.model_path)
        if (state_dir(path) / SHARDED_DIR).is_dir():
            self.load_sharded_state(state_dir(path))
            return
        optim = state_dir(path) / OPTIM_FILE
        if optim.exists():
            # on the host, mapped from the file: load_optimizer_state moves each moment to its
            # parameter (its shard under FSDP2), never the whole state onto every rank's GPU
            saved = torch.load(optim, weights_only=True, map_location="cpu", mmap=True)
            try:
                self.load_optimizer_state(saved["optimizer"])
            except ValueError as e:
                raise UsageError(
                    f"the optimizer state in {path} does not fit this model ({e})",
                    hint="train with the same --lora-rank as the checkpoint, or start from its base model",
                ) from None
            self.scheduler.load_state_dict(saved["scheduler"])


    def load_sharded_state(self, folder: Path) -> None:
        """The trainable weights and AdamW's moments from ``folder/dcp`` (each process reads the
        parts of its own shards: any number of processes, one included), the schedule beside it."""
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

        model_sd, optim_sd = get_state_dict(self.model, self.optimizer, options=sharded_options())
        state = {"model": model_sd, "optimizer": optim_sd}
        try:
            dcp.load(state, checkpoint_id=folder / SHARDED_DIR, **self.checkpoint_collectives())
        except Exception as e:  # noqa: BLE001 - DCP's errors on a state of another shape vary by release
            raise UsageError(
                f"the training state in {folder / SHARDED_DIR} does not fit this model ({str(e).splitlines()[0][:300]})",
                hint="train with the same --lora-rank as the checkpoint, or start from its base model",
            ) from None
        set_state_dict(self.model, self.optimizer, model_state_dict=state["model"],
                       optim_state_dict=state["optimizer"], options=sharded_options())  # fmt: skip
        saved = torch.load(folder / SCHEDULER_FILE, weights_only=True)
        self.scheduler.load_state_dict(saved["scheduler"])


def sharded_options():
    """What a sharded checkpoint holds of the policy: its trainable tensors (a LoRA run's frozen
    base is the base model's, never written again)."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions

    return StateDictOptions(ignore_frozen_params=True, strict=False)


def commit(tmp: Path, out: Path) -> None:
    """Swap the finished folder ``tmp`` into ``out``: the old one moves aside first, so a kill
    between the two renames leaves it whole under its .old name (``read_state`` puts it back)."""
    old = out.with_name(f".{out.name}.old")
    if old.exists():
        shutil.rmtree(old)
    if out.exists():
        os.replace(out, old)
    os.replace(tmp, out)
    shutil.rmtree(old, ignore_errors=True)


def weights_folder(checkpoint: str | os.PathLike) -> str:
    """Where the policy at ``checkpoint`` loads from: the folder itself, or, for a sharded
    checkpoint saved mid-run (no weights files, ``trainer/dcp/``), its base model (the trained
    weights then come from dcp/)."""
    from mcoder.models import WEIGHT_PATTERNS

    path = Path(checkpoint)
    state = read_state(path)
    if state is None or not (state_dir(path) / SHARDED_DIR).is_dir():
        return str(checkpoint)
    if (path / "adapter_config.json").is_file() or any(any(path.glob(p)) for p in WEIGHT_PATTERNS):
        return str(checkpoint)
    return str(state["base_model"])


def load_sharded_weights(model, checkpoint: str | os.PathLike) -> None:
    """The trainable weights of a sharded checkpoint into ``model`` (one process: its whole)."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_model_state_dict, set_model_state_dict

    state = {"model": get_model_state_dict(model, options=sharded_options())}
    dcp.load(state, checkpoint_id=state_dir(checkpoint) / SHARDED_DIR, no_dist=True)
    set_model_state_dict(model, state["model"], options=sharded_options())


def importance_weights(samples: list[Sample], cap: float) -> dict[str, float]:
    """Truncated importance sampling (``cap`` > 0): each sample's per-token weights
    min(π_old / π_sampler, cap), π_old being the trainer's recomputed log-probs; and the metrics
    of the mismatch (always, when the rollouts carry sampling log-probs and π_old was recomputed):
    the mean |log π_old - log π_sampler| per token, the mean weight and the share capped."""
    diffs, weights = [], []
    for s in samples:
        q = s.rollout.sampling_logprobs
        if q is None or s.old_logprobs is None or s.old_logprobs is q:
            continue
        d = torch.tensor(s.old_logprobs, dtype=torch.float64) - torch.tensor(q, dtype=torch.float64)  # (C,)
        w = d.exp().clamp(max=cap) if cap > 0 else d.exp()  # (C,)
        if cap > 0:
            s.is_weights = w.tolist()
        diffs.append(d.abs())
        weights.append(w)
    if not diffs:
        return {}
    d, w = torch.cat(diffs), torch.cat(weights)
    out = {"is/logprob_diff": float(d.mean()), "is/weight_mean": float(w.mean())}
    if cap > 0:
        out["is/capped"] = float((w >= cap).double().mean())
    return out


def allow_tf32(device) -> None:
    """On a GPU, float32 matmuls (a --dtype float32 run's, the float32 parts of a bf16 one) may
    use TF32 tensor cores. Set before each update: in-process vLLM sets 'highest' for the whole
    process when it starts. Nothing on a CPU."""
    if device.type == "cuda":
        torch.set_float32_matmul_precision("high")
        torch.backends.cudnn.allow_tf32 = True


def checkpointing_on(cfg: TrainConfig, device) -> bool:
    """Activation checkpointing: asked for, or (auto) on a GPU, where activations are the memory
    that runs out; off on a CPU by default (the tiny models of tests and demos gain nothing)."""
    return cfg.activation_checkpointing == "on" or (cfg.activation_checkpointing == "auto" and device.type == "cuda")


def read_state(path: str | os.PathLike) -> dict[str, Any] | None:
    """The step record of the checkpoint at ``path`` (None when there is none). A kill between the
    two renames of ``save`` leaves only the previous checkpoint, under its .old name: put it back."""
    path = Path(path)
    old = path.with_name(f".{path.name}.old")
    if not path.exists() and (state_dir(old) / STATE_FILE).exists():
        os.replace(old, path)
    f = state_dir(path) / STATE_FILE
    return json.loads(f.read_text()) if f.exists() else None


def state_dir(checkpoint: str | os.PathLike) -> Path:
    """Where a checkpoint keeps its training state: ``CKPT/trainer/`` (checkpoints written before
    that folder existed kept it beside the weights, and still resume)."""
    checkpoint = Path(checkpoint)
    inside = checkpoint / STATE_DIR
    return inside if inside.is_dir() or not (checkpoint / STATE_FILE).exists() else checkpoint


def batch_metrics(pairs, samples: list[Sample], L_max: int, truncated_reward: str) -> dict[str, Any]:
    """What the batch looked like: rewards (as the update scores them), verdicts, lengths,
    truncation and masking (counts of samples and of their completion tokens)."""
    scored = [scored_reward(float(v.reward), is_truncated(r, L_max), truncated_reward) for r, v in pairs]
    rewards = torch.tensor(scored)
    lengths = [len(r.completion_token_ids) for r, _ in pairs]
    status = Counter(v.status for _, v in pairs)
    n = len(pairs)
    out: dict[str, Any] = {
        "reward/mean": float(rewards.mean()),
        "reward/std": float(rewards.std(unbiased=False)),
        "pass_rate": sum(v.passed for _, v in pairs) / n,
        **{f"status/{s}": status.get(s, 0) / n for s in STATUSES},
        "length/mean": sum(lengths) / n,
        "length/max": max(lengths),
        "L_max": L_max,
        "truncated_rate": sum(is_truncated(r, L_max) for r, _ in pairs) / n,
        "masked_count": sum(s.masked for s in samples),
        "masked_tokens": sum(s.num_tokens for s in samples if s.masked),
        "dropped_count": sum(s.dropped for s in samples),
        "dropped_tokens": sum(s.num_tokens for s in samples if s.dropped),
        "cut_off_complete": sum(s.cut_off and s.program == "complete" for s in samples),
        "samples": n,
        "samples_kept": len(samples),
        "groups_kept": len({s.group for s in samples}),
    }
    if samples:
        out["advantage/abs_mean"] = sum(abs(s.advantage) for s in samples) / len(samples)
    return out
