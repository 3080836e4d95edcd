"""``mcoder judge serve``: the judge as an HTTP service, on uvicorn + Starlette (the ``serve`` extra).

Endpoints (JSON in; version ``API_VERSION``):

- ``POST /run_code``: SandboxFusion's endpoint and response shape (``sandbox-fusion``'s client and
  verl's sandbox reward work unchanged), Python only, run in mcoder's sandbox under the
  service's limits (a request's ``run_timeout`` cannot raise them). The code is run as it is
  (never looked for in a completion: nothing it contains is refused); stdout comes back whole
  (up to the judge's ``max_output_mb``), stderr its last ``STDERR_TAIL`` characters (the message
  says when either was cut);
- ``POST /judge``: ``{"problem": RECORD | "problem_id": ID, "completions": [...], "rollout_ids": [...]?}``
  -> the verdicts as JSONL, one line per completion in order, the bytes ``mcoder judge`` writes;
- ``GET /health``: status and capacity for anyone; with the token also the load, the judge's
  settings and ``request_wall_s``, the bound within which every request is answered.

One ``Judge`` (its sandboxed workers) serves every request. Admission is bounded in completions:
a request that would take the load past ``capacity`` is answered 503 (busy) at once, unless
nothing else is running; bodies over ``max_request_mb`` get 413. Each rollout has the judge's
``rollout_wall_s`` and each request ``request_wall_s`` of wall time, queue included: what is not
judged by then is ``time_limit`` in the answer, which comes back all the same. A request whose
client has gone is dropped (its rollouts not started never run, those running are stopped).
With a token, requests need ``Authorization: Bearer TOKEN``; a service on an address other than
loopback starts only with a token, or with ``--no-auth``. Programs have no network (the sandbox
gives them none). SIGTERM/SIGINT: uvicorn stops accepting, lets the requests in flight finish
(up to ``graceful_s``), then the judge's workers are closed; a SIGTERM stop exits 0.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import re
import signal
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from mcoder.config import output_settings, ranges
from mcoder.console import warn
from mcoder.errors import DataError, McoderError, UsageError
from mcoder.integrations.columns import load_problems, record
from mcoder.jsonl import dumps
from mcoder.judge.config import JudgeConfig
from mcoder.judge.harness import STDERR_TAIL
from mcoder.records import Problem, Rollout

API_VERSION = 1
MAX_COMPLETIONS = 4096  # per /judge request
DISCONNECT_POLL_S = 0.5  # how often a request in flight looks whether its client is still there


@ranges(port="[0, 65535]", capacity=">= 0", max_request_mb="> 0", graceful_s=">= 0", request_wall_s="> 0")
@dataclass
class ServeConfig:
    host: str = "127.0.0.1"
    """Address to bind (loopback by default; any other needs a token, or --no-auth)."""
    port: int = 8080
    """Port (0: any free one; the URL is printed on stdout once the service listens)."""
    problems: Path | None = None
    """Problems JSONL whose ids /judge requests may name instead of sending the problem."""
    token: str | None = None
    """Shared secret: requests must send ``Authorization: Bearer TOKEN``."""
    capacity: int = 0
    """Completions admitted at once, running or waiting (0: 4 per judge worker); past it: 503."""
    max_request_mb: float = 64.0
    """Largest request body, MiB (413 past it)."""
    graceful_s: float = 60.0
    """On SIGTERM: seconds the requests in flight may take to finish before they are cut."""
    request_wall_s: float = 600.0
    """Wall-clock seconds a request may take, queue included (what is not judged by then is
    time_limit in its answer); published in /health, clients wait no longer than this."""
    no_auth: bool = False
    """Serve an address other than loopback without a token (only behind a firewall: anyone
    who reaches the port runs code)."""


class Refused(Exception):
    """An HTTP answer other than 200, with its JSON body."""

    def __init__(self, status: int, message: str, **extra: Any):
        super().__init__(message)
        self.status, self.body = status, {"error": message, **extra}


class Admission:
    """Completions in flight, bounded: ``enter(n)`` says at once whether there is room."""

    def __init__(self, capacity: int):
        self.capacity, self.used = capacity, 0
        self._lock = threading.Lock()

    def enter(self, n: int) -> bool:
        with self._lock:
            if self.used and self.used + n > self.capacity:
                return False
            self.used += n
            return True

    def leave(self, n: int) -> None:
        with self._lock:
            self.used -= n


def settings_of(cfg: JudgeConfig) -> dict[str, Any]:
    """The judge settings that decide verdicts (what a client checks before trusting a service)."""
    return output_settings(cfg)


# ---------------------------------------------------------------- the two endpoints' logic (sync)


def native_request(body: Any, known: dict[str, Problem]) -> tuple[Problem, list[Rollout]]:
    """The problem and rollouts of a /judge body; DataError naming the field otherwise. A problem
    sent again (every step of a run sends its problems again) is parsed again and dropped after
    the request: the judge holds its prepared tests once, by content, bounded in bytes."""
    if not isinstance(body, dict):
        raise DataError("the body is not a JSON object", field="body")
    named = body.get("problem")
    if isinstance(named, str) and not named.lstrip().startswith("{"):  # an id where the record goes
        raise DataError(f"`problem` is a problem record (an object), not {named[:80]!r}: to name a problem "
                        "the service loaded (--problems), send it as `problem_id`", field="problem")  # fmt: skip
    if body.get("problem") is not None:
        problem = record(body["problem"], "problem")
    elif isinstance(body.get("problem_id"), str):
        problem = known.get(body["problem_id"])
        if problem is None:
            raise DataError(f"no problem with id {body['problem_id']!r} is loaded", field="problem_id",
                            hint="send the problem itself, or start the service with --problems")  # fmt: skip
    else:
        raise DataError("the body needs `problem` (a record) or `problem_id`", field="problem")
    completions = body.get("completions")
    if not isinstance(completions, list) or not all(isinstance(c, str) for c in completions):
        raise DataError("`completions` must be a list of strings", field="completions")
    if len(completions) > MAX_COMPLETIONS:
        raise DataError(f"more than {MAX_COMPLETIONS} completions in one request", field="completions")
    ids = body.get("rollout_ids")
    if ids is None:
        ids = [f"{problem.id}/{i}" for i in range(len(completions))]
    if not isinstance(ids, list) or len(ids) != len(completions) or not all(isinstance(i, str) for i in ids):
        raise DataError("`rollout_ids` must be strings, one per completion", field="rollout_ids")
    if len(set(ids)) != len(ids):
        raise DataError("`rollout_ids` repeat an id", field="rollout_ids")
    return problem, [
        Rollout(id=i, problem_id=problem.id, completion=c) for i, c in zip(ids, completions, strict=True)
    ]


class RunCode:
    """SandboxFusion's run_code on mcoder's judge (``Judge.run_code``): the program, as sent, run
    once on its stdin under the service's limits."""

    @staticmethod
    def request(body: Any) -> tuple[str, str]:
        """(code, stdin) of a run_code body; DataError naming the field otherwise."""
        if not isinstance(body, dict) or not isinstance(body.get("code"), str):
            raise DataError("run_code needs `code` (a string)", field="code")
        language = body.get("language")
        if language not in ("python", "python3"):
            raise DataError(f"language {language!r} is not served: mcoder runs Python", field="language")
        if body.get("files") or body.get("fetch_files"):
            raise DataError("files and fetch_files are not served: programs get an empty private folder",
                            field="files")  # fmt: skip
        stdin = body.get("stdin")
        if stdin is not None and not isinstance(stdin, str):
            raise DataError("`stdin` must be a string", field="stdin")
        return body["code"], stdin or ""

    @staticmethod
    def response(res: dict[str, Any], max_output_mb: float) -> dict[str, Any]:
        """SandboxFusion's answer for ``Judge.run_code``'s result."""
        status, detail = res["status"], str(res.get("detail") or "")
        run: dict[str, Any] = {"status": "Finished", "execution_time": res["elapsed_s"], "return_code": 0,
                               "stdout": res["stdout"], "stderr": res["stderr"]}  # fmt: skip
        notes = []
        if status == "time_limit":
            run.update(status="TimeLimitExceeded", return_code=None)
        elif status == "compile_error":
            run["return_code"] = 1
        elif status != "ok":
            run["return_code"] = _return_code(status, detail)
        if status in ("memory_limit", "time_limit", "runtime_error", "judge_refused"):
            notes.append(status.replace("_", " ") + (f" ({detail})" if detail else ""))
        if detail == "output limit exceeded":
            notes.append(f"stdout stopped at the output limit ({max_output_mb:g} MiB)")
        if len(res["stderr"]) >= STDERR_TAIL:
            notes.append(f"stderr cut to its last {STDERR_TAIL} characters")
        ok = run["status"] == "Finished" and run["return_code"] == 0
        return {"status": "Success" if ok else "Failed", "message": "; ".join(notes), "compile_result": None,
                "run_result": run, "executor_pod_name": None, "files": {}}  # fmt: skip


def _return_code(status: str, detail: str) -> int:
    m = re.fullmatch(r"exit code (-?\d+)", detail)
    if m:
        return int(m.group(1))
    m = re.fullmatch(r"killed by (SIG\w+)", detail)
    if m:
        sig = getattr(signal, m.group(1), None)
        return -int(sig) if sig is not None else -9
    return -9 if status == "memory_limit" else 1


# ---------------------------------------------------------------- the ASGI app


def make_app(cfg: ServeConfig, judge_cfg: JudgeConfig):
    """The Starlette app; its lifespan starts the judge's workers and closes them at shutdown."""
    import anyio
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    from mcoder.judge.core import Judge

    known = load_problems(cfg.problems)
    capacity = cfg.capacity or 4 * judge_cfg.workers
    admission = Admission(capacity)
    threads = anyio.CapacityLimiter(capacity)
    limit = int(cfg.max_request_mb * (1 << 20))
    state: dict[str, Any] = {"judge": None}

    judge = Judge(judge_cfg)  # checks the sandbox here: a machine without one fails before listening

    @contextlib.asynccontextmanager
    async def lifespan(app):
        state["judge"] = await anyio.to_thread.run_sync(judge.__enter__)
        try:
            yield
        finally:
            state["judge"] = None
            await anyio.to_thread.run_sync(judge.close)

    async def judged(request: Request, n_of, run) -> Any:
        """Check the token, read the body, admit it, run ``run(body, deadline, cancel)`` in a
        thread: ``deadline`` is the request's wall budget, ``cancel`` is set (and the judge told)
        when the client goes away before its answer."""
        if not _authorized(cfg.token, request.headers.get("authorization")):
            raise Refused(401, "a valid `Authorization: Bearer TOKEN` header is needed")
        body = await _read_json(request, limit)
        deadline = time.monotonic() + cfg.request_wall_s
        n = n_of(body)
        if not admission.enter(n):
            raise Refused(503, "busy: the judge's queue is full, retry later or on another service")
        cancel = threading.Event()

        async def watch() -> None:
            while not await request.is_disconnected():
                await anyio.sleep(DISCONNECT_POLL_S)
            judge.cancel(cancel)

        done: dict[str, Any] = {}

        async def work() -> None:
            try:
                done["value"] = await anyio.to_thread.run_sync(run, body, deadline, cancel, limiter=threads)
            except Exception as e:  # noqa: BLE001 - raised below, outside the task group (no group of one)
                done["error"] = e
            tasks.cancel_scope.cancel()  # the watch ends with the work

        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(watch)
                tasks.start_soon(work)
        finally:
            admission.leave(n)
        if "error" in done:
            raise done["error"]
        return done["value"]

    def judge_body(body: Any, deadline: float, cancel: threading.Event) -> bytes:
        problem, rollouts = native_request(body, known)
        verdicts = state["judge"].judge({problem.id: problem}, rollouts, deadline=deadline, cancel=cancel)
        return b"".join(dumps(v) for v in verdicts)

    def run_body(body: Any, deadline: float, cancel: threading.Event) -> dict:
        code, stdin = RunCode.request(body)
        res = state["judge"].run_code(code, stdin, deadline=deadline, cancel=cancel)
        return RunCode.response(res, judge_cfg.max_output_mb)

    async def judge_endpoint(request: Request) -> Response:
        def count(body: Any) -> int:
            c = body.get("completions") if isinstance(body, dict) else None
            return max(1, len(c)) if isinstance(c, list) else 1

        try:
            data = await judged(request, count, judge_body)
        except Refused as e:
            return JSONResponse(e.body, e.status, headers=_retry(e.status))
        except McoderError as e:
            return JSONResponse({"error": e.message, "hint": e.hint}, 400)
        return Response(data, media_type="application/x-ndjson")

    async def run_code_endpoint(request: Request) -> Response:
        try:
            data = await judged(request, lambda body: 1, run_body)
        except Refused as e:
            body = {
                "status": "SandboxError",
                "message": e.body["error"],
                "compile_result": None,
                "run_result": None,
            }
            return JSONResponse(body, e.status, headers=_retry(e.status))
        except McoderError as e:
            return JSONResponse({"status": "SandboxError", "message": e.message, "compile_result": None,
                                 "run_result": None}, 400)  # fmt: skip
        return JSONResponse(data)

    async def health(request: Request) -> Response:
        """Status and capacity for anyone (a load balancer's probe); the load, the settings and
        the request bound only with the token."""
        up = state["judge"] is not None
        body: dict[str, Any] = {"status": "ok" if up else "starting", "api": API_VERSION, "capacity": capacity}
        if _authorized(cfg.token, request.headers.get("authorization")):
            body.update(
                in_flight=admission.used, workers=judge_cfg.workers, problems=len(known),
                settings=settings_of(judge_cfg), request_wall_s=cfg.request_wall_s,
            )  # fmt: skip
        return JSONResponse(body, 200 if up else 503)

    routes = [
        Route("/run_code", run_code_endpoint, methods=["POST"]),
        Route("/judge", judge_endpoint, methods=["POST"]),
        Route("/health", health, methods=["GET"]),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


def _exit_cleanly(signum, frame) -> None:
    raise SystemExit(0)


def _retry(status: int) -> dict[str, str]:
    return {"Retry-After": "1"} if status == 503 else {}


def _authorized(token: str | None, header: str | None) -> bool:
    """Whether ``header`` is ``Bearer TOKEN`` (the scheme's name in any case, RFC 6750), or the
    service has no token. The bare token, or another scheme, is not."""
    if token is None:
        return True
    scheme, _, given = (header or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.encode(), token.encode())


async def _read_json(request, limit: int) -> Any:
    length = request.headers.get("content-length")
    if length is not None and (not length.isdigit() or int(length) > limit):
        raise Refused(413, f"the body is over {limit} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise Refused(413, f"the body is over {limit} bytes")
        chunks.append(chunk)
    try:
        return orjson.loads(b"".join(chunks))
    except orjson.JSONDecodeError as e:
        raise Refused(400, f"the body is not JSON: {e}") from None


def listen(host: str, port: int) -> tuple[socket.socket, str]:
    """The service's listening socket and its URL (``port`` 0: a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # inherited by every accepted connection: without it a response written in two parts (headers,
    # body) waits for the client's delayed ACK, ~40 ms per request on Linux (uvicorn's h11 server
    # does not set it)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise UsageError(
            f"cannot listen on {host}:{port}: {e.strerror or e}", hint="pick another --host or --port"
        ) from None
    bound, port = sock.getsockname()[:2]
    return sock, f"http://{'[' + bound + ']' if ':' in bound else bound}:{port}"


def loopback(host: str) -> bool:
    """Whether ``host`` names this machine's loopback only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve to anything
        return False


def check_exposure(cfg: ServeConfig) -> None:
    """A service others can reach runs their code: on an address other than loopback it needs a
    token, or ``--no-auth`` said on purpose (then a warning)."""
    if loopback(cfg.host):
        return
    if cfg.token is None and not cfg.no_auth:
        raise UsageError(
            f"--host {cfg.host} serves the network, and anyone who reaches it runs code: no token is set",
            hint="set MCODER_JUDGE_TOKEN (or --token); or pass --no-auth where a firewall keeps others out",
        )
    if cfg.token is None:
        warn(f"serving {cfg.host} without a token (--no-auth): anyone who reaches the port runs code")


def serve(cfg: ServeConfig, judge_cfg: JudgeConfig, ready=print) -> None:
    """Run the service until SIGTERM/SIGINT; ``ready(url)`` once it listens. A SIGTERM stop
    returns (exit 0): uvicorn raises the signal again once it has shut down, which a handler
    here turns into a clean exit."""
    import uvicorn

    check_exposure(cfg)
    app = make_app(cfg, judge_cfg)
    sock, url = listen(cfg.host, cfg.port)
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=cfg.graceful_s, access_log=False)
    )
    original = server.startup

    async def startup(sockets=None):
        await original(sockets=sockets)
        ready(url)

    server.startup = startup
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _exit_cleanly) if main else None
    try:
        server.run(sockets=[sock])
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)
    if not server.started:
        from mcoder.errors import EnvironmentMissing

        raise EnvironmentMissing(
            "the judge service did not start (its workers could not be started)",
            hint="run `mcoder judge` on a small file here to see why",
        )
