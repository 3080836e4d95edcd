"""Judge rollouts: extract each program, run it against its problem's tests in the warm pool,
compare, and turn the outcome into a Verdict.

The library entry point the training loop uses::

    with Judge(JudgeConfig()) as judge:
        verdicts = judge.judge(problems_by_id, rollouts)

Comparison happens here, in the judge process, one test at a time as results stream back, so
that early exit stops a candidate at its first wrong answer and no expected output ever enters a
process a candidate is forked from.

Every result enters through ``untrusted.admit`` (the one door for a candidate's data), and the
code here is total on it: an exception while reading, comparing or recording a candidate's
result becomes that candidate's verdict (``judge_refused``), the worker it ran on is replaced
rather than reused, and a worker that dies under a job ends the job with what the candidate did
until then: it is never run a second time.
"""

from __future__ import annotations

import ast
import collections
import dataclasses
import itertools
import json
import marshal
import os
import queue
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Self

import orjson

from mcoder import safe_ast
from mcoder.errors import DataError, McoderError
from mcoder.extract import compile_program, extract_code
from mcoder.judge import libraries, plain, sandbox, untrusted
from mcoder.judge.cache import BytesLRU, ResultCache, cache_key, limits_key, tests_digest
from mcoder.judge.compare import compare_output, compare_value
from mcoder.judge.config import JudgeConfig
from mcoder.judge.harness import BUDGET_DETAIL, defined_names, imported_names, needs_own_process
from mcoder.judge.pool import Pool, WorkerDied
from mcoder.records import Problem, Rollout, Test, Verdict

SHOWN_CHARS = 1000  # of input, expected and got in first_failure
# Prepared tests kept across calls, by content, in bytes: a trainer's reward sends the same
# problems as fresh objects call after call (a parquet row, a dataset column, a request body),
# and each is prepared once and held once, however many objects stand for it.
PREPARED_BYTES = 256 << 20
# Contest libraries a worker imports itself, before it forks the tests of a program that imports
# them (when the problem's profile shows them): each test's process then finds them loaded, as
# the standard library's common modules, instead of spending ~0.1 s of CPU importing them again.
# Heavy ones (pandas, sympy) are left to the program: a worker keeps what it imported. Only these
# packages and these submodules (never a name the program makes up: a ``__main__`` would run a
# tool's entry point in the worker).
PREIMPORT_LIBRARIES = ("numpy", "scipy", "networkx", "sortedcontainers", "more_itertools", "bitarray")
PREIMPORT_SUBMODULES = (
    "scipy.fft", "scipy.linalg", "scipy.optimize", "scipy.sparse", "scipy.sparse.csgraph", "scipy.spatial",
    "scipy.special",
)
MAX_LITERAL_CHARS = 1 << 20  # a return value's repr longer than this is not parsed


@dataclass(slots=True)
class Outcome:
    """What running a program against a problem's tests found (the cacheable part of a verdict)."""

    status: str
    tests_passed: int
    tests_total: int
    first_failure: dict[str, Any] | None = None
    matched_by: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0
    cut: bool = False  # stopped by a wall budget or a cancel: depends on load, never cached


@dataclass(slots=True)
class _Prepared:
    """A problem's tests in the form the worker and the comparators want, built once per content
    (the tests and fn_name, by their digest): every later problem object with the same tests gets
    this one, and holds none of its own once its call is over."""

    groups: list[tuple[str, list[int], list[Any]]]  # (kind, test indexes, worker payload per test)
    expected_values: dict[int, Any]
    digest: str
    unprovable: str | None = None  # why no program can be shown right by these tests
    tests: list[Test] = field(default_factory=list)  # the tests themselves (of the first problem seen)
    fn_name: str | None = None
    size: int = 0  # bytes it holds, about (what the interning LRU counts)


class Judge:
    """A warm pool of sandboxed workers, reusable across ``judge`` calls."""

    def __init__(self, cfg: JudgeConfig | None = None):
        self.cfg = cfg or JudgeConfig()
        if not self.cfg.unsafe_no_sandbox:
            sandbox.check_isolation()
        self.cache = ResultCache(self.cfg.cache_size)
        self._limits: dict[str, str] = {}  # library profile -> the cache key's limits part
        self._visible: dict[str, frozenset[str]] = {}  # library profile -> the packages it shows
        self.prepared = BytesLRU(PREPARED_BYTES)  # tests digest -> _Prepared
        self.pool: Pool | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._running: dict[int, tuple[Any, threading.Event]] = {}  # id(worker) -> (worker, its call's cancel)
        self._running_lock = threading.Lock()

    def __enter__(self) -> Self:
        self.pool = Pool(self.cfg)
        self._executor = ThreadPoolExecutor(self.cfg.workers, thread_name_prefix="judge")
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        if self.pool is not None:
            self.pool.close()
            self.pool = None

    def abort(self) -> None:
        """Ctrl-C: no candidate starts any more and the running ones are killed now."""
        if self.pool is not None:
            self.pool.abort()

    # ------------------------------------------------------------------ public

    def cancel(self, event: threading.Event) -> None:
        """Drop the work of the ``judge`` call given ``cancel=event`` (its client has gone): its
        rollouts not started are not run, and those running are stopped now (their workers start
        afresh). Its verdicts are time_limit and none is cached."""
        event.set()
        with self._running_lock:
            workers = [w for w, e in self._running.values() if e is event]
            for w in workers:  # under the lock: a worker still here runs this call's job
                if self.pool is not None:
                    self.pool.kill(w)

    def judge(
        self,
        problems_by_id: dict[str, Problem],
        rollouts: list[Rollout],
        on_verdict: Callable[[int, Verdict], None] | None = None,
        *,
        deadline: float | None = None,
        cancel: threading.Event | None = None,
    ) -> list[Verdict]:
        """A verdict per rollout, in order. ``on_verdict(index, verdict)`` is called as each is
        ready (from worker threads, one call at a time). ``deadline``: a ``time.monotonic()`` by
        which the call returns (a request's wall budget): a rollout not started by then is
        time_limit without a run, one running is stopped there. ``cancel``: an event that
        ``Judge.cancel`` sets to drop the call's work."""
        if self.pool is None:
            raise RuntimeError("use Judge as a context manager: `with Judge(cfg) as judge: ...`")
        verdicts: list[Verdict | None] = [None] * len(rollouts)
        lock = threading.Lock()

        def deliver(i: int, outcome: Outcome, cached: bool) -> None:
            v = self._verdict(rollouts[i], outcome, cached)
            with lock:
                verdicts[i] = v
                if on_verdict is not None:
                    try:
                        on_verdict(i, v)
                    except orjson.JSONEncodeError as e:  # a verdict the writer cannot encode (a bug of
                        # ours that record_safe missed; raised before anything is written): the
                        # rollout still gets a verdict, and the run goes on
                        verdicts[i] = v = self._verdict(rollouts[i], _refused(outcome, e), cached)
                        on_verdict(i, v)

        waiting: dict[str, list[int]] = {}  # cache key -> rollouts that wait for that one run
        runs = []
        seen: dict[int, _Prepared] = {}  # id(problem) -> its prepared tests, for this call only
        for i, r in enumerate(rollouts):
            problem = problems_by_id.get(r.problem_id)
            if problem is None:
                raise DataError(
                    f"rollout {r.id!r}: no problem with id {r.problem_id!r}",
                    field="problem_id",
                    hint="pass the problems file the rollouts were made from",
                )
            code, compiled, quick = self._program(problem, r.completion)
            if quick is not None:
                deliver(i, quick, False)
                continue
            prep = self._prepare(problem, seen)
            if prep.unprovable is not None:
                deliver(i, Outcome("wrong_answer", 0, len(problem.tests), {"reason": prep.unprovable}), False)
                continue
            key = cache_key(code, prep.digest, self._limits_key(problem)) if self.cfg.cache else f"run-{i}"
            hit = self.cache.get(key) if self.cfg.cache else None
            if hit is not None:
                deliver(i, hit, True)
            elif key in waiting:
                waiting[key].append(i)
            else:
                waiting[key] = [i]
                runs.append((key, code, compiled, problem, prep))

        def run(key: str, code: str, compiled: Any, problem: Problem, prep: _Prepared) -> None:
            t0 = time.monotonic()
            try:
                outcome = self._run(code, compiled, problem, prep, deadline, cancel)
            except McoderError:
                raise  # the host, not the candidate: a sandbox that cannot start is exit 4
            except Exception as e:  # noqa: BLE001 - the judge's code met something it cannot read
                outcome = _refused(Outcome("accepted", 0, len(problem.tests)), e, time.monotonic() - t0)
            if cancel is not None and cancel.is_set():
                outcome.cut = True  # dropped: whatever it says, it is not this program's outcome
            if self.cfg.cache and not outcome.cut:
                self.cache.put(key, outcome)
            first, *rest = waiting[key]
            deliver(first, outcome, False)
            for i in rest:
                deliver(i, outcome, True)

        futures = [self._executor.submit(run, *args) for args in runs]
        for f in futures:
            f.result()
        return verdicts  # type: ignore[return-value]

    # ------------------------------------------------------------------ steps

    def _profile(self, problem: Problem) -> str:
        """The library profile the problem's programs see (``auto``: its platform's)."""
        return libraries.profile_for(self.cfg.libraries, problem.platform)

    def _allowed(self, profile: str) -> frozenset[str]:
        allowed = self._visible.get(profile)
        if allowed is None:
            allowed = self._visible[profile] = frozenset(self.cfg.visible_packages(profile))
        return allowed

    def _preimports(self, compiled_code: Any, allowed: frozenset[str]) -> list[str]:
        """The packages of ``PREIMPORT_LIBRARIES`` (and submodules of ``PREIMPORT_SUBMODULES``)
        that the program imports and its profile shows: its test processes find them imported by
        the worker."""
        names = set()
        for n in imported_names(compiled_code):
            root = n.split(".")[0]
            if root in allowed and root in PREIMPORT_LIBRARIES:
                names.add(root)
                if n in PREIMPORT_SUBMODULES:
                    names.add(n)
        return sorted(names)

    def _limits_key(self, problem: Problem) -> str:
        profile = self._profile(problem)
        key = self._limits.get(profile)
        if key is None:
            key = self._limits[profile] = limits_key(self.cfg, libraries=profile)
        return key

    def _program(self, problem: Problem, completion: str) -> tuple[str, Any, Outcome | None]:
        """(source, code object, None), or the outcome that needs no run (no code, compile
        error, no tests) in third place."""
        n = len(problem.tests)
        try:
            return self._program_of(completion, n)
        except Exception as e:  # noqa: BLE001 - a completion the extractor or compiler chokes on
            return "", None, _refused(Outcome("accepted", 0, n), e)

    def _program_of(self, completion: str, n: int) -> tuple[str, Any, Outcome | None]:
        code = extract_code(completion)
        if code is None:
            return (
                "",
                None,
                Outcome("no_code", 0, n, {"reason": "no code block or Python code in the completion"}),
            )
        compiled, error = compile_program(code)
        if compiled is None:
            return code, None, Outcome("compile_error", 0, n, {"reason": error})
        if n == 0:  # nothing can show the program right: never a pass
            return code, None, Outcome("wrong_answer", 0, 0, {"reason": "the problem has no tests"})
        return code, compiled, None

    def _prepare(self, problem: Problem, seen: dict[int, _Prepared]) -> _Prepared:
        """The problem's prepared tests, interned by content: a problem object seen before in this
        call, else the tests' digest in the judge's LRU (bounded in bytes), else prepared now."""
        prep = seen.get(id(problem))
        if prep is None:
            digest = tests_digest(problem.tests, problem.fn_name)
            prep = self.prepared.get(digest)
            if prep is None:
                prep = prepare_tests(problem, digest)
                self.prepared.put(digest, prep, prep.size)
            seen[id(problem)] = prep
        return prep

    def _run(
        self, code: str, compiled_code: Any, problem: Problem, prep: _Prepared,
        deadline: float | None = None, cancel: threading.Event | None = None, *,
        cfg: JudgeConfig | None = None, grader: _Grader | None = None,
    ) -> Outcome:
        """Run on a free worker, once. A worker that dies under the job (whoever killed it) is
        replaced, and the job ends there: the tests graded so far stand and the others fail
        with the worker's death as their reason. Running it again would let a program that can
        kill its worker re-roll every failed guess. The run's wall budget (``rollout_wall_s``
        from its start, and the call's ``deadline``) ends it: its tests left are time_limit."""
        t0 = time.monotonic()
        cfg = cfg or self.cfg
        compiled = marshal.dumps(compiled_code)
        limits = {
            "timeout_s": cfg.timeout_s,
            "memory_mb": cfg.memory_mb,
            "max_processes": cfg.max_processes,
            "max_output_bytes": int(cfg.max_output_mb * (1 << 20)),
            "max_disk_mb": cfg.max_disk_mb,
        }
        # the names the program binds itself (which the function under test must be one of),
        # read here rather than in every candidate process
        defined = sorted(defined_names(compiled_code)) if any(g[0] != "stdin" for g in prep.groups) else []
        grader = grader or _Grader(prep, cfg)
        record = grader.results is not None  # every test's whole result kept (run_code, explain)
        allowed = self._allowed(self._profile(problem))
        preimport = self._preimports(compiled_code, allowed)
        try:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            if cancel is not None and cancel.is_set():
                raise queue.Empty
            with self.pool.acquire(wait) as worker:
                budget_end = self._budget_end(deadline)
                with self._running_lock:
                    self._running[id(worker)] = (worker, cancel)
                try:
                    # a worker that holds a library this problem's profile does not show starts afresh
                    worker.fit_imports(allowed, preimport)
                    for kind, indexes, payload in prep.groups:
                        if cancel is not None and cancel.is_set():  # (the worker is not replaced for it)
                            grader.budget_spent(indexes[0])
                            break
                        if budget_end is not None and time.monotonic() >= budget_end:
                            grader.budget_spent(indexes[0])
                            break
                        if kind == "functional":
                            _functional(worker, compiled, code, problem, limits, cfg, indexes, payload, grader,
                                        defined, preimport, budget_end)  # fmt: skip
                        else:
                            job = {
                                "kind": kind,
                                "code": compiled,
                                "source": code,
                                "fn_name": problem.fn_name,
                                "limits": limits,
                                "early_exit": cfg.early_exit,
                                "defined": defined,
                                "profile": self._profile(problem),
                                "preimport": preimport,
                                "deadline": budget_end,
                                "full_output": record,
                                "process_per_test": cfg.process_per_test or (kind == "stdin" and needs_own_process(compiled_code)),
                            }
                            worker.run(job, lambda res, idx=indexes, g=grader: g.receive(idx, res), payload)
                        if grader.stopped:
                            break
                finally:
                    with self._running_lock:
                        self._running.pop(id(worker), None)
        except queue.Empty:  # no worker came free before the call's deadline (or it was cancelled)
            grader.budget_spent(0)
        except WorkerDied as e:
            grader.worker_died(list(range(len(problem.tests))), str(e))
        except McoderError:
            raise  # the host, not the candidate: a sandbox that cannot start is exit 4
        except Exception as e:  # noqa: BLE001 - the job stopped on something the judge could not read
            grader.refuse(None, e)  # (the worker it ran on was replaced on the way out)
        return grader.outcome(time.monotonic() - t0)

    def run_code(
        self, code: str, stdin: str = "", *, deadline: float | None = None, cancel: threading.Event | None = None
    ) -> dict[str, Any]:
        """Run ``code`` (a program as it is: never looked for in a completion, so nothing it
        contains is refused) once on ``stdin``, as one stdin test under the judge's limits,
        never cached. Returns ``status`` (ok, compile_error, runtime_error, time_limit,
        memory_limit, judge_refused), ``stdout`` (all of it, up to ``max_output_mb``),
        ``stderr`` (its end), ``detail`` and ``elapsed_s``."""
        if self.pool is None:
            raise RuntimeError("use Judge as a context manager: `with Judge(cfg) as judge: ...`")
        compiled, error = compile_program(code)
        if compiled is None:
            return {"status": "compile_error", "stdout": "", "stderr": error or "", "detail": error, "elapsed_s": 0.0}
        problem = Problem(id="run_code", source="run_code", question="", tests=[Test(stdin, "")])
        prep = prepare_tests(problem)
        grader = _Grader(prep, self.cfg, record=True)
        outcome = self._run(code, compiled, problem, prep, deadline, cancel, grader=grader)
        res = grader.results.get(0) or {"status": outcome.status, **(outcome.first_failure or {})}
        status = "ok" if res.get("status") == "wrong_answer" else res.get("status")  # compared with nothing
        return {
            "status": status if status in ("ok", "runtime_error", "time_limit", "memory_limit") else "judge_refused",
            "stdout": res.get("stdout") or "",
            "stderr": res.get("stderr") or "",
            "detail": res.get("detail") or res.get("reason"),
            "elapsed_s": round(outcome.elapsed_s, 6),
        }

    def explain(self, problem: Problem, completion: str) -> tuple[Verdict, list[dict[str, Any]]]:
        """Judge one completion again, every test run (no early exit) and none from the cache,
        and keep each test's whole result: the verdict, and per test its ``index``, ``kind``,
        ``input``, ``expected``, ``got`` (the program's output or return value), ``status``, the
        ``rule`` that accepted it (None when it failed), ``detail``, ``stderr``, ``wall_s``,
        ``cpu_s`` and ``mem_kb`` (the last two where the worker measured them)."""
        if self.pool is None:
            raise RuntimeError("use Judge as a context manager: `with Judge(cfg) as judge: ...`")
        rollout = Rollout(id="explain", problem_id=problem.id, completion=completion)
        code, compiled, quick = self._program(problem, completion)
        if quick is not None:
            return self._verdict(rollout, quick, False), []
        prep = self._prepare(problem, {})
        if prep.unprovable is not None:
            quick = Outcome("wrong_answer", 0, len(problem.tests), {"reason": prep.unprovable})
            return self._verdict(rollout, quick, False), []
        cfg = dataclasses.replace(self.cfg, early_exit=False)
        grader = _Grader(prep, cfg, record=True)
        outcome = self._run(code, compiled, problem, prep, cfg=cfg, grader=grader)
        reports = []
        for i, t in enumerate(prep.tests):
            res = grader.results.get(i, {"status": "not run"})
            reports.append({
                "index": i, "kind": t.kind, "input": t.input, "expected": t.output, "got": res.get("got"),
                "status": res["status"], "rule": res.get("rule"), "detail": res.get("detail"),
                "stderr": res.get("stderr") or "", "wall_s": res.get("t"), "cpu_s": res.get("cpu"),
                "mem_kb": res.get("mem_kb"),
            })  # fmt: skip
        return self._verdict(rollout, outcome, False), reports

    def _budget_end(self, deadline: float | None) -> float | None:
        """When a run starting now must end: its own wall budget, or the call's deadline."""
        ends = [time.monotonic() + self.cfg.rollout_wall_s] if self.cfg.rollout_wall_s > 0 else []
        if deadline is not None:
            ends.append(deadline)
        return min(ends) if ends else None

    def _verdict(self, r: Rollout, o: Outcome, cached: bool) -> Verdict:
        passed = o.status == "accepted"
        if self.cfg.reward == "binary":
            reward = 1.0 if passed else 0.0
        else:
            reward = o.tests_passed / o.tests_total if o.tests_total else 0.0
        return Verdict(
            rollout_id=r.id,
            problem_id=r.problem_id,
            reward=reward,
            passed=passed,
            status=o.status,
            tests_passed=o.tests_passed,
            tests_total=o.tests_total,
            first_failure=untrusted.record_safe(o.first_failure),
            matched_by=[str(m) for m in o.matched_by],
            elapsed_s=0.0 if cached else round(o.elapsed_s, 6),
            cached=cached,
        )


class _Grader:
    """Compares results as they stream in and keeps the tally of one run. Total on what the
    candidate sent: whatever it cannot read or compare ends the run as ``judge_refused``."""

    def __init__(self, prep: _Prepared, cfg: JudgeConfig, record: bool = False):
        self.tests, self.prep, self.cfg = prep.tests, prep, cfg
        self.results: dict[int, dict] | None = {} if record else None  # index -> the test's whole result
        self.max_out = int(cfg.max_output_mb * (1 << 20))
        self.passed, self.matched = 0, []
        self.status = "accepted"
        self.first_failure: dict[str, Any] | None = None
        self.stopped = self.refused = self.cut = False
        self.graded: set[int] = set()

    def receive(self, indexes: list[int], res: Any) -> bool:
        """A worker's raw result for one of ``indexes``; whether the worker should go on."""
        if self.refused:
            return False
        try:
            clean = untrusted.admit(res, len(indexes), self.max_out)
            if "i" not in clean:
                raise untrusted.Refused("a result that names no test")
        except Exception as e:  # noqa: BLE001 - whatever the record holds, it is this candidate's
            return self.refuse(None, e)
        return self.take(indexes[clean["i"]], clean)

    def take(self, index: int, res: dict) -> bool:
        """Grade test ``index`` from an admitted result; whether the worker should go on."""
        if self.refused:
            return False
        try:
            return self._take(index, res)
        except Exception as e:  # noqa: BLE001 - a comparator or a record that failed on its data
            return self.refuse(index, e)

    def _take(self, index: int, res: dict) -> bool:
        test = self.tests[index]
        self.graded.add(index)
        if res["status"] == "time_limit" and res.get("detail") == BUDGET_DETAIL:
            self.cut = True
        got = None
        if res["status"] == "ok":
            rule, got = self._compare(index, test, res)
            if rule is not None:
                self.passed += 1
                self.matched.append(rule)
                if self.results is not None:
                    self.results[index] = {**res, "rule": rule, "got": got() if callable(got) else got}
                return True
            status = "wrong_answer"
            got = got() if callable(got) else got
        else:
            status = res["status"]
            got = res.get("stdout") or None  # what a crashed or stopped program printed first
        if self.results is not None:
            self.results[index] = {**res, "status": status, "rule": None, "got": got}
        if self.first_failure is None:
            self.status = status
            self.first_failure = {
                "index": index,
                "input": _shown(test.input),
                "expected": _shown(test.output),
                "got": _shown(got) if got is not None else None,
                "stderr": (res.get("stderr") or "")[-SHOWN_CHARS:],
                "detail": res.get("detail"),
            }
            text = status == "wrong_answer" and test.kind == "stdin" and isinstance(got, str)
            diff = first_difference(test.output, got) if text else None  # (a value's repr is not its JSON)
            if diff is not None:
                self.first_failure["diff"] = diff
        if self.cfg.early_exit:
            self.stopped = True
            return False
        return True

    def refuse(self, index: int | None, e: Exception) -> bool:
        """The judge could not read or compare this candidate's result: that is its verdict."""
        self.refused = self.stopped = True
        if self.first_failure is None:
            self.status = "judge_refused"
            self.first_failure = {"index": index, **_refusal(e)}
        return False

    def _compare(self, index: int, test: Test, res: dict) -> tuple[str | None, Any]:
        """(the rule that accepted or None, what the program gave: text, or a function that
        shows a return value, called only when the test failed)."""
        mode = self.cfg.compare
        if test.kind == "stdin":
            got = res.get("stdout") or ""
            return compare_output(test.output, got, mode, test_input=test.input), got
        if test.kind == "functional":
            return "check_passed", ""
        data = res.get("value")
        if not isinstance(data, bytes):  # not plain data: never equal to anything
            return None, f"<{res.get('detail') or 'a value that is not plain data'}>"
        try:
            _, value = plain.decode(data, hashfree=True)
        except (plain.NotPlain, ValueError, TypeError):
            return None, "<a reply that is not plain data>"
        return compare_value(self.prep.expected_values[index], value, mode, test_input=test.input), lambda: _repr(value)

    def budget_spent(self, first: int) -> None:
        """The run's wall budget ran out before test ``first``: it and every test after it that
        has no result are time limits."""
        for i in range(first, len(self.tests)):
            if i not in self.graded and not self.take(i, {"status": "time_limit", "detail": BUDGET_DETAIL}):
                return

    def worker_died(self, indexes: list[int], why: str) -> None:
        for i in [i for i in indexes if i not in self.graded]:
            if not self.take(i, {"status": "runtime_error", "detail": untrusted.text(f"judge worker died: {why}", 300)}):
                return

    def outcome(self, elapsed: float) -> Outcome:
        return Outcome(
            self.status, self.passed, len(self.tests), self.first_failure, self.matched, elapsed, self.cut
        )


def _refusal(e: BaseException) -> dict[str, str]:
    return {
        "reason": "the judge refused the program's output: reading or comparing it failed",
        "detail": untrusted.text(f"{type(e).__name__}: {e}", untrusted.DETAIL_CHARS),
    }


def _refused(base: Outcome, e: BaseException, elapsed: float | None = None) -> Outcome:
    """``base`` turned into a refusal (what it passed stays counted)."""
    return Outcome(
        "judge_refused", base.tests_passed, base.tests_total, _refusal(e), list(base.matched_by),
        base.elapsed_s if elapsed is None else elapsed,
    )


def _repr(value: Any) -> str:
    try:
        return repr(value)
    except (RecursionError, ValueError, MemoryError):
        return "<a value too deep or too big to show>"


def _functional(
    worker, compiled: bytes, code: str, problem: Problem, limits: dict, cfg: JudgeConfig,
    indexes: list[int], payload: list, grader: _Grader, defined: list[str], preimport: list[str] = (),
    deadline: float | None = None,
) -> None:
    """Functional tests: the candidate serves calls in its worker, the checks run in the slot's
    checks worker, joined by two pipes made here; the checks worker's reports decide each test.
    The candidate's worker never receives the checks' source."""
    try:
        _functional_run(
            worker, compiled, code, problem, limits, cfg, indexes, payload, grader, defined, preimport, deadline
        )
    except (WorkerDied, BrokenPipeError, OSError) as e:
        worker.restart()  # the checks worker with it
        raise WorkerDied(str(e)) from None


def _functional_run(
    worker, compiled: bytes, code: str, problem: Problem, limits: dict, cfg: JudgeConfig,
    indexes: list[int], payload: list, grader: _Grader, defined: list[str], preimport: list[str] = (),
    deadline: float | None = None,
) -> None:
    checks = worker.checks()
    req_r, req_w = os.pipe()
    ans_r, ans_w = os.pipe()
    try:
        worker.send_fds([req_r, ans_w])
        checks.send_fds([req_w, ans_r])
    finally:
        for fd in (req_r, req_w, ans_r, ans_w):
            os.close(fd)
    worker.send(
        {"kind": "serve", "code": compiled, "source": code, "limits": limits, "early_exit": cfg.early_exit,
         "fds": True, "n_tests": len(indexes), "defined": defined,
         "profile": libraries.profile_for(cfg.libraries, problem.platform), "preimport": list(preimport),
         "deadline": deadline}
    )
    checks.send(
        {"kind": "check", "tests": payload, "fn_name": problem.fn_name, "limits": limits,
         "early_exit": cfg.early_exit, "fds": True}
    )
    ended_sent = False
    max_out = limits["max_output_bytes"]
    try:
        reports = []
        while True:
            kind, rep = checks.recv()
            if kind == "done":
                break
            # a check's report carries the candidate's text (its error names, a traceback of what
            # it returned): admitted like every other result; one the judge cannot read ends the
            # job here and the worker pair is replaced (``Pool.acquire``)
            rep = untrusted.admit(rep, len(indexes), max_out)
            if rep.get("i") != len(reports):
                raise untrusted.Refused("a check report out of order")
            reports.append(rep)
            last = len(reports) == len(indexes) or (cfg.early_exit and rep.get("status") != "ok")
            if last and not ended_sent:  # the candidate's part is over: end it while the checks worker tidies up
                worker.send("end")
                ended_sent = True
    finally:
        if not ended_sent:
            worker.send("end")
        kind, ended = worker.recv()
        while kind != "done":
            kind, _ = worker.recv()
    ended = untrusted.admit(ended, None, max_out)
    for rep in reports:
        status = rep.get("status")
        res = {"status": "ok"} if status == "ok" else {"status": status, "detail": rep.get("detail")}
        res["stderr"] = ended.get("stderr", "") + (rep.get("stderr") or "")
        if status in ("gone", "check_failed"):
            # the candidate ended before the check did (why is the worker's to say), or the check
            # never finished on what the candidate returned (it overran its own time limit)
            if ended["status"] != "ok":
                res = {**ended}
            elif status == "check_failed" and rep.get("detail") == "time limit":
                res = {**ended, "status": "time_limit", "detail": "the check ran out of time on its return values"}
            elif status == "check_failed":
                res = {**ended, "status": "runtime_error", "detail": f"the check ended: {rep.get('detail')}"}
            else:
                res = {**ended, "status": "runtime_error", "detail": "the program exited during the check"}
        if res["status"] != "ok":
            res.setdefault("stdout", ended.get("stdout"))
        grader.take(indexes[rep["i"]], res)
        if grader.stopped:
            return
    if len(reports) < len(indexes) and not grader.stopped:  # the checks stopped early
        missing = indexes[len(reports):]
        grader.worker_died(missing, "the check ended early")


def literal_value(text: str) -> tuple[Any, bool]:
    """The value a return value's repr stands for, never by eval; (None, False) if it is not a literal."""
    if len(text) > MAX_LITERAL_CHARS:
        return None, False
    if text in ("inf", "-inf", "nan"):
        return float(text), True
    if text == "set()":
        return set(), True
    try:
        return safe_ast.literal_eval(text), True
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None, False


def prepare_tests(problem: Problem, digest: str | None = None) -> _Prepared:
    """Group the tests by kind (in order) and pre-parse what the worker and comparators need."""
    groups: list[tuple[str, list[int], list[Any]]] = []
    expected: dict[int, Any] = {}
    size = 0
    for i, t in enumerate(problem.tests):
        if not groups or groups[-1][0] != t.kind:
            groups.append((t.kind, [], []))
        kind, idx, payload = groups[-1]
        idx.append(i)
        size += sys.getsizeof(t.input) + sys.getsizeof(t.output) + 200
        if kind == "stdin":
            payload.append(t.input.encode("utf-8", "surrogateescape"))
            size += sys.getsizeof(payload[-1])
        elif kind == "call":
            payload.append(_call_args(problem, i, t))
            expected[i] = _json(problem, i, "output", t.output)
            size += 4 * (len(t.input) + len(t.output))  # parsed JSON: objects of a few times its text
        else:
            payload.append((t.input, _calls_check(problem, i, t.input)))
    digest = digest or tests_digest(problem.tests, problem.fn_name)
    return _Prepared(
        groups, expected, digest, _unprovable(problem, expected), list(problem.tests), problem.fn_name, size
    )


def _unprovable(problem: Problem, expected: dict[int, Any]) -> str | None:
    """Why these tests cannot show any program right, or None. Call tests that all expect null
    are LeetCode's "modify in place" functions (``-> None``): the result is the argument after
    the call, which a call test does not hold, so a function that does nothing would pass them."""
    if problem.tests and len(expected) == len(problem.tests) and all(v is None for v in expected.values()):
        return (
            "every call test expects null (a function that modifies its argument in place): "
            "these tests cannot tell a correct function from one that does nothing"
        )
    return None


def _call_args(problem: Problem, i: int, t: Test) -> list[Any]:
    if not problem.fn_name:
        raise DataError(f"problem {problem.id!r} has call tests but no fn_name", field="fn_name")
    return [_json(problem, i, "input", line) for line in t.input.split("\n") if line.strip()]


def _json(problem: Problem, i: int, part: str, text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise DataError(
            f"problem {problem.id!r}: test {i} {part} is not JSON: {text[:80]!r}", field=f"tests[{i}].{part}"
        ) from None


def _calls_check(problem: Problem, i: int, source: str) -> bool:
    """Whether a functional test's source calls check() itself (LeetCode sets) or leaves it to us."""
    try:
        tree = safe_ast.parse(source)
    except SyntaxError as e:
        raise DataError(
            f"problem {problem.id!r}: test {i} is not valid Python ({e.msg})", field=f"tests[{i}].input"
        ) from None
    defines = any(isinstance(n, ast.FunctionDef) and n.name == "check" for n in tree.body)
    calls = any(
        isinstance(n, ast.Expr)
        and isinstance(n.value, ast.Call)
        and isinstance(n.value.func, ast.Name)
        and n.value.func.id == "check"
        for n in tree.body
    )
    if not defines and not calls:
        raise DataError(
            f"problem {problem.id!r}: functional test {i} defines no check(candidate)",
            field=f"tests[{i}].input",
        )
    if not calls and not problem.fn_name:
        raise DataError(
            f"problem {problem.id!r}: functional test {i} needs the problem's fn_name", field="fn_name"
        )
    return calls


def _shown(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + f"... ({len(text)} chars)"


DIFF_CONTEXT_LINES = 2  # lines of expected and got shown before and after the first difference
DIFF_LINE_CHARS = 120  # of each shown line, around the first differing column
DIFF_MAX_LINES = 10_000  # lines of expected and got read for their first difference


def first_difference(expected: str, got: str) -> dict[str, Any] | None:
    """Where ``got`` first differs from ``expected``, read as text (trailing blanks of a line, and
    blank lines at the end, do not count): its ``line`` and ``column`` (from 1), the ``token`` (the
    whitespace-separated word, from 0) it falls in, and a window of each around it: ``window_line``
    (the number of the window's first line), ``expected`` and ``got`` (those lines, each cut to
    ``DIFF_LINE_CHARS`` around the column). None when they do not differ so read, or not within
    their first ``DIFF_MAX_LINES`` lines (not looked for further: the judge's comparison is what
    decides, this only shows a person where). Read a line at a time: a comparison of megabytes of
    output holds a few lines, never a list of them."""
    exp, out = _lines(expected), _lines(got)
    before: collections.deque = collections.deque(maxlen=DIFF_CONTEXT_LINES)
    start = 0  # where the expected line starts in ``expected``
    for line, (raw, b) in enumerate(itertools.islice(itertools.zip_longest(exp, out), DIFF_MAX_LINES)):
        a, b = (raw or "").rstrip(), (b or "").rstrip()
        if a != b:
            break
        before.append((a, b))
        start += len(raw) + 1 if raw is not None else 0
    else:
        return None
    tokens = _count_tokens(expected, min(start, len(expected)))
    column = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    head = a[:column]
    inside = bool(head) and not head[-1].isspace()  # the difference falls in a word begun before it
    after = list(itertools.islice(itertools.zip_longest(exp, out, fillvalue=""), DIFF_CONTEXT_LINES))
    rows = [*before, (a, b), *after]
    start = max(0, column - DIFF_LINE_CHARS // 2)
    window = lambda k: "\n".join(_cut(r[k], start) for r in rows).rstrip("\n")
    return {"line": line + 1, "column": column + 1, "token": tokens + len(head.split()) - inside,
            "window_line": line + 1 - len(before), "expected": window(0), "got": window(1)}  # fmt: skip


def _lines(text: str):
    """The lines of ``text`` one at a time (without their line feeds), none held."""
    start = 0
    while start <= len(text):
        end = text.find("\n", start)
        if end < 0:
            if start < len(text):
                yield text[start:]
            return
        yield text[start:end]
        start = end + 1


def _count_tokens(text: str, end: int, chunk: int = 1 << 16) -> int:
    """The whitespace-separated words of ``text[:end]``, counted a chunk at a time (each chunk
    cut after a blank, so no word is counted twice)."""
    count, start = 0, 0
    while start < end:
        stop = min(end, start + chunk)
        while stop < end and not text[stop - 1].isspace():
            stop += 1
        count += len(text[start:stop].split())
        start = stop
    return count


def _cut(line: str, start: int) -> str:
    """``line`` from ``start``, ``DIFF_LINE_CHARS`` of it, with "..." where it was cut."""
    part = line[start : start + DIFF_LINE_CHARS]
    return ("..." if start > 0 else "") + part + ("..." if len(line) > start + DIFF_LINE_CHARS else "")
