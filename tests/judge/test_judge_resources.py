"""What a candidate gets of the machine, tried as an attacker would, with real programs in the real
sandbox: its CPU (a slot of its own; the CPU of its whole tree counted, also when it ends early;
no time limit for time it waited for a CPU), the libraries it sees (a contest platform's, nothing
else of the host's Python) and the system calls it may not make."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import judge_config, judge_program
from mcoder.judge import sandbox
from mcoder.judge.core import Judge
from mcoder.records import Problem, Rollout, Test

ANSWER = [Test("4\n", "8\n")]


def _judge(**kw) -> Judge:
    return Judge(judge_config(**{"workers": 1, "memory_mb": 400, "cache": False, **kw}))


def _rollout(rid: str, code: str, pid: str = "p") -> Rollout:
    return Rollout(id=rid, problem_id=pid, completion=f"```python\n{textwrap.dedent(code)}\n```")


def run(judge: Judge, code: str, tests=ANSWER, **problem):
    return judge_program(judge, code, tests, **problem)


def burn_cpu(seconds: float) -> str:
    """A program that spends ``seconds`` of its own CPU time, then prints twice its input."""
    return f"""\
        import time
        n = int(input())
        end = time.process_time() + {seconds}
        while time.process_time() < end:
            pass
        print(2 * n)
        """


# ---------------------------------------------------------------- CPU: the whole tree, at its end too


@pytest.mark.heavy
def test_a_tree_over_the_cpu_limit_in_less_wall_time_is_a_time_limit():
    # twelve children spin, each in a session of its own (a scheduling group of its own where the
    # kernel groups by session), and stop 1.5 s after the start, under the 2 s limit; the program
    # answers only when they got more than 2 s of CPU together. The clock used to look at CPU time
    # only once the wall clock reached the limit, and never at the exit: this was accepted. Run
    # without the slot's one-CPU quota (which alone would keep the CPU time under the wall time).
    code = """\
        import os, time
        t0 = time.monotonic()
        n = int(input())
        for _ in range(12):
            if os.fork() == 0:
                os.setsid()
                while time.monotonic() < t0 + 1.5:
                    pass
                os._exit(0)
        for _ in range(12):
            os.wait()
        t = os.times()
        cpu = t.children_user + t.children_system
        print(2 * n if cpu > 2.0 else f"only {cpu:.2f} s of CPU")
        """
    with _judge(timeout_s=2.0, slot_cpus=0) as judge:
        groups = judge.pool.workers[0].cgroups or {}
        if "cpu" in groups:  # as on a many-core host: the slot's share outweighs the machine's other work
            Path(groups["cpu"], "cpu.shares").write_text("262144")
        v = run(judge, code)
        assert v.status != "accepted", v.first_failure
        if v.status == "wrong_answer":
            pytest.skip("the machine gave the tree less than 2 s of CPU in 1.5 s: nothing to catch")
        assert v.status == "time_limit", v.first_failure
        assert run(judge, burn_cpu(0.3)).status == "accepted"  # a tree under the limit passes


def test_a_tree_gets_one_cpu_at_once():
    """The slot's quota: two busy processes together get the CPU time of one (the machine may give
    them less; never, beyond noise, more)."""
    code = """\
        import os, time
        n = int(input())
        r, w = os.pipe()
        t0 = time.monotonic()
        for _ in range(2):
            if os.fork() == 0:
                end = time.monotonic() + 1.0
                while time.monotonic() < end:
                    pass
                os.write(w, f"{time.process_time():.3f}\\n".encode())
                os._exit(0)
        os.close(w)
        os.wait(), os.wait()
        cpu = sum(float(x) for x in os.read(r, 100).split())
        wall = time.monotonic() - t0
        print(2 * n if cpu < 1.3 * wall else f"{cpu:.2f} s of CPU in {wall:.2f} s")
        """
    with _judge(timeout_s=5.0) as judge:
        if not judge.pool.workers[0].cgroups or not ({"cpu", "v2"} & set(judge.pool.workers[0].cgroups)):
            pytest.skip("no cgroup CPU controller for the judge here")
        v = run(judge, code)
        assert v.status == "accepted", v.first_failure


@pytest.mark.heavy
def test_a_neighbour_forking_busy_processes_does_not_change_a_verdict():
    # each attacker forks 30 processes that spin, each in its own session, and spins itself; six of
    # them in a row keep the other worker's slot busy for about six seconds. The honest program
    # needs 0.4 s of CPU per test: alone it passes; beside them, with one CPU share per process
    # rather than per slot, it got a sixteenth of the machine and hit the wall-clock backstop.
    attacker = """\
        import os
        for _ in range(30):
            if os.fork() == 0:
                os.setsid()
                while True:
                    pass
        while True:
            pass
        """
    honest = burn_cpu(0.4)
    tests = [Test(f"{k}\n", f"{2 * k}\n") for k in (1, 2, 3)]
    problems = {"p": Problem(id="p", source="test", question="", tests=tests)}
    rollouts = [_rollout(f"attack{i}", attacker) for i in range(6)]
    rollouts.insert(2, _rollout("honest", honest))
    with _judge(workers=2, timeout_s=1.0, max_processes=32) as judge:
        verdicts = {v.rollout_id: v for v in judge.judge(problems, rollouts)}
    assert verdicts["honest"].status == "accepted", verdicts["honest"].first_failure
    assert all(verdicts[f"attack{i}"].status == "time_limit" for i in range(6))


@contextlib.contextmanager
def burners_on_cpu0(n: int):
    """``n`` processes spinning on CPU 0 only."""
    code = "import os\nos.sched_setaffinity(0, {0})\nwhile True:\n    pass"
    # each in a session of its own: where the kernel groups processes by session (autogroup),
    # one session's many burners would weigh as one
    procs = [subprocess.Popen([sys.executable, "-c", code], start_new_session=True) for _ in range(n)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


@pytest.mark.heavy
def test_time_spent_waiting_for_a_cpu_is_not_a_time_limit():
    # the worker and its candidates are held to CPU 0, where four other processes spin: the program
    # gets about a fifth of a CPU, so its 0.7 s of CPU take about 3.5 s of wall time, past the 3 s
    # backstop (a 1 s limit, x3). It was runnable all along, never asleep: not a time limit.
    if 0 not in os.sched_getaffinity(0):
        pytest.skip("CPU 0 is not ours to use")
    with _judge(timeout_s=1.0) as judge:
        os.sched_setaffinity(judge.pool.workers[0].proc.pid, {0})
        with burners_on_cpu0(4):
            v = run(judge, burn_cpu(0.7))
            assert v.status == "accepted", v.first_failure
            # and a program that sleeps is still stopped by the backstop, load or not
            assert run(judge, "import time\ntime.sleep(30)").status == "time_limit"


IDLE_SLEEPER = """\
    import ctypes, os, struct, time
    # the lowest priority there is, on the busiest CPU: every wake-up then waits for that CPU
    # (all of it was counted as load, and the backstop waited it out up to 4 times)
    attempts = [
        lambda: os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0)),
        lambda: os.setpriority(os.PRIO_PROCESS, 0, 19),
        lambda: os.nice(19),
        lambda: os.sched_setaffinity(0, {0}),
    ]
    nr = {"x86_64": 314, "aarch64": 274}.get(os.uname().machine)
    if nr is not None:  # sched_setattr(0, {size 48, SCHED_IDLE}, 0), which Python does not wrap
        attr = ctypes.create_string_buffer(struct.pack("IIQiIQQQ", 48, 5, 0, 0, 0, 0, 0, 0))
        libc = ctypes.CDLL(None, use_errno=True)
        attempts.append(lambda: libc.syscall(nr, 0, attr, 0) == 0 or (_ for _ in ()).throw(OSError(ctypes.get_errno(), "")))
    refused = 0
    for attempt in attempts:
        try:
            attempt()
        except PermissionError:
            refused += 1
        except OSError as e:
            refused += e.errno == 1
    print("refused", refused, "of", len(attempts), flush=True)
    mode = input()
    while mode == "sleep":
        time.sleep(0.001)
    """


def test_a_program_may_not_change_its_own_scheduling():
    with _judge(timeout_s=5.0) as judge:
        v = run(judge, IDLE_SLEEPER, tests=[Test("stop\n", "refused 5 of 5\n")])
    assert v.status == "accepted", v.first_failure


@pytest.mark.heavy
def test_a_sleeper_at_idle_priority_on_a_busy_cpu_is_stopped_at_the_plain_backstop():
    # it sets itself to SCHED_IDLE, pins itself to the CPU where four processes spin, and sleeps a
    # millisecond at a time: before, each wake-up waited for that CPU, and the backstop credited
    # the wait as load: 12 s at a 1 s limit (x3, x4) for 0.1 s of CPU
    if 0 not in os.sched_getaffinity(0):
        pytest.skip("CPU 0 is not ours to use")
    with _judge(timeout_s=1.0) as judge:
        os.sched_setaffinity(judge.pool.workers[0].proc.pid, {0})
        with burners_on_cpu0(4):
            v = run(judge, IDLE_SLEEPER, tests=[Test("sleep\n", "")])
            assert v.status == "time_limit" and v.elapsed_s < 4.5, (v.status, v.elapsed_s)
            v = run(judge, "import time\nwhile True:\n    time.sleep(0.0001)")  # no priority games
            assert v.status == "time_limit" and v.elapsed_s < 4.5, (v.status, v.elapsed_s)
            assert run(judge, burn_cpu(0.7)).status == "accepted"  # a busy program still gets its wait back


# ---------------------------------------------------------------- libraries: a platform's, nothing else


ATCODER_NUMPY = """\
    # a knapsack over numpy arrays, as AtCoder programs write them
    import sys
    import numpy as np
    data = sys.stdin.buffer.read().split()
    n, cap = int(data[0]), int(data[1])
    dp = np.zeros(cap + 1, dtype=np.int64)
    for i in range(n):
        w, v = int(data[2 + 2 * i]), int(data[3 + 2 * i])
        dp[w:] = np.maximum(dp[w:], dp[:-w] + v)  # every weight is at least 1
    print(int(dp.max()))
    """
KNAPSACK = [Test("3 8\n3 30\n4 50\n5 60\n", "90\n"), Test("1 5\n6 10\n", "0\n")]


def test_a_numpy_program_is_accepted_and_nothing_else_of_the_hosts_python_is_there():
    try:
        import numpy
    except ImportError:
        pytest.skip("numpy is not installed")
    with _judge(timeout_s=20.0, memory_mb=1024) as judge:  # numpy's import takes CPU on a loaded machine
        v = run(judge, ATCODER_NUMPY, tests=KNAPSACK)
        assert v.status == "accepted", v.first_failure
        # installed beside the judge, but no contest platform's: hidden
        v = run(judge, "import yaml", tests=KNAPSACK)
        assert v.status == "runtime_error" and "ModuleNotFoundError" in v.first_failure["stderr"]
        # nor can it be reached by path: neither the judge's own packages nor the system Python's
        folders = [os.path.dirname(os.path.dirname(numpy.__file__)), "/usr/lib/python3/dist-packages"]
        folders += [str(p) for p in Path("/usr/lib").glob("python3*")]
        code = f"""\
            import os, sys
            seen = []
            for folder in {folders!r}:
                try:
                    seen.append((folder, os.listdir(folder)[:3]))
                except OSError:
                    pass
            sys.path[:0] = {folders!r}
            try:
                import yaml
                seen.append(yaml.__file__)
            except ImportError:
                pass
            print(8 if not seen else seen)
            """
        v = run(judge, code)
        assert v.status == "accepted", v.first_failure


@pytest.mark.slow  # scipy, sympy, pandas, ...: seconds of imports
def test_every_platform_library_installed_here_imports_in_the_sandbox():
    """Each name of the platforms' lists that the host has: importable, with what it imports in
    turn (a library shown without its own dependencies would fail the programs that use it)."""
    names = sandbox.platform_packages("contest")
    if not names:
        pytest.skip("no contest platform library is installed here")
    code = f"""\
        import importlib
        failed = []
        for name in {names!r}:
            try:
                importlib.import_module(name)
            except Exception as e:
                failed.append((name, repr(e)[:200]))
        print(8 if not failed else failed)
        """
    with _judge(timeout_s=60.0, memory_mb=2048) as judge:
        v = run(judge, code)
        assert v.status == "accepted", v.first_failure


def test_the_standard_library_only_when_asked():
    try:
        import numpy  # noqa: F401
    except ImportError:
        pytest.skip("numpy is not installed")
    with _judge(timeout_s=20.0, memory_mb=1024, libraries="none") as judge:
        v = run(judge, ATCODER_NUMPY, tests=KNAPSACK)
        assert v.status == "runtime_error" and "ModuleNotFoundError" in v.first_failure["stderr"]
    with _judge(timeout_s=20.0, memory_mb=1024, libraries="none", allow_packages=("numpy",)) as judge:
        assert run(judge, ATCODER_NUMPY, tests=KNAPSACK).status == "accepted"


# ---------------------------------------------------------------- libraries: chosen by the problem's platform

# Correct programs for the real LiveCodeBench problems of each platform in ../shared/data, written
# with the platform's libraries as its users write them.
ABC301_A_NUMPY = """\
    import numpy as np
    n, s = int(input()), input().strip()
    t = int(np.sum(np.array(list(s)) == "T"))
    a = n - t
    print(("T" if t > a else "A") if t != a else ("A" if s[-1] == "T" else "T"))
    """
CF1873_A_NUMPY = """\
    import sys
    import numpy as np
    words = sys.stdin.read().split()[1:]
    for w in words:
        print("YES" if int((np.array(list(w)) != np.array(list("abc"))).sum()) in (0, 2) else "NO")
    """
LC2727_SORTED = """\
    from sortedcontainers import SortedList
    class Solution:
        def countSeniors(self, details: List[str]) -> int:
            ages = SortedList(int(d[11:13]) for d in details)
            return len(ages) - ages.bisect_right(60)
    """
LC2727_NUMPY = """\
    import numpy as np
    class Solution:
        def countSeniors(self, details: List[str]) -> int:
            return int((np.array([int(d[11:13]) for d in details]) > 60).sum())
    """


def _lcb_problems(shared: Path) -> dict[str, Problem]:
    from helpers.dataset_real import real

    return {p.platform: p for p in real(shared, "sandboxfusion_lcb_v1.jsonl")}


@pytest.mark.heavy
def test_auto_gives_each_problem_its_platforms_libraries(shared_data):
    for name in ("numpy", "sortedcontainers"):
        pytest.importorskip(name)
    by_platform = _lcb_problems(shared_data)
    assert set(by_platform) == {"atcoder", "codeforces", "leetcode"}
    atcoder, codeforces, leetcode = by_platform["atcoder"], by_platform["codeforces"], by_platform["leetcode"]
    # the LeetCode problem's own tests under an AtCoder name: the same program and tests, another profile
    twin = dataclasses.replace(leetcode, id="twin", platform="AtCoder")
    problems = {p.id: p for p in (atcoder, codeforces, leetcode, twin)}
    runs = [
        (atcoder.id, ABC301_A_NUMPY),  # AtCoder gives numpy
        (codeforces.id, CF1873_A_NUMPY),  # a platform without a profile of its own: every platform's
        (leetcode.id, LC2727_SORTED),  # LeetCode documents sortedcontainers
        (leetcode.id, LC2727_NUMPY),  # and not numpy
        ("twin", LC2727_NUMPY),  # not the LeetCode verdict of the same program, taken from the cache
    ]
    rollouts = [_rollout(f"r{i}", code, pid) for i, (pid, code) in enumerate(runs)]
    with _judge(timeout_s=20.0, memory_mb=1024, cache=True) as judge:
        assert judge.cfg.libraries == "auto"  # the default
        vs = judge.judge(problems, rollouts)
    for v in vs[:3] + vs[4:]:
        assert v.status == "accepted", v
    assert vs[3].status == "runtime_error" and "ModuleNotFoundError" in vs[3].first_failure["stderr"], vs[3]
    assert not vs[4].cached
    # a run's own profile overrides the platform's
    with _judge(timeout_s=20.0, memory_mb=1024, libraries="contest") as judge:
        (v,) = judge.judge(problems, rollouts[3:4])
    assert v.status == "accepted", v.first_failure
    with _judge(timeout_s=20.0, memory_mb=1024, libraries="leetcode") as judge:
        (v,) = judge.judge(problems, rollouts[:1])
    assert v.status == "runtime_error" and "ModuleNotFoundError" in v.first_failure["stderr"], v


def test_auto_resolves_a_platform_by_its_name(shared_data):
    from helpers.dataset_real import real

    assert sandbox.profile_for("auto", "atcoder") == sandbox.profile_for("auto", " AtCoder ") == "atcoder"
    assert sandbox.profile_for("auto", "leetcode") == "leetcode"
    # a platform without a profile of its own, or none named, sees every platform's libraries
    (unnamed, *_) = real(shared_data, "rllm_code_contests.json")
    assert unnamed.platform is None and sandbox.profile_for("auto", unnamed.platform) == "contest"
    (codechef,) = [p for p in real(shared_data, "sandboxfusion_code_contests.jsonl") if p.platform == "codechef"][:1]
    assert sandbox.profile_for("auto", codechef.platform) == "contest"
    # a run's profile is every problem's
    assert sandbox.profile_for("none", "atcoder") == "none"
    assert sandbox.profiles_of("auto")[0] == "contest" and sandbox.profiles_of("leetcode") == ("leetcode",)


# ---------------------------------------------------------------- libraries: imported once per worker

LOADED = """\
    import sys
    loaded = "numpy" in sys.modules  # before the program's own import: the worker's
    import numpy as np
    print(int(np.int64(int(input())) * 2) if loaded else "imported here")
    """


def test_a_contest_library_the_program_imports_is_loaded_by_the_worker_once():
    pytest.importorskip("numpy")
    tests = [Test("4\n", "8\n"), Test("5\n", "10\n"), Test("6\n", "12\n")]
    with _judge(timeout_s=20.0, memory_mb=1024) as judge:
        v = run(judge, LOADED, tests=tests, platform="atcoder")
        assert v.status == "accepted", v.first_failure
        assert judge.pool.workers[0].imported == {"numpy"}


def test_a_library_loaded_for_one_profile_is_not_there_for_another():
    """auto: a worker that imported numpy for an AtCoder program is replaced before it runs a
    LeetCode program (whose platform has no numpy): neither sys.modules nor an import finds it."""
    pytest.importorskip("numpy")
    probe = """\
        import sys
        seen = "numpy" in sys.modules or any("numpy" in repr(m) for m in list(sys.modules.values()))
        try:
            import numpy
            seen = True
        except ImportError:
            pass
        print(8 if not seen else "numpy is there")
        """
    with _judge(timeout_s=20.0, memory_mb=1024) as judge:
        assert run(judge, LOADED, tests=[Test("4\n", "8\n")], platform="atcoder").status == "accepted"
        before = judge.pool.workers[0].proc.pid
        v = run(judge, probe, platform="leetcode")
        assert v.status == "accepted", v.first_failure
        assert judge.pool.workers[0].proc.pid != before and not judge.pool.workers[0].imported
        # a program of a platform that shows numpy keeps the worker
        assert run(judge, LOADED, tests=[Test("4\n", "8\n")], platform="atcoder").status == "accepted"
        pid = judge.pool.workers[0].proc.pid
        assert run(judge, LOADED, tests=[Test("4\n", "8\n")], platform="codeforces").status == "accepted"
        assert judge.pool.workers[0].proc.pid == pid


def test_numpys_global_generator_is_seeded_anew_in_each_test():
    """numpy seeds its global generator when numpy.random is imported (scipy.sparse imports it);
    imported once in the worker, every forked test would draw the same numbers. Each draws its
    own, as importing it itself would."""
    pytest.importorskip("numpy")
    pytest.importorskip("scipy")
    draw = """\
        import sys
        loaded = "numpy.random" in sys.modules  # the worker's
        import scipy.sparse
        import numpy as np
        print(np.random.randint(1 << 30), loaded)
        """
    with _judge(timeout_s=20.0, memory_mb=1024) as judge:
        p = Problem(id="p", source="test", question="", tests=[Test("", "x\n")], platform="atcoder")
        vs = judge.judge({"p": p}, [_rollout(f"r{i}", draw + f"# {i}") for i in range(3)])
        assert judge.pool.workers[0].imported == {"scipy", "numpy"}
    got = [v.first_failure["got"] for v in vs]
    assert all(v.status == "wrong_answer" and v.first_failure["got"].endswith(" True\n") for v in vs), got
    assert len(set(got)) == 3, got


# ---------------------------------------------------------------- system calls


_SYNC = {"x86_64": (162, 306), "aarch64": (81, 267)}


def test_sync_is_refused():
    machine = os.uname().machine
    if machine not in _SYNC:
        pytest.skip(f"no system call numbers for {machine}")
    code = f"""\
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        out = []
        for nr in {_SYNC[machine]!r}:
            ctypes.set_errno(0)
            out.append((libc.syscall(nr, 1), ctypes.get_errno()))
        print(8 if out == [(-1, 1), (-1, 1)] else out)
        """
    with _judge(timeout_s=5.0) as judge:
        v = run(judge, code)
        assert v.status == "accepted", v.first_failure


def test_every_denied_call_fails_with_eperm():
    """Each call of the filter's own list, made with harmless arguments: refused, never run."""
    machine = os.uname().machine
    if machine not in sandbox._DENIED:
        pytest.skip(f"no seccomp table for {machine}")
    calls = sorted(sandbox._DENIED[machine].items())
    code = f"""\
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        ran = []
        for name, nr in {calls!r}:
            ctypes.set_errno(0)
            if libc.syscall(nr, -1, 0, 0, 0, 0) != -1 or ctypes.get_errno() != 1:
                ran.append((name, ctypes.get_errno()))
        print(8 if not ran else ran)
        """
    with _judge(timeout_s=5.0) as judge:
        v = run(judge, code)
        assert v.status == "accepted", v.first_failure
