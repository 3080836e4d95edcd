"""The Linux isolation a candidate runs under, as small functions the worker calls.

A worker process (root) enters a fresh network and IPC namespace once (no network at all, not
even loopback), restricts itself and all its descendants with Landlock, and becomes the reaper
of orphans. Each candidate it forks (``fork_into_namespaces``) is process 1 of a fresh PID and
IPC namespace, joins the slot's cgroup, takes resource limits, drops to the worker's unused user
id, enforces a second, narrower Landlock layer (the standard library, system libraries, its own
folder) and a seccomp filter, and runs. Functional checks run the same way in a second worker,
under a second user id, and reach the candidate through pipes that carry plain data only.

What the sandbox guarantees (root mode, Linux with Landlock and seccomp; rootless mode gives
the same with a user namespace of the judge's own in place of the unused user ids):

- The judge decides every pass from values it holds: a stdin test from the output it compares,
  a call test from the return value rebuilt as plain data (None, bool, int, float, str, bytes,
  list, tuple, dict, set, frozenset) in the judge, a functional test from the check, which runs
  in another process and gets the candidate's return values as plain data. No object of the
  candidate's making crosses; nothing it writes on any descriptor is taken as "passed"; the
  check's source and expected values are never in the candidate's memory nor in the worker it
  is forked from.
- Each candidate sees a fresh world: its own PID namespace (it sees and signals only its own
  processes; when it ends, the kernel kills everything it started), its own IPC namespace
  (SysV shared memory, queues, semaphores and POSIX queues die with it: nothing carries to the
  next test or rollout, and no memory stays pinned), no network (not even loopback), no Unix
  socket (socket(AF_UNIX) is refused, abstract and pathname alike; no netlink either), no
  nested namespaces, mount, ptrace, process_vm_*, bpf, keyctl, perf_event_open, userfaultfd,
  io_uring or kernel-module calls, no change of its own scheduling (priority, policy, CPUs)
  (seccomp), no setuid way back (no_new_privs).
- Files: it reads the standard library, the system's shared libraries and /etc (no other
  interpreter's folders), a few devices, the installed libraries of a contest platform
  (``libraries``; ``auto``: the problem's own platform's) and the packages named with
  ``allow_packages``; it writes only its own folder, which is a
  tmpfs of ``max_disk_mb`` per worker, emptied between tests. The judge's virtual environment,
  the project, /proc, the temporary folder and the datasets are unreadable.
- CPU: where the host lets the judge make a cgroup ``cpu`` group, each slot has an equal share
  of a busy machine however many processes its candidate forks, and a quota of ``slot_cpus``.
- Limits: CPU time per test (its whole tree's, from the slot's cgroup where the host has one),
  checked while it runs and when it exits, with a wall-clock backstop of ``wall_factor`` (3x)
  for programs that sleep, which does not count time spent waiting for a CPU (less the time
  asleep: a program may not change its own priority, policy or CPUs, so it waits for a CPU only
  while it asks for one, and then gets its fair share, which its CPU limit counts); memory per
  process (RLIMIT_AS), and for the whole tree where a cgroup can be made (cgroup v1 memory, or
  v2 where the memory controller is delegated); processes (RLIMIT_NPROC of its user id), open
  files, file size, output size.

What it does not guarantee:

- Without a cgroup the tree's memory is bounded only by ``max_processes`` x ``memory_mb``;
  without cgroup CPU accounting, CPU time counts the candidate process and the children it
  waited for (a tree of busy processes is stopped by RLIMIT_CPU per process and the backstop);
  without a ``cpu`` group a slot has no CPU share of its own (a neighbour's many processes slow
  it; the backstop then credits the main process's run-queue wait only).
- It is not a defence against kernel bugs reachable through the system calls it allows (a
  VM or gVisor is). Timing side channels and the amount of CPU a candidate burns within its
  limits are not hidden. The standard library's own folder can be listed (names of the base
  interpreter's site-packages are visible, their files are not readable).
- The judge's own modules are in the candidate's memory (it is forked from the worker); they
  hold no answers. Process 1 of a PID namespace ignores signals sent from inside it without a
  handler: the calls of Python that signal the program itself (``os.kill``, ``os.killpg``,
  ``signal.raise_signal``, ``signal.pthread_kill``) end it as anywhere else, but a raw system
  call (ctypes) or a timer's signal (``signal.alarm`` with no handler) still leaves it running.
- The contest libraries a program imports (of a fixed list: numpy, scipy, networkx, ...) are
  imported by its worker before the tests are forked: their import costs the program no CPU
  time, and their pages are the worker's, not counted in the program's tree memory (~20 MB for
  numpy). A worker that imported one is replaced before a program whose profile hides it.
- Machines other than x86_64 and aarch64 lack the seccomp table (the judge exits 4 there).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import functools
import os
import pwd
import signal
import subprocess
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
    """What the worker may read: the Python installation, its import path and the system's
    shared files. Candidates get less (``candidate_roots``)."""
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


# ---------------------------------------------------------------- what the machine offers


def isolation_mode() -> str:
    """'root' (unused user ids) or 'rootless' (a user namespace of our own)."""
    return "root" if os.geteuid() == 0 else "rootless"


def _namespaces_per_candidate_work() -> bool:
    """Whether a candidate can be process 1 of its own PID and IPC namespaces here. The probe clones
    from a plain ``os.fork`` child, never from this process: a raw clone() copies only the calling
    thread and runs none of libc's fork handlers, so cloned from a process with other threads (a
    trainer, an engine, a thread pool) the child can block forever on a lock one of them held. It
    did: a Judge started beside two training loops hung in this check, 2 times in 7."""
    child = os.fork()  # libc's and Python's fork handlers run: the child has one thread and sane locks
    if child == 0:
        code = 1
        try:
            pid = fork_into_namespaces()
            if pid == 0:
                os._exit(0 if os.getpid() == 1 else 1)
            _, status = os.waitpid(pid, 0)
            code = 0 if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def check_isolation() -> None:
    """Raise EnvironmentMissing naming what this machine lacks for the sandbox."""
    missing = []
    if sys.platform != "linux":
        missing.append(f"Linux (this is {sys.platform})")
    elif os.uname().machine not in _ARCH:
        missing.append(f"x86_64 or aarch64 for the seccomp filter (this is {os.uname().machine})")
    elif _libc.prctl(21, 0, 0, 0, 0) < 0:  # PR_GET_SECCOMP: EINVAL without CONFIG_SECCOMP_FILTER
        missing.append("seccomp (a kernel built with CONFIG_SECCOMP_FILTER) to narrow the system calls")
    elif isolation_mode() == "root":
        if landlock_abi() < 1:
            missing.append("Landlock (Linux 5.13+ with 'landlock' in the lsm= boot list) to fence files")
        if not _namespaces_per_candidate_work():
            missing.append("PID and IPC namespaces (clone with CLONE_NEWPID | CLONE_NEWIPC) for each candidate")
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


# ---------------------------------------------------------------- a candidate's own view of files


SYSTEM_ROOTS = ["/bin", "/usr/bin", "/etc"]
LIBRARY_FOLDERS = ["/lib", "/lib64", "/usr/lib", "/usr/lib64"]
DEVICES = ["/dev/null", "/dev/zero", "/dev/urandom", "/dev/random"]
_PACKAGE_DIRS = {"site-packages", "dist-packages"}

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


def landlock_ruleset(writable: list[str], readable: list[str], scope: bool, listable: list[str] = ()) -> int:
    """A Landlock ruleset fd for candidates, made once: each candidate enforces it on itself
    (``landlock_enforce``), on top of the worker's own, wider layer. ``listable`` folders (the
    standard library's own, whose site-packages is not readable) may be listed, not read."""
    abi = landlock_abi()
    handled = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_READ_DIR | FS_WRITE_TREE
    handled |= (FS_REFER if abi >= 2 else 0) | (FS_TRUNCATE if abi >= 3 else 0)
    if scope and abi >= 6:
        attr = _ScopedRulesetAttr(handled, 0, SCOPE_SIGNAL | SCOPE_ABSTRACT_UNIX_SOCKET)
    else:
        attr = _RulesetAttr(handled)
    rfd = _libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), 0)
    if rfd < 0:
        raise _oserror("landlock_create_ruleset")
    read = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
    for paths, access in ((readable, read), (writable, handled), (listable, FS_READ_DIR)):
        for path in paths:
            _landlock_allow(rfd, path, access & handled)
    os.set_inheritable(rfd, False)
    return int(rfd)


def landlock_enforce(rfd: int) -> None:
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise _oserror("prctl(NO_NEW_PRIVS)")
    if _libc.syscall(_SYS_RESTRICT_SELF, ctypes.c_int(rfd), 0) != 0:
        raise _oserror("landlock_restrict_self")


# ---------------------------------------------------------------- a fresh PID and IPC namespace


CLONE_NEWPID = 0x20000000
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


# ---------------------------------------------------------------- seccomp: the kernel's surface

# The calls a candidate never needs and that widen what it can reach: namespaces, mounts, tracing
# other processes, BPF, keyrings, io_uring (it would bypass this filter), kernel modules, clocks,
# sync()/syncfs() (which make the host flush every dirty page of every disk), and its own
# scheduling (priority, policy, CPUs): a program that made itself SCHED_IDLE and pinned itself
# to a busy CPU waited for that CPU at every wake-up, and the wall backstop took that waiting for
# load (it held its slot 12 times its limit while asleep).
_DENIED = {
    "x86_64": {
        "unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161,
        "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "bpf": 321, "keyctl": 250,
        "add_key": 248, "request_key": 249, "perf_event_open": 298, "userfaultfd": 323,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "kexec_load": 246,
        "kexec_file_load": 320, "init_module": 175, "finit_module": 313, "delete_module": 176,
        "open_by_handle_at": 304, "name_to_handle_at": 303, "open_tree": 428, "move_mount": 429,
        "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
        "swapon": 167, "swapoff": 168, "reboot": 169, "acct": 163, "quotactl": 179,
        "sethostname": 170, "setdomainname": 171, "settimeofday": 164, "clock_settime": 227,
        "adjtimex": 159, "clock_adjtime": 305, "syslog": 103, "vhangup": 153, "fanotify_init": 300,
        "pidfd_getfd": 438, "process_madvise": 440, "kcmp": 312, "iopl": 172, "ioperm": 173,
        "modify_ldt": 154, "uselib": 134, "memfd_secret": 447, "lookup_dcookie": 212,
        "sync": 162, "syncfs": 306,
        "setpriority": 141, "sched_setparam": 142, "sched_setscheduler": 144, "sched_setaffinity": 203,
        "sched_setattr": 314,
    },
    "aarch64": {
        "unshare": 97, "setns": 268, "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51,
        "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "bpf": 280, "keyctl": 219,
        "add_key": 217, "request_key": 218, "perf_event_open": 241, "userfaultfd": 282,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "kexec_load": 104,
        "kexec_file_load": 294, "init_module": 105, "finit_module": 273, "delete_module": 106,
        "open_by_handle_at": 265, "name_to_handle_at": 264, "open_tree": 428, "move_mount": 429,
        "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
        "swapon": 224, "swapoff": 225, "reboot": 142, "acct": 89, "quotactl": 60,
        "sethostname": 161, "setdomainname": 162, "settimeofday": 170, "clock_settime": 112,
        "adjtimex": 171, "clock_adjtime": 266, "syslog": 116, "vhangup": 58, "fanotify_init": 262,
        "pidfd_getfd": 438, "process_madvise": 440, "kcmp": 272, "memfd_secret": 447,
        "sync": 81, "syncfs": 267,
        "setpriority": 140, "sched_setparam": 118, "sched_setscheduler": 119, "sched_setaffinity": 122,
        "sched_setattr": 274,
    },
}
_ARCH = {"x86_64": (0xC000003E, 56, 435, 41), "aarch64": (0xC00000B7, 220, 435, 198)}  # audit arch, clone, clone3, socket
_NS_FLAGS = 0x7E020000 | 0x00000080  # CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET, NEWTIME
_AF_INET, _AF_INET6 = 2, 10
_RET_ALLOW, _RET_KILL = 0x7FFF0000, 0x80000000
_RET_ERRNO = 0x00050000
_EPERM, _EACCES, _ENOSYS = 1, 13, 38
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
SECCOMP_MODE_FILTER, PR_SET_SECCOMP = 2, 22


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter))]


def seccomp_program() -> ctypes.Array:
    """The filter, as classic BPF: denied calls fail with EPERM, clone() with a namespace flag
    fails with EPERM, clone3() with ENOSYS (so that libc falls back to clone, which the filter
    can inspect), socket() for anything but IPv4/IPv6 (no Unix-domain socket can connect to a
    host's listener, no netlink) with EACCES. A call of another architecture kills the process."""
    machine = os.uname().machine
    if machine not in _ARCH:
        raise EnvironmentMissing(f"the seccomp filter is not written for {machine}")
    audit_arch, nr_clone, nr_clone3, nr_socket = _ARCH[machine]
    denied = sorted(set(_DENIED[machine].values()))
    # Layout: 0 ld arch; 1 jeq; 2 kill; 3 ld nr; [x32 check]; denied...; clone; clone3; socket;
    # allow; CLONE: ld arg0, jset; SOCKET: ld arg0, jeq, jeq; then the return blocks.
    prog: list[tuple[int, int, int, int]] = []
    label_targets: list[tuple[int, str, str]] = []  # (index, jt label, jf label)

    def emit(code: int, k: int, jt: str = "", jf: str = "") -> None:
        if jt or jf:
            label_targets.append((len(prog), jt, jf))
        prog.append((code, 0, 0, k))

    emit(_LD_W_ABS, 4)
    emit(_JEQ_K, audit_arch, "next2", "")
    emit(_RET_K, _RET_KILL)
    emit(_LD_W_ABS, 0)
    if machine == "x86_64":
        emit(_JGE_K, 0x40000000, "eperm", "")  # x32 ABI numbers
    for nr in denied:
        emit(_JEQ_K, nr, "eperm", "")
    emit(_JEQ_K, nr_clone, "clone", "")
    emit(_JEQ_K, nr_clone3, "enosys", "")
    emit(_JEQ_K, nr_socket, "socket", "")
    labels = {"allow0": len(prog)}
    emit(_RET_K, _RET_ALLOW)
    labels["clone"] = len(prog)
    emit(_LD_W_ABS, 16)
    emit(_JSET_K, _NS_FLAGS, "eperm", "allow")
    labels["socket"] = len(prog)
    emit(_LD_W_ABS, 16)
    emit(_JEQ_K, _AF_INET, "allow", "")
    emit(_JEQ_K, _AF_INET6, "allow", "")
    labels["eacces"] = len(prog)
    emit(_RET_K, _RET_ERRNO | _EACCES)
    labels["eperm"] = len(prog)
    emit(_RET_K, _RET_ERRNO | _EPERM)
    labels["enosys"] = len(prog)
    emit(_RET_K, _RET_ERRNO | _ENOSYS)
    labels["allow"] = len(prog)
    emit(_RET_K, _RET_ALLOW)
    for index, jt, jf in label_targets:  # classic BPF jumps forward only, by at most 255
        code, _, _, k = prog[index]
        rel = lambda name, i=index: 0 if not name else (1 if name == "next2" else labels[name] - i - 1)
        assert 0 <= rel(jt) < 256 and 0 <= rel(jf) < 256
        prog[index] = (code, rel(jt), rel(jf), k)
    arr = (_SockFilter * len(prog))(*[_SockFilter(c, t, f, k) for c, t, f, k in prog])
    return arr


def seccomp_fprog(program: ctypes.Array) -> _SockFprog:
    """The filter as the kernel takes it, made once (it keeps ``program`` alive)."""
    return _SockFprog(len(program), ctypes.cast(program, ctypes.POINTER(_SockFilter)))


def seccomp_enforce(fprog: _SockFprog) -> None:
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise _oserror("prctl(NO_NEW_PRIVS)")
    if _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise _oserror("prctl(PR_SET_SECCOMP)")


# ---------------------------------------------------------------- a memory and CPU account per slot


class TreeAccount:
    """The cgroups of one worker slot's candidates (cgroup v1 ``memory`` + ``cpuacct`` + ``cpu``,
    or v2; on a hybrid host also a v2 group for its pressure figures), made by the judge process
    and entered by each candidate before it drops its privileges: ``memory_mb`` bounds the memory
    of the candidate's whole process tree together, the ``cpu`` group gives the slot one CPU of
    its own (a share among the slots, and a quota of one CPU), the CPU time of the whole tree is
    read from ``cpuacct``, and the time the tree was runnable but got no CPU from ``cpu.pressure``.
    The files are opened once, before Landlock.

    Every move of a process between cgroups costs the kernel time (a fraction of a millisecond,
    at times several), so each candidate moves only into the group that counts memory, which
    must hold the candidate alone. The worker itself joins the CPU-side groups once,
    and its candidates are born in them: their CPU time and pressure include the worker's watch
    loop, which sleeps while they run."""

    def __init__(self, paths: dict[str, str]):
        self.paths = paths
        own = {p for k, p in paths.items() if k in ("memory", "v2")}
        for p in self._dirs():
            if p not in own:
                Path(p, "cgroup.procs").write_text("0")
        self.procs_fds = [
            os.open(os.path.join(p, "cgroup.procs"), os.O_WRONLY | os.O_CLOEXEC) for p in self._dirs() if p in own
        ]
        v2 = "v2" in paths
        mem = paths.get("v2") or paths["memory"]
        self.oom_fd = os.open(os.path.join(mem, "memory.events" if v2 else "memory.oom_control"), os.O_RDONLY | os.O_CLOEXEC)
        self.cpu_fd = _open_if(paths.get("v2") or paths.get("cpuacct"), "cpu.stat" if v2 else "cpuacct.usage")
        self.stall_fd = _open_if(paths.get("v2") or paths.get("psi"), "cpu.pressure")
        self.v2 = v2

    def _dirs(self) -> list[str]:
        return list(dict.fromkeys(self.paths.values()))

    def enter(self) -> None:
        """Called in the candidate (still root): it and all it starts belong to the account (to
        its CPU-side groups already, as a child of the worker)."""
        for fd in self.procs_fds:
            os.write(fd, b"0")

    def oom_kills(self) -> int:
        text = os.pread(self.oom_fd, 4096, 0).decode()
        for line in text.splitlines():
            k, _, v = line.partition(" ")
            if k == "oom_kill":
                return int(v)
        return 0

    def cpu_s(self) -> float | None:
        if self.cpu_fd < 0:
            return None
        text = os.pread(self.cpu_fd, 4096, 0).decode()
        if not self.v2:
            return int(text.strip()) / 1e9
        for line in text.splitlines():
            k, _, v = line.partition(" ")
            if k == "usage_usec":
                return int(v) / 1e6
        return None

    def stall_s(self) -> float | None:
        """Seconds in which every runnable process of the tree waited for a CPU (the ``full``
        line of the group's ``cpu.pressure``); None where the host keeps no such figure."""
        if self.stall_fd < 0:
            return None
        for line in os.pread(self.stall_fd, 4096, 0).decode().splitlines():
            if line.startswith("full "):
                return int(line.rpartition("total=")[2]) / 1e6
        return None


def _open_if(folder: str | None, name: str) -> int:
    """``folder/name`` open for reading, or -1 where there is no such folder or file."""
    if not folder:
        return -1
    try:
        return os.open(os.path.join(folder, name), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return -1


def task_wait_s(pid: int) -> float | None:
    """Seconds process ``pid`` (its main thread) was runnable but waited for a CPU: the run-queue
    delay the scheduler keeps in ``/proc/PID/schedstat``."""
    try:
        with open(f"/proc/{pid}/schedstat", "rb") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None


def _own_cgroup(controller: str) -> str | None:
    """The folder of this process's cgroup for ``controller`` ('' for v2), if mounted here."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    mine = None
    for line in lines:
        _, ctrls, path = line.split(":", 2)
        if (controller == "" and ctrls == "" and line.startswith("0::")) or controller in ctrls.split(","):
            mine = path
            break
    if mine is None:
        return None
    for m in mounts:
        left, _, right = m.partition(" - ")
        fields, rfields = left.split(), right.split()
        fstype, opts = rfields[0], rfields[-1].split(",")
        root, point = fields[3], fields[4]
        if (controller == "" and fstype == "cgroup2") or (fstype == "cgroup" and controller in opts):
            rel = mine[len(root):] if root != "/" and mine.startswith(root) else mine
            folder = os.path.join(point, rel.lstrip("/"))
            if os.path.isdir(folder):
                return folder
    return None


def make_tree_cgroups(name: str, memory_mb: int, cpus: float = 1.0) -> dict[str, str] | None:
    """Make the cgroup folders of one slot (``name``) with the memory limit, the CPU share and a
    quota of ``cpus`` CPUs (0: none) set; None where the host does not let this process make them (then the tree's memory is
    bounded by the process limit times the address-space limit instead, and its CPU by nothing
    but the scheduler's fairness between processes)."""
    if os.geteuid() != 0:
        return None
    limit = str(memory_mb << 20)
    mem = _own_cgroup("memory")
    if mem is not None:
        try:
            paths = {"memory": os.path.join(mem, name)}
            os.makedirs(paths["memory"], exist_ok=True)
            Path(paths["memory"], "memory.limit_in_bytes").write_text(limit)
            swap = Path(paths["memory"], "memory.memsw.limit_in_bytes")
            if swap.exists():
                with contextlib.suppress(OSError):
                    swap.write_text(limit)
            cpu = _own_cgroup("cpuacct")
            if cpu is not None:
                paths["cpuacct"] = os.path.join(cpu, name)
                os.makedirs(paths["cpuacct"], exist_ok=True)
            paths.update(_v1_cpu_share(name, cpus))
            return paths
        except OSError:
            remove_tree_cgroups(paths)
            return None
    v2 = _own_cgroup("")
    if v2 is not None and "memory" in Path(v2, "cgroup.subtree_control").read_text().split():
        try:
            path = os.path.join(v2, name)
            os.makedirs(path, exist_ok=True)
            Path(path, "memory.max").write_text(limit)
            with contextlib.suppress(OSError):
                Path(path, "memory.swap.max").write_text("0")
            if cpus > 0 and "cpu" in Path(path, "cgroup.controllers").read_text().split():
                Path(path, "cpu.max").write_text(f"{_quota_us(cpus)} {SLOT_CPU_PERIOD_US}")
            return {"v2": path}
        except OSError:
            remove_tree_cgroups({"v2": path})
            return None
    return None


SLOT_CPU_PERIOD_US = 100_000


def _quota_us(cpus: float) -> int:
    return max(1000, round(cpus * SLOT_CPU_PERIOD_US))


def _v1_cpu_share(name: str, cpus: float) -> dict[str, str]:
    """A v1 ``cpu`` group of the slot: the default share (so N slots split a busy machine N
    ways however many processes each runs) and a quota of ``cpus`` CPUs; and, on a hybrid host,
    a v2 group of the slot that keeps its pressure figures. Either is left out where it cannot
    be made."""
    out = {}
    cpu = _own_cgroup("cpu")
    if cpu is not None:
        path = os.path.join(cpu, name)
        made = not os.path.exists(path)  # else it is the cpuacct group, mounted together with cpu
        try:
            os.makedirs(path, exist_ok=True)
            Path(path, "cpu.shares").write_text("1024")
            Path(path, "cpu.cfs_period_us").write_text(str(SLOT_CPU_PERIOD_US))
            Path(path, "cpu.cfs_quota_us").write_text(str(_quota_us(cpus)) if cpus > 0 else "-1")
            out["cpu"] = path
        except OSError:
            if made:
                remove_tree_cgroups({"cpu": path})
    unified = _own_cgroup("")
    if unified is not None:
        path = os.path.join(unified, name)
        try:
            os.makedirs(path, exist_ok=True)
            if not os.path.exists(os.path.join(path, "cpu.pressure")):
                raise OSError("no pressure figures")
            out["psi"] = path
        except OSError:
            remove_tree_cgroups({"psi": path})
    return out


def remove_tree_cgroups(paths: dict[str, str] | None) -> None:
    """Remove a slot's cgroups; a process still leaving it (a check child that dies with its
    worker) makes rmdir fail for a moment, so it is tried for up to half a second."""
    for p in set((paths or {}).values()):
        for _ in range(50):
            try:
                os.rmdir(p)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.01)


def sweep_stale(tmp: str, cgroup_prefix: str = "mcoder-judge-") -> list[str]:
    """Remove what judges killed before they could clean up left behind: scratch folders
    ``mcoder-judge-*`` in ``tmp`` whose owner pid (in an ``owner`` file) is dead, and their empty
    cgroups. Returns the folders removed."""
    import shutil

    from mcoder.outputs import pid_alive  # here, not at the top: the workers import this module

    removed = []
    try:
        entries = os.listdir(tmp)
    except OSError:
        return removed
    for entry in entries:
        if not entry.startswith("mcoder-judge-") or entry == "mcoder-judge-uids":
            continue
        folder = os.path.join(tmp, entry)
        try:
            owner = int(Path(folder, "owner").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # not ours to judge (a judge still starting, or another tool's)
        if pid_alive(owner):
            continue
        _unmount_below(folder)
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    for ctrl in ("memory", "cpuacct", "cpu", ""):
        base = _own_cgroup(ctrl)
        if base is None:
            continue
        with contextlib.suppress(OSError):
            for entry in os.listdir(base):
                if entry.startswith(cgroup_prefix):
                    m = entry[len(cgroup_prefix):].split("-")[0]
                    if m.isdigit() and not pid_alive(int(m)):
                        with contextlib.suppress(OSError):
                            os.rmdir(os.path.join(base, entry))
    return removed


def _unmount_below(folder: str) -> None:
    """Worker tmpfs mounts live in the workers' own mount namespaces, so nothing is mounted in
    ours; this only guards against a folder mounted by hand."""
    return
