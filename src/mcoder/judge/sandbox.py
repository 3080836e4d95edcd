"""The Linux isolation a candidate runs under, as small functions the worker calls.

A worker process (root) enters a fresh network and IPC namespace once (no network at all, not
even loopback), restricts itself and all its descendants with Landlock to write only inside its
own directory and read only the Python installation and system files, and becomes the reaper of
orphans. Each candidate process it forks then takes resource limits and drops to the worker's
unused user id: as root, process and memory limits do not hold and signals reach everything;
as that id it can signal no process but its own, and the worker kills every process of that id
when a test ends, so nothing a candidate starts outlives its test.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import pwd
import resource
import signal
import sys
import time
from pathlib import Path

from mcoder.errors import EnvironmentMissing

CLONE_NEWIPC = 0x08000000
CLONE_NEWNET = 0x40000000
PR_SET_NO_NEW_PRIVS = 38
PR_SET_CHILD_SUBREAPER = 36
PR_SET_PDEATHSIG = 1

# Landlock (include/uapi/linux/landlock.h); x86_64 and aarch64 share the syscall numbers.
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
FS_WRITE_TREE = sum(1 << i for i in range(4, 13))  # remove/make dir, file, socket, fifo, device, symlink
FS_REFER, FS_TRUNCATE = 1 << 13, 1 << 14
_FILE_ONLY = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class _ScopedRulesetAttr(ctypes.Structure):  # ABI 6: the fields up to ``scoped``
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1, 2


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _oserror(what: str) -> OSError:
    err = ctypes.get_errno()
    return OSError(err, f"{what}: {os.strerror(err)}")


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 where Landlock is absent or disabled."""
    r = _libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_RULESET_VERSION))
    return max(int(r), 0)


def landlock_restrict(writable: list[str], readable: list[str]) -> None:
    """Restrict this process and its future children: writes only beneath ``writable``, reads
    only beneath ``writable`` + ``readable``. Paths that do not exist are skipped."""
    abi = landlock_abi()
    if abi < 1:
        raise OSError("Landlock is not available")
    handled = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_READ_DIR | FS_WRITE_TREE
    handled |= (FS_REFER if abi >= 2 else 0) | (FS_TRUNCATE if abi >= 3 else 0)
    attr = _RulesetAttr(handled)
    rfd = _libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), 0)
    if rfd < 0:
        raise _oserror("landlock_create_ruleset")
    try:
        read = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
        for paths, access in ((readable, read), (writable, handled)):
            for path in paths:
                _landlock_allow(rfd, path, access & handled)
        if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise _oserror("prctl(NO_NEW_PRIVS)")
        if _libc.syscall(_SYS_RESTRICT_SELF, ctypes.c_int(rfd), 0) != 0:
            raise _oserror("landlock_restrict_self")
    finally:
        os.close(rfd)


def landlock_scope() -> None:
    """A Landlock layer of this process alone: from here on it (and what it starts) can signal,
    ptrace or reach by abstract unix socket no process outside it, the worker included."""
    attr = _ScopedRulesetAttr(0, 0, SCOPE_SIGNAL | SCOPE_ABSTRACT_UNIX_SOCKET)
    rfd = _libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), 0)
    if rfd < 0:
        raise _oserror("landlock_create_ruleset(scoped)")
    try:
        if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise _oserror("prctl(NO_NEW_PRIVS)")
        if _libc.syscall(_SYS_RESTRICT_SELF, ctypes.c_int(rfd), 0) != 0:
            raise _oserror("landlock_restrict_self")
    finally:
        os.close(rfd)


def _landlock_allow(rfd: int, path: str, access: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return
    try:
        if not os.path.isdir(path):
            access &= _FILE_ONLY
        rule = _PathBeneath(access, fd)
        if _libc.syscall(_SYS_ADD_RULE, ctypes.c_int(rfd), _RULE_PATH_BENEATH, ctypes.byref(rule), 0) != 0:
            raise _oserror(f"landlock_add_rule({path})")
    finally:
        os.close(fd)


def readable_roots() -> list[str]:
    """What a candidate may read: the Python installation and the system's shared files."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable))}
    roots.update(p for p in sys.path if p and os.path.exists(p))
    roots.update(["/usr", "/lib", "/lib64", "/bin", "/etc", "/proc", "/dev/null", "/dev/urandom"])
    return sorted(roots)


MS_NOSUID, MS_NODEV, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 4096, 16384, 1 << 18
CLONE_NEWNS = 0x00020000


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


def unshare(flags: int) -> None:
    if _libc.unshare(ctypes.c_int(flags)) != 0:
        raise _oserror("unshare")


CLONE_NEWUSER = 0x10000000


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


def limit(res: int, value: int) -> None:
    _soft, hard = resource.getrlimit(res)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(res, (value, value))


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
        except BaseException:
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


# ---------------------------------------------------------------- what the machine offers


def isolation_mode() -> str:
    """'root' (unused user ids) or 'rootless' (a user namespace of our own)."""
    return "root" if os.geteuid() == 0 else "rootless"


def check_isolation() -> None:
    """Raise EnvironmentMissing naming what this machine lacks for the sandbox."""
    missing = []
    if sys.platform != "linux":
        missing.append(f"Linux (this is {sys.platform})")
    elif isolation_mode() == "root":
        if landlock_abi() < 1:
            missing.append("Landlock (Linux 5.13+ with 'landlock' in the lsm= boot list) to fence files")
    else:
        if not user_namespaces_work():
            missing.append(
                f"root or unprivileged user namespaces (this process runs as uid {os.geteuid()} and "
                "cannot create a user namespace: see /proc/sys/user/max_user_namespaces or "
                "kernel.apparmor_restrict_unprivileged_userns)"
            )
        if landlock_abi() < 6:
            missing.append(
                "root, or Landlock ABI 6 (Linux 6.12+) to keep candidates that run under this user id "
                f"from signalling the judge (this kernel has ABI {landlock_abi()})"
            )
    if missing:
        raise EnvironmentMissing(
            "the judge cannot isolate candidates here; missing: " + "; ".join(missing),
            hint="run the judge as root in a container or VM, or pass --unsafe-no-sandbox "
            "only where something else isolates it",
        )
