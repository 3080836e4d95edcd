"""Mounts in a private mount namespace: the Python installation made reachable, and a tmpfs per
worker that bounds the disk its candidates fill."""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

from mcoder.judge.sandbox.kernel import CLONE_NEWNS, _libc, _oserror, unshare

MS_NOSUID, MS_NODEV, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 4096, 16384, 1 << 18


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = lambda v: None if v is None else v.encode()
    if _libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)) != 0:
        raise _oserror(f"mount {target}")


def _closed_ancestor(path: str) -> str | None:
    """The first folder on the way to ``path`` that other users cannot enter, if any."""
    parts = Path(path).parts
    for i in range(1, len(parts)):
        folder = os.path.join(*parts[:i])
        if not os.stat(folder).st_mode & 0o001:
            return folder
    return None


def expose(roots: list[str]) -> None:
    """Make ``roots`` reachable for unprivileged ids when a closed folder (e.g. a 0700 /root
    holding the Python installation) lies on their way: in a private mount namespace, a small
    tmpfs covers that folder and the roots are bound back into it. Everything else of the closed
    folder stays hidden. Needs root; changes nothing outside this process's namespace."""
    closed: dict[str, list[str]] = {}
    for r in sorted(set(roots), key=len):
        a = _closed_ancestor(r)
        if a is not None and not any(r.startswith(done + os.sep) for done in closed.get(a, [])):
            closed.setdefault(a, []).append(r)
    if not closed:
        return
    private_mounts()
    for folder, inside in closed.items():
        fds = {r: os.open(r, os.O_PATH | os.O_CLOEXEC) for r in inside}
        _mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64k")
        for r, fd in fds.items():
            if os.path.isdir(f"/proc/self/fd/{fd}"):
                os.makedirs(r, mode=0o755, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(r), mode=0o755, exist_ok=True)
                open(r, "w").close()
            _mount(f"/proc/self/fd/{fd}", r, None, MS_BIND | MS_REC)
            os.close(fd)


_private = False


def private_mounts() -> None:
    """A mount namespace of this process's own, changes to which reach no other process."""
    global _private
    if not _private:
        unshare(CLONE_NEWNS)
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
        _private = True


def disk_quota(folder: str, size_mb: int) -> None:
    """Cover ``folder`` with a tmpfs of ``size_mb``: all files the candidates of this worker write,
    together, fit in it (RLIMIT_FSIZE caps only one file), and the host's disk is never touched."""
    private_mounts()
    _mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, f"mode=0711,size={size_mb}m")
