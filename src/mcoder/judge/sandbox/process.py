"""Processes: user ids and namespaces, capabilities, a fresh PID and IPC namespace per candidate,
killing and reaping what a candidate leaves, and the user id each worker slot holds."""

from __future__ import annotations

import ctypes
import fcntl
import os
import pwd
import signal
import time
from pathlib import Path

from mcoder.errors import EnvironmentMissing
from mcoder.judge.sandbox.kernel import (
    CLONE_NEWIPC,
    CLONE_NEWNET,
    CLONE_NEWPID,
    CLONE_NEWUSER,
    PR_SET_CHILD_SUBREAPER,
    PR_SET_PDEATHSIG,
    _libc,
    _oserror,
    unshare,
)

_SYS_CLOSE_RANGE = 436


def close_fds_from(first: int) -> None:
    """Close every fd >= ``first``: one close_range call (an fd-by-fd loop costs milliseconds)."""
    if (
        _libc.syscall(_SYS_CLOSE_RANGE, ctypes.c_uint(first), ctypes.c_uint(0xFFFFFFFF), ctypes.c_uint(0))
        == 0
    ):
        return
    for name in os.listdir("/proc/self/fd"):
        if int(name) >= first:
            try:
                os.close(int(name))
            except OSError:
                pass


def enter_user_namespace() -> None:
    """Without root: a user namespace of our own (our id mapped to itself) holding a fresh
    network and IPC namespace. Candidates then run under our id with every capability dropped."""
    uid, gid = os.getuid(), os.getgid()
    unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWIPC)
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)


def user_namespaces_work() -> bool:
    pid = os.fork()
    if pid == 0:
        os._exit(0 if _libc.unshare(ctypes.c_int(CLONE_NEWUSER | CLONE_NEWNET)) == 0 else 1)
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def drop_capabilities() -> None:
    """Give up every capability (those a user namespace grants its creator included)."""
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    if _libc.capset(ctypes.byref(header), data) != 0:
        raise _oserror("capset")


def become_subreaper() -> None:
    """Orphans of candidates are re-parented to this process, so that it can reap them."""
    _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def die_with_parent() -> None:
    """SIGKILL this process when its parent (the judge) dies."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def drop_to(uid: int) -> None:
    """Become ``uid`` for good (group too, no supplementary groups): no way back to root."""
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


def kill_uid(uid: int) -> None:
    """SIGKILL every process running as ``uid``: kill(-1) from that uid reaches exactly those.

    Done in a short-lived child so that the caller stays root. The kernel walks the process
    list under a lock that fork also needs, so a fork bomb cannot outrun one pass.
    """
    pid = os.fork()
    if pid == 0:
        try:
            drop_to(uid)
            os.kill(-1, signal.SIGKILL)
        except BaseException:  # noqa: BLE001, S110 - a forked child: it must reach os._exit
            pass
        os._exit(0)
    os.waitpid(pid, 0)


def kill_children() -> None:
    """SIGKILL this process's children, over and over, until none is left: without a user id of
    their own (unsafe mode) this is how leftovers are found, as orphans come to the reaper."""
    for _ in range(1000):
        reap_all()
        pids = set()
        for task in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{task}/children") as f:
                    pids.update(int(p) for p in f.read().split())
            except OSError:
                pass
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.001)


def reap_all() -> None:
    """Collect every exited child (orphans included), without waiting."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def has_children() -> bool:
    """Whether any child (orphans included) is still running; exited ones are reaped."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True


# ---------------------------------------------------------------- user ids, one per worker slot


class UidLease:
    """An unused user id held for one worker, with a lock that keeps concurrent judges apart.

    Every process of the id is killed after each test, so two workers (of this judge or another
    on the same machine) must never share an id: the lock file says which ids are taken.
    """

    def __init__(self, first_uid: int, lock_dir: Path | None = None, span: int = 4096):
        self.lock_dir = (
            lock_dir or Path("/run" if os.access("/run", os.W_OK) else "/tmp") / "mcoder-judge-uids"
        )
        self.lock_dir.mkdir(mode=0o700, exist_ok=True)
        for uid in range(first_uid, first_uid + span):
            if _uid_known(uid):
                continue
            fd = os.open(self.lock_dir / str(uid), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            self.uid, self._fd = uid, fd
            return
        raise EnvironmentMissing(f"no free user id in {first_uid}..{first_uid + span - 1} for a judge worker")

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _uid_known(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return False
    return True


# ---------------------------------------------------------------- a fresh PID and IPC namespace


_pylibc = ctypes.PyDLL(None, use_errno=True)  # keeps the GIL across clone(), as os.fork does
_pylibc.syscall.restype = ctypes.c_long
_SYS_CLONE = {"x86_64": 56, "aarch64": 220}


def fork_into_namespaces() -> int:
    """``os.fork`` whose child is process 1 of a new PID namespace and owns a new IPC namespace:
    it sees no process but its own descendants, no SysV object or POSIX queue of anyone else,
    and when it ends the kernel kills every process left in it and frees its IPC objects.

    One clone() call (unshare cannot make a second PID namespace for the same process, and a
    double fork costs a millisecond more). Python's own fork hooks run around it."""
    nr = _SYS_CLONE.get(os.uname().machine)
    if nr is None:
        raise EnvironmentMissing(f"namespaces per candidate are not wired for {os.uname().machine}")
    api = ctypes.pythonapi
    api.PyOS_BeforeFork()
    pid = _pylibc.syscall(
        ctypes.c_long(nr), ctypes.c_ulong(CLONE_NEWPID | CLONE_NEWIPC | signal.SIGCHLD), None, None, None, None
    )
    if pid == 0:
        api.PyOS_AfterFork_Child()
        return 0
    err = ctypes.get_errno()
    api.PyOS_AfterFork_Parent()
    if pid < 0:
        raise OSError(err, f"clone: {os.strerror(err)}")
    return int(pid)
