"""A warm worker: the fork server that runs candidates (or checks) for the judge, one at a time.

Started once per pool slot as ``python -I -c BOOT SETUP``, in one of two roles:

- ``candidates``: runs programs. For each run of tests (a rollout's stdin tests, its call tests,
  its functional tests; a stdin test that failed or left something behind starts a new run, and
  ``process_per_test`` makes each stdin test one) it forks a child that is process 1 of a fresh
  PID and IPC namespace, joins the slot's cgroup,
  takes resource limits, drops to the slot's user id, fences its files with Landlock and its
  system calls with seccomp, and runs the program (``harness``). It watches the child's CPU time
  (its whole tree's, where a cgroup counts it) against the limit, with a wall-clock backstop,
  and its output against the cap, and sends the raw outcome back. It never compares outputs and
  never sees a functional check's source: expected answers never enter a process that
  candidates are forked from.
- ``checks``: runs the trusted side of functional tests (``checker``), forked the same way under
  a second user id. A check reaches the candidate's function through two pipes that the judge
  hands to both workers, carrying plain data only (``plain``).

Frames on the judge's pipes are a 4-byte length and a pickle; only the judge writes to this
process's stdin, and a candidate's own bytes come back as plain strings. File descriptors for
a functional job come over a Unix socket pair (fd 3) that only the judge holds the other end of.
"""

from __future__ import annotations

import gc
import json
import marshal
import math
import os
import pickle
import resource
import select
import signal
import socket
import stat
import sys
import time

from mcoder.judge import framing, harness, sandbox

# Imported once here so that every forked candidate finds them loaded.
PREIMPORTS = [
    "array",
    "bisect",
    "collections",
    "copy",
    "dataclasses",
    "datetime",
    "decimal",
    "fractions",
    "functools",
    "heapq",
    "io",
    "itertools",
    "json",
    "math",
    "operator",
    "random",
    "re",
    "statistics",
    "string",
    "threading",
    "typing",
]

EXIT_SETUP = 71  # the child could not enter the sandbox (a fault of the judge or the host)
STDERR_TAIL = harness.STDERR_TAIL
STDOUT_SHOWN = 2000  # of a failed test's output, sent back for first_failure
_CLK_TCK = os.sysconf("SC_CLK_TCK")


class Protocol:
    """Framed pickles with the judge over stdin/stdout (``framing``)."""

    def __init__(self, rfd: int, wfd: int):
        self.rfd, self.wfd = rfd, wfd

    def recv(self):
        data = framing.read_frame(self.rfd)
        return None if data is None else pickle.loads(data)

    def send(self, obj) -> None:
        view = memoryview(framing.dumps(obj))
        while view:
            view = view[os.write(self.wfd, view) :]


STALL_CEILING = 4.0  # the backstop waits out CPU starvation up to this multiple of itself


class Clock:
    """A test's time: CPU seconds of the candidate's whole tree (the slot's cgroup where there is
    one, else the process and the children it reaped) against ``limit_s``, checked while it runs
    and again when it exits or replies; and wall seconds against ``limit_s * wall_factor`` as a
    backstop for a program that sleeps or blocks. A busy machine slows the wall clock, not the
    CPU clock: the time the program was runnable but got no CPU (its tree's CPU pressure where
    the slot has a cgroup for it, else its run-queue wait), less the time it was neither running
    nor waiting, is not counted against the backstop, up to ``STALL_CEILING`` times the backstop,
    so load does not turn a pass into a time limit, and a sleeper gets nothing back."""

    def __init__(self, pid: int, limit_s: float, deadline: float | None = None):
        """``deadline``: the monotonic time at which the rollout's wall budget is spent (None:
        no budget); no wait, and no credit for CPU starvation, goes past it."""
        self.pid, self.limit, self.deadline = pid, limit_s, math.inf if deadline is None else deadline
        self.restart(limit_s)

    def restart(self, limit_s: float) -> None:
        self.limit = limit_s
        now = time.monotonic()
        self.first_look = now + limit_s  # no CPU limit can be reached before this
        self.backstop = limit_s * SETUP.get("wall_factor", 3.0)
        self.wall_start = now
        self.wall_end = min(now + self.backstop, self.deadline)
        self.cpu0 = self._cpu()
        self.stall0 = self._stall()

    def _cpu(self) -> float:
        account = SETUP.get("account_obj")
        if account is not None:
            value = account.cpu_s()
            if value is not None:
                return value
        try:
            with open(f"/proc/{self.pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            return sum(int(x) for x in fields[11:15]) / _CLK_TCK  # utime stime cutime cstime
        except (OSError, IndexError, ValueError):
            return 0.0

    def _stall(self) -> float:
        account = SETUP.get("account_obj")
        value = account.stall_s() if account is not None else None
        if value is None:
            value = sandbox.task_wait_s(self.pid)
        return value or 0.0

    def used(self) -> float:
        return self._cpu() - self.cpu0

    def over_at_exit(self, ended_cpu_s: float | None) -> bool:
        """Whether the tree spent more CPU than the limit, read once it has ended (or replied):
        a tree of busy processes can do that in less wall time than the limit. ``ended_cpu_s``
        is the ended process's own account (it and the children it waited for), used where no
        cgroup counts (its /proc entry is gone, and its pid may already be another's)."""
        account = SETUP.get("account_obj")
        if (account is not None and account.cpu_s() is not None) or ended_cpu_s is None:
            return self.used() >= self.limit
        return ended_cpu_s - self.cpu0 >= self.limit

    def _backstop_due(self, now: float) -> bool:
        """Whether the wall clock is past the backstop once the time spent waiting for a CPU is
        taken off (read only when the plain wall clock is past it: no cost before).

        The credit is the tree's waiting less the time it neither ran nor waited (asleep or
        blocked): a program that was runnable all along gets all its waiting back, one that slept
        gets none, and one that wakes often to wait a little each time gets what it waited beyond
        what it slept. A program cannot wait without asking for a CPU, and with its priority,
        policy and CPUs fixed (seccomp) the scheduler hands a program that asks its fair share,
        which its CPU limit counts: waiting is bought with CPU time, at the price load sets."""
        if now < self.wall_end:
            return False
        if now >= self.deadline:
            return True
        ceiling = min(self.wall_start + self.backstop * STALL_CEILING, self.deadline)
        stalled = max(0.0, self._stall() - self.stall0)
        idle = max(0.0, (now - self.wall_start) - self.used() - stalled)
        credit = max(0.0, stalled - idle)
        self.wall_end = min(self.wall_start + self.backstop + credit, ceiling)
        return now >= self.wall_end

    def wait_s(self) -> float:
        """How long to sleep before the next look (0 when a limit is reached). CPU time grows no
        faster than wall time per thread, so sleeping the CPU time left is never too long for a
        single thread; the per-process RLIMIT_CPU catches many threads."""
        now = time.monotonic()
        if self._backstop_due(now):
            return 0.0
        if now < self.first_look:  # too early to be over: no need to read the CPU clock
            return min(self.first_look, self.wall_end) - now
        left = self.limit - self.used()
        if left <= 0:
            return 0.0
        return min(self.wall_end - now, max(left, 0.005))

    def expired(self) -> str | None:
        now = time.monotonic()
        if now >= self.deadline:
            return "budget"
        if self._backstop_due(now):
            return "wall-clock backstop"
        if self.used() >= self.limit:
            return "CPU-time limit"
        return None


class Child:
    """One forked candidate process and its pipes (stdout, stderr, and reports or replies)."""

    def __init__(self, pid: int, out: int, err: int, res: int | None, max_out: int):
        self.pid, self.max_out = pid, max_out
        self.pidfd = os.pidfd_open(pid)
        self.fds = {out: "out", err: "err"}
        if res is not None:
            self.fds[res] = "res"
        self.out, self.err, self.res = bytearray(), bytearray(), bytearray()
        self.status: int | None = None
        self.maxrss_kb = 0
        self.cpu_s = 0.0  # its own and its reaped children's, once it has ended
        self.why_timeout = ""
        self.oom0 = _oom_kills()
        self.wfd, self.pending = -1, bytearray()

    def send(self, wfd: int, payload: bytes) -> None:
        """Queue a frame for the child; written as it reads (never blocking this worker)."""
        if self.wfd < 0:
            os.set_blocking(wfd, False)
            self.wfd = wfd
        self.pending += framing.frame(payload)
        self._pump()

    def _pump(self) -> None:
        try:
            while self.pending:
                n = os.write(self.wfd, self.pending[: 1 << 16])
                del self.pending[:n]
        except BlockingIOError:
            pass
        except OSError:
            self.pending.clear()  # the child closed its end: its exit says why

    def next_event(self, clock: Clock, watch: int | None = None, frames: bool = False) -> str:
        """'report' (a line, or with ``frames`` a whole frame, is ready), 'exit', 'timeout',
        'output_limit', or 'watch' when the ``watch`` fd (the judge's pipe) has something."""
        while True:
            if self._ready(frames):
                return "timeout" if frames and self._over_cpu(clock) else "report"
            if self.status is not None:
                return "timeout" if self._over_cpu(clock) else "exit"
            if len(self.out) > self.max_out:
                return "output_limit"
            wait = clock.wait_s()
            if wait <= 0:
                why = clock.expired()
                if why:
                    self.why_timeout = why
                    return "timeout"
                wait = 0.005
            extra = [self.pidfd] if watch is None else [self.pidfd, watch]
            writing = [self.wfd] if self.pending else []
            ready, writable, _ = select.select([*self.fds, *extra], writing, [], wait)
            if writable:
                self._pump()
            if watch is not None and watch in ready:
                return "watch"
            for fd in ready:
                if fd == self.pidfd:
                    self._exited()
                else:
                    self._read(fd)

    def _over_cpu(self, clock: Clock) -> bool:
        """A reply or an exit within the wall time can still be over the CPU limit (a tree of
        busy processes): then it is a time limit, whatever it printed."""
        if clock.over_at_exit(self.cpu_s if self.status is not None else None):
            self.why_timeout = "CPU-time limit"
            return True
        return False

    def _ready(self, frames: bool) -> bool:
        if not frames:
            return b"\n" in self.res
        n = framing.frame_length(self.res)
        return n is not None and len(self.res) >= framing.HEADER.size + n

    def pop_report(self) -> dict:
        line, _, rest = bytes(self.res).partition(b"\n")
        self.res[:] = rest
        return _report_of(line)

    def pop_frame(self) -> bytes:
        start = framing.HEADER.size
        end = start + framing.frame_length(self.res)
        frame = bytes(self.res[start:end])
        del self.res[:end]
        return frame

    def drain(self) -> None:
        """Read what is already in the pipes (what the child wrote before its last reply)."""
        while self.fds:
            ready, _, _ = select.select(list(self.fds), [], [], 0)
            if not ready:
                return
            for fd in ready:
                self._read(fd)

    def _read(self, fd: int) -> None:
        b = os.read(fd, 1 << 16)
        if not b:
            self.fds.pop(fd)
            os.close(fd)
            return
        kind = self.fds[fd]
        if kind == "out":
            self.out += b
        elif kind == "res":
            self.res += b
            if len(self.res) > self.max_out + 4096:
                self.out += b"\0" * (self.max_out + 1)  # treat a report flood as an output flood
        else:
            self.err += b
            del self.err[: max(0, len(self.err) - STDERR_TAIL)]

    def _exited(self) -> None:
        try:
            _, status, rusage = os.wait4(self.pid, 0)
            self.status, self.maxrss_kb = status, rusage.ru_maxrss
            self.cpu_s = rusage.ru_utime + rusage.ru_stime
        except ChildProcessError:  # reaped elsewhere: it ended, how is unknown
            self.status = signal.SIGKILL  # read as "killed"
        os.close(self.pidfd)
        self.pidfd = -1
        self._drain_after_exit()

    def _drain_after_exit(self) -> None:
        """Its namespace died with it; kill what escaped that (nothing should), read to the end."""
        finish_uid()
        end = time.monotonic() + 2.0
        while self.fds and time.monotonic() < end:
            ready, _, _ = select.select(list(self.fds), [], [], 0.1)
            for fd in ready:
                self._read(fd)
        self.close()

    def out_of_memory(self) -> bool:
        return _oom_kills() > self.oom0

    def kill(self) -> None:
        if self.status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)  # process 1 of its namespace: all of it goes
            except ProcessLookupError:
                pass
            self._exited()

    def close(self) -> None:
        for fd in list(self.fds):
            os.close(fd)
        self.fds.clear()


# ---------------------------------------------------------------- the worker's state

SETUP: dict = {}
PRELUDE = harness.prelude()


def _oom_kills() -> int:
    account = SETUP.get("account_obj")
    return account.oom_kills() if account is not None else 0


def finish_uid() -> None:
    """After a test: no process the candidate started may survive it. (In the checks worker the
    only child is the check child, which lives on between jobs: nothing to kill there.)"""
    if SETUP.get("role") == "checks":
        return
    if not sandbox.has_children():
        return
    if SETUP.get("uid") is not None:
        sandbox.kill_uid(SETUP["uid"])
        deadline = time.monotonic() + 2.0
        while sandbox.has_children() and time.monotonic() < deadline:
            sandbox.reap_all()
            time.sleep(0.001)
    sandbox.kill_children()  # unsafe mode; with a user id, whatever kill_uid could not reach


def fork_child(
    job: dict, cpu_s: float, stdin_data: bytes, target, extra_fds: list[int] = (), report: bool = True
) -> Child:
    """Fork the child that runs ``target``; fds 0-2 as usual, then 3 (reports, when ``report``)
    and ``extra_fds`` after it (requests and replies of calls)."""
    stdin_fd = os.memfd_create("stdin", 0)
    view = memoryview(stdin_data)
    while view:
        view = view[os.write(stdin_fd, view) :]
    os.lseek(stdin_fd, 0, os.SEEK_SET)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    res_r, fds3 = None, list(extra_fds)
    if report:
        res_r, res_w = os.pipe()
        fds3.insert(0, res_w)
    ruleset, import_path = SETUP.get("profile_env", {}).get(job.get("profile"), (SETUP.get("ruleset", -1), None))
    spec = {
        **job["limits"],
        # each process's hard stop (the Clock is the limit); none for the long-lived check child
        "cpu_s": max(1, math.ceil(cpu_s) + 1) if cpu_s >= 0 else resource.RLIM_INFINITY,
        "dir": job["dir"],
        "uid": SETUP.get("uid"),
        "rootless": SETUP["sandbox"] and SETUP["mode"] == "rootless",
        "ruleset": ruleset,
        "import_path": import_path,
        "seccomp": SETUP.get("seccomp"),
        "account": SETUP.get("account_obj"),
    }
    spec["rlimits"] = harness.rlimits(spec)
    pid = sandbox.fork_into_namespaces() if SETUP["sandbox"] else os.fork()
    if pid == 0:
        try:
            harness.enter(spec, stdin_fd, out_w, err_w, fds3)
        except BaseException as e:  # noqa: BLE001 - the judge's failure, not the program's: on stderr
            try:
                os.write(2, f"judge: sandbox set-up failed: {type(e).__name__}: {e}\n".encode())
            except BaseException:  # noqa: BLE001, S110 - a forked child: it must reach os._exit
                pass
            os._exit(EXIT_SETUP)
        try:
            target()
        except BaseException:  # noqa: BLE001, S110 - a forked child: it must reach os._exit
            pass
        os._exit(70)
    for fd in (stdin_fd, out_w, err_w, *fds3):
        os.close(fd)
    return Child(pid, out_r, err_r, res_r, job["limits"]["max_output_bytes"])


def outcome(child: Child, event: str, rep: dict | None) -> dict:
    """The raw result of a test from what the child reported and how it ended."""
    res = {"stderr": child.err[-STDERR_TAIL:].decode("utf-8", "replace")}
    if event == "timeout":  # one text for the CPU limit and the backstop: verdicts must not vary with load
        budget = child.why_timeout == "budget"
        return {**res, "status": "time_limit", "detail": harness.BUDGET_DETAIL if budget else "time limit"}
    if event == "output_limit":
        return {**res, "status": "runtime_error", "detail": "output limit exceeded"}
    if child.out_of_memory():
        return {**res, "status": "memory_limit", "detail": "the process tree's memory limit"}
    if rep is not None:
        if rep.get("ok"):
            return {**res, "status": "ok"}
        if rep.get("mem") or rep.get("exc") == "MemoryError":
            return {**res, "status": "memory_limit", "detail": "MemoryError"}
        if rep.get("exc") == "OutputLimit":
            return {**res, "status": "runtime_error", "detail": "output limit exceeded"}
        return {**res, "status": "runtime_error", "detail": str(rep.get("exc"))[:200]}
    return {**res, **_exit_outcome(child.status)}


def _exit_outcome(status: int | None) -> dict:
    if status is None:
        return {"status": "runtime_error", "detail": "no report"}
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig == signal.SIGXCPU:
            return {"status": "time_limit", "detail": "time limit"}
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return {"status": "runtime_error", "detail": f"killed by {name}"}
    code = os.WEXITSTATUS(status)
    if code == harness.EXIT_MEMORY:
        return {"status": "memory_limit", "detail": "out of memory"}
    if code == 0:
        return {"status": "ok"}
    return {"status": "runtime_error", "detail": f"exit code {code}"}


# ---------------------------------------------------------------- stdin tests


def run_stdin_job(proto: Protocol, job: dict) -> None:
    """Stdin tests: in one process that serves them in turn (``harness.serve_stdin``), each run
    as if alone, and a fresh process after any test that failed or left something behind; or,
    with ``process_per_test`` (and for a rollout read by a person, whose every test reports its
    own memory), a fresh process for every test."""
    if job.get("process_per_test") or job.get("full_output") or job["n"] == 1:  # (one test: the cheaper way)
        _stdin_process_per_test(proto, job)
        return
    _served_runs(proto, job, lambda: harness.serve_stdin(job["code"]), _stdin_tests, fresh_dir=True)


def _served_runs(proto: Protocol, job: dict, server, run_tests, fresh_dir: bool) -> None:
    """A rollout's tests in runs, each on a child forked to serve them (``server``: requests on a
    pipe, replies on another): ``run_tests(proto, job, child, start, n, req)`` runs tests
    ``start``.. on it and returns the first test left for the next child (``n``: none); it may
    close the request pipe itself (``req`` emptied). ``fresh_dir``: a new child's folder is made
    again, as for the next test."""
    n, start = job["n"], 0
    while start < n:
        if _budget_spent(job):  # no fresh child for tests that could not run
            _budget_left(proto, job, start)
            return
        if start and fresh_dir:
            _next_test_dir(job)
        req_r, req_w = os.pipe()
        ans_r, ans_w = os.pipe()
        left = n - start
        child = fork_child(job, job["limits"]["timeout_s"] * left + 1, b"", server, [req_r, ans_w], report=False)
        child.fds[ans_r] = "res"
        req = [req_w]
        try:
            start = run_tests(proto, job, child, start, n, req)
        finally:
            if req:
                os.close(req_w)
            child.kill()
            child.close()


def _stdin_tests(proto: Protocol, job: dict, child: Child, start: int, n: int, req: list[int]) -> int:
    """Tests ``start``.. on ``child``, which serves stdin tests (requests on ``req[0]``); returns
    the first test left for a fresh process (``n``: none). Early exit as ``_call_tests``.

    A report is one frame per test, numbered: a frame the program wrote itself on the report
    pipe is taken for no later test (its number, or a second frame, gives it away), and after
    the last test the process must end as the server ends, with no frame more."""
    req_w = req[0]
    timeout = job["limits"]["timeout_s"]
    clock = Clock(child.pid, timeout, job.get("deadline"))
    pending = False  # a result was sent and the judge's go-on/stop is not read yet
    for i in range(start, n):
        if _budget_spent(job):  # the tests left are time limits, run or not
            if not _unrun_test(proto, job, i, pending):
                return n
            pending = job["early_exit"]
            continue
        if i > start:
            _next_test_dir(job)  # the process waits for its input meanwhile: nothing of it runs
        t0 = time.monotonic()
        clock.restart(timeout)
        child.out.clear()
        child.err.clear()
        child.send(req_w, job["inputs"][i])
        event = _reply_event(proto, child, clock, pending)
        if event is None:
            return n  # the judge stopped at the last test: this one is discarded
        keep = False
        if event == "report":
            rep = _report_of(child.pop_frame())
            child.drain()
            keep = rep.pop("keep", False) is True
            ended = True
            if rep.get("ok") and i == n - 1:  # the last test: the server must now end, saying nothing more
                os.close(req_w)
                req.clear()
                ended = child.next_event(clock, frames=True) == "exit" and child.status == 0
            if not ended or rep.pop("test", None) != i - start + 1 or child.res:  # a frame the program wrote
                rep, keep = {"ok": False, "exc": "BadReport", "mem": False}, False
            res = outcome(child, event, rep)
        else:
            res = outcome(child, event, None)
        keep = keep and res["status"] == "ok"
        res.update(i=i, t=time.monotonic() - t0, cpu=clock.used() if child.status is None else child.cpu_s)
        res["stdout"] = (child.out if res["status"] == "ok" else child.out[:STDOUT_SHOWN]).decode("utf-8", "replace")
        _send_result(proto, job, res)
        pending = job["early_exit"]
        if not keep:  # a fresh process goes on, unless the judge stops
            return n if pending and not proto.recv() else i + 1
    if pending:
        proto.recv()
    return n


def _report_of(data: bytes) -> dict:
    """A stdin test's report, a line or a server's frame, as the candidate's process wrote it: a
    JSON object, else a bad report."""
    try:
        obj = json.loads(data)
    except (ValueError, RecursionError):
        obj = None
    return obj if isinstance(obj, dict) else {"ok": False, "exc": "BadReport", "mem": False}


def _budget_left(proto: Protocol, job: dict, start: int) -> None:
    for i in range(start, job["n"]):
        _send_result(proto, job, _budget_result(i))
        if job["early_exit"] and not proto.recv():
            return


def _stdin_process_per_test(proto: Protocol, job: dict) -> None:
    """One fresh process per test. With early exit the next test starts while the judge is still
    comparing the last one (its answer is read when it comes); a 'stop' kills that test."""
    timeout = job["limits"]["timeout_s"]
    pending = False  # a result was sent and the judge's go-on/stop is not read yet
    for i in range(job["n"]):
        data = job["inputs"][i]
        if _budget_spent(job):  # the tests left are time limits, run or not
            if pending and not proto.recv():
                return
            _send_result(proto, job, _budget_result(i))
            pending = job["early_exit"]
            continue
        if i:
            _next_test_dir(job)  # each test starts as if the program ran alone
        t0 = time.monotonic()
        child = fork_child(job, timeout, data, lambda: harness.run_stdin(job["code"]))
        try:
            clock = Clock(child.pid, timeout, job.get("deadline"))
            event, rep, pending, go_on = _watch_stdin_test(proto, child, clock, pending)
            if pending:
                go_on, pending = bool(proto.recv()), False
        finally:
            child.kill()
            child.close()
        if not go_on:
            return  # the judge stopped at the previous test: this one is discarded
        res = outcome(child, event, rep)
        if res["status"] == "ok" and event == "exit" and child.status != 0:
            res.update(_exit_outcome(child.status))
        res.update(i=i, t=time.monotonic() - t0, cpu=child.cpu_s, mem_kb=child.maxrss_kb)
        whole = res["status"] == "ok" or job.get("full_output")
        out = child.out if whole else child.out[:STDOUT_SHOWN]  # a failure shows its start
        res["stdout"] = out.decode("utf-8", "replace")
        _send_result(proto, job, res)
        pending = job["early_exit"]
    if pending:
        proto.recv()


def _unrun_test(proto: Protocol, job: dict, i: int, pending: bool) -> bool:
    """Test ``i``, past the rollout's wall budget: a time limit, not run. False: the judge had
    stopped at the last test."""
    if pending and not proto.recv():
        return False
    _send_result(proto, job, _budget_result(i))
    return True


def _reply_event(proto: Protocol, child: Child, clock: Clock, pending: bool) -> str | None:
    """Wait for the child's reply frame, or its end, reading the judge's go-on/stop for the last
    test when it comes; None when the judge stopped."""
    while True:
        event = child.next_event(clock, proto.rfd if pending else None, frames=True)
        if event != "watch":
            break
        pending = False
        if not proto.recv():
            return None
    if pending and not proto.recv():
        return None
    return event


def _budget_spent(job: dict) -> bool:
    return job.get("deadline") is not None and time.monotonic() >= job["deadline"]


def _budget_result(i: int) -> dict:
    """A test not run: its rollout's wall budget was spent before it."""
    return {"status": "time_limit", "detail": harness.BUDGET_DETAIL, "stderr": "", "stdout": "", "i": i, "t": 0.0}


def _send_result(proto: Protocol, job: dict, res: dict) -> None:
    """Send a test's result, then take the next test's input, which the judge sends as soon as
    it reads a result (before it compares, so the next test still starts meanwhile). A job
    comes with its first test's input only: no candidate process ever holds a test it has not
    reached (each is forked from this worker's memory)."""
    proto.send(("result", res))
    given = job["inputs" if job["kind"] == "stdin" else "tests"]
    if len(given) < job["n"]:
        _, data = proto.recv()  # ("input", the next test's input)
        given.append(data)


def _watch_stdin_test(proto: Protocol, child: Child, clock: Clock, pending: bool):
    """Wait for the test's report and exit, reading the judge's answer if it comes meanwhile.
    Returns (event, report, still pending, go on)."""
    rep = None
    while True:
        event = child.next_event(clock, proto.rfd if pending else None)
        if event == "watch":
            pending = False
            if not proto.recv():
                return event, rep, False, False
            continue
        if event == "report":
            # the last report counts: the harness writes its own just before the process ends,
            # so a line the program forged earlier is overwritten by what really happened
            rep = child.pop_report()
            continue  # then the exit that follows the report
        return event, rep, pending, True


# ---------------------------------------------------------------- call tests


def run_call_job(proto: Protocol, job: dict) -> None:
    """Call tests: one child serves the calls in turn (``harness.serve_calls``); this worker sends
    each test's arguments and reads back the return value as plain data, which it passes on to
    the judge unread. A child that dies (time limit, crash) takes its test with it; a fresh
    child goes on from the next one. Each test's stderr is what the child wrote during it."""
    _served_runs(proto, job, _server(job), _call_tests, fresh_dir=False)


def _server(job: dict):
    defined = set(job["defined"]) if "defined" in job else None
    return lambda: harness.serve_calls(job["code"], PRELUDE, job["limits"]["max_output_bytes"], defined)


def _call_tests(proto: Protocol, job: dict, child: Child, start: int, n: int, req: list[int]) -> int:
    """Tests ``start``.. on ``child`` (requests on ``req[0]``); returns the first test left for a
    fresh child (``n``: none). With early exit the next call goes out while the judge is still
    comparing the last reply, as stdin tests do (its answer is read when it comes; a 'stop' kills
    that call)."""
    from mcoder.judge import plain

    req_w = req[0]
    timeout = job["limits"]["timeout_s"]
    clock = Clock(child.pid, timeout, job.get("deadline"))
    pending = False  # a result was sent and the judge's go-on/stop is not read yet
    for i in range(start, n):
        if _budget_spent(job):  # the tests left are time limits, run or not
            if not _unrun_test(proto, job, i, pending):
                return n
            pending = job["early_exit"]
            continue
        t0 = time.monotonic()
        clock.restart(timeout)
        if i > start:
            del child.err[:]  # what it wrote during the last test was read with its reply
        child.send(req_w, plain.encode(("call", job["fn_name"], tuple(job["tests"][i]), {})))
        event = _reply_event(proto, child, clock, pending)
        if event is None:
            return n  # the judge stopped at the last test: this one is discarded
        res: dict
        if event == "report":
            frame = child.pop_frame()
            child.drain()
            res = _call_result(child, frame)
        else:
            res = outcome(child, event, None)
            if event == "exit" and res["status"] == "ok":
                res = {**res, "status": "runtime_error", "detail": "the program exited before this test"}
        res.update(i=i, t=time.monotonic() - t0)
        if job.get("full_output"):  # a test read by a person: what it cost, as far as one process tells
            res.update(cpu=clock.used(), mem_kb=_peak_kb(child.pid) if child.status is None else child.maxrss_kb)
        _send_result(proto, job, res)
        pending = job["early_exit"]
        if event != "report":  # the child is gone: a fresh one goes on, unless the judge stops
            return n if pending and not proto.recv() else i + 1
    if pending:
        proto.recv()
    return n


def _peak_kb(pid: int) -> int:
    """The most resident memory process ``pid`` has had so far, in KiB (0 if unknown)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _call_result(child: Child, frame: bytes) -> dict:
    """A reply, passed on as bytes: the judge decodes it (plain data only) and compares."""
    from mcoder.judge import plain

    stderr = child.err[-STDERR_TAIL:].decode("utf-8", "replace")
    if frame.startswith(b'{"t":["ok",'):  # the judge decodes (and checks) the value itself
        return {"status": "ok", "value": frame, "stderr": stderr}
    try:
        kind, *rest = plain.decode(frame, hashfree=True)  # read here only to sort the reply: nothing hashed
    except (plain.NotPlain, ValueError, TypeError):
        return {"status": "runtime_error", "detail": "a reply that is not plain data", "stderr": stderr}
    if kind == "ok":
        return {"status": "ok", "value": frame, "stderr": stderr}
    if kind == "notplain":
        return {"status": "ok", "value": None, "stderr": stderr, "detail": str(rest[:1])[:200]}
    exc = str(rest[0])[:200] if rest else "error"
    if exc == "MemoryError" or (len(rest) > 1 and rest[1] is True):
        return {"status": "memory_limit", "detail": "MemoryError", "stderr": stderr}
    if exc == "OutputLimit":
        return {"status": "runtime_error", "detail": "output limit exceeded", "stderr": stderr}
    return {"status": "runtime_error", "detail": exc, "stderr": stderr}


# ---------------------------------------------------------------- functional tests


def run_serve_job(proto: Protocol, job: dict, fds: list[int]) -> None:
    """The candidate's side of functional tests: a child serves calls on the pipes the judge
    handed over (the check runs in the checks worker, at the other end); this worker only
    watches its time, memory and output, until the judge says the checks are over."""
    timeout = job["limits"]["timeout_s"] * job["n_tests"]
    child = fork_child(job, timeout, b"", _server(job), fds, report=False)
    clock = Clock(child.pid, timeout, job.get("deadline"))
    event = "watch"
    try:
        event = child.next_event(clock, proto.rfd)
    finally:
        if event == "watch":
            proto.recv()  # the judge's "end"
        child.kill()
        child.close()
    res = outcome(child, event, None) if event != "watch" else {"status": "ok"}
    res["stderr"] = child.err[-STDERR_TAIL:].decode("utf-8", "replace")
    res["stdout"] = child.out[:STDOUT_SHOWN].decode("utf-8", "replace")
    if event != "watch":
        proto.recv()  # the judge's "end" comes all the same
    proto.send(("ended", res))


_CHECKER: dict = {}  # the check child: {"child", "job_w", "sock", "limits", "jobs"}
CHECKER_JOBS = 500  # a check child serves this many jobs, then a fresh one takes over


def _fork_check_child(limits: dict) -> dict:
    """Fork the check child: it enters the sandbox, then serves jobs one after another (each
    job on a pipe, the candidate's pipes on a socket), so that no functional record waits for a
    fork. It holds only trusted code and plain data; a check that overruns its limit, crashes,
    or leaves the child in an unknown state ends it, and a fresh one is forked for the next job."""
    from mcoder.judge import checker

    job_r, job_w = os.pipe()
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    fake = {"limits": limits, "dir": SETUP["base"]}
    child = fork_child(fake, -1, b"", checker.serve_jobs, [job_r, theirs.fileno()])
    theirs.detach()  # fork_child closed it
    return {"child": child, "job_w": job_w, "sock": ours, "limits": limits, "jobs": 0}


def prefork_check_child() -> None:
    if SETUP.get("role") == "checks" and not _CHECKER and SETUP.get("limits") is not None:
        _CHECKER.update(_fork_check_child(SETUP["limits"]))


def run_check_job(proto: Protocol, job: dict, fds: list[int]) -> None:
    """The trusted side of functional tests, in the checks worker: the check child compiles and
    runs each check, calling the candidate through the pipes; one report per test, then an end
    line when it is ready for the next job."""
    SETUP["limits"] = job["limits"]
    if _CHECKER and _CHECKER["limits"] != job["limits"]:
        _end_checker()
    prefork_check_child()
    chk = _CHECKER
    child = chk["child"]
    child.out.clear(), child.err.clear(), child.res.clear()
    child.oom0 = _oom_kills()
    try:
        socket.send_fds(chk["sock"], [b"f"], fds)
        harness.write_frame(chk["job_w"], pickle.dumps((job["tests"], job["fn_name"], job["early_exit"])))
    except OSError:
        pass  # the child is gone: its exit says why
    finally:
        for fd in fds:
            os.close(fd)
    chk["jobs"] += 1
    timeout = job["limits"]["timeout_s"] * len(job["tests"])
    clock = Clock(child.pid, timeout + 1)
    healthy = False
    try:
        for i in range(len(job["tests"])):
            event = child.next_event(clock, frames=False)
            if event != "report":
                rep = outcome(child, event, None)
                proto.send(("result", {"i": i, "status": "check_failed", "detail": rep.get("detail"), "stderr": rep["stderr"]}))
                break
            rep = child.pop_report()
            proto.send(("result", {**rep, "i": i}))
            if job["early_exit"] and rep.get("status") != "ok":
                break
        else:
            pass
        if child.status is None and child.next_event(clock, frames=False) == "report":
            healthy = child.pop_report().get("end") is True
    finally:
        if not healthy or chk["jobs"] >= CHECKER_JOBS:
            _end_checker()


def _end_checker() -> None:
    if _CHECKER:
        _CHECKER["child"].kill()
        _CHECKER["child"].close()
        os.close(_CHECKER["job_w"])
        _CHECKER["sock"].close()
        _CHECKER.clear()


# ---------------------------------------------------------------- the loop


def serve(proto: Protocol) -> None:
    seq = 0
    while True:
        job = proto.recv()
        if job is None:
            _end_checker()  # reaped, not orphaned: its CPU time counts in this worker's
            return
        seq += 1
        # a folder for the candidate (the check child, forked ahead, lives in the worker's own)
        job["dir"] = _candidate_dir(seq, job.get("source", "")) if job["kind"] != "check" else None
        fds = []
        if job.get("fds"):
            _, fds, _, _ = socket.recv_fds(SETUP["fd_socket"], 1, 2)
        if "code" in job:
            job["code"] = marshal.loads(job["code"])
        if job.get("preimport"):
            _preimport(job["preimport"], job.get("profile"))
        try:
            if job["kind"] == "stdin":
                run_stdin_job(proto, job)
            elif job["kind"] == "call":
                run_call_job(proto, job)
            elif job["kind"] == "serve":
                run_serve_job(proto, job, fds)
            elif job["kind"] == "check":
                run_check_job(proto, job, fds)
        finally:  # the fds went to the child (fork_child closed this process's copies)
            finish_uid()
            if job["dir"] is not None:
                _remove_dir(job["dir"])
        proto.send(("done", None))
        prefork_check_child()  # a fresh check child, if the last one ended, while the judge reads "done"


_PREIMPORT_FAILED: set[str] = set()


def _preimport(names: list[str], profile: str | None) -> None:
    """Import the contest libraries the judge names (the program imports them, its profile shows
    them) here, once, before the job's test processes are forked: each finds them loaded. Only
    library code runs here, found on the job's own import path (the candidate's ``__file__``s).
    One that fails is left to the program, which then meets the failure itself."""
    import importlib

    todo = [n for n in names if n not in sys.modules and n not in _PREIMPORT_FAILED]
    if not todo:
        return
    _, path = SETUP.get("profile_env", {}).get(profile, (None, None))
    saved = list(sys.path)
    if path is not None:
        sys.path[:] = path
    try:
        for name in todo:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - the program's own import says what is wrong
                _PREIMPORT_FAILED.add(name)
    finally:
        sys.path[:] = saved
    if "numpy.random" in sys.modules and not SETUP.get("numpy_reseed"):
        # numpy's global generator was seeded once, here: each forked test draws its own seed,
        # as it would importing numpy itself (``random`` does the same for its own)
        os.register_at_fork(after_in_child=_reseed_numpy)
        SETUP["numpy_reseed"] = True
    gc.collect()
    gc.freeze()  # forked children share these pages instead of copying them


def _reseed_numpy() -> None:
    try:
        sys.modules["numpy.random"].seed()
    except Exception:  # noqa: BLE001, S110 - a forked child: its program goes on as it would
        pass


def _reset_dir(path: str, keep: set[str] = frozenset()) -> None:
    """Empty the folder ``path`` (``keep``: names of the judge's own entries in a worker's base
    folder, which no candidate can write to)."""
    with os.scandir(path) as entries:
        names = [e.name for e in entries if e.name not in keep]
    for name in names:
        _clear_tree(path, name)


def _next_test_dir(job: dict) -> None:
    """The candidate's folder as the next test finds it: only its main.py, written again. No
    name is spared while clearing (a folder chain the program named main.py once was)."""
    _reset_dir(job["dir"])
    try:
        _write_main(job["dir"], job.get("source", ""))
    except OSError:  # something the program left could not be removed: it runs without its file
        pass


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _clear_tree(parent: str, name: str) -> int:
    """Remove ``parent/name`` and everything below it without recursion, one folder fd open at a
    time (a chain thousands of folders deep, past PATH_MAX, is removed like a flat one), each
    entry by name relative to its folder (no symbolic link is followed). Nothing is raised: what
    cannot be removed is left, counted in the return value. Only called when no process of the
    candidate is left (``finish_uid``), so nothing moves under it."""
    failures = 0
    try:
        fd = os.open(parent, _DIR_FLAGS)
    except OSError:
        return 1
    stack: list[list[tuple[str, bool]]] = [[(name, False)]]  # per level: (name, emptied already)
    try:
        while stack:
            if not stack[-1]:
                stack.pop()
                if stack:  # up to the folder that holds the one just emptied
                    up = os.open("..", _DIR_FLAGS, dir_fd=fd)
                    os.close(fd)
                    fd = up
                continue
            entry, emptied = stack[-1].pop()
            child = _remove_entry(fd, entry, emptied)
            if child is None:
                continue
            if child < 0:
                failures += 1
                continue
            os.close(fd)
            fd = child
            stack[-1].append((entry, True))  # removed once its contents are gone
            stack.append([(n, False) for n in os.listdir(fd)])
    except OSError:
        failures += 1
    finally:
        os.close(fd)
    return failures


def _remove_entry(dir_fd: int, name: str, emptied: bool) -> int | None:
    """Remove one entry of the folder ``dir_fd``: None when done; a folder that is not empty is
    opened and its fd returned (to be emptied first); -1 when it cannot be removed."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError:
        return -1
    try:
        if not stat.S_ISDIR(st.st_mode):
            os.unlink(name, dir_fd=dir_fd)
            return None
        try:
            os.rmdir(name, dir_fd=dir_fd)
            return None
        except OSError:
            if emptied:
                return -1
        os.chmod(name, 0o700, dir_fd=dir_fd)  # a folder the program made unreadable
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError:
        return -1


def _candidate_dir(seq: int, source: str) -> str:
    path = f"{SETUP['base']}/c{seq}"
    os.mkdir(path, 0o700)
    if SETUP.get("uid") is not None:
        os.chown(path, SETUP["uid"], SETUP["uid"])
    _write_main(path, source)
    return path


def _write_main(path: str, source: str) -> None:
    fd = os.open(f"{path}/main.py", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        # for tracebacks, and for programs that read their own file
        framing.write_all(fd, source.encode("utf-8", "replace"))
        if SETUP.get("uid") is not None:
            os.fchown(fd, SETUP["uid"], SETUP["uid"])
    finally:
        os.close(fd)


def _remove_dir(path: str) -> None:
    """The candidate's folder, gone: most hold only main.py, which needs no tree walk."""
    try:
        os.unlink(f"{path}/main.py")
        os.rmdir(path)
    except OSError:
        parent, name = os.path.split(path)
        _clear_tree(parent, name)


def _library_profiles(cfg: dict) -> None:
    """Per library profile the judge may name in a job: the candidate's Landlock ruleset (the
    profile's packages readable) and its import path (a folder of links to them), one pair per
    distinct package list. The first profile is the default (the check child's)."""
    made: dict[tuple[str, ...], tuple[int, list[str]]] = {}
    SETUP["profile_env"] = {}
    for i, (name, packages) in enumerate(cfg["profiles"].items()):
        key = tuple(packages)
        if key not in made:
            ruleset = sandbox.landlock_ruleset(
                [cfg["base"]], sandbox.candidate_roots(packages), cfg.get("scope", False), sandbox.stdlib_dirs()
            )
            path = sandbox.candidate_import_path(packages, os.path.join(cfg["base"], "packages", str(len(made))))
            made[key] = (ruleset, path)
        SETUP["profile_env"][name] = made[key]
        if i == 0:
            SETUP["ruleset"], SETUP["import_path"] = made[key]


def setup(cfg: dict) -> None:
    SETUP.update(cfg)
    sandbox.die_with_parent()
    if cfg.get("cgroups"):
        SETUP["account_obj"] = sandbox.TreeAccount(cfg["cgroups"])  # its files open before Landlock
    if cfg["sandbox"]:
        readable = sandbox.readable_roots()
        if cfg["mode"] == "root":
            sandbox.unshare(sandbox.CLONE_NEWNET | sandbox.CLONE_NEWIPC)
            sandbox.expose([r for r in readable if r.startswith("/") and os.path.exists(r)])
        else:
            sandbox.enter_user_namespace()
        sandbox.disk_quota(cfg["base"], cfg["disk_mb"])
        _library_profiles(cfg)
        SETUP["seccomp"] = sandbox.seccomp_fprog(sandbox.seccomp_program())
        sandbox.landlock_restrict([cfg["base"]], readable)
    sandbox.become_subreaper()
    if cfg.get("uid") is not None:
        sandbox.kill_uid(cfg["uid"])  # whatever a worker before this one (killed from outside) left running
    _reset_dir(cfg["base"], keep={"packages"})  # and the folders it left
    sys.dont_write_bytecode = True
    if cfg.get("role") == "checks":
        from mcoder.judge import checker  # noqa: F401  (loaded once, before any fork)
    for name in PREIMPORTS:
        __import__(name)
    from mcoder.judge import plain  # noqa: F401

    others = [path for _, path in SETUP.get("profile_env", {}).values()]
    harness.prepare_worker(SETUP.get("import_path"), others)  # the last import is done
    gc.collect()
    gc.freeze()  # forked children then share these pages instead of copying them


def main() -> None:
    # The protocol moves to private fds; 0 and 1 point to /dev/null so a stray print cannot corrupt it.
    proto = Protocol(os.dup(0), os.dup(1))
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    try:
        cfg = json.loads(sys.argv[1])
        cfg["fd_socket"] = socket.socket(fileno=cfg["fd_socket"])
        setup(cfg)
    except Exception as e:  # noqa: BLE001 - any set-up failure goes to the judge as its error reply
        proto.send(("error", f"{type(e).__name__}: {e}"))
        return
    proto.send(("ready", os.getpid()))
    serve(proto)


if __name__ == "__main__":
    main()
