"""The judge's side of the warm workers: start them, hand each a job, restart one that died.

Each slot holds one worker process (``worker.py``) with its own directory and, as root, its own
leased user id (without root, its own user namespace). A job is one candidate against one group of tests; the worker streams one result per
test, and with early exit the caller answers each with go on / stop.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import queue
import select
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from mcoder.console import warn
from mcoder.errors import EnvironmentMissing
from mcoder.judge import framing, libraries, sandbox
from mcoder.judge.config import JudgeConfig
from mcoder.judge.sandbox import UidLease, isolation_mode, landlock_abi

_SRC_DIR = str(Path(__file__).resolve().parents[2])  # the folder that holds the mcoder package
_BOOT = "import sys; sys.path.insert(0, sys.argv.pop(1)); from mcoder.judge.worker import main; main()"
_START_TIMEOUT_S = 60.0  # a worker that is not ready by then is killed and replaced
# The string-hash seed of every worker, and so of every candidate forked from one: a program's
# set and dict order of strings (its output, when it prints one) is the same in every run and on
# every machine, so the same program gets the same verdict. Python reads it only at start-up.
CANDIDATE_HASH_SEED = libraries.WORKER_ENV["PYTHONHASHSEED"]


class WorkerDied(Exception):
    """The worker process ended in the middle of a job (a bug, or a kill from outside)."""


class Worker:
    """One warm worker process: role ``candidates`` (runs programs) or ``checks`` (runs the
    trusted side of functional tests, under a user id of its own). A candidates worker has a
    checks worker beside it, started the first time a functional test needs it."""

    def __init__(self, slot: int, cfg: JudgeConfig, root: Path, role: str = "candidates"):
        self.slot, self.cfg, self.role, self.root = slot, cfg, role, root
        self.mode = isolation_mode()
        self.lease = None if cfg.unsafe_no_sandbox or self.mode == "rootless" else UidLease(cfg.first_uid)
        self.uid = self.lease.uid if self.lease else None
        self.base = root / (f"w{slot}" if role == "candidates" else f"k{slot}")
        self.base.mkdir(mode=0o711)
        self.cgroups = (
            None
            if cfg.unsafe_no_sandbox
            else sandbox.make_tree_cgroups(
                f"mcoder-judge-{os.getpid()}-{root.name[len('mcoder-judge-'):]}-{self.base.name}", cfg.memory_mb,
                cfg.slot_cpus,
            )
        )
        self.proc: subprocess.Popen | None = None
        self.imported: set[str] = set()  # libraries the worker process imported for its jobs
        self.sock: socket.socket | None = None
        self.checker: Worker | None = None
        self.spawn()

    def checks(self) -> Worker:
        """The checks worker of this slot (started on first use)."""
        if self.checker is None:
            self.checker = Worker(self.slot, self.cfg, self.root, role="checks")
            self.checker.wait_ready()
        elif not self.checker.alive():
            self.checker.restart()
        return self.checker

    def alive(self) -> bool:
        """The process is there and has not exited (a worker can end between two jobs, after
        its last reply: that death belongs to no candidate of the next job)."""
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        self.spawn()
        self.wait_ready()

    def fit_imports(self, allowed: frozenset[str], preimport: list[str]) -> None:
        """Before a job whose profile shows ``allowed`` and whose program imports ``preimport``
        (which the worker imports before forking its tests): a worker that holds a library
        ``allowed`` leaves out is replaced first, so that no candidate finds loaded what its
        profile hides."""
        if self.imported - allowed:
            self.restart()
        self.imported.update(n.split(".")[0] for n in preimport)

    def spawn(self) -> None:
        self.imported = set()
        setup = {
            "sandbox": not self.cfg.unsafe_no_sandbox,
            "mode": self.mode,
            "uid": self.uid,
            "base": str(self.base),
            "disk_mb": self.cfg.max_disk_mb,
            "scope": not self.cfg.unsafe_no_sandbox and landlock_abi() >= 6,
            "role": self.role,
            "cgroups": self.cgroups,
            "wall_factor": self.cfg.wall_factor,
            # the packages of each library profile this run's candidates may get (one, or with
            # ``auto`` each platform's), the default first
            "profiles": {p: list(self.cfg.visible_packages(p)) for p in libraries.profiles_of(self.cfg.libraries)},
        }
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        setup["fd_socket"] = theirs.fileno()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, *libraries.WORKER_FLAGS, "-c", _BOOT, _SRC_DIR, json.dumps(setup)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=dict(libraries.WORKER_ENV),
                cwd=self.base,
                close_fds=True,
                pass_fds=[theirs.fileno()],
                process_group=0,  # a terminal's Ctrl-C reaches the judge alone, which stops the workers
            )
        finally:
            theirs.close()
        self.sock = ours

    def send_fds(self, fds: list[int]) -> None:
        """Hand ``fds`` to the worker for its next job (which says ``"fds": True``)."""
        socket.send_fds(self.sock, [b"f"], fds)

    def send(self, obj) -> None:
        try:
            self._send(obj)
        except (BrokenPipeError, OSError) as e:
            raise WorkerDied(str(e)) from None

    def recv(self):
        return self._recv()

    def wait_ready(self) -> None:
        """Wait for the worker to say it is in the sandbox and ready. One that says nothing within
        ``_START_TIMEOUT_S`` (hung while starting) is killed and another started in its place,
        with a warning; a second that hangs too is the host's fault (EnvironmentMissing)."""
        for attempt in (1, 2):
            ready, _, _ = select.select([self.proc.stdout], [], [], _START_TIMEOUT_S)
            if ready:
                break
            self.proc.kill()
            self.close(keep_lease=True)
            if attempt == 2:
                raise EnvironmentMissing(
                    f"judge worker {self.slot} did not start within {_START_TIMEOUT_S:g} s, twice",
                    hint="the machine may be overloaded or out of memory; try fewer --workers",
                )
            warn(f"judge worker {self.slot} did not start within {_START_TIMEOUT_S:g} s: it was killed, "
                 "and another starts in its place")  # fmt: skip
            self.spawn()
        kind, payload = self._recv()
        if kind != "ready":
            self.close()
            raise EnvironmentMissing(
                f"a judge worker could not enter the sandbox: {payload}",
                hint="the sandbox needs root with network namespaces and Landlock; "
                "pass --unsafe-no-sandbox only where something else isolates the judge",
            )

    def run(self, job: dict, on_result: Callable[[dict], bool], inputs: list | None = None) -> None:
        """Send ``job``; call ``on_result`` per test result (its answer: go on or stop). With
        ``inputs`` (each test's input), the job goes with the first only, and each next one as
        soon as the result before it comes back, before it is compared."""
        given = 1
        try:
            if inputs is not None:
                job = {**job, "inputs" if job["kind"] == "stdin" else "tests": inputs[:1], "n": len(inputs)}
            self._send(job)
            while True:
                kind, payload = self._recv()
                if kind == "done":
                    return
                if inputs is not None and given < len(inputs):
                    self._send(("input", inputs[given]))
                    given += 1
                go_on = on_result(payload)
                if job["early_exit"]:
                    self._send(go_on)
        except (WorkerDied, BrokenPipeError, OSError) as e:
            self.restart()
            raise WorkerDied(str(e)) from None

    def restart(self) -> None:
        self.close(keep_lease=True)
        self.start()

    def _send(self, obj) -> None:
        if self.proc is None:
            raise WorkerDied(f"judge worker {self.slot} is not running")
        self.proc.stdin.write(framing.dumps(obj))
        self.proc.stdin.flush()

    def _recv(self):
        if self.proc is None:
            raise WorkerDied(f"judge worker {self.slot} is not running")
        n = framing.frame_length(self.proc.stdout.read(framing.HEADER.size))
        data = self.proc.stdout.read(n) if n is not None else b""
        if n is None or len(data) != n:
            raise WorkerDied(f"judge worker {self.slot} exited (code {self.proc.poll()})")
        try:
            return pickle.loads(data)
        except Exception as e:  # noqa: BLE001 - a frame torn by the worker's death
            raise WorkerDied(f"judge worker {self.slot} sent a broken frame: {type(e).__name__}") from None

    def close(self, keep_lease: bool = False) -> None:
        if self.checker is not None:
            self.checker.close(keep_lease)
            if not keep_lease:
                self.checker = None
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.proc is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc.stdout.close()
            self.proc = None
        if not keep_lease and self.lease is not None:
            self.lease.release()
        if not keep_lease:
            sandbox.remove_tree_cgroups(self.cgroups)



class Pool:
    """``workers`` warm workers; ``acquire`` hands out a free one."""

    def __init__(self, cfg: JudgeConfig):
        sandbox.sweep_stale(tempfile.gettempdir())  # what judges killed before cleaning up left
        self.root = Path(tempfile.mkdtemp(prefix="mcoder-judge-"))
        os.chmod(self.root, 0o711)  # candidates reach only their own folder below
        (self.root / "owner").write_text(f"{os.getpid()}\n")
        self.workers: list[Worker] = []
        self.free: queue.Queue[Worker] = queue.Queue()
        self.aborted = False
        try:
            for slot in range(cfg.workers):  # all start at once, then each is awaited
                self.workers.append(Worker(slot, cfg, self.root))
            for w in self.workers:
                w.wait_ready()
                self.free.put(w)
        except BaseException:
            self.close()
            raise

    @contextlib.contextmanager
    def acquire(self, timeout: float | None = None):
        """A free worker (``queue.Empty`` when none is free within ``timeout`` seconds). One whose
        job stopped on an exception (in the judge's code or the worker's) is in the middle of its
        protocol: it is replaced by a fresh process before it goes back, never reused as it is."""
        if self.aborted:
            raise WorkerDied("the judge was interrupted")
        w = self.free.get(timeout=timeout)
        if not w.alive():  # ended after its last job's reply: the next candidate gets a fresh one
            self._replace(w)
        try:
            yield w
        except WorkerDied:
            raise  # whoever raised it has started a fresh process already
        except Exception:
            self._replace(w)
            raise
        finally:
            self.free.put(w)

    def abort(self) -> None:
        """Ctrl-C: no job starts any more, and the running ones end now (their workers killed)."""
        self.aborted = True
        for w in self.workers:
            self.kill(w)

    @staticmethod
    def kill(w: Worker) -> None:
        """End ``w``'s job now: its processes are killed (the job ends as WorkerDied, and the
        worker starts afresh)."""
        for proc in (w.proc, w.checker and w.checker.proc):
            if proc is not None:
                with contextlib.suppress(OSError):
                    proc.kill()

    @staticmethod
    def _replace(w: Worker) -> None:
        try:
            w.restart()
        except Exception:  # noqa: BLE001 - it cannot start now: its next job fails as WorkerDied
            w.close(keep_lease=True)  # and tries again (Worker.run restarts it)

    def close(self) -> None:
        for w in self.workers:
            w.close()
        self.workers.clear()
        shutil.rmtree(self.root, ignore_errors=True)
