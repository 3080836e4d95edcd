"""Every collective a piece of code issues, recorded as it reaches the dispatcher: which op,
the device types of its tensors, which process group, and who issued it (FSDP2/DTensor on the
policy's sharded tensors, or mcoder itself), for the tests of the GPU path (test_gpu_path.py)."""

from __future__ import annotations

import traceback
from dataclasses import asdict, dataclass

import torch
import torch.distributed as dist
from torch.utils._python_dispatch import TorchDispatchMode

COLLECTIVE_NAMESPACES = ("c10d", "_c10d_functional")
SHARDING = ("/torch/distributed/fsdp/", "/torch/distributed/tensor/")


@dataclass(frozen=True)
class Collective:
    op: str
    devices: tuple[str, ...]  # device types of the tensors it carries
    group: str  # "default" (the process group the trainer built) or "gloo" (a gloo-only group)
    issuer: str  # "sharding" (FSDP2 / DTensor: tensors on the training device) or "mcoder"

    def to_json(self) -> dict:
        return asdict(self)


class Recorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.seen: list[Collective] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func.namespace in COLLECTIVE_NAMESPACES:
            self.seen.append(_describe(func, args, kwargs))
        return func(*args, **kwargs)


def _describe(func, args, kwargs) -> Collective:
    leaves = torch.utils._pytree.tree_leaves((args, kwargs))
    devices = tuple(sorted({t.device.type for t in leaves if isinstance(t, torch.Tensor)}))
    frames = traceback.extract_stack()
    issuer = "sharding" if any(s in f.filename for f in frames for s in SHARDING) else "mcoder"
    return Collective(str(func), devices, _group_kind(leaves), issuer)


def _group_kind(leaves) -> str:
    from torch._C._distributed_c10d import ProcessGroup

    world = dist.group.WORLD
    for leaf in leaves:
        if isinstance(leaf, torch.ScriptObject):
            return "default" if ProcessGroup.unbox(leaf) == world else "gloo"
        if isinstance(leaf, str) and leaf == world.group_name:  # functional collectives name their group
            return "default"
    return "gloo"


def on_gpu(c: Collective) -> set[str]:
    """The device types this collective's tensors have when the same code trains on a GPU: the
    sharding's tensors are the policy's (on the training device, CUDA there); mcoder's own are
    where mcoder put them, which does not depend on the machine."""
    return {"cuda"} if c.issuer == "sharding" else set(c.devices)


def violations(seen: list[Collective], default_spec: str) -> list[Collective]:
    """The collectives that a GPU run would send to a backend that does not serve their tensors,
    the default group being built with ``default_spec`` and the others with gloo."""
    from mcoder.train.distributed import served_devices

    served = {"default": served_devices(default_spec), "gloo": served_devices("gloo")}
    return [c for c in seen if not on_gpu(c) <= served[c.group]]
