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

The parts, by concern: ``kernel`` (the C library and namespace flags they share), ``landlock``
(file access), ``files`` (which folders a worker and a candidate may read), ``mounts`` (a private
mount namespace, a tmpfs per worker), ``process`` (user ids and namespaces, capabilities, a PID
and IPC namespace per candidate, killing and reaping), ``seccomp`` (system calls), ``cgroups``
(memory and CPU per slot, stale cleanup). This module re-exports their names (``sandbox.X``) and
holds the check that the machine offers what they need. Which libraries a program may import is
not isolation: ``mcoder.judge.libraries``.
"""

from __future__ import annotations

import os
import sys

from mcoder.errors import EnvironmentMissing
from mcoder.judge.libraries import (  # the profiles' old place: tests and callers name them sandbox.X
    AUTO_PROFILES,
    PLATFORM_LIBRARIES,
    WORKER_ENV,
    WORKER_FLAGS,
    installed_for_workers,
    platform_packages,
    profile_for,
    profiles_of,
)
from mcoder.judge.sandbox.cgroups import (
    SLOT_CPU_PERIOD_US,
    TreeAccount,
    make_tree_cgroups,
    remove_tree_cgroups,
    sweep_stale,
    task_wait_s,
)
from mcoder.judge.sandbox.files import (
    DEVICES,
    LIBRARY_FOLDERS,
    SYSTEM_ROOTS,
    candidate_import_path,
    candidate_roots,
    package_roots,
    readable_roots,
    stdlib_dirs,
    stdlib_roots,
    system_roots,
)
from mcoder.judge.sandbox.kernel import (
    CLONE_NEWIPC,
    CLONE_NEWNET,
    CLONE_NEWNS,
    CLONE_NEWPID,
    CLONE_NEWUSER,
    _libc,
    unshare,
)
from mcoder.judge.sandbox.landlock import landlock_abi, landlock_enforce, landlock_restrict, landlock_ruleset
from mcoder.judge.sandbox.mounts import disk_quota, expose, private_mounts
from mcoder.judge.sandbox.process import (
    UidLease,
    become_subreaper,
    close_fds_from,
    die_with_parent,
    drop_capabilities,
    drop_to,
    enter_user_namespace,
    fork_into_namespaces,
    has_children,
    kill_children,
    kill_uid,
    reap_all,
    user_namespaces_work,
)
from mcoder.judge.sandbox.seccomp import _ARCH, _DENIED, seccomp_enforce, seccomp_fprog, seccomp_program

__all__ = [
    "AUTO_PROFILES",
    "CLONE_NEWIPC",
    "CLONE_NEWNET",
    "CLONE_NEWNS",
    "CLONE_NEWPID",
    "CLONE_NEWUSER",
    "DEVICES",
    "LIBRARY_FOLDERS",
    "PLATFORM_LIBRARIES",
    "SLOT_CPU_PERIOD_US",
    "SYSTEM_ROOTS",
    "WORKER_ENV",
    "WORKER_FLAGS",
    "_DENIED",
    "TreeAccount",
    "UidLease",
    "become_subreaper",
    "candidate_import_path",
    "candidate_roots",
    "check_isolation",
    "close_fds_from",
    "die_with_parent",
    "disk_quota",
    "drop_capabilities",
    "drop_to",
    "enter_user_namespace",
    "expose",
    "fork_into_namespaces",
    "has_children",
    "installed_for_workers",
    "isolation_mode",
    "kill_children",
    "kill_uid",
    "landlock_abi",
    "landlock_enforce",
    "landlock_restrict",
    "landlock_ruleset",
    "make_tree_cgroups",
    "package_roots",
    "platform_packages",
    "private_mounts",
    "profile_for",
    "profiles_of",
    "readable_roots",
    "reap_all",
    "remove_tree_cgroups",
    "seccomp_enforce",
    "seccomp_fprog",
    "seccomp_program",
    "stdlib_dirs",
    "stdlib_roots",
    "sweep_stale",
    "system_roots",
    "task_wait_s",
    "unshare",
    "user_namespaces_work",
]  # fmt: skip


# ---------------------------------------------------------------- what the machine offers
# Here, not in a part: check_isolation and its probe call landlock_abi, user_namespaces_work and
# fork_into_namespaces through this module's names, so a test that replaces ``sandbox.X`` (a
# kernel without Landlock) reaches them.


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
