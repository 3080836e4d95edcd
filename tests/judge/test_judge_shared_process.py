"""A rollout's stdin tests served by one process (``harness.serve_stdin``): each test finds the
interpreter as a fresh process would, what cannot be put back gets a fresh process, and
``process_per_test`` keeps the old way."""

from __future__ import annotations

import textwrap

import pytest

from conftest import judge_config
from mcoder.judge.core import Judge
from mcoder.records import Problem, Rollout, Test

FIVE = [Test(f"{i}\n", "fresh\n") for i in range(5)]


@pytest.fixture(scope="module")
def judges():
    settings = {"workers": 1, "timeout_s": 3.0, "memory_mb": 256, "reward": "fraction", "cache": False}
    with Judge(judge_config(**settings)) as shared, Judge(judge_config(**settings, process_per_test=True)) as per_test:
        yield {"shared": shared, "per_test": per_test}


def run(judge: Judge, code: str, tests=FIVE):
    p = Problem(id="p", source="t", question="", tests=list(tests))
    body = textwrap.dedent(code)
    (v,) = judge.judge({p.id: p}, [Rollout(id="r", problem_id=p.id, completion=f"```python\n{body}\n```")])
    return v


# Everything a program can change in its interpreter that the server puts back: each run checks
# that it finds none of the last run's changes, then makes them all.
PUT_BACK = """\
    import builtins, gc, os, signal, sys, threading
    input()
    seen = [
        sys.getrecursionlimit() == 1000, sys.get_int_max_str_digits() == 4300, threading.stack_size() == 0,
        gc.isenabled(), gc.get_threshold() == (700, 10, 10), sys.getswitchinterval() == 0.005,
        sys.gettrace() is None, sys.getprofile() is None,
        signal.getsignal(signal.SIGUSR1) is signal.SIG_DFL, signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0),
        not hasattr(builtins, "mark"), builtins.print is print, "MARK" not in os.environ,
        os.getcwd() == os.environ["HOME"], sorted(os.listdir(".")) == ["main.py"], sys.argv == ["main.py"],
        sys.path[-1] != "/mark", os.umask(0o022) == 0o022,
    ]
    sys.setrecursionlimit(50000); sys.set_int_max_str_digits(0); threading.stack_size(1 << 20)
    gc.disable(); gc.set_threshold(5); sys.setswitchinterval(0.5)
    signal.signal(signal.SIGUSR1, lambda *a: None); signal.setitimer(signal.ITIMER_REAL, 60)
    builtins.mark = 1; os.environ["MARK"] = "1"; os.umask(0o077); sys.argv.append("x"); sys.path.append("/mark")
    open("junk", "w").write("x"); os.mkdir("d"); os.chdir("d")
    print("fresh" if all(seen) else [i for i, ok in enumerate(seen) if not ok])
    sys.settrace(lambda *a: None)
    """


def test_each_test_finds_the_interpreter_as_a_fresh_process_has_it(judges):
    for mode, judge in judges.items():
        v = run(judge, PUT_BACK)
        assert v.status == "accepted", (mode, v.first_failure)


# What cannot be put back: each program leaves it behind and looks for what the last run left.
LEFT_BEHIND = {
    "an open fd": """\
        import os
        try:
            os.fstat(9); print("stale")
        except OSError:
            print("fresh")
        os.dup2(os.open("/dev/null", os.O_RDONLY), 9)
        """,
    "a daemon thread": """\
        import threading, time
        print("fresh" if threading.active_count() == 1 else "stale")
        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
        """,
    "a child process": """\
        import os, time
        try:
            os.waitpid(-1, os.WNOHANG); print("stale")
        except ChildProcessError:
            print("fresh")
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        """,
    "a module's new name": """\
        import math
        print("stale" if hasattr(math, "mark") else "fresh")
        math.mark = 1
        """,
    "a module's name bound again": """\
        import heapq
        print("stale" if heapq.heappush is heapq.heappop else "fresh")
        heapq.heappush = heapq.heappop
        """,
    "a module imported and changed": """\
        import queue
        print("stale" if hasattr(queue, "mark") else "fresh")
        queue.mark = 1
        """,
    "a lowered limit": """\
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        print("fresh" if soft > 100 else "stale")
        resource.setrlimit(resource.RLIMIT_NOFILE, (100, 100))
        """,
    "its stdout closed": """\
        import os, sys
        print("fresh", flush=True)
        os.close(1)
        """,
    "os._exit": """\
        import os, sys
        print("fresh", flush=True)
        os._exit(0)
        """,
}


@pytest.mark.parametrize("what", sorted(LEFT_BEHIND))
def test_what_cannot_be_put_back_gets_a_fresh_process(judges, what):
    v = run(judges["shared"], LEFT_BEHIND[what])
    assert v.status == "accepted", (what, v.first_failure)
    assert v.tests_passed == len(FIVE)


def test_the_tests_of_a_rollout_share_a_process_unless_process_per_test(judges):
    """What the server does not look for, and the documented difference: a program that keeps
    state on purpose inside an object a module holds (here a class's attribute) finds it in its
    next test; with ``process_per_test`` it never does."""
    code = """\
        import fractions
        n = fractions.Fraction.__dict__.get("runs", 0)
        fractions.Fraction.runs = n + 1
        print(n)
        """
    tests = [Test(f"{i}\n", f"{i}\n") for i in range(4)]
    assert run(judges["shared"], code, tests).status == "accepted"
    v = run(judges["per_test"], code, tests)
    assert v.tests_passed == 1, v


def test_a_failed_test_is_followed_by_a_fresh_process(judges):
    """A run that fails (here: a time limit, a crash, a wrong exit code) ends its process; the
    next test runs in a fresh one and is judged on its own."""
    code = """\
        import sys
        n = int(input())
        if n == 1:
            while True:
                pass
        if n == 2:
            raise ValueError(n)
        if n == 3:
            sys.exit(3)
        print("fresh")
        """
    tests = [Test(f"{i}\n", "fresh\n") for i in range(6)]
    with Judge(judge_config(workers=1, timeout_s=0.5, memory_mb=256, reward="fraction", cache=False)) as judge:
        v = run(judge, code, tests)
    assert v.tests_passed == 3 and v.status == "time_limit", v


# State the server does not put back, reached through names that give the program a process per
# test: each program sets it on the first test only and prints what it finds.
OWN_PROCESS = {
    "its CPU clock": """\
        import time
        print("fresh" if time.process_time() < 0.4 else "late")
        t = time.process_time()
        while time.process_time() - t < 0.2:
            pass
        """,
    "the decimal context": """\
        from decimal import Decimal, getcontext
        print("fresh" if str(Decimal(1) / Decimal(3)) == "0." + "3" * 28 else "stale")
        getcontext().prec = 5
        """,
    "the warning filters": """\
        import warnings
        warnings.warn("w")  # an exception once the filter says "error"
        print("fresh")
        warnings.simplefilter("error")
        """,
}


@pytest.mark.parametrize("what", sorted(OWN_PROCESS))
def test_a_program_that_reaches_state_not_put_back_gets_a_process_per_test(judges, what):
    v = run(judges["shared"], "input()\n" + textwrap.dedent(OWN_PROCESS[what]))
    assert v.status == "accepted", (what, v.first_failure)
