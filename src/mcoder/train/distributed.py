"""Training past one process: `torchrun --nproc-per-node N mcoder train ...` with FSDP2.

Every rank reads the whole rollout batch and prepares it the same way (rewards, group
advantages, truncation masks and masking coins are computed over the full batch, before any
sharding), so a group's mean and std never depend on the split. Then, per mini-batch:

    groups of the mini-batch  --round robin-->  ranks (a group never straddles two ranks)
    loss denominators (tokens, sequences)       counted over the WHOLE mini-batch, not the shard
    gradients                                   summed across ranks (FSDP2's reduce-scatter with
                                                divide factor 1), so they equal one process's
    micro-batch counts                          equalised: a rank with fewer runs a zero-weight one,
                                                because every forward/backward is a collective

The policy is wrapped with ``torch.distributed.fsdp.fully_shard`` (each decoder layer, then the
root), LoRA or full weights alike. Rank 0 loads the weights on its host; the other ranks build
the model empty (meta device) and receive each unit's tensors by broadcast just before it is
sharded, so a start holds one loaded copy plus each rank's shards, not a copy per rank.
Checkpoints are sharded (torch.distributed.checkpoint, CKPT/trainer/dcp/): each rank writes its
part of the trainable weights and AdamW's moments, in the background where torch can; whole
Hugging Face weights are gathered and written by rank 0 only at the end of a run (and for a LoRA
adapter, which is small). A sharded checkpoint resumes on any number of processes, one included,
and a single-process checkpoint resumes here. Only rank 0 writes the other files or prints; the
other ranks are quiet.

π_old / π_ref log-probs (when recomputed, or with a reference model) are scored by each rank on its
own round-robin share of the groups, as the update is, and gathered so every rank holds every
sample's: N ranks each score 1/N of the batch.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from mcoder.train.batching import Sample, groups
from mcoder.train.config import TrainConfig
from mcoder.train.models import empty_policy, empty_reference, load_policy, load_reference
from mcoder.train.terms import metric_names
from mcoder.train.trainer import Trainer

# ---------------------------------------------------------------- the process group


def world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def rank() -> int:
    return dist.get_rank() if joined() else int(os.environ.get("RANK", "0"))


def is_main() -> bool:
    return rank() == 0


# One process group serves both devices: pickled objects and host scalars travel on gloo (CPU),
# the policy's sharded tensors on the accelerator's own backend (NCCL on CUDA). A group of one
# backend serves one kind of tensor: NCCL alone fails on the first CPU tensor ("No backend type
# associated with device type cpu"); gloo alone would carry FSDP's gathers through host memory.
# Every process group of mcoder, its benchmarks and its scripts is made here (``join``,
# ``init_groups``, ``side_group``): tests/train/test_process_groups.py finds every other call of
# init_process_group / new_group in the repository and fails on it.
HOST = torch.device("cpu")
ACCELERATOR_BACKENDS = {"cuda": "nccl"}
BACKEND_DEVICES = {"gloo": ("cpu", "cuda"), "nccl": ("cuda",)}  # what each backend serves
DEFAULT_TIMEOUT_S = 1800.0
# Waits for work that one rank does alone (the temperature probe, writing a checkpoint) or that
# ranks finish at different times (sampling): on gloo, which has no watchdog, with a timeout
# long enough for any of it; NCCL's watchdog would kill a rank that waits there for minutes.
LONE_WORK_TIMEOUT_S = 24 * 3600.0
_lone_group = None
_checkpoint_group = None
# Whether this process joined a group mcoder made. A library may make a world of its own in this
# process (in-process vLLM does, on NCCL with one GPU): mcoder's collectives never run on it.
_joined = False


def accelerator() -> str:
    """The device type this process trains on, and so which backends its group needs: cuda when
    present, else cpu."""
    return "cuda" if torch.cuda.is_available() else "cpu"


def backend_spec(device_type: str) -> str:
    """The process group's backends for training on ``device_type``: gloo on a CPU;
    ``cpu:gloo,<device>:<its backend>`` on an accelerator."""
    if device_type == "cpu":
        return "gloo"
    return f"cpu:gloo,{device_type}:{ACCELERATOR_BACKENDS[device_type]}"


def served_devices(spec: str) -> set[str]:
    """The device types a backend spec (``gloo``, ``nccl``, ``cpu:gloo,cuda:nccl``) serves."""
    out: set[str] = set()
    for part in spec.split(","):
        device, _, backend = part.rpartition(":")
        out |= {device} if device else set(BACKEND_DEVICES.get(backend, ()))
    return out


def setup(timeout_s: float = DEFAULT_TIMEOUT_S) -> bool:
    """Join torchrun's process group when launched by it (``join``); quiet the other ranks.
    Whether this is a run of more than one process."""
    if world_size() <= 1:
        return False
    if not joined():
        join(timeout_s)
        # Torn down while the interpreter is still whole: left to interpreter shutdown, gloo's
        # worker threads sometimes abort the process ("terminate called without an active
        # exception", SIGABRT) after the work is done, and torchrun then reports the run failed.
        atexit.register(leave)
    if not is_main():
        from mcoder.console import set_quiet

        set_quiet(True)
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - for the process's life: rank 0 alone prints results
    return True


def join(timeout_s: float = DEFAULT_TIMEOUT_S, **kwargs) -> None:
    """This process's part of the group torchrun's environment describes (RANK, WORLD_SIZE,
    MASTER_ADDR, ...), with the backends of the device it trains on (``backend_spec``), on this
    rank's GPU. The one way a launcher, a benchmark or a script makes a process group."""
    device = accelerator()
    if device == "cuda":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    init_groups(backend_spec(device), timeout_s, **kwargs)


def init_groups(spec: str, timeout_s: float, **kwargs) -> None:
    """The default group (``spec``, ``timeout_s``) and the gloo group for lone work; every rank
    calls this once. ``kwargs`` go to ``init_process_group`` (a store, rank and world size)."""
    global _lone_group, _checkpoint_group, _joined
    dist.init_process_group(backend=spec, timeout=timedelta(seconds=timeout_s), **kwargs)
    _joined = True
    _lone_group = dist.new_group(backend="gloo", timeout=timedelta(seconds=max(timeout_s, LONE_WORK_TIMEOUT_S)))
    # torch.distributed.checkpoint's own (its background writes coordinate here, beside the trainer)
    _checkpoint_group = dist.new_group(backend="gloo", timeout=timedelta(seconds=LONE_WORK_TIMEOUT_S))


def joined() -> bool:
    """Whether this process is in a group mcoder made (``init_groups``)."""
    return _joined and dist.is_initialized()


def lone_group():
    """The group for waiting on lone or uneven work (None: the default group, where
    ``init_groups`` did not build the process group)."""
    return _lone_group


def leave() -> None:
    """Leave the group ``join`` made (nothing when there is none)."""
    global _lone_group, _checkpoint_group, _joined
    if joined():
        dist.destroy_process_group()
    _lone_group, _checkpoint_group, _joined = None, None, False


def barrier() -> None:
    """Every rank waits here for the others, however long rank 0's lone work (files) takes."""
    if joined():
        dist.barrier(group=lone_group())


def broadcast(obj: Any) -> Any:
    """Rank 0's ``obj`` on every rank (rollouts, verdicts: small next to the model)."""
    if not joined():
        return obj
    box = [obj if is_main() else None]
    dist.broadcast_object_list(box, src=0, group=lone_group())  # after rank 0's lone work
    return box[0]


def broadcast_result(fn):
    """``fn()`` on rank 0, its result (or its error) on every rank: no rank waits forever on a
    collective that rank 0 never reaches because it raised. In one process: ``fn()``."""
    if not joined():
        return fn()
    result, error = None, None
    if is_main():
        try:
            result = fn()
        except Exception as e:  # noqa: BLE001 - re-raised below, on every rank
            error = e
    result, error = broadcast((result, error))
    if error is not None:
        raise error
    return result


def gather_results(fn, group=None) -> list:
    """``fn()`` on every rank; every rank's result, in rank order, on every rank. An error on any
    rank is raised on every rank (none waits forever on a collective a failed rank never
    reaches). ``group``: the process group to gather over (``side_group()`` from a thread that
    runs beside the trainer's collectives; by default the lone-work group: ranks finish ``fn`` at
    different times). In one process: ``[fn()]``."""
    if not joined():
        return [fn()]
    result, error = None, None
    try:
        result = fn()
    except Exception as e:  # noqa: BLE001 - re-raised below, on every rank
        error = e
    box: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(box, (result, error), group=group if group is not None else lone_group())
    for _, e in box:
        if e is not None:
            raise e
    return [r for r, _ in box]


def side_group():
    """A second process group over all ranks (gloo), for collectives made by a thread while the
    main thread's collectives (the trainer's) run: collectives of one group must come in the
    same order on every rank, which two threads sharing a group cannot promise. Every rank must
    call this, at the same point. None in one process."""
    if not joined():
        return None
    return dist.new_group(backend="gloo", timeout=timedelta(seconds=LONE_WORK_TIMEOUT_S))


def make_trainer(model_path: str, cfg: TrainConfig) -> Trainer:
    """The trainer for this launch: FSDP2 across ranks under torchrun, else the plain one."""
    return FSDPTrainer(model_path, cfg) if setup(cfg.dist_timeout_s) else Trainer(model_path, cfg)


# ---------------------------------------------------------------- the trainer


def shard_model(
    model: torch.nn.Module,
    compute_dtype: torch.dtype = torch.float32,
    device: torch.device = HOST,
    source: int | None = None,
    read=None,
) -> torch.nn.Module:
    """fully_shard each decoder layer, then the root (embeddings, final norm, lm_head). The
    shards stay as loaded (float32 masters); each gather casts them to ``compute_dtype`` and the
    gradients are reduced in float32 (verl's mixed precision).

    ``source``: the rank that loaded the weights (on its host); every other rank holds the same
    model empty (meta device). Before each unit is sharded its tensors are made on ``device`` on
    every rank and broadcast from ``source``; sharding then keeps each rank's part and frees the
    rest. No rank holds more than its shards and one unit whole beyond what it loaded.
    ``read(name)`` (on ``source``): the tensor of that name from the weights files, for a
    ``source`` that built the model empty too: it then never holds more than one unit either."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    mp = MixedPrecisionPolicy(param_dtype=compute_dtype, reduce_dtype=torch.float32)
    layer_types = set(getattr(_base(model), "_no_split_modules", None) or ())
    layers = [m for m in model.modules() if type(m).__name__ in layer_types]
    if source is not None:
        _check_same_model(model, source)
    prefix = {id(m): name + "." if name else "" for name, m in model.named_modules()}
    for unit in [*layers, model]:
        if source is not None:
            _receive_unit(unit, device, source, read, prefix[id(unit)])
        fully_shard(unit, mp_policy=mp)
    for m in [*layers, model]:
        m.set_gradient_divide_factor(1.0)  # sum, not mean: each rank's loss already has global denominators
        m.set_force_sum_reduction_for_comms(True)  # plain SUM collectives (gloo has no PREMUL_SUM)
    return model


def _receive_unit(unit: torch.nn.Module, device: torch.device, source: int, read=None, prefix: str = "") -> None:
    """The tensors of ``unit`` not sharded yet (a layer's, or the root's own), on ``device`` with
    ``source``'s values on every rank: one broadcast each (a tied weight once, in each place)."""
    from torch.distributed.tensor import DTensor

    made: dict[int, torch.Tensor] = {}
    for kind in ("_parameters", "_buffers"):
        named = unit.named_parameters if kind == "_parameters" else unit.named_buffers
        for name, t in list(named(remove_duplicate=False)):
            if isinstance(t, DTensor):
                continue  # a layer sharded before the root
            if id(t) not in made:
                if rank() != source:
                    data = torch.empty(t.shape, dtype=t.dtype, device=device)
                elif read is not None and kind == "_parameters":
                    data = read(prefix + name).to(device=device, dtype=t.dtype)
                else:
                    data = t.detach().to(device)
                dist.broadcast(data, src=source)
                made[id(t)] = torch.nn.Parameter(data, requires_grad=t.requires_grad) if kind == "_parameters" else data
            owner, _, leaf = name.rpartition(".")
            getattr(unit.get_submodule(owner), kind)[leaf] = made[id(t)]


class WeightFiles:
    """A model folder's safetensors files, read one tensor at a time (each read maps the file for
    as long as the tensor lives: what was read leaves memory with it)."""

    def __init__(self, where: dict[str, Path]):
        self.where = where  # tensor name -> its file

    @classmethod
    def of(cls, folder: str, model: torch.nn.Module) -> WeightFiles | None:
        """The files of ``folder`` when they hold every parameter of ``model`` under its own name
        (full weights in safetensors, as save_pretrained writes them); None otherwise (a LoRA
        model's names are PEFT's; .bin weights)."""
        import json

        from safetensors import safe_open

        root = Path(folder)
        index = root / "model.safetensors.index.json"
        if index.is_file():
            where = {k: root / f for k, f in json.loads(index.read_text())["weight_map"].items()}
        elif (root / "model.safetensors").is_file():
            with safe_open(str(root / "model.safetensors"), "pt") as f:
                where = dict.fromkeys(f.keys(), root / "model.safetensors")
        else:
            return None
        seen: set[int] = set()
        needed = []
        for name, p in model.named_parameters(remove_duplicate=False):
            if id(p) not in seen:  # a tied weight: the file holds it under its first name
                seen.add(id(p))
                needed.append(name)
        return cls(where) if all(n in where for n in needed) else None

    def read(self, name: str) -> torch.Tensor:
        from safetensors import safe_open

        with safe_open(str(self.where[name]), "pt") as f:
            return f.get_tensor(name)


def _check_same_model(model: torch.nn.Module, source: int) -> None:
    """Every rank built the model ``source`` loaded: the same tensors by name, shape and dtype."""
    mine = [(n, tuple(t.shape), str(t.dtype)) for n, t in [*model.named_parameters(), *model.named_buffers()]]
    theirs = broadcast(mine) if source == 0 else None
    if theirs != mine:
        raise RuntimeError(f"rank {rank()} built another model than rank {source} loaded")


def _base(model):
    """The transformers model under a PEFT wrapper."""
    get = getattr(model, "get_base_model", None)
    return get() if get is not None else model


class FSDPTrainer(Trainer):
    """``Trainer`` whose policy is sharded over the ranks of torchrun's process group."""

    # -- the policy: rank 0 loads it on its host, the others build it empty; sharding deals it out

    def load_policy_model(self):
        """Every rank builds the policy empty; rank 0 then either reads each unit from the weights
        files as it is dealt (safetensors holding every tensor under the model's own name: full
        weights), or loads the whole policy on its host first (LoRA adapters, other layouts)."""
        lora = self.cfg.lora_rank > 0 or (Path(self.source) / "adapter_config.json").is_file()
        if lora:  # (rank 0's fresh adapter is drawn from the seed as one process draws it)
            self.files = None
            return load_policy(self.source, self.cfg) if is_main() else empty_policy(self.source, self.cfg)
        model = empty_policy(self.source, self.cfg)
        self.files = WeightFiles.of(self.source, model)
        if self.files is None and is_main():
            return load_policy(self.source, self.cfg)
        return model

    def load_reference_model(self):
        if self.files is not None or not is_main():
            return empty_reference(self.source, self.model, self.cfg)
        return load_reference(self.source, self.model, self.cfg)

    def wrap_policy(self, model):
        read = self.files.read if self.files is not None and is_main() else None
        if self.reference is not None and self.reference is not model:
            # π_ref of full fine-tuning: sharded too, forward only
            shard_model(self.reference, self.compute_dtype, self.device, source=0, read=read)
        return shard_model(model, self.compute_dtype, self.device, source=0, read=read)

    def compute(self):
        return contextlib.nullcontext()  # the sharding's mixed-precision policy casts each gather

    # -- one mini-batch: this rank's groups, the collectives in step, metric sums over ranks

    def my_share(self, mini: list[Sample]) -> list[Sample]:
        return [s for i, g in enumerate(groups(mini)) if i % world_size() == rank() for s in g]

    def idle_steps(self, count: int) -> int:
        """Every forward/backward is a collective: a rank with fewer micro-batches than the most
        any rank has runs zero-weight ones to stay in step."""
        most = torch.tensor([count], device=HOST)  # on gloo (host scalars)
        dist.all_reduce(most, op=dist.ReduceOp.MAX)
        return int(most) - count

    def sum_over_processes(self, sums: Counter[str]) -> Counter[str]:
        keys = ("tokens", *metric_names(), "entropy", "loss")  # what Trainer.accumulate_gradients adds up
        totals = torch.tensor([float(sums[k]) for k in keys], dtype=torch.float64, device=HOST)
        dist.all_reduce(totals)
        return Counter(dict(zip(keys, totals.tolist(), strict=True)))

    def scalar(self, t) -> float:
        return float(_full(t))

    def share_logprobs(self, samples: list[Sample], mine: list[Sample], recompute: bool) -> None:
        """Each rank scored its groups' π_old / π_ref: every rank gets every sample's (gloo)."""
        parts = gather_results(
            lambda: {s.rollout.id: (s.old_logprobs if recompute else None, s.ref_logprobs) for s in mine}
        )
        scored = {k: v for part in parts for k, v in part.items()}
        for s in samples:
            old, ref = scored[s.rollout.id]
            if recompute:
                s.old_logprobs = old
            if self.reference is not None:
                s.ref_logprobs = ref

    # -- checkpoints: the training state sharded (torch.distributed.checkpoint), whole weights at the end

    def save(self, out, extra_state=None, extra_files=None, final: bool = True) -> Path:
        """Each rank writes its part of the trainable weights and AdamW's moments itself
        (CKPT/trainer/dcp/, in the background where this torch can, from a copy taken now),
        rank 0 the config, tokenizer, step record, schedule and model card; then rank 0 swaps
        the folder into place once every part is written (a kill before leaves the old one).
        The whole policy is gathered and written as Hugging Face weights only when ``final``
        (the end of a run: a folder vLLM and from_pretrained load) or for a LoRA adapter (small)."""
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import get_state_dict

        from mcoder.train.trainer import SCHEDULER_FILE, SHARDED_DIR, STATE_DIR, commit, sharded_options

        self.wait_for_saves()
        out = Path(out)
        tmp = Path(broadcast_result(lambda: str(_new_temp_folder(out))))
        whole = final or hasattr(self.model, "peft_config")
        if whole:
            with self.full_weights():
                if is_main():
                    self.save_weights(tmp)
        if is_main():
            if not whole:  # a model folder's config without weights: they load from the base and dcp/
                _base(self.model).config.save_pretrained(tmp)
            self.write_training_files(tmp, out, extra_state, extra_files)
            torch.save({"scheduler": self.scheduler.state_dict()}, tmp / STATE_DIR / SCHEDULER_FILE)
        barrier()  # the folder is there for every rank
        model_sd, optim_sd = get_state_dict(self.model, self.optimizer, options=sharded_options())
        state = {"model": model_sd, "optimizer": optim_sd}
        target = tmp / STATE_DIR / SHARDED_DIR
        background = getattr(dcp, "async_save", None)
        if final or background is None:
            dcp.save(state, checkpoint_id=target, process_group=_checkpoint_group)
            if is_main():
                commit(tmp, out)
            barrier()
            return out
        written = background(state, checkpoint_id=target, process_group=_checkpoint_group)

        def land() -> None:  # rank 0's write ends after every rank's part and the metadata
            written.result()
            if is_main():
                commit(tmp, out)

        self._saving = self._saver().submit(land)
        return out

    def wait_for_saves(self) -> None:
        saving, self._saving = getattr(self, "_saving", None), None
        if saving is not None:
            saving.result()
        barrier()

    def _saver(self):
        from concurrent.futures import ThreadPoolExecutor

        if getattr(self, "_save_thread", None) is None:
            self._save_thread = ThreadPoolExecutor(1, thread_name_prefix="checkpoint")
        return self._save_thread

    def checkpoint_collectives(self) -> dict[str, Any]:
        return {"process_group": _checkpoint_group}

    def full_state_dict(self) -> dict:
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        return get_model_state_dict(
            self.model, options=StateDictOptions(full_state_dict=True, cpu_offload=True)
        )

    @contextlib.contextmanager
    def full_weights(self):
        """Full weights on rank 0's CPU for ``save_weights`` (every rank must enter this). With
        LoRA the adapter's alone: the frozen base is never gathered for a checkpoint or a hand-over."""
        full = self.adapter_state_dict() if hasattr(self.model, "peft_config") else self.full_state_dict()
        # a tied lm_head appears under two names here; keep the names one process would save
        names = {n for n, _ in self.model.named_parameters()} | {n for n, _ in self.model.named_buffers()}
        self._full_weights = {k: v for k, v in full.items() if k in names}
        try:
            yield
        finally:
            self._full_weights = None

    def adapter_state_dict(self) -> dict:
        """The trainable (adapter) tensors gathered whole, one at a time (a collective each),
        kept on rank 0's CPU; PEFT's save_pretrained reads nothing else."""
        out = {}
        for name, p in self.model.named_parameters():
            if p.requires_grad:
                full = _full(p.detach())
                if is_main():
                    out[name] = full.cpu()
        return out

    def save_weights(self, folder: Path) -> None:
        self.model.save_pretrained(folder, state_dict=self._full_weights)

    def load_optimizer_state(self, state: dict) -> None:
        self.optimizer.load_state_dict(_shard_optimizer_state(state, self.params))


def _new_temp_folder(out: Path) -> Path:
    """Rank 0's temporary folder beside ``out`` (what a save killed half-way left removed)."""
    from mcoder.outputs import temp_folder

    out.parent.mkdir(parents=True, exist_ok=True)
    return temp_folder(out)


def _full(t):
    """A DTensor gathered to a plain tensor (a collective); other values unchanged."""
    from torch.distributed.tensor import DTensor

    return t.full_tensor() if isinstance(t, DTensor) else t


def _shard_optimizer_state(sd: dict, params: list[torch.nn.Parameter]) -> dict:
    """A saved (full, index-keyed) optimizer state cut to this rank's shards of ``params``."""
    from torch.distributed.tensor import DTensor, distribute_tensor

    state = {}
    for idx, entry in sd["state"].items():
        p = params[int(idx)]
        state[idx] = {
            k: distribute_tensor(v.to(p.device), p.device_mesh, p.placements)
            if isinstance(p, DTensor) and isinstance(v, torch.Tensor) and v.shape == p.shape
            else v
            for k, v in entry.items()
        }
    return {"state": state, "param_groups": sd["param_groups"]}
