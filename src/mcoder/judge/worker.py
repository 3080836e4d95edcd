"""A warm worker: the fork server that runs candidates for the judge, one at a time.

Started once per pool slot as ``python -I -m mcoder.judge.worker SETUP``. It enters the sandbox
(no network, files fenced by Landlock, orphan reaper), imports what programs commonly import,
and then serves jobs read from its stdin: for each test it forks a child that drops to the
slot's user id and runs the program (``harness``), watches it against the wall limit and the
output cap, and sends the raw outcome back. It never compares outputs: expected answers never
enter a process that candidates are forked from, so no candidate can read them from memory.

Frames on both pipes are a 4-byte length and a pickle; only the judge writes to this process's
stdin, and a candidate's own bytes come back as plain strings.
"""

from __future__ import annotations

import gc
import json
import marshal
import os
import pickle
import select
import shutil
import signal
import struct
import sys
import time

from mcoder.judge import harness, sandbox

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

STDERR_TAIL = 2000
STDOUT_SHOWN = 2000  # of a failed test's output, sent back for first_failure
_KILL_SIGNAL_GRACE = 0.25


class Protocol:
    def __init__(self, rfd: int, wfd: int):
        self.rfd, self.wfd = rfd, wfd

    def recv(self):
        head = self._read(4)
        if head is None:
            return None
        (n,) = struct.unpack("<I", head)
        return pickle.loads(self._read(n))

    def send(self, obj) -> None:
        data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(struct.pack("<I", len(data)) + data)
        while view:
            view = view[os.write(self.wfd, view) :]

    def _read(self, n: int) -> bytes | None:
        chunks, left = [], n
        while left:
            b = os.read(self.rfd, min(left, 1 << 20))
            if not b:
                return None
            chunks.append(b)
            left -= len(b)
        return b"".join(chunks)


class Child:
    """One forked candidate process and its three pipes (stdout, stderr, reports)."""

    def __init__(self, pid: int, out: int, err: int, res: int, max_out: int):
        self.pid, self.max_out = pid, max_out
        self.pidfd = os.pidfd_open(pid)
        self.fds = {out: "out", err: "err", res: "res"}
        self.out, self.err, self.res = bytearray(), bytearray(), bytearray()
        self.status: int | None = None
        self.maxrss_kb = 0

    def next_event(self, deadline: float, watch: int | None = None) -> str:
        """'report' (a line is ready), 'exit', 'timeout', 'output_limit', or 'watch' when the
        ``watch`` fd (the judge's pipe) has something to read."""
        while True:
            if b"\n" in self.res:
                return "report"
            if self.status is not None:
                return "exit"
            if len(self.out) > self.max_out:
                return "output_limit"
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            extra = [self.pidfd] if watch is None else [self.pidfd, watch]
            ready, _, _ = select.select([*self.fds, *extra], [], [], left)
            if watch is not None and watch in ready:
                return "watch"
            for fd in ready:
                if fd == self.pidfd:
                    self._exited()
                else:
                    self._read(fd)

    def pop_report(self) -> dict:
        line, _, rest = bytes(self.res).partition(b"\n")
        self.res[:] = rest
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            obj = None
        return obj if isinstance(obj, dict) else {"ok": False, "exc": "BadReport", "mem": False}

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
        _, status, rusage = os.wait4(self.pid, 0)
        self.status, self.maxrss_kb = status, rusage.ru_maxrss
        os.close(self.pidfd)
        self.pidfd = -1
        self._drain_after_exit()

    def _drain_after_exit(self) -> None:
        """Kill what the program left behind (it holds the pipes open), then read to the end."""
        finish_uid()
        end = time.monotonic() + 2.0
        while self.fds and time.monotonic() < end:
            ready, _, _ = select.select(list(self.fds), [], [], 0.1)
            for fd in ready:
                self._read(fd)
        self.close()

    def kill(self) -> None:
        if self.status is None:
            for kill in (os.killpg, os.kill):  # the group, and the child itself if not yet a leader
                try:
                    kill(self.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self._exited()

    def close(self) -> None:
        for fd in list(self.fds):
            os.close(fd)
        self.fds.clear()


# ---------------------------------------------------------------- the worker's state

SETUP: dict = {}
PRELUDE = harness.prelude_namespace()


def finish_uid() -> None:
    """After a test: no process the candidate started may survive it."""
    if not sandbox.has_children():
        return
    if SETUP.get("uid") is not None:
        sandbox.kill_uid(SETUP["uid"])
        deadline = time.monotonic() + 2.0
        while sandbox.has_children() and time.monotonic() < deadline:
            sandbox.reap_all()
            time.sleep(0.001)
    sandbox.kill_children()  # unsafe mode; with a user id, whatever kill_uid could not reach


def fork_child(job: dict, cpu_s: int, stdin_data: bytes, target) -> Child:
    stdin_fd = os.memfd_create("stdin", 0)
    view = memoryview(stdin_data)
    while view:
        view = view[os.write(stdin_fd, view) :]
    os.lseek(stdin_fd, 0, os.SEEK_SET)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    res_r, res_w = os.pipe()
    spec = {
        **job["limits"],
        "cpu_s": cpu_s,
        "dir": job["dir"],
        "uid": SETUP.get("uid"),
        "rootless": SETUP["sandbox"] and SETUP["mode"] == "rootless",
        "scope": SETUP.get("scope", False),
    }
    pid = os.fork()
    if pid == 0:
        try:
            harness.enter(spec, stdin_fd, out_w, err_w, res_w)
            target()
        except BaseException:
            pass
        os._exit(70)
    for fd in (stdin_fd, out_w, err_w, res_w):
        os.close(fd)
    return Child(pid, out_r, err_r, res_r, job["limits"]["max_output_bytes"])


def outcome(child: Child, event: str, rep: dict | None) -> dict:
    """The raw result of a test from what the child reported and how it ended."""
    res = {"stderr": child.err[-STDERR_TAIL:].decode("utf-8", "replace")}
    if event == "timeout":
        return {**res, "status": "time_limit", "detail": "wall-clock limit"}
    if event == "output_limit":
        return {**res, "status": "runtime_error", "detail": "output limit exceeded"}
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
            return {"status": "time_limit", "detail": "CPU-time limit"}
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


def run_stdin_job(proto: Protocol, job: dict) -> None:
    """One fresh process per test. With early exit the next test starts while the judge is still
    comparing the last one (its answer is read when it comes); a 'stop' kills that test."""
    timeout = job["limits"]["timeout_s"]
    cpu = int(timeout) + 1
    pending = False  # a result was sent and the judge's go-on/stop is not read yet
    for i, data in enumerate(job["inputs"]):
        if i:
            _reset_dir(job["dir"])  # each test starts as if the program ran alone
        t0 = time.monotonic()
        child = fork_child(job, cpu, data, lambda: harness.run_stdin(job["code"]))
        try:
            event, rep, pending, go_on = _watch_stdin_test(proto, child, t0 + timeout, pending)
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
        res.update(i=i, t=time.monotonic() - t0)
        out = child.out if res["status"] == "ok" else child.out[:STDOUT_SHOWN]  # a failure shows its start
        res["stdout"] = out.decode("utf-8", "replace")
        proto.send(("result", res))
        pending = job["early_exit"]
    if pending:
        proto.recv()


def _watch_stdin_test(proto: Protocol, child: Child, deadline: float, pending: bool):
    """Wait for the test's report and exit, reading the judge's answer if it comes meanwhile.
    Returns (event, report, still pending, go on)."""
    rep = None
    while True:
        event = child.next_event(deadline, proto.rfd if pending else None)
        if event == "watch":
            pending = False
            if not proto.recv():
                return event, rep, False, False
            continue
        if event == "report" and rep is None:
            rep = child.pop_report()
            continue  # then the exit that follows the report
        if event == "report":
            event = "exit"  # a candidate writing extra reports: the first one counts
        return event, rep, pending, True


def run_multi_job(proto: Protocol, job: dict) -> None:
    """Call or functional tests: one child runs them in turn, one report per test. A child that
    dies (time limit, crash) takes its test with it; a fresh child goes on from the next one."""
    timeout = job["limits"]["timeout_s"]
    n, start = len(job["tests"]), 0
    while start < n:
        tests = job["tests"][start:]
        cpu = int(timeout * len(tests)) + 2

        def target(tests=tests) -> None:
            harness.run_tests(
                job["code"],
                PRELUDE,
                job["kind"],
                tests,
                job.get("fn_name"),
                job["limits"]["max_output_bytes"],
            )

        t0 = time.monotonic()
        child = fork_child(job, cpu, b"", target)
        try:
            start = _stream_reports(proto, job, child, start, n, t0)
        finally:
            child.kill()
            child.close()


def _stream_reports(proto: Protocol, job: dict, child: Child, start: int, n: int, t0: float) -> int:
    """Forward the child's reports; the index to restart from (n when done or told to stop)."""
    timeout = job["limits"]["timeout_s"]
    for i in range(start, n):
        event = child.next_event(t0 + timeout)
        rep = child.pop_report() if event == "report" else None
        if rep is not None and rep.get("i") != i - start:
            rep = {"ok": False, "exc": "BadReport", "mem": False}
        res = outcome(child, event, rep)
        if event == "exit" and res["status"] == "ok":
            res = {**res, "status": "runtime_error", "detail": "the program exited before this test"}
        res.update(i=i, t=time.monotonic() - t0)
        if res["status"] == "ok" and job["kind"] == "call":
            res["value"] = str(rep.get("value"))
        t0 = time.monotonic()
        if not _send_result(proto, job, res):
            return n
        if event != "report":
            return i + 1
    return n


def _send_result(proto: Protocol, job: dict, res: dict) -> bool:
    """Send one test's result; with early exit the judge answers whether to go on."""
    proto.send(("result", res))
    if job["early_exit"]:
        return bool(proto.recv())
    return True


def serve(proto: Protocol) -> None:
    seq = 0
    while True:
        job = proto.recv()
        if job is None:
            return
        seq += 1
        job["dir"] = _candidate_dir(seq, job.get("source", ""))
        job["code"] = marshal.loads(job["code"])
        if job["kind"] == "functional":
            job["tests"] = [(compile(src, "test.py", "exec"), calls) for src, calls in job["tests"]]
        try:
            if job["kind"] == "stdin":
                run_stdin_job(proto, job)
            else:
                run_multi_job(proto, job)
        finally:
            finish_uid()
            shutil.rmtree(job["dir"], ignore_errors=True)
        proto.send(("done", None))


def _reset_dir(path: str) -> None:
    with os.scandir(path) as entries:
        for e in entries:
            if e.name == "main.py":
                continue
            if e.is_dir(follow_symlinks=False):
                shutil.rmtree(e.path, ignore_errors=True)
            else:
                os.unlink(e.path)


def _candidate_dir(seq: int, source: str) -> str:
    path = os.path.join(SETUP["base"], f"c{seq}")
    os.mkdir(path, 0o700)
    with open(os.path.join(path, "main.py"), "w") as f:
        f.write(source)  # for tracebacks and programs that read their own file
    if SETUP.get("uid") is not None:
        os.chown(path, SETUP["uid"], SETUP["uid"])
        os.chown(os.path.join(path, "main.py"), SETUP["uid"], SETUP["uid"])
    return path


def setup(cfg: dict) -> None:
    SETUP.update(cfg)
    sandbox.die_with_parent()
    if cfg["sandbox"]:
        readable = sandbox.readable_roots()
        if cfg["mode"] == "root":
            sandbox.unshare(sandbox.CLONE_NEWNET | sandbox.CLONE_NEWIPC)
            sandbox.expose([r for r in readable if r.startswith("/") and os.path.exists(r)])
        else:
            sandbox.enter_user_namespace()
        sandbox.disk_quota(cfg["base"], cfg["disk_mb"])
        sandbox.landlock_restrict([cfg["base"]], readable)
    sandbox.become_subreaper()
    if cfg.get("uid") is not None:
        sandbox.kill_uid(cfg["uid"])  # whatever a worker before this one (killed from outside) left running
    _reset_dir(cfg["base"])  # and the folders it left
    sys.dont_write_bytecode = True
    for name in PREIMPORTS:
        __import__(name)
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
        setup(json.loads(sys.argv[1]))
    except Exception as e:
        proto.send(("error", f"{type(e).__name__}: {e}"))
        return
    proto.send(("ready", os.getpid()))
    serve(proto)


if __name__ == "__main__":
    main()
