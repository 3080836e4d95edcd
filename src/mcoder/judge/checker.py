"""The trusted side of a functional test, in a process of its own (a child of the checks worker).

The check's source (HumanEval's ``check(candidate)``, a LeetCode assert block) is compiled and
run here, never in the candidate's process nor in the worker it is forked from. ``candidate``
(and ``Solution().name``, and the function's own name) stand for a proxy: calling it sends the
arguments as plain data to the candidate's process and returns what comes back, rebuilt from
plain data only (``plain.decode``). So no object of the candidate's making (an always-equal
``__eq__``, a patched builtin, a frame to read the expected value from) ever reaches the check,
and the candidate cannot see the check's source or its expected values: they are not in its
memory. The result of each test is decided here and sent to the worker on fd 3.
"""

from __future__ import annotations

import json
import os
import sys
import traceback

from mcoder.judge import harness, plain

REPORT_FD, JOB_FD, FDS_FD = 3, 4, 5  # reports out; the job in; the candidate's pipes come on the socket
CALL = {"out": -1, "in": -1}
MAX_REPLY = 64 << 20  # a reply longer than this is not read (the candidate's output cap is lower)


class CandidateError(Exception):
    """The candidate raised (its exception's name is the message); a check may expect this."""


class CandidateGone(BaseException):
    """The candidate's process ended (killed at a limit, or exited): no check can go on."""


class _Proxy:
    def __init__(self, name: str, limit: int):
        self.name, self.limit = name, limit

    def __call__(self, *args, **kwargs):
        try:
            request = plain.encode(("call", self.name, args, kwargs))
        except plain.NotPlain as e:
            raise TypeError(f"the check passes something that is not plain data: {e}") from None
        try:
            harness.write_frame(CALL["out"], request)
        except OSError:
            raise CandidateGone from None
        frame = harness.read_frame(CALL["in"], self.limit)
        if frame is None:
            raise CandidateGone
        try:
            kind, *rest = plain.decode(frame)
        except (plain.NotPlain, ValueError, TypeError):
            raise _NotPlainReply("a reply that is not plain data") from None
        if kind == "ok" and len(rest) == 1:
            return rest[0]
        if kind == "notplain":
            raise _NotPlainReply(f"the function returned a {str(rest[0])[:100]}, not plain data")
        name = str(rest[0])[:100] if rest else "error"
        if len(rest) > 1 and rest[1] is True or name == "MemoryError":
            raise _CandidateOutOfMemory
        raise CandidateError(name)


class _NotPlainReply(Exception):
    pass


class _CandidateOutOfMemory(BaseException):
    pass


def _namespace(fn_name: str | None, limit: int) -> dict:
    ns = dict(harness.prelude())
    ns["__name__"] = "check"

    class Solution:
        def __getattr__(self, name: str):
            if name.startswith("__"):
                raise AttributeError(name)
            return _Proxy(name, limit)

    ns["Solution"] = Solution
    if fn_name:
        ns[fn_name] = _Proxy(fn_name, limit)
    return ns


def serve_jobs() -> None:
    """The check child's loop (already in the sandbox): read a job from the worker, take the
    candidate's pipes, run the checks, say "end", and wait for the next job."""
    import pickle
    import socket

    sock = socket.socket(fileno=FDS_FD)
    while True:
        frame = harness.read_frame(JOB_FD, 1 << 31)
        if frame is None:
            os._exit(0)
        tests, fn_name, early_exit = pickle.loads(frame)  # from the worker, not the candidate
        _, fds, _, _ = socket.recv_fds(sock, 1, 2)
        CALL["out"], CALL["in"] = fds
        try:
            run_checks(tests, fn_name, early_exit)
        finally:
            for fd in fds:
                os.close(fd)
        _report({"end": True})


def run_checks(tests: list, fn_name: str | None, early_exit: bool) -> None:
    """Run each (source, calls_check) check; report ``{"status": ...}`` per test on fd 3."""
    limit = MAX_REPLY
    for source, calls_check in tests:
        ns = _namespace(fn_name, limit)
        try:
            exec(compile(source, "test.py", "exec"), ns)  # noqa: S102 - the problem's check, on purpose
            if not calls_check:
                ns["check"](_Proxy(fn_name, limit))
            rep = {"status": "ok"}
        except CandidateGone:
            rep = {"status": "gone", "detail": "the program ended during the check"}
        except _CandidateOutOfMemory:
            rep = {"status": "memory_limit", "detail": "MemoryError"}
        except CandidateError as e:
            rep = {"status": "runtime_error", "detail": str(e), "stderr": f"the program raised {e}\n"}
        except _NotPlainReply as e:
            rep = {"status": "wrong_answer", "detail": str(e)}
        except AssertionError as e:
            rep = {"status": "wrong_answer", "detail": "AssertionError", "stderr": _tail(e)}
        except BaseException as e:  # noqa: BLE001 - the check itself broke on what came back
            rep = {"status": "wrong_answer", "detail": type(e).__name__, "stderr": _tail(e)}
        _report(rep)
        if early_exit and rep["status"] != "ok":
            break


def _report(rep: dict) -> None:
    line = (json.dumps(rep) + "\n").encode()
    view = memoryview(line)
    while view:
        view = view[os.write(REPORT_FD, view) :]


def _tail(e: BaseException) -> str:
    text = "".join(traceback.format_exception(type(e), e, e.__traceback__, limit=-1))
    return text[-1000:]


del sys
