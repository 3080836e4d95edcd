"""seccomp: the system calls a candidate may make."""

from __future__ import annotations

import ctypes
import os

from mcoder.errors import EnvironmentMissing
from mcoder.judge.sandbox.kernel import PR_SET_NO_NEW_PRIVS, _libc, _oserror

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
