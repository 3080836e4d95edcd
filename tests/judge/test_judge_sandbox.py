"""The real sandbox: every stdin idiom is accepted, and every hostile program gets its verdict
while nothing outside it changes (files, listeners, the judge, the next candidate)."""

from __future__ import annotations

import ast
import os
import socket
import tempfile
import textwrap
from pathlib import Path

import pytest

from conftest import judge_config, judge_program
from mcoder.judge import sandbox
from mcoder.judge.config import JudgeConfig
from mcoder.judge.core import Judge
from mcoder.judge.harness import CANDIDATE_ENV
from mcoder.records import Test

SUM_TESTS = [Test("3\n1 2 3\n", "6\n"), Test("2\n10 -4\n", "6\n"), Test("1\n7\n", "7\n")]


def _judge(**limits) -> Judge:
    return Judge(judge_config(workers=2, memory_mb=256, **limits))


@pytest.fixture(scope="module")
def hostile_judge():
    with _judge(timeout_s=1.0, max_processes=16, max_output_mb=1.0) as j:
        yield j


def run(judge: Judge, code: str, tests=SUM_TESTS, **problem):
    return judge_program(judge, code, tests, **problem)


def assert_alive(judge: Judge) -> None:
    """The workers are up and the next candidate is judged right."""
    assert all(w.proc.poll() is None for w in judge.pool.workers)
    for _ in judge.pool.workers:  # each worker once (with two free workers, two runs may hit either)
        v = run(judge, "input(); print(sum(map(int, input().split())))")
        assert v.status == "accepted", v.first_failure


def leftover_processes(judge: Judge) -> list[int]:
    """Processes below a worker (candidates come to it as orphans) or under a worker's user id."""
    every = judge.pool.workers  # (a checks worker keeps one check child ready: not a candidate's)
    workers = {w.proc.pid for w in every if w.proc is not None}
    uids = {w.uid for w in every} - {None}
    parent, owner = {}, {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                parent[int(d.name)] = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
                owner[int(d.name)] = d.stat().st_uid
            except (FileNotFoundError, ProcessLookupError, IndexError):
                pass

    def below_worker(pid: int) -> bool:
        while pid > 1:
            pid = parent.get(pid, 0)
            if pid in workers:
                return True
        return False

    return [pid for pid in parent if below_worker(pid) or owner.get(pid) in uids]


# ---------------------------------------------------------------- every input idiom

IDIOMS = {
    "input": "n = int(input())\nprint(sum(map(int, input().split())))",
    "stdin_read": "import sys\ndata = sys.stdin.read().split()\nprint(sum(map(int, data[1:])))",
    "stdin_buffer": "import sys\ndata = sys.stdin.buffer.read().split()\nprint(sum(map(int, data[1:])))",
    "buffer_readline": "import sys\ninput = sys.stdin.buffer.readline\nint(input())\nprint(sum(map(int, input().split())))",
    "for_line": "import sys\nlines = [l for l in sys.stdin]\nprint(sum(map(int, lines[1].split())))",
    "open0": "data = open(0).read().split()\nprint(sum(map(int, data[1:])))",
    "readline_after_read": "import sys\nn = int(sys.stdin.readline())\nrest = sys.stdin.read()\nprint(sum(map(int, rest.split())))",
    "global_module": "total = 0\ndef add(x):\n    global total\n    total += x\ninput()\nfor v in input().split():\n    add(int(v))\nprint(total)",
    "main_guard": "def main():\n    input()\n    print(sum(map(int, input().split())))\n\nif __name__ == '__main__':\n    main()",
    "sys_exit_after_print": "import sys\ninput()\nprint(sum(map(int, input().split())))\nsys.exit()",
    "exit_after_print": "input()\nprint(sum(map(int, input().split())))\nexit(0)",
    "sys_exit_zero_in_function": "import sys\ndef main():\n    input()\n    print(sum(map(int, input().split())))\n    sys.exit(0)\nmain()",
    "threading_big_stack": textwrap.dedent("""\
        import sys, threading
        sys.setrecursionlimit(1 << 20)
        threading.stack_size(1 << 26)
        def depth(n):
            return 0 if n == 0 else 1 + depth(n - 1)
        def main():
            input()
            xs = list(map(int, input().split()))
            assert depth(200000) == 200000
            print(sum(xs))
        threading.Thread(target=main).start()
        """),
    "deep_recursion_main": textwrap.dedent("""\
        import sys
        sys.setrecursionlimit(10 ** 6)
        def s(xs, i):
            return 0 if i == len(xs) else xs[i] + s(xs, i + 1)
        input()
        xs = list(map(int, input().split()))
        s(list(range(50000)), 0)
        print(s(xs, 0))
        """),
    "print_sep_end": "input()\nxs = input().split()\nprint(sum(map(int, xs)), end='\\n', flush=True)",
    "stdout_write": "import sys\ninput()\nsys.stdout.write(str(sum(map(int, input().split()))) + '\\n')",
    "os_write_fd1": "import os\ninput()\nos.write(1, (str(sum(map(int, input().split()))) + '\\n').encode())",
}


@pytest.mark.parametrize("name", sorted(IDIOMS))
def test_every_input_idiom_is_accepted(judge, name):
    v = run(judge, IDIOMS[name])
    assert v.status == "accepted", v.first_failure
    assert v.tests_passed == 3 and v.reward == 1.0


def test_files_in_its_own_folder_and_a_private_one_each_time(judge):
    code = """\
        import os
        assert not os.path.exists('note.txt')  # nothing left by the test before
        with open('note.txt', 'w') as f:
            f.write(input())
        print(sum(map(int, input().split())))
        """
    assert run(judge, code).status == "accepted"


# ---------------------------------------------------------------- hostile programs


@pytest.mark.heavy
def test_infinite_loop_and_sleep_are_time_limits(hostile_judge):
    assert run(hostile_judge, "while True:\n    pass").status == "time_limit"
    assert run(hostile_judge, "import time\ntime.sleep(60)").status == "time_limit"
    assert_alive(hostile_judge)


@pytest.fixture(scope="module")
def roomy_judge():
    """Limits far above what a hog needs to reach the memory limit: touching 256 MB is ~65,000
    page faults (most of a second of CPU time on a slow virtual machine), and under heavy load
    hostile_judge's 3 s wall backstop or its 1 s of CPU could end it first, as a time limit."""
    with _judge(timeout_s=20.0, wall_factor=10.0) as j:
        yield j


def test_memory_hog_is_a_memory_limit(roomy_judge):
    v = run(roomy_judge, "xs = []\nwhile True:\n    xs.append(bytearray(1 << 24))")
    assert v.status == "memory_limit", v.first_failure
    assert_alive(roomy_judge)


def test_fork_bomb_gets_a_verdict_and_leaves_no_process(hostile_judge):
    code = """\
        import os
        while True:
            try:
                os.fork()
            except OSError:
                pass
        """
    v = run(hostile_judge, code)
    assert v.status in ("time_limit", "runtime_error"), v
    assert leftover_processes(hostile_judge) == []
    assert_alive(hostile_judge)


def test_a_daemon_left_behind_is_killed(hostile_judge):
    code = """\
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(600)
            os._exit(0)
        input()
        print(sum(map(int, input().split())))
        """
    assert run(hostile_judge, code).status == "accepted"
    assert leftover_processes(hostile_judge) == []


@pytest.mark.parametrize("unsafe", [False, True])
def test_a_daemon_is_killed_with_or_without_the_sandbox(hostile_judge, unsafe):
    # the program ends once the daemon has printed its pid (a pipe says so, not a sleep: under
    # load a daemon may take longer than any fixed wait to get there)
    code = """\
        import os, sys, time
        r, w = os.pipe()
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                print(os.getpid(), flush=True)
                os.write(w, b"x")
                time.sleep(600)
            os._exit(0)
        os.close(w)
        os.read(r, 1)
        """
    if unsafe:
        with Judge(JudgeConfig(workers=1, timeout_s=2.0, unsafe_no_sandbox=True)) as j:
            v = run(j, code, tests=[Test("", "")])
        pid = int(v.first_failure["got"].split()[0])
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    else:  # the pid it printed is one of its own PID namespace; the host side must show nothing
        v = run(hostile_judge, code, tests=[Test("", "")])
        assert int(v.first_failure["got"].split()[0]) < 100
        assert leftover_processes(hostile_judge) == []


def test_stdout_flood_is_stopped(hostile_judge):
    v = run(hostile_judge, "while True:\n    print('x' * 4096)")
    assert v.status == "runtime_error" and "output limit" in v.first_failure["detail"]
    assert_alive(hostile_judge)


def test_killing_its_parent_or_the_judge_fails(hostile_judge):
    # the judge's pid does not exist in the candidate's PID namespace; its parent is outside it
    # (getppid() is 0 there, and kill(0) reaches its own process group only)
    code = f"import os\ninput()\nprint(sum(map(int, input().split())))\nos.kill({os.getpid()}, 9)"
    v = run(hostile_judge, code)
    assert v.status == "runtime_error" and "ProcessLookupError" in v.first_failure["stderr"], v
    code = "import os\ninput()\nprint(sum(map(int, input().split())))\nprint(os.getppid())\nos.kill(os.getppid(), 9)"
    assert run(hostile_judge, code).status != "accepted"
    # kill(-1) reaches only processes of the candidate's own namespace: here there are none
    code = "import os\ninput()\nprint(sum(map(int, input().split())))\nos.kill(-1, 9)"
    v = run(hostile_judge, code)
    assert v.status == "runtime_error" and "ProcessLookupError" in v.first_failure["stderr"]
    assert_alive(hostile_judge)


def test_runs_as_an_unprivileged_user_with_a_scrubbed_environment(hostile_judge, monkeypatch):
    monkeypatch.setenv("MCODER_TEST_TOKEN", "s3cret-token")  # the judge's own environment
    code = "import os\nprint(os.getuid(), os.geteuid(), sorted(os.environ))"
    v = run(hostile_judge, code, tests=[Test("", "nothing\n")])
    uid, euid, names = v.first_failure["got"].split(" ", 2)
    assert int(uid) != 0 and int(euid) != 0
    assert "MCODER_TEST_TOKEN" not in names and "s3cret" not in v.first_failure["got"]
    assert set(ast.literal_eval(names)) == {"HOME", "TMPDIR", *CANDIDATE_ENV}


def test_no_file_descriptor_of_the_judge_is_inherited(hostile_judge):
    code = "import os\nopen_fds = []\nfor fd in range(4096):\n    try:\n        os.fstat(fd)\n        open_fds.append(fd)\n    except OSError:\n        pass\nprint(open_fds)"
    # the tests of a rollout share a process: 3 and 4 are its request and report pipes
    v = run(hostile_judge, code, tests=[Test("", "[0, 1, 2, 3, 4]\n")] * 3)
    assert v.status == "accepted", v.first_failure
    with _judge(timeout_s=1.0, process_per_test=True) as per_test:  # a process per test: 3 is its report pipe
        v = run(per_test, code, tests=[Test("", "[0, 1, 2, 3]\n")] * 3)
    assert v.status == "accepted", v.first_failure


@pytest.fixture
def outside_dir():
    """A world-writable folder every user can reach (under the system temp dir, not 0700 tmp_path)."""
    d = Path(tempfile.mkdtemp(prefix="mcoder-judge-test-"))
    d.chmod(0o777)
    (d / "victim.txt").write_text("original")
    (d / "victim.txt").chmod(0o666)
    (d / "secret.txt").write_text("expected answers")
    (d / "secret.txt").chmod(0o644)
    yield d
    for f in d.iterdir():
        f.unlink()
    d.rmdir()


def test_writes_outside_its_folder_are_refused(hostile_judge, outside_dir):
    victim, new = outside_dir / "victim.txt", outside_dir / "new.txt"
    for code in (
        f"open({str(victim)!r}, 'w').write('pwned')",
        f"open({str(victim)!r}, 'a').write('pwned')",
        f"open({str(new)!r}, 'w').write('pwned')",
        f"import os\nos.remove({str(victim)!r})",
        f"import os\nos.truncate({str(victim)!r}, 0)",
    ):
        v = run(hostile_judge, code, tests=[Test("", "")])
        assert v.status == "runtime_error", (code, v)
        assert "PermissionError" in v.first_failure["stderr"], v.first_failure
    assert victim.read_text() == "original"
    assert sorted(p.name for p in outside_dir.iterdir()) == ["secret.txt", "victim.txt"]


def test_filling_the_disk_stops_at_the_quota_in_memory(hostile_judge):
    code = "i = 0\nwhile True:\n    with open(f'f{i}', 'wb') as f:\n        f.write(b'x' * (1 << 20))\n    i += 1"
    v = run(hostile_judge, code, tests=[Test("", "")])
    assert v.status == "runtime_error" and "No space left" in v.first_failure["stderr"], v.first_failure
    # the files lived in the worker's own tmpfs: the judge's view of its folders stays empty
    assert all(list(w.base.iterdir()) == [] for w in hostile_judge.pool.workers)
    assert_alive(hostile_judge)


def test_files_outside_python_are_unreadable(hostile_judge, outside_dir):
    v = run(
        hostile_judge, f"print(open({str(outside_dir / 'secret.txt')!r}).read())", tests=[Test("", "x\n")]
    )
    assert v.status == "runtime_error" and "PermissionError" in v.first_failure["stderr"]


def test_no_network_even_to_localhost(hostile_judge):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.setblocking(False)
        port = server.getsockname()[1]
        code = f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=0.5)"
        v = run(hostile_judge, code, tests=[Test("", "")])
        assert v.status == "runtime_error"
        assert "unreachable" in v.first_failure["stderr"] or "refused" in v.first_failure["stderr"]
        with pytest.raises(BlockingIOError):
            server.accept()  # nobody connected
    assert_alive(hostile_judge)


def test_correct_output_followed_by_a_crash_fails(hostile_judge):
    v = run(hostile_judge, "input()\nprint(sum(map(int, input().split())))\nraise ValueError('late')")
    assert v.status == "runtime_error" and "ValueError" in v.first_failure["stderr"]
    assert v.first_failure["got"] == "6\n"  # what it printed before the crash is shown
    v = run(hostile_judge, "import sys\ninput()\nprint(sum(map(int, input().split())))\nsys.exit(3)")
    assert v.status == "runtime_error"


def test_a_crash_in_a_thread_is_a_runtime_error(hostile_judge):
    code = "import threading\ndef f():\n    raise RuntimeError('boom')\nt = threading.Thread(target=f)\nt.start()\nt.join()\nprint(6)"
    v = run(hostile_judge, code, tests=[Test("", "6\n")])
    assert v.status == "runtime_error" and "boom" in v.first_failure["stderr"]


def test_namespace_probe_never_clones_from_the_calling_process(monkeypatch):
    """The start-up probe's raw clone() runs in a plain fork child, not in the judge's own process:
    cloned from a process with other threads (a trainer, an engine), a child can block forever on a
    lock one of them held (a Judge started beside two training loops hung there). The clone is
    replaced here by one that reports the pid it ran in, through a pipe, and fails."""
    read, write = os.pipe()

    def reporting_clone() -> int:
        os.write(write, f"{os.getpid()}\n".encode())
        raise OSError("not cloning in this test")

    monkeypatch.setattr(sandbox, "fork_into_namespaces", reporting_clone)
    assert sandbox._namespaces_per_candidate_work() is False  # the failed clone reads as "missing"
    os.close(write)
    with os.fdopen(read) as f:
        ran_in = [int(x) for x in f.read().split()]
    assert ran_in and os.getpid() not in ran_in


# ---------------------------------------------------------------- a program that signals itself

SOLVE = "input(); print(sum(map(int, input().split())), flush=True)"


@pytest.mark.parametrize(
    ("ending", "detail"),
    [
        ("os.kill(os.getpid(), signal.SIGKILL)", "killed by SIGKILL"),  # the way out that skips teardown
        ("os.kill(os.getpid(), signal.SIGTERM)", "killed by SIGTERM"),
        ("os.kill(0, signal.SIGKILL)", "killed by SIGKILL"),  # its process group
        ("os.killpg(os.getpgrp(), signal.SIGUSR1)", "killed by SIGUSR1"),
        ("signal.raise_signal(signal.SIGKILL)", "killed by SIGKILL"),
        ("signal.pthread_kill(threading.get_ident(), signal.SIGALRM)", "killed by SIGALRM"),
    ],
)
def test_a_program_that_kills_itself_crashed(judge, ending, detail):
    """The candidate is process 1 of its namespace, which the kernel spares its own signals: it
    went on after killing itself (a right answer then accepted, wrong output a wrong answer).
    Anywhere else it is dead: a runtime error, whatever it printed before."""
    v = run(judge, f"import os, signal, threading\n{SOLVE}\n{ending}\nprint('still here')")
    assert v.status == "runtime_error" and v.first_failure["detail"] == detail, v.first_failure


def test_a_signal_a_program_handles_or_ignores_does_not_end_it(judge):
    code = f"""\
        import os, signal
        seen = []
        signal.signal(signal.SIGUSR1, lambda *a: seen.append(1))
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        os.kill(os.getpid(), signal.SIGUSR1)
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGCHLD)  # ignored by default
        os.kill(os.getpid(), 0)  # only asks whether it exists
        if seen:
            {SOLVE}
        """
    v = run(judge, code)
    assert v.status == "accepted", v.first_failure


def test_a_call_test_program_that_kills_itself_crashed(judge):
    code = """\
        import os, signal
        def f(x):
            os.kill(os.getpid(), signal.SIGKILL)
            return x
        """
    v = run(judge, code, tests=[Test("1", "1", "call")], fn_name="f")
    assert v.status == "runtime_error", v.first_failure


def test_the_judges_own_kills_are_still_its_limits(hostile_judge):
    assert run(hostile_judge, "while True: pass").status == "time_limit"
    assert run(hostile_judge, "x = bytearray(1 << 30)").status == "memory_limit"
