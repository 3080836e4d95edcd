"""Landlock: the files a worker, and each candidate below it, may read and write."""

from __future__ import annotations

import ctypes
import os

from mcoder.judge.sandbox.kernel import PR_SET_NO_NEW_PRIVS, _libc, _oserror

# Landlock (include/uapi/linux/landlock.h); x86_64 and aarch64 share the syscall numbers.
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
FS_WRITE_TREE = sum(1 << i for i in range(4, 13))  # remove/make dir, file, socket, fifo, device, symlink
FS_REFER, FS_TRUNCATE = 1 << 13, 1 << 14
_FILE_ONLY = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE


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
