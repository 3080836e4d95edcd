"""What a worker and a candidate may read: the folders each Landlock layer allows, and a
candidate's import path."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcoder.errors import EnvironmentMissing


def readable_roots() -> list[str]:
    """What the worker may read: the Python installation, its import path and the system's
    shared files. Candidates get less (``candidate_roots``)."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable))}
    roots.update(p for p in sys.path if p and os.path.exists(p))
    roots.update(["/usr", "/lib", "/lib64", "/bin", "/etc", "/proc", "/dev/null", "/dev/urandom"])
    return sorted(roots)


# ---------------------------------------------------------------- a candidate's own view of files


SYSTEM_ROOTS = ["/bin", "/usr/bin", "/etc"]
LIBRARY_FOLDERS = ["/lib", "/lib64", "/usr/lib", "/usr/lib64"]
DEVICES = ["/dev/null", "/dev/zero", "/dev/urandom", "/dev/random"]
_PACKAGE_DIRS = {"site-packages", "dist-packages"}


def system_roots() -> list[str]:
    """The system's programs, configuration and shared libraries, without any Python's own
    folders: each library folder is allowed entry by entry, leaving out ``python*`` (another
    interpreter's standard library and its ``dist-packages``), since Landlock cannot allow a
    folder and deny one below it."""
    roots = set(SYSTEM_ROOTS)
    for folder in LIBRARY_FOLDERS:
        real = os.path.realpath(folder)  # /lib is often a link to /usr/lib
        try:
            entries = os.listdir(real)
        except OSError:
            continue
        roots.update(
            os.path.join(real, e) for e in entries if not e.startswith("python") and e not in _PACKAGE_DIRS
        )
    return sorted(roots)


def stdlib_dirs() -> list[str]:
    """The standard library's folder (where ``os`` comes from; in a virtual environment
    sysconfig's ``platstdlib`` names the environment's own folder instead)."""
    return [os.path.dirname(os.path.realpath(os.__file__))]


def stdlib_roots() -> list[str]:
    """The standard library, entry by entry, without the third-party packages installed inside it
    (``lib/python3.X/site-packages`` lies beneath the standard library's own folder)."""
    roots: set[str] = set()
    for folder in stdlib_dirs():
        for entry in os.listdir(folder):
            if entry not in _PACKAGE_DIRS and entry != "__pycache__":
                roots.add(os.path.join(folder, entry))
    dynload = os.path.dirname(getattr(__import__("_json"), "__file__", "") or "")
    if dynload:
        roots.add(dynload)
    roots.add(os.path.realpath(sys.executable))
    return sorted(roots)


def package_roots(names: list[str]) -> list[str]:
    """The folders (or single-file modules) of the named installed packages, and the shared
    libraries some wheels ship beside them (``numpy.libs``)."""
    import importlib.util

    roots = []
    for name in names:
        spec = importlib.util.find_spec(name)
        if spec is None:
            raise EnvironmentMissing(f"--allow-package {name}: no such package is installed")
        for loc in spec.submodule_search_locations or [spec.origin]:
            if loc and os.path.exists(loc):
                roots.append(loc)
                libs = os.path.join(os.path.dirname(loc), f"{name}.libs")
                if os.path.isdir(libs):
                    roots.append(libs)
    return roots


def candidate_import_path(packages: list[str], link_dir: str) -> list[str]:
    """``sys.path`` for a candidate: the standard library's entries, and ``link_dir`` holding a
    link to each named package (its own folder, e.g. site-packages, stays unreadable)."""
    std = set(stdlib_dirs())
    keep = []
    for p in sys.path:
        real = os.path.realpath(p) if p else p
        if real and (real in std or any(real.startswith(s + os.sep) for s in std)) and not any(
            part in _PACKAGE_DIRS for part in Path(real).parts
        ):
            keep.append(p)
    if packages:
        os.makedirs(link_dir, mode=0o755, exist_ok=True)
        for root in package_roots(packages):
            link = os.path.join(link_dir, os.path.basename(root))
            if not os.path.lexists(link):
                os.symlink(root, link)
        keep.append(link_dir)
    return keep


def candidate_roots(packages: list[str]) -> list[str]:
    """What a candidate may read: the standard library, the system's shared libraries and
    configuration, a few devices, and the packages the user named. Not the judge's virtual
    environment, not the project, not /proc, not the temporary folder, not the datasets."""
    return sorted(set(stdlib_roots() + system_roots() + DEVICES + package_roots(packages)))
