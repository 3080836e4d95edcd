"""What runs inside a candidate process, after the worker forked it: enter the limits, run the
program, report on fd 3.

A stdin test runs the program as a fresh ``__main__`` module, with standard input from the test,
in a fork of the warm worker (so every import the worker made is already there): the tests of a
rollout one after another in one process (``serve_stdin``), which puts back what a run changed in
the interpreter and is replaced after a failure or anything it cannot put back, or with
``process_per_test`` each in a process of its own (``run_stdin``). Call and functional tests load
the program once, with the names LeetCode provides in scope, then answer calls one after another
in that one process.

A stdin test reports whether the program ended by an exception (a JSON line on fd 3, or a
numbered frame on fd 4 from a server); its output is what the judge compares. Call and functional tests are served (``serve_calls``): a
request comes as plain data on fd 3, the return value goes back as plain data on fd 4, and the
side that asked compares it; no report of the candidate's own is ever taken as a pass.
"""

from __future__ import annotations

import _thread
import builtins
import dis
import fcntl
import functools
import gc
import importlib.machinery
import io
import json
import os
import resource
import select
import signal
import sys
import threading
import time
import traceback
import types

from mcoder.judge import sandbox
from mcoder.judge.framing import read_frame, write_frame

REPORT_FD = 3
# The whole environment of a candidate (with HOME and TMPDIR, its folder): nothing of the judge's;
# the workers' own PATH, LANG and hash seed (for a Python the program starts), in this order.
# One BLAS/OpenMP thread: a pool per core would run into the process limit on a big machine.
CANDIDATE_ENV = {
    "PATH": sandbox.WORKER_ENV["PATH"],
    "LANG": sandbox.WORKER_ENV["LANG"],
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "PYTHONHASHSEED": sandbox.WORKER_ENV["PYTHONHASHSEED"],
}
EXIT_MEMORY = 86  # the process ran out of memory before it could report
STDERR_TAIL = 2000  # characters of a test's stderr the worker keeps (its end)
# The detail of a test stopped, or never started, because its rollout's wall budget was spent
# (``JudgeConfig.rollout_wall_s``, or what is left of a request's): set by the worker and the
# judge only, and read with the status time_limit (a program's own exception is runtime_error).
BUDGET_DETAIL = "the rollout's wall-time budget ran out"

# Names LeetCode's Python environment has in scope, and its node classes.
LEETCODE_PRELUDE = """\
import bisect, collections, copy, functools, heapq, itertools, math, operator, random, re, string, sys
from typing import *
from collections import *
from heapq import *
from bisect import *
from itertools import *
from functools import *
from math import *
from string import *
from operator import *
from builtins import *  # math.pow and operator's names must not hide the builtins

class ListNode:
    def __init__(self, val=0, next=None):
        self.val = val
        self.next = next

class TreeNode:
    def __init__(self, val=0, left=None, right=None):
        self.val = val
        self.left = left
        self.right = right
"""


def prepare_worker(import_path: list[str] | None, other_paths: list[list[str]] = ()) -> None:
    """Once, in the worker, what every candidate it forks would otherwise set up again (each
    page a candidate writes is a copy of the worker's): the candidate's environment, and where
    it is given, its import path, with the finders of those folders made and their listings
    read, and the interpreter itself as ``sys.executable`` (not the judge's virtual
    environment, whose pyvenv.cfg it cannot read); default signal handling; its standard
    streams. Call after the worker's last import."""
    os.environ.clear()
    os.environ.update(CANDIDATE_ENV)
    # signal dispositions as a fresh program has them (the worker may have inherited ignored ones)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for sig in (signal.SIGTERM, signal.SIGCHLD, signal.SIGXCPU):
        signal.signal(sig, signal.SIG_DFL)
    if import_path is not None:  # only where it may read: the judge's own folders are gone
        sys.path_importer_cache.clear()
        for path in [*other_paths, import_path]:  # each library profile's (a job names its own)
            sys.path[:] = path
            importlib.machinery.PathFinder.find_spec("_mcoder_no_such_module")  # fills the finders' caches
        sys.executable = sys._base_executable = os.path.realpath(sys.executable)
    _STREAMS[:] = _streams_as_a_candidate_has_them()
    _FD_PROBE[:] = _fd_probe()


_STREAMS: list = []  # made by prepare_worker, never used in the worker; each candidate takes them


def _streams_as_a_candidate_has_them() -> list:
    """Standard streams made with fds 0-2 as a candidate has them (stdin a memfd, stdout and
    stderr pipes), so that what each stream learns of its fd while it is made (seekable or
    not) is what it would learn in the candidate."""
    saved = [os.dup(fd) for fd in (0, 1, 2)]
    memfd, (r, w) = os.memfd_create("stdin", 0), os.pipe()
    try:
        os.dup2(memfd, 0)
        os.dup2(w, 1)
        os.dup2(w, 2)
        return _new_streams()
    finally:
        for fd, copy in zip((0, 1, 2), saved):
            os.dup2(copy, fd)
            os.close(copy)
        for fd in (memfd, r, w):
            os.close(fd)


def rlimits(spec: dict) -> list[tuple[int, int]]:
    """The candidate's resource limits, worked out in the worker (each within the worker's own
    hard limit, which the candidate inherits)."""
    mem = spec["memory_mb"] << 20
    wanted = [
        (resource.RLIMIT_AS, mem),
        (resource.RLIMIT_STACK, min(mem // 2, 512 << 20)),  # deep recursion in main
        (resource.RLIMIT_CPU, spec["cpu_s"]),
        (resource.RLIMIT_FSIZE, spec["max_disk_mb"] << 20),
        (resource.RLIMIT_NOFILE, _FD_CEILING),
        (resource.RLIMIT_CORE, 0),
    ]
    if spec["uid"] is not None:  # root mode: the slot's unused user id
        wanted.append((resource.RLIMIT_NPROC, spec["max_processes"]))
    elif spec["rootless"]:  # our own id, in the worker's user namespace (counted there alone)
        wanted.append((resource.RLIMIT_NPROC, spec["max_processes"] + 1))  # + the worker
    out = []
    for res, value in wanted:
        hard = resource.getrlimit(res)[1]
        out.append((res, value if hard == resource.RLIM_INFINITY else min(value, hard)))
    return out


def enter(spec: dict, stdin_fd: int, out_w: int, err_w: int, fds3: list[int]) -> None:
    """In the forked child: own session, only the test's fds, its tree's cgroup, limits, the
    candidate's user id, Landlock's candidate layer and the seccomp filter. Everything that is
    the same for every candidate was done once in the worker (``prepare_worker``, ``rlimits``)."""
    os.setsid()
    if spec.get("account") is not None:
        spec["account"].enter()  # first: its files (opened before Landlock) are low fds
    if spec.get("ruleset", -1) >= 0:
        sandbox.landlock_enforce(spec["ruleset"])
    wanted = [stdin_fd, out_w, err_w, *fds3]
    # move the fds out of the way first, so that no dup2 overwrites one still to be placed
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 1000) for fd in wanted]
    for target, fd in enumerate(high):
        os.dup2(fd, target)
    sandbox.close_fds_from(len(wanted))
    for res, value in spec["rlimits"]:
        resource.setrlimit(res, (value, value))
    if spec["uid"] is not None:  # root mode: the slot's unused user id
        sandbox.drop_to(spec["uid"])
    elif spec["rootless"]:
        sandbox.drop_capabilities()
    if spec.get("seccomp") is not None:
        sandbox.seccomp_enforce(spec["seccomp"])
    sandbox.die_with_parent()  # after drop_to, which clears it: a dead worker takes its candidate along
    if spec.get("import_path") is not None:  # the job's library profile (the worker's default is one)
        sys.path[:] = spec["import_path"]
    os.chdir(spec["dir"])
    os.environ["HOME"] = spec["dir"]
    os.environ["TMPDIR"] = spec["dir"]
    _fresh_streams()
    sys.argv = ["main.py"]
    if os.getpid() == 1:  # the first process of its own PID namespace (not without the sandbox)
        _own_signals_end_it()


# Signals whose default action ends a process (all but those that are ignored or stop it).
_NOT_FATAL = {signal.SIGCHLD, signal.SIGURG, signal.SIGWINCH, signal.SIGCONT, signal.SIGSTOP, signal.SIGTSTP,
              signal.SIGTTIN, signal.SIGTTOU}
_REPORTS: list = [None]  # how this process reports a test's end (a stdin test's): report or _reply


def _own_signals_end_it() -> None:
    """The candidate is process 1 of its namespace, and the kernel spares a namespace's first
    process every signal sent from inside it that has no handler: ``os.kill(os.getpid(), SIGKILL)``
    (a way out that skips the interpreter's teardown) did nothing, and the program went on. The
    calls a program makes to signal itself end it here as the signal would anywhere else: the
    real call first (its errors, and the rest of a process group, as usual), then, for a signal
    with no handler whose default ends a process, an exit that says which signal (its unflushed
    output lost, as with the real signal). Signals from elsewhere (the judge's limits) are real."""
    real_kill, real_killpg = os.kill, os.killpg
    real_raise, real_pthread_kill = signal.raise_signal, signal.pthread_kill

    def kill(pid, sig, /):
        real_kill(pid, sig)
        if pid == 0 or pid == os.getpid():
            _end_by(sig)

    def killpg(pgid, sig, /):
        if pgid not in (0, os.getpgrp()):
            return real_killpg(pgid, sig)
        real_kill(0, sig)  # its own group is number 1 here, and killpg(1) means "every process"
        _end_by(sig)
        return None

    def raise_signal(sig, /):
        real_raise(sig)
        _end_by(sig)

    def pthread_kill(thread_id, sig, /):
        real_pthread_kill(thread_id, sig)  # a thread of this process: a fatal signal ends all of it
        _end_by(sig)

    os.kill, os.killpg, signal.raise_signal, signal.pthread_kill = kill, killpg, raise_signal, pthread_kill


def _end_by(sig) -> None:
    sig = int(sig)
    if sig == 0 or sig in _NOT_FATAL:
        return
    if sig != signal.SIGKILL and signal.getsignal(sig) != signal.SIG_DFL:
        return  # a handler (delivered by the real call) or ignored
    try:
        name = signal.Signals(sig).name
    except ValueError:
        name = f"signal {sig}"
    if _REPORTS[0] is not None:
        try:
            _REPORTS[0](ok=False, exc=f"killed by {name}", mem=False)
        except BaseException:  # noqa: BLE001, S110 - it ends all the same
            pass
    os._exit(128 + sig)


def _fresh_streams(new: bool = False) -> None:
    """Standard streams of the candidate's own on fds 0-2: those the worker made for it (never
    used there), else (or with ``new``: a test after the first in one process) new ones."""
    sys.stdin, sys.stdout, sys.stderr = _new_streams() if new or not _STREAMS else _STREAMS
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr


def _new_streams() -> list:
    stdin = io.TextIOWrapper(
        io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding="utf-8", errors="surrogateescape"
    )
    stdout = io.TextIOWrapper(
        io.BufferedWriter(io.FileIO(1, "w", closefd=False), 1 << 16),
        encoding="utf-8",
        errors="backslashreplace",
    )
    stderr = io.TextIOWrapper(
        io.BufferedWriter(io.FileIO(2, "w", closefd=False)),
        encoding="utf-8",
        errors="backslashreplace",
        line_buffering=True,
    )
    return [stdin, stdout, stderr]


_OK_LINE = b'{"ok": true}\n'


def report(**fields) -> None:
    line = _OK_LINE if fields == {"ok": True} else (json.dumps(fields) + "\n").encode()
    view = memoryview(line)
    while view:
        view = view[os.write(REPORT_FD, view) :]


def _describe(exc: BaseException) -> dict:
    _print_exception(exc)
    return {"ok": False, "exc": type(exc).__name__, "mem": isinstance(exc, MemoryError)}


class _ThreadErrors:
    """Exceptions raised in the candidate's threads: a crash there is a crash of the program."""

    def __init__(self) -> None:
        self.first: BaseException | None = None
        threading.excepthook = self._hook

    def _hook(self, args) -> None:
        if args.exc_type is SystemExit:
            return
        if self.first is None:
            self.first = args.exc_value
        _print_exception(args.exc_value)


def _print_exception(exc: BaseException) -> None:
    """The traceback as the program would show it alone: the harness's own frames left out."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    traceback.print_exception(type(exc), exc, tb)


def _join_threads() -> None:
    """Wait for the program's own threads, as the interpreter does before it exits."""
    main = threading.main_thread()
    for t in threading.enumerate():
        if t is not main and not t.daemon:
            t.join()


def _flush() -> None:
    for stream in {id(s): s for s in (sys.stdout, sys.__stdout__, sys.stderr)}.values():
        try:
            stream.flush()
        except Exception:  # noqa: BLE001, S110 - a stream the program broke must not stop the report
            pass


def run_stdin(code) -> None:
    """Run ``code`` as ``__main__`` on this process's stdin; report once and exit."""
    _REPORTS[0] = report
    try:
        status = _run_main(code, _ThreadErrors(), {})
        _flush()
        report(**status)
    except MemoryError:
        os._exit(EXIT_MEMORY)
    os._exit(0)


def _run_main(code, errors: _ThreadErrors, ns: dict) -> dict:
    """Run ``code`` once as ``__main__`` in ``ns`` and wait for its threads, as the interpreter
    runs a script: how it ended, as a report's fields."""
    ns.update({"__name__": "__main__", "__file__": "main.py", "__builtins__": __builtins__})
    status: dict = {"ok": True}
    try:
        exec(code, ns)  # noqa: S102 - the candidate, inside the sandbox: the judge's job
        _join_threads()
    except SystemExit as e:
        if e.code not in (None, 0):
            if not isinstance(e.code, int):
                print(e.code, file=sys.stderr)
            status = {"ok": False, "exc": "SystemExit", "mem": False, "exit": str(e.code)[:100]}
    except BaseException as e:  # noqa: BLE001 - the candidate's failure, whatever it is
        status = _describe(e)
    if status["ok"] and errors.first is not None:
        status = _describe(errors.first)
    return status


def serve_stdin(code) -> None:
    """The stdin tests of one rollout in this one process, one after another, each as if the
    program ran alone: a request on fd 3 is the test's input, which becomes a fresh standard
    input (fd 0, a memfd); the program runs as a fresh ``__main__`` with fresh standard streams
    and freshly seeded random generators, and its threads are joined; then what a run can leave
    in the interpreter is put back as the process had it before its first test (``_Fresh``),
    and the report goes out on fd 4 as one frame of JSON, with ``"keep"``: whether this process
    may serve the next test. It may not after a failure, or when something of the run cannot be
    put back (a thread or a child process still running, a file left open, a lowered limit):
    the worker then forks a fresh process for the next test. Its output is what the judge
    compares; the report says only how the run ended, as ``run_stdin``'s line does."""
    _REPORTS[0] = _reply
    errors = _ThreadErrors()
    fresh = _Fresh(code)
    try:
        while True:
            data = read_frame(CALL_IN, 1 << 31)
            if data is None:
                break
            _SERVED[0] += 1
            _stdin_from(data)
            _fresh_streams(new=True)
            _reseed()
            errors.first = None
            ns: dict = {}
            status = _run_main(code, errors, ns)
            _flush()
            ns.clear()  # its functions hold ns as their globals: a cycle, cut here
            del ns
            status["keep"] = status["ok"] and fresh.put_back()
            _reply(**status)
    except MemoryError:
        os._exit(EXIT_MEMORY)
    os._exit(0)


_SERVED = [0]  # the tests this stdin server has begun


def _reply(**fields) -> None:
    """A stdin server's report: one frame with the number of the test it ends (from 1), which
    the worker checks (a frame the program wrote itself is then taken for no other test)."""
    write_frame(CALL_OUT, json.dumps({**fields, "test": _SERVED[0]}).encode())


def _stdin_from(data: bytes) -> None:
    """``data`` as this process's fd 0, a fresh memfd read from its start (as the worker gives
    a test's input to a process of its own)."""
    fd = os.memfd_create("stdin", 0)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
        if fd != 0:  # (0 itself where the last test's program closed its stdin, open(0) does)
            os.dup2(fd, 0)
    finally:
        if fd != 0:
            os.close(fd)


def _reseed() -> None:
    """The random generators as a freshly forked process has them (``random`` reseeds itself at
    fork, and the worker has numpy do the same)."""
    for name in ("random", "numpy.random"):
        module = sys.modules.get(name)
        if module is not None:
            try:
                module.seed()
            except Exception:  # noqa: BLE001, S110 - a module the program replaced: its run goes on
                pass


_RLIMITS = (resource.RLIMIT_AS, resource.RLIMIT_STACK, resource.RLIMIT_CPU, resource.RLIMIT_FSIZE,
            resource.RLIMIT_NOFILE, resource.RLIMIT_NPROC, resource.RLIMIT_CORE)  # fmt: skip
_TIMERS = (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF)
_FIRST_FREE_FD = 5  # 0-2, and the request and reply pipes


class _Fresh:
    """The interpreter's state that a program's run can change and a fresh process would not
    carry into the next test, read before the first test: ``put_back`` restores what can be
    restored (limits of recursion, integer digits, thread stacks and switching; the garbage
    collector's settings; trace and profile hooks; signal handlers and timers; builtins;
    environment, working folder, umask, import path, argv) and says False where something cannot
    be (a thread or child process still running, an fd beyond the standard ones and the two
    pipes, a lowered resource limit, a changed standard fd, a handler set from C, a module
    imported, a name added to or removed from any module, or a name of a module the program
    imports bound to another object). What a program changes inside an object that a module
    holds (a class's attribute, a container's contents) is not looked for: a program that keeps
    state there on purpose finds it in its next test (``process_per_test`` rules that out)."""

    def __init__(self, code) -> None:
        self.named = [m for name in sorted(imported_names(code)) if name not in ("sys", "builtins")
                      and hasattr(m := sys.modules.get(name), "__dict__")]  # fmt: skip
        self.modules = self._modules()
        self.settings = self._settings()
        self.hooks = (sys.excepthook, threading.excepthook)
        self.signals = {s: signal.getsignal(s) for s in signal.valid_signals()
                        if s not in (signal.SIGKILL, signal.SIGSTOP)}  # fmt: skip
        self.builtins = dict(vars(builtins))
        self.environ = dict(os.environ)
        self.cwd = os.getcwd()
        self.path = list(sys.path)
        self.limits = [resource.getrlimit(r) for r in _RLIMITS]
        self.fds = [_fd_id(fd) for fd in (1, 2, CALL_IN, CALL_OUT)]
        self.umask = os.umask(0o022)
        os.umask(self.umask)
        self.poll, self.closed = _FD_PROBE or _fd_probe()

    def _modules(self) -> tuple:
        """How many modules, how many names each holds, and what the named modules' names are."""
        sizes = [len(d) if isinstance(d := getattr(m, "__dict__", None), dict) else -1 for m in list(sys.modules.values())]
        return sizes, [[id(v) for v in vars(m).values()] for m in self.named]

    @staticmethod
    def _settings() -> tuple:
        return (sys.getrecursionlimit(), sys.get_int_max_str_digits(), sys.getswitchinterval(),
                threading.stack_size(), gc.get_threshold(), gc.isenabled(), sys.gettrace(), sys.getprofile())  # fmt: skip

    def put_back(self) -> bool:
        try:
            return self._put_back()
        except Exception:  # noqa: BLE001 - whatever stops the putting back: a fresh process instead
            return False

    def _put_back(self) -> bool:
        if [resource.getrlimit(r) for r in _RLIMITS] != self.limits:  # first: a lower fd limit fails poll
            return False
        if _thread._count() or _has_children() or self._open_fds() or self._modules() != self.modules:
            return False
        if [_fd_id(fd) for fd in (1, 2, CALL_IN, CALL_OUT)] != self.fds:
            return False
        if self._settings() != self.settings:
            recursion, digits, switch, stack, threshold, enabled, _, _ = self.settings
            sys.setrecursionlimit(recursion)
            sys.set_int_max_str_digits(digits)
            sys.setswitchinterval(switch)
            threading.stack_size(stack)
            gc.set_threshold(*threshold)
            (gc.enable if enabled else gc.disable)()
            sys.settrace(None)
            sys.setprofile(None)
            threading.settrace(None)
            threading.setprofile(None)
        sys.excepthook, threading.excepthook = self.hooks
        for timer in _TIMERS:
            if signal.getitimer(timer) != (0.0, 0.0):
                signal.setitimer(timer, 0)
        for sig, handler in self.signals.items():
            now = signal.getsignal(sig)
            if now is not handler:
                if now is None or handler is None:  # a handler from outside Python: not ours to reset
                    return False
                signal.signal(sig, handler)
        space = vars(builtins)
        if len(space) != len(self.builtins) or any(space.get(k) is not v for k, v in self.builtins.items()):
            space.clear()
            space.update(self.builtins)
        if os.environ != self.environ:
            os.environ.clear()
            os.environ.update(self.environ)
        if os.getcwd() != self.cwd:
            os.chdir(self.cwd)
        os.umask(self.umask)
        sys.path[:] = self.path
        sys.argv = ["main.py"]
        return True

    def _open_fds(self) -> bool:
        return self.poll.poll(0) != self.closed


_FD_CEILING = 256  # the candidate's RLIMIT_NOFILE (``rlimits``): no fd of its can be above it
_FD_PROBE: list = []  # made once in the worker (``prepare_worker``): each candidate has it forked


def _fd_probe() -> tuple:
    """A poll set of every fd a program could leave open, and what it reads when all are closed
    (POLLNVAL each, in order): one system call tells whether any is open."""
    probe = select.poll()
    for fd in range(_FIRST_FREE_FD, _FD_CEILING):
        probe.register(fd, 0)
    return probe, [(fd, select.POLLNVAL) for fd in range(_FIRST_FREE_FD, _FD_CEILING)]


def _fd_id(fd: int) -> tuple[int, int] | None:
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _has_children() -> bool:
    """Whether the program left a child process, running or ended and not waited for."""
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return False
    return True


@functools.cache
def prelude() -> dict:
    """LeetCode's names, made once per process (the worker, before it forks, and a checks
    process); each check starts from a copy, and each candidate from the worker's dict itself,
    which is its own copy once forked (``serve_calls``). The module is not ``__main__``: a
    program's own ``if __name__ == "__main__":`` demo must not run here."""
    ns = {"__name__": "solution", "__file__": "main.py", "__builtins__": __builtins__}
    exec(compile(LEETCODE_PRELUDE, "prelude.py", "exec"), ns)  # noqa: S102 - our own fixed prelude source
    return ns


def defined_names(code) -> set[str]:
    """Names the program itself binds in its module: ``def``, ``class``, assignment and import at
    top level, or ``global`` stores from inside a function; read from the bytecode, not the
    namespace, because the namespace also holds the LeetCode prelude's names."""
    names = _stored_names(code, _STORE_NAME)
    nested = [c for c in code.co_consts if isinstance(c, types.CodeType)]
    while nested:
        c = nested.pop()
        names.update(_stored_names(c, _STORE_GLOBAL))
        nested.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return names


_STORE_NAME, _STORE_GLOBAL, _EXTENDED_ARG = dis.opmap["STORE_NAME"], dis.opmap["STORE_GLOBAL"], dis.EXTENDED_ARG
_IMPORT_NAME = dis.opmap["IMPORT_NAME"]


def imported_names(code, limit: int = 10_000) -> set[str]:
    """The modules the program's ``import`` statements name (dotted, as written), at top level
    or inside its functions; read from the bytecode (at most ``limit`` code objects)."""
    names: set[str] = set()
    for c in _code_objects(code, limit):
        names.update(_stored_names(c, _IMPORT_NAME))
    return names


def _code_objects(code, most: int):
    """``code`` and the code objects nested in it (functions, classes, comprehensions), at most
    ``most`` of them."""
    todo = [code]
    while todo and most > 0:
        most -= 1
        c = todo.pop()
        yield c
        todo.extend(k for k in c.co_consts if isinstance(k, types.CodeType))


# Names a program reaches state through that a process serving several tests would carry from one
# test to the next and the server does not put back: its own CPU time (an anytime search that stops
# at 1.8 s of process time would stop sooner, the earlier tests' time spent), the decimal context,
# numpy's error and print settings, warning filters, the locale, the signal mask, audit hooks (which
# cannot be removed), import hooks, gc callbacks, tracemalloc. A program that names one of them gets
# a process per test; a name that is only a variable of the same name costs speed, not exactness.
OWN_PROCESS_NAMES = frozenset({
    "process_time", "process_time_ns", "thread_time", "thread_time_ns", "getrusage", "clock_gettime",
    "clock_gettime_ns", "times", "clock", "getcontext", "setcontext", "DefaultContext", "seterr", "seterrcall",
    "set_printoptions", "printoptions", "filterwarnings", "simplefilter", "setlocale", "pthread_sigmask",
    "addaudithook", "meta_path", "path_hooks", "callbacks", "tracemalloc",
})  # fmt: skip


def needs_own_process(code, most_objects: int = 10_000) -> bool:
    """Whether the program names one of ``OWN_PROCESS_NAMES`` anywhere (at most ``most_objects``
    code objects; past it, as if it did)."""
    for walked, c in enumerate(_code_objects(code, most_objects + 1), 1):
        if walked > most_objects or not OWN_PROCESS_NAMES.isdisjoint(c.co_names):
            return True
    return False


def _stored_names(code, store: int) -> set[str]:
    """The names the ``store`` instructions of ``code`` (not of code nested in it) bind: a scan of
    the raw bytecode, 2 bytes an instruction (inline caches read as CACHE, which takes no
    argument), ~50x faster than ``dis.get_instructions``, which builds an object per instruction."""
    raw, names, found, ext = code.co_code, code.co_names, set(), 0
    for i in range(0, len(raw), 2):
        op = raw[i]
        if op == _EXTENDED_ARG:
            ext = (ext | raw[i + 1]) << 8
            continue
        if op == store:
            found.add(names[ext | raw[i + 1]])
        ext = 0
    return found


def resolve(ns: dict, fn_name: str | None, defined: set[str]):
    """The function under test: LeetCode's ``Solution().fn_name``, else a plain function. Either
    must be the program's own: a prelude name such as ``operator.add`` never stands in for it
    (else ``print()`` alone would pass a problem whose function is called ``add``)."""
    sol = ns.get("Solution") if "Solution" in defined else None
    if fn_name and isinstance(sol, type) and hasattr(sol, fn_name):
        return getattr(sol(), fn_name)
    if fn_name and fn_name in defined and callable(ns.get(fn_name)):
        return ns[fn_name]
    raise NameError(f"the program defines no function {fn_name!r} (nor a Solution method of that name)")


CALL_IN, CALL_OUT = 3, 4  # the fds a call server reads requests from and writes replies to

# Every fd a candidate can write to and the judge reads back, per test kind: its standard output
# and error, the stdin harness's report line or (a process serving a rollout's stdin tests) its
# report frames, and the call channel's replies (the program can forge each of them). All of it enters the judge through
# ``untrusted.admit``; the fuzzing suite drives each one.
CHANNELS: dict[str, dict[str, int]] = {
    "stdin": {"stdout": 1, "stderr": 2, "report": REPORT_FD, "reply": CALL_OUT},  # a process per test; a server
    "call": {"stdout": 1, "stderr": 2, "reply": CALL_OUT},
    "functional": {"stdout": 1, "stderr": 2, "reply": CALL_OUT},
}


def serve_calls(code, prelude: dict, max_value_bytes: int, defined: set[str] | None = None) -> None:
    """The candidate's side of call and functional tests: load the program once, then answer
    requests ``("call", name, args, kwargs)`` from fd 3 with ``("ok", value)``, ``("error",
    exception name, out of memory)`` or ``("notplain", type name)`` on fd 4, all as plain data.
    Whoever asks (the worker for call tests, a check in another process for functional ones)
    decides what the value means; nothing this process writes can say "passed".

    The program runs in ``prelude`` itself: this process is a fork that serves one program, so
    the worker's dict is already its private copy (a copy made here would write to the page of
    every name in it, and each such page is a copy of the worker's)."""
    from mcoder.judge import plain

    errors = _ThreadErrors()
    try:
        try:
            ns = prelude
            exec(code, ns)  # noqa: S102 - the candidate, inside the sandbox: the judge's job
            if defined is None:  # (the judge reads them from the bytecode before it sends the job)
                defined = defined_names(code)
            load_error = None
        except BaseException as e:  # noqa: BLE001 - the candidate failed to load: each call says so
            load_error = _describe(e)
        _flush()
        while True:
            frame = read_frame(CALL_IN, 1 << 30)
            if frame is None:
                break
            t0 = time.perf_counter()
            try:
                _, name, args, kwargs = plain.decode(frame)
                if load_error is not None:
                    reply = ("error", load_error["exc"], load_error["mem"])
                else:
                    value = resolve(ns, name, defined)(*args, **kwargs)
                    if errors.first is not None:
                        raise errors.first
                    try:
                        data = plain.encode(("ok", value), lenient=True)
                    except plain.NotPlain:
                        data = plain.encode(("notplain", type(value).__name__[:100]))
                    if len(data) > max_value_bytes:
                        raise _OutputLimit
                    reply = None
            except _OutputLimit:
                reply = ("error", "OutputLimit", False)
            except BaseException as e:  # noqa: BLE001 - the candidate's failure, whatever it is
                d = _describe(e)
                reply = ("error", d["exc"], d["mem"])
            del t0
            _flush()
            write_frame(CALL_OUT, data if reply is None else plain.encode(reply))
    except MemoryError:
        os._exit(EXIT_MEMORY)
    os._exit(0)


class _OutputLimit(Exception):
    pass
