"""A CPU machine that looks like a one-GPU machine to the code that makes process groups, for
tests/train/test_process_groups.py: Python runs this module (as ``sitecustomize``) in every process
started with this folder on PYTHONPATH (torchrun's ranks and the benchmarks' subprocesses too;
not the judge's workers, which start isolated).

- ``torch.cuda.is_available()`` is True (with one device, a name, and no-op device calls), so
  every entry point asks for the process group it would ask for on a GPU;
- NCCL is gloo registered for the cuda device alone: a group whose only backend is NCCL serves
  no CPU tensor and fails on one as NCCL does ("No backend type associated with device type
  cpu"), while ``cpu:gloo,cuda:nccl`` sends CPU tensors to gloo;
- tensors stay on the CPU: mcoder's device resolution (``mcoder.models.resolve_device``) gives
  the CPU where it would give the GPU (and torch.distributed.checkpoint writes them as CPU ones).

torch, mcoder.models and the checkpoint writer are patched when first imported (a process that never imports torch
pays nothing).
"""

from __future__ import annotations

import importlib.abc
import sys

STANDIN_NAME = "CUDA stand-in (the CPU)"


def nccl_as_cuda_only_gloo(backend):
    """A backend spec with NCCL replaced by gloo serving the cuda device alone."""
    if not isinstance(backend, str) or "nccl" not in backend:
        return backend
    if backend == "nccl":
        return "cuda:gloo"
    return backend.replace("nccl", "gloo")  # "cpu:gloo,cuda:nccl" -> "cpu:gloo,cuda:gloo"


def _standin(backend, call: str):
    """``backend`` as the stand-in serves it; each call is said on stderr (what the test reads)."""
    served = nccl_as_cuda_only_gloo(backend)
    print(f"cuda stand-in: {call}(backend={backend!r}) -> {served!r}", file=sys.stderr, flush=True)
    return served


def _patch_torch(torch) -> None:
    import torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d

    cuda = torch.cuda
    cuda.is_available = lambda: True
    cuda.device_count = lambda: 1
    cuda.current_device = lambda: 0
    cuda.set_device = lambda device: None
    cuda.get_device_name = lambda device=None: STANDIN_NAME
    cuda.max_memory_allocated = lambda device=None: 0
    cuda.memory_allocated = lambda device=None: 0
    cuda.mem_get_info = lambda device=None: (80 * 2**30, 80 * 2**30)  # an empty 80 GiB device
    cuda.reset_peak_memory_stats = lambda device=None: None
    cuda.empty_cache = lambda: None
    cuda.synchronize = lambda device=None: None

    init, new_group = c10d.init_process_group, c10d.new_group

    def init_process_group(backend=None, *args, **kwargs):
        return init(_standin(backend, "init_process_group"), *args, **kwargs)

    def new_group_standin(ranks=None, timeout=None, backend=None, *args, **kwargs):
        return new_group(ranks, timeout, _standin(backend, "new_group"), *args, **kwargs)

    for module in (dist, c10d):
        module.init_process_group = init_process_group
        module.new_group = new_group_standin


def _patch_checkpoint_writer(filesystem) -> None:
    """torch.distributed.checkpoint's writer stages tensors through a CUDA stream when CUDA is
    available; the stand-in's tensors are on the CPU: its CPU loader."""
    serial = filesystem._SerialCpuLoader
    filesystem._OverlappingCpuLoader = lambda resolve_fun, *args, **kwargs: serial(resolve_fun)


def _patch_models(models) -> None:
    resolve = models.resolve_device

    def resolve_device(name):
        device = resolve(name)
        return type(device)("cpu") if device.type == "cuda" else device

    models.resolve_device = resolve_device


HOOKS = {
    "torch": _patch_torch,
    "mcoder.models": _patch_models,
    "torch.distributed.checkpoint.filesystem": _patch_checkpoint_writer,
}


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Runs ``HOOKS[name](module)`` right after the module ``name`` is first executed."""

    def find_spec(self, name, path, target=None):
        if name not in HOOKS:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        run = spec.loader.exec_module

        def exec_module(module, run=run, hook=HOOKS[name]):
            run(module)
            hook(module)

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _PatchOnImport())
