"""Running a command under the CUDA stand-in (tests/helpers/cuda_standin/sitecustomize.py): the
code takes its GPU branch (process groups, dtypes) while its tensors stay on the CPU."""

from __future__ import annotations

import os
from pathlib import Path

STANDIN = Path(__file__).resolve().parent / "cuda_standin"
ASKED = "cuda stand-in: init_process_group"  # the line the stand-in writes for each group made


def standin_env(**extra: str) -> dict[str, str]:
    """This process's environment with the stand-in loaded by every Python started under it."""
    path = os.pathsep.join(p for p in (str(STANDIN), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", **extra}
