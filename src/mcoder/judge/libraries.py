"""Library profiles: which installed third-party libraries a problem's programs may import (a
contest platform's, ``libraries``), and how a worker's interpreter starts, which decides what it
finds."""

from __future__ import annotations

import functools
import subprocess
import sys

from mcoder.errors import EnvironmentMissing

# What a contest platform's Python gives a program beyond the standard library (import names).
# AtCoder's 2023 language set (the heavy machine-learning ones left out), and the packages some of
# them import in turn; LeetCode documents sortedcontainers. Only those installed here are shown.
PLATFORM_LIBRARIES = {
    "atcoder": (
        "numpy", "scipy", "networkx", "sympy", "mpmath", "sortedcontainers", "more_itertools",
        "bitarray", "gmpy2", "pandas", "polars", "shapely", "pulp", "z3", "sklearn", "ortools",
        "atcoder", "dateutil", "pytz", "tzdata", "six", "joblib", "threadpoolctl",
    ),
    "leetcode": ("sortedcontainers",),
}


# ``libraries="auto"``: each problem's programs see its own platform's libraries; a problem of
# another platform, or of none named, sees every platform's (``contest``).
AUTO_PROFILES = ("atcoder", "leetcode", "contest")


def profile_for(libraries: str, platform: str | None) -> str:
    """The library profile a problem's programs see: ``libraries`` itself, or with ``auto`` the
    profile of the problem's platform (``contest`` for one that has none of its own)."""
    if libraries != "auto":
        return libraries
    name = (platform or "").strip().lower()
    return name if name in PLATFORM_LIBRARIES else "contest"


def profiles_of(libraries: str) -> tuple[str, ...]:
    """Every profile a judge run with ``libraries`` may hand a candidate (the first is the
    default, which the checks of functional tests see)."""
    return ("contest", *[p for p in AUTO_PROFILES if p != "contest"]) if libraries == "auto" else (libraries,)


def platform_packages(profile: str) -> list[str]:
    """The installed libraries of ``profile``: a platform's name, ``contest`` (every platform's)
    or ``none``. Installed means importable by the interpreter that runs candidates, as a worker
    starts it (``installed_for_workers``), whatever this process's ``sys.path`` holds: a library
    that edits it (vLLM, pkg_resources) must not make the judge show a worker what it cannot find.
    A profile's library that is not installed is left out, never an error."""
    names = PLATFORM_LIBRARIES.get(profile, ())
    if profile == "contest":
        names = tuple(dict.fromkeys(n for libs in PLATFORM_LIBRARIES.values() for n in libs))
    found = installed_for_workers()
    return [name for name in names if name in found]


# How a worker's interpreter starts (judge/pool.py), and how it is asked what it finds: with this
# environment whole (nothing of the caller's; a fixed hash seed, so that a set's order and a verdict
# reproduce), and -s -P, the rest of isolated mode (-I would ignore PYTHONHASHSEED).
WORKER_FLAGS = ("-s", "-P")
WORKER_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0"}


@functools.cache
def installed_for_workers(executable: str | None = None) -> frozenset[str]:
    """Which names of every platform's libraries ``executable`` (this interpreter) finds when
    started as a worker is: asked once per process, in a fresh interpreter of its own."""
    names = sorted({n for libs in PLATFORM_LIBRARIES.values() for n in libs})
    code = (
        "import importlib.util, sys\n"
        "def found(n):\n"
        "    try:\n"
        "        return importlib.util.find_spec(n) is not None\n"
        "    except (ImportError, ValueError):\n"
        "        return False\n"
        "print('\\n'.join(n for n in sys.argv[1:] if found(n)))\n"
    )
    done = subprocess.run(
        [executable or sys.executable, *WORKER_FLAGS, "-c", code, *names],
        capture_output=True, text=True, env=WORKER_ENV, cwd="/", timeout=60, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise EnvironmentMissing(
            f"the judge could not ask its interpreter which libraries it has: {done.stderr.strip()[-300:]}",
            hint=f"check that this Python starts with {' '.join(WORKER_FLAGS)}",
        )
    return frozenset(done.stdout.split())
