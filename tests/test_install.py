"""The install respects a user's torch, and the project's own set-up never resolves an unpinned one:
pyproject.toml states ranges, and every pip install of the Makefile and scripts/ goes through
constraints/cpu.txt (an unconstrained `torch` resolves to a multi-GB CUDA build)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PINNED = ("torch", "transformers", "vllm")  # what a GPU environment brings its own build of


def requirements() -> list[Requirement]:
    project = PYPROJECT["project"]
    extras = [r for group in project["optional-dependencies"].values() for r in group]
    return [Requirement(r) for r in [*project["dependencies"], *extras]]


@pytest.mark.parametrize("name", PINNED)
def test_library_states_a_range_not_a_pin(name):
    found = [r for r in requirements() if r.name == name]
    assert found, f"{name} is not a dependency"
    for r in found:
        ops = {s.operator for s in r.specifier}
        assert ops and not ops & {"==", "==="}, f"{r}: an exact pin replaces a user's own build"
        assert ">=" in ops, f"{r}: no lower bound"


def test_torch_lower_bound_has_fully_shard():
    """FSDP2's fully_shard is public in torch.distributed.fsdp from 2.6: the range starts there."""
    (torch,) = [r for r in requirements() if r.name == "torch"]
    assert not torch.specifier.contains("2.5.1") and torch.specifier.contains("2.6.0")
    import torch as installed
    from torch.distributed.fsdp import fully_shard  # noqa: F401

    assert torch.specifier.contains(installed.__version__.split("+")[0])


def test_constraints_pin_the_cpu_torch():
    pins = [Requirement(line) for line in (ROOT / "constraints" / "cpu.txt").read_text().splitlines()
            if line.strip() and not line.startswith("#")]  # fmt: skip
    (torch,) = [r for r in pins if r.name == "torch"]
    assert [s.operator for s in torch.specifier] == ["=="]


def pip_installs() -> list[tuple[str, int, str]]:
    """(file, line number, text) of every pip install in the Makefile and scripts/, continuation
    lines joined; the Makefile's PIP_INSTALL variable counts as one."""
    out = []
    for path in [ROOT / "Makefile", *sorted((ROOT / "scripts").glob("*.sh"))]:
        text = path.read_text().replace("\\\n", " ")
        for no, line in enumerate(text.splitlines(), 1):
            if re.search(r"pip install|PIP\S* *:?=|PIP=\(", line) and not line.lstrip().startswith("#"):
                out.append((path.name, no, line))
    return out


def test_every_project_pip_install_is_constrained():
    """Each install line either passes -c constraints/cpu.txt itself or goes through a variable
    (PIP_INSTALL, PIP) defined with it; the torch compat check is the one exception by design."""
    installs = pip_installs()
    assert any(f == "Makefile" for f, _, _ in installs)
    for name, no, line in installs:
        if name in ("test_torch_compat.sh", "gpu_carry.sh"):
            continue  # the other torch on purpose; downloads of wheels, no install
        through_var = re.search(r"\$\(PIP_INSTALL\)|\$\{PIP\[@\]\}", line)
        assert "-c constraints/cpu.txt" in line or "-c $(CONSTRAINTS)" in line or through_var, (
            f"{name}:{no}: {line}"
        )
