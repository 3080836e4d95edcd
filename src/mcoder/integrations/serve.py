"""``mcoder judge serve``: the judge as an HTTP service, on uvicorn + Starlette (the ``serve`` extra).

Endpoints (JSON in; version ``API_VERSION``):

- ``POST /run_code``: SandboxFusion's endpoint and response shape (``sandbox-fusion``'s client and
  verl's sandbox reward work unchanged), Python only, run in mcoder's sandbox under the
  service's limits (a request's ``run_timeout`` cannot raise them). What comes back of stdout
  and stderr is what a verdict shows: at most ``SHOWN`` characters each (the message says when
  the output was cut);
- ``POST /judge``: ``{"problem": RECORD | "problem_id": ID, "completions": [...], "rollout_ids": [...]?}``
  -> the verdicts as JSONL, one line per completion in order, the bytes ``mcoder judge`` writes;
- ``GET /health``: status, capacity, load and the judge's settings (no token needed).

One ``Judge`` (its sandboxed workers) serves every request. Admission is bounded in completions:
a request that would take the load past ``capacity`` is answered 503 (busy) at once, unless
nothing else is running; bodies over ``max_request_mb`` get 413. With a token, requests need
``Authorization: Bearer TOKEN``. Programs have no network (the sandbox gives them none).
SIGTERM/SIGINT: uvicorn stops accepting, lets the requests in flight finish (up to
``graceful_s``), then the judge's workers are closed.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import re
import secrets
import socket
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from mcoder.config import ranges
from mcoder.errors import DataError, McoderError
from mcoder.extract import extract_code
from mcoder.integrations.columns import load_problems, record
from mcoder.jsonl import dumps
from mcoder.judge.config import JudgeConfig
from mcoder.judge.stage import NOT_SETTINGS
from mcoder.records import Problem, Rollout, Test, Verdict

API_VERSION = 1
SHOWN = 1000  # characters of stdout / stderr a verdict keeps (run_code returns no more)
MAX_COMPLETIONS = 4096  # per /judge request


@ranges(port="[0, 65535]", capacity=">= 0", max_request_mb="> 0", graceful_s=">= 0")
@dataclass
class ServeConfig:
    host: str = "127.0.0.1"
    """Address to bind (loopback by default; 0.0.0.0 only behind a firewall or a token)."""
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
    return {f: getattr(cfg, f) for f in cfg.__dataclass_fields__ if f not in NOT_SETTINGS}


# ---------------------------------------------------------------- the two endpoints' logic (sync)


class SeenProblems:
    """The problems of recent requests by content, so that a problem sent again (every step of a
    run sends its problems again) is the same object: parsed once, its tests prepared once by the
    judge, held once."""

    def __init__(self, size: int = 512):
        self.size, self._d = size, OrderedDict()
        self._lock = threading.Lock()

    def get(self, value: Any) -> Problem:
        try:
            key = hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).digest()
        except (TypeError, orjson.JSONEncodeError):  # not plain JSON: parsed (and refused) as it is
            return record(value, "problem")
        with self._lock:
            if key in self._d:
                self._d.move_to_end(key)
                return self._d[key]
        problem = record(value, "problem")
        with self._lock:
            self._d[key] = problem
            while len(self._d) > self.size:
                self._d.popitem(last=False)
        return problem


def native_request(
    body: Any, known: dict[str, Problem], seen: SeenProblems | None = None
) -> tuple[Problem, list[Rollout]]:
    """The problem and rollouts of a /judge body; DataError naming the field otherwise."""
    if not isinstance(body, dict):
        raise DataError("the body is not a JSON object", field="body")
    named = body.get("problem")
    if isinstance(named, str) and not named.lstrip().startswith("{"):  # an id where the record goes
        raise DataError(f"`problem` is a problem record (an object), not {named[:80]!r}: to name a problem "
                        "the service loaded (--problems), send it as `problem_id`", field="problem")  # fmt: skip
    if body.get("problem") is not None:
        problem = seen.get(body["problem"]) if seen is not None else record(body["problem"], "problem")
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
    """SandboxFusion's run_code on mcoder's judge: the program is one stdin test whose expected
    output is a secret of this service, so the verdict's shown output is the program's stdout."""

    def __init__(self) -> None:
        self.secret = secrets.token_hex(16)  # never enters a candidate process

    def request(self, body: Any) -> tuple[Problem, Rollout]:
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
        code = body["code"]
        completion = fenced(code)
        if code.strip() and extract_code(completion) != code + "\n":  # e.g. a "</think>" in the code
            raise DataError("this program cannot pass through the judge's code extraction", field="code")
        problem = Problem(
            id="run_code", source="run_code", question="", tests=[Test(stdin or "", self.secret)]
        )
        return problem, Rollout(id="run_code", problem_id="run_code", completion=completion)

    def response(self, v: Verdict) -> dict[str, Any]:
        ff = v.first_failure or {}
        stdout, stderr = ff.get("got") or "", ff.get("stderr") or ""
        if v.status == "accepted":
            stdout = self.secret + "\n"  # printed what the service keeps secret: vanishingly rare
        cut = [
            name
            for name, was_cut in (("stdout", _head_cut(stdout)), ("stderr", len(stderr) >= SHOWN))
            if was_cut
        ]
        run: dict[str, Any] = {"status": "Finished", "execution_time": v.elapsed_s, "return_code": 0,
                               "stdout": stdout, "stderr": stderr}  # fmt: skip
        if v.status == "time_limit":
            run.update(status="TimeLimitExceeded", return_code=None)
        elif v.status == "compile_error":
            run.update(return_code=1, stderr=str(ff.get("reason") or ""))
        elif v.status not in ("accepted", "wrong_answer"):
            run["return_code"] = _return_code(v.status, str(ff.get("detail") or ""))
        ok = run["status"] == "Finished" and run["return_code"] == 0
        message = (
            ""
            if not cut
            else f"{' and '.join(cut)} cut to {SHOWN} characters (stdout its first, stderr its last)"
        )
        if v.status in ("memory_limit", "time_limit", "runtime_error"):
            why = v.status.replace("_", " ") + (f" ({ff['detail']})" if ff.get("detail") else "")
            message = "; ".join(filter(None, [why, message]))
        return {"status": "Success" if ok else "Failed", "message": message, "compile_result": None,
                "run_result": run, "executor_pod_name": None, "files": {}}  # fmt: skip


def fenced(code: str) -> str:
    """``code`` inside a fence that no line of it can close, so the judge's extraction gives it back."""
    longest = max((len(m) for m in re.findall(r"~{3,}", code)), default=2)
    return f"{'~' * (longest + 1)}python\n{code}\n{'~' * (longest + 1)}\n"


def _head_cut(text: str) -> bool:
    """Whether a verdict's shown output is the head of a longer one (it then ends "... (N chars)")."""
    return len(text) > SHOWN and text.endswith(" chars)")


def _return_code(status: str, detail: str) -> int:
    m = re.fullmatch(r"exit code (-?\d+)", detail)
    if m:
        return int(m.group(1))
    m = re.fullmatch(r"killed by (SIG\w+)", detail)
    if m:
        import signal

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
    admission, run_code, seen = Admission(capacity), RunCode(), SeenProblems()
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
        """Check the token, read the body, admit it, run ``run(body)`` in a thread."""
        _check_token(cfg.token, request.headers.get("authorization"))
        body = await _read_json(request, limit)
        n = n_of(body)
        if not admission.enter(n):
            raise Refused(503, "busy: the judge's queue is full, retry later or on another service")
        try:
            return await anyio.to_thread.run_sync(run, body, limiter=threads)
        finally:
            admission.leave(n)

    def judge_body(body: Any) -> bytes:
        problem, rollouts = native_request(body, known, seen)
        verdicts = state["judge"].judge({problem.id: problem}, rollouts)
        return b"".join(dumps(v) for v in verdicts)

    def run_body(body: Any) -> dict:
        problem, rollout = run_code.request(body)
        if not rollout.completion.strip() or not body["code"].strip():
            return run_code.response(Verdict("run_code", "run_code", 0.0, False, "wrong_answer", 0, 1))
        (verdict,) = state["judge"].judge({problem.id: problem}, [rollout])
        return run_code.response(verdict)

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
        up = state["judge"] is not None
        return JSONResponse(
            {
                "status": "ok" if up else "starting",
                "api": API_VERSION,
                "capacity": capacity,
                "in_flight": admission.used,
                "workers": judge_cfg.workers,
                "problems": len(known),
                "settings": settings_of(judge_cfg),
            },
            200 if up else 503,
        )

    routes = [
        Route("/run_code", run_code_endpoint, methods=["POST"]),
        Route("/judge", judge_endpoint, methods=["POST"]),
        Route("/health", health, methods=["GET"]),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


def _retry(status: int) -> dict[str, str]:
    return {"Retry-After": "1"} if status == 503 else {}


def _check_token(token: str | None, header: str | None) -> None:
    if token is None:
        return
    given = (header or "").removeprefix("Bearer ").encode()
    if not hmac.compare_digest(given, token.encode()):
        raise Refused(401, "a valid `Authorization: Bearer TOKEN` header is needed")


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
        from mcoder.errors import UsageError

        raise UsageError(
            f"cannot listen on {host}:{port}: {e.strerror or e}", hint="pick another --host or --port"
        ) from None
    bound, port = sock.getsockname()[:2]
    return sock, f"http://{'[' + bound + ']' if ':' in bound else bound}:{port}"


def serve(cfg: ServeConfig, judge_cfg: JudgeConfig, ready=print) -> None:
    """Run the service until SIGTERM/SIGINT; ``ready(url)`` once it listens."""
    import uvicorn

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
    server.run(sockets=[sock])
    if not server.started:
        from mcoder.errors import EnvironmentMissing

        raise EnvironmentMissing(
            "the judge service did not start (its workers could not be started)",
            hint="run `mcoder judge` on a small file here to see why",
        )
