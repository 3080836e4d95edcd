"""`mcoder judge serve` as a real process on loopback: its native endpoint gives `mcoder judge`'s
verdict bytes, SandboxFusion's client runs code through it, programs reach no network, a full
queue answers busy at once, a token and size limits hold, SIGTERM lets work in flight finish,
the judge's red-team programs get the same verdicts through it, and ``RemoteJudge`` over two
services loses or doubles no verdict when one of them is killed mid-batch."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import select
import signal
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import sandbox_or_skip

httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")
pytest.importorskip("starlette")

from typer.testing import CliRunner

from helpers.large import ANSWER, PROGRAM, large_record, retained_bytes
from mcoder.cli.app import app
from mcoder.integrations.remote import RemoteJudge
from mcoder.judge import sandbox
from mcoder.judge.config import JudgeConfig
from mcoder.judge.core import Judge
from mcoder.records import Problem, Rollout, Test, from_dict, to_dict

TESTS = Path(__file__).resolve().parent
EXAMPLES = TESTS.parents[1] / "examples" / "problems"
START_S = 120  # a service's start (the judge's workers included) on a loaded 2-core machine


@pytest.fixture(scope="module", autouse=True)
def _sandbox():
    sandbox_or_skip()


@dataclass
class Service:
    url: str
    proc: subprocess.Popen
    log: Path

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Signal it and wait: its exit code (0 for a clean SIGTERM stop; uvicorn raised the
        signal again once it had shut down, and the service died by it, -15)."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(timeout=30)


def start(tmp: Path, *args: str, env: dict | None = None, host: str = "127.0.0.1") -> Service:
    """`mcoder judge serve --port 0 ARGS` as a process; its URL is the first line it prints."""
    log = tmp / f"serve-{time.monotonic_ns()}.log"
    cmd = [sys.executable, "-m", "mcoder", "judge", "serve", "--port", "0", "-q", *args]
    with open(log, "w") as err:
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=err, text=True, env={**os.environ, **(env or {})}
        )
    ready, _, _ = select.select([proc.stdout], [], [], START_S)
    line = proc.stdout.readline().strip() if ready else ""
    if not line.startswith(f"http://{host}:"):
        proc.kill()
        proc.wait()
        pytest.fail(f"the service did not start: {line!r}\n{log.read_text()[-2000:]}")
    return Service(line, proc, log)


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serve")
    s = start(tmp, "-w", "2", "--problems", str(EXAMPLES / "stdin.jsonl"), "--timeout-s", "1")
    yield s
    assert s.stop() == 0


def problems(name: str = "stdin.jsonl") -> list[Problem]:
    return [from_dict(Problem, json.loads(line)) for line in (EXAMPLES / name).read_text().splitlines()]


def fenced(code: str) -> str:
    return f"```python\n{code}```"


def without_time(lines: bytes) -> list[bytes]:
    """Verdict lines with the one field that differs between two runs (the time taken) zeroed,
    sorted (`mcoder judge` writes each verdict as it is ready)."""
    return sorted(re.sub(rb'"elapsed_s":[0-9.e+-]+', b'"elapsed_s":0', lines).splitlines())


# ---------------------------------------------------------------- the native endpoint


def test_native_verdicts_are_the_bytes_mcoder_judge_writes(service, tmp_path):
    p = problems()[1]
    marker = f"# {time.monotonic_ns()}\n"  # programs no earlier test sent: no cache hit on either side
    completions = [fenced(marker + s) for s in p.reference_solutions] + [
        fenced(marker + "print(input())\n"), "no code here", fenced(marker + "x = (\n"),
    ]  # fmt: skip
    ids = [f"r{i}" for i in range(len(completions))]
    res = httpx.post(
        f"{service.url}/judge", json={"problem": to_dict(p), "completions": completions, "rollout_ids": ids}
    )
    assert res.status_code == 200 and res.headers["content-type"].startswith("application/x-ndjson")

    (tmp_path / "p.jsonl").write_text(json.dumps(to_dict(p)) + "\n")
    rows = [{"id": i, "problem_id": p.id, "completion": c} for i, c in zip(ids, completions)]
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "v.jsonl"
    cli = CliRunner().invoke(app, ["judge", "-p", str(tmp_path / "p.jsonl"), "-r", str(tmp_path / "r.jsonl"),
                                   "-o", str(out), "-w", "2", "--timeout-s", "1", "-q"])  # fmt: skip
    assert cli.exit_code == 0, cli.output
    assert without_time(res.content) == without_time(out.read_bytes())
    statuses = [json.loads(line)["status"] for line in res.content.splitlines()]
    assert statuses == ["accepted"] * len(p.reference_solutions) + [
        "wrong_answer",
        "no_code",
        "compile_error",
    ]

    by_id = httpx.post(f"{service.url}/judge", json={"problem_id": p.id, "completions": completions[:1]})
    assert json.loads(by_id.content)["status"] == "accepted"
    assert json.loads(by_id.content)["rollout_id"] == f"{p.id}/0"


@pytest.mark.parametrize(
    "body, status, words",
    [
        (b"{not json", 400, "not JSON"),
        (b"[]", 400, "not a JSON object"),
        (b'{"problem_id": "nope", "completions": []}', 400, "no problem with id"),
        (b'{"problem_id": "mc-stdin-001", "completions": [1]}', 400, "list of strings"),
        (b'{"problem_id": "mc-stdin-001", "completions": ["a"], "rollout_ids": ["x", "y"]}', 400, "one per"),
        (b'{"problem": {"tests": [{"input": 1}]}, "completions": ["a"]}', 400, "tests"),
        (b'{"problem": "mc-stdin-001", "completions": ["a"]}', 400, "send it as `problem_id`"),
    ],
)
def test_bad_requests_are_answered_400_with_the_reason(service, body, status, words):
    res = httpx.post(f"{service.url}/judge", content=body)
    assert res.status_code == status and words in res.json()["error"]


def test_health_says_the_settings_the_verdicts_depend_on(service):
    h = httpx.get(f"{service.url}/health").json()
    assert h["status"] == "ok" and h["workers"] == 2 and h["capacity"] == 8 and h["problems"] == 32
    assert h["settings"]["timeout_s"] == 1.0 and "workers" not in h["settings"]


# ---------------------------------------------------------------- SandboxFusion's client


def test_the_sandbox_fusion_client_runs_code_through_the_service(service):
    sf = pytest.importorskip("sandbox_fusion")
    run = lambda **kw: sf.run_code(
        sf.RunCodeRequest(language="python", **kw), endpoint=service.url, max_attempts=1
    )
    ok = run(code="import sys\nprint(sys.stdin.read()[::-1])", stdin="abc")
    assert (
        ok.status == sf.RunStatus.Success
        and ok.run_result.stdout == "cba\n"
        and ok.run_result.return_code == 0
    )
    failed = run(code="import sys\nprint('partial')\nsys.stderr.write('boom')\nsys.exit(3)")
    assert (
        failed.status == sf.RunStatus.Failed and failed.run_result.return_code != 0
    )  # the verdict keeps no code
    assert run(code="import os\nos._exit(3)").run_result.return_code == 3
    assert failed.run_result.stdout == "partial\n" and failed.run_result.stderr.endswith("boom")
    slow = run(code="while True:\n    pass\n")
    assert slow.run_result.status == sf.CommandRunStatus.TimeLimitExceeded
    broken = run(code="def f(:\n")
    assert broken.status == sf.RunStatus.Failed and "SyntaxError" in broken.run_result.stderr
    mapping = sf.SummaryMapping(Success="ok", Failed="failed", RunTimeout="timeout", RunFailed="run_failed")
    assert [sf.summary_run_code_result(r, mapping) for r in (ok, failed, slow)] == [
        "ok",
        "run_failed",
        "timeout",
    ]
    with pytest.raises(Exception, match="not served"):
        run(code="print(1)", files={"a.txt": "eA=="})


def test_programs_reach_no_network_not_even_the_service(service):
    port = int(service.url.rsplit(":", 1)[1])
    code = f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)\nprint('connected')\n"
    res = httpx.post(f"{service.url}/run_code", json={"code": code, "language": "python"}).json()
    assert res["status"] == "Failed" and "connected" not in res["run_result"]["stdout"]
    assert "OSError" in res["run_result"]["stderr"] or "Error" in res["run_result"]["stderr"]


# ---------------------------------------------------------------- limits, token, back-pressure, shutdown


@pytest.mark.heavy
def test_busy_at_once_size_and_token_limits_and_sigterm_lets_work_in_flight_finish(tmp_path):
    s = start(tmp_path, "-w", "1", "--capacity", "1", "--max-request-mb", "0.01", "--timeout-s", "1",
              env={"MCODER_JUDGE_TOKEN": "s3cret"})  # fmt: skip
    auth = {"Authorization": "Bearer s3cret"}
    try:
        assert (
            httpx.post(f"{s.url}/run_code", json={"code": "print(1)", "language": "python"}).status_code
            == 401
        )
        wrong = {"Authorization": "Bearer s3cre"}
        assert httpx.post(f"{s.url}/judge", json={}, headers=wrong).status_code == 401
        big = {"code": "#" * 20_000, "language": "python"}
        assert httpx.post(f"{s.url}/run_code", json=big, headers=auth).status_code == 413

        slow = {"code": "import time\ntime.sleep(2.5)\nprint('slept')", "language": "python"}
        first: dict = {}
        t = threading.Thread(
            target=lambda: first.update(
                r=httpx.post(f"{s.url}/run_code", json=slow, headers=auth, timeout=60)
            )
        )
        t.start()
        deadline = time.monotonic() + 30
        while httpx.get(f"{s.url}/health", headers=auth).json()["in_flight"] == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        busy = httpx.post(f"{s.url}/run_code", json={"code": "print(2)", "language": "python"}, headers=auth)
        assert busy.status_code == 503 and busy.headers["retry-after"] == "1"
        assert busy.json()["status"] == "SandboxError" and "busy" in busy.json()["message"]
        assert t.is_alive()  # answered while the first request still ran
        assert s.stop(signal.SIGTERM) == 0  # graceful: waits for the request in flight
        t.join(60)
        assert first["r"].status_code == 200 and first["r"].json()["run_result"]["stdout"] == "slept\n"
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{s.url}/health")
    finally:
        s.stop()


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    """A service with a token and a request bound of 8 s, one worker."""
    s = start(tmp_path_factory.mktemp("guarded"), "-w", "1", "--timeout-s", "1", "--request-wall-s", "8",
              env={"MCODER_JUDGE_TOKEN": "s3cret"})  # fmt: skip
    yield s
    assert s.stop() == 0  # SIGTERM: a clean stop exits 0 (it died by the signal: -15)


AUTH = {"Authorization": "Bearer s3cret"}


def test_the_token_is_taken_as_a_bearer_token_only_and_health_shows_little_without_it(guarded):
    run = {"code": "print(1)", "language": "python"}
    assert httpx.post(f"{guarded.url}/run_code", json=run, headers={"Authorization": "s3cret"}).status_code == 401
    assert httpx.post(f"{guarded.url}/run_code", json=run, headers={"Authorization": "Basic s3cret"}).status_code == 401
    assert httpx.post(f"{guarded.url}/run_code", json=run, headers={"Authorization": "bearer s3cret"}).status_code == 200
    public = httpx.get(f"{guarded.url}/health").json()
    assert set(public) == {"status", "api", "capacity"}  # no settings, no load
    full = httpx.get(f"{guarded.url}/health", headers=AUTH).json()
    assert full["request_wall_s"] == 8.0 and full["settings"]["timeout_s"] == 1.0 and "in_flight" in full


def _sleepers(n: int, tests: int = 4) -> tuple[Problem, list[str]]:
    """A problem of ``tests`` tests and ``n`` programs that sleep 0.9 s in each (each under the
    1 s limit and its 3 s backstop: every one correct, ~3.6 s of wall time a rollout)."""
    p = Problem(id=f"sleepers-{time.monotonic_ns()}", source="t", question="",
                tests=[Test(f"{i}\n", f"{i}\n") for i in range(tests)])  # fmt: skip
    return p, [fenced(f"# {j}\nimport time\ntime.sleep(0.9)\nprint(input())\n") for j in range(n)]


@pytest.mark.heavy
def test_a_request_is_answered_within_the_bound_the_service_publishes(guarded):
    """Four rollouts of ~3.6 s each on one worker take ~14 s; the service answers within its
    8 s bound, what it did not judge by then as time limits, and the client waits that long
    (plus a margin), never the 600 s it waited before whatever the service's bound."""
    from mcoder.integrations.remote import REQUEST_MARGIN_S

    p, completions = _sleepers(4)
    rollouts = [Rollout(id=f"r{i}", problem_id=p.id, completion=c) for i, c in enumerate(completions)]
    with RemoteJudge([guarded.url], token="s3cret") as remote:
        assert remote.timeouts[guarded.url] == 8.0 + REQUEST_MARGIN_S
        t0 = time.monotonic()
        verdicts = remote.judge({p.id: p}, rollouts)
        took = time.monotonic() - t0
    assert took < 11, took
    assert verdicts[0].status == "accepted" and verdicts[-1].status == "time_limit"
    cut = [v for v in verdicts if not v.passed]
    assert cut and all(v.status == "time_limit" and "wall-time budget" in v.first_failure["detail"] for v in cut)


def test_a_request_whose_client_went_away_is_dropped(guarded):
    """The client gives up after 1 s; the service used to judge the whole request all the same
    (~11 s of its only worker, 8 s with the request bound), so the next request waited for it."""
    p, completions = _sleepers(3)
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{guarded.url}/judge", json={"problem": to_dict(p), "completions": completions},
                   headers=AUTH, timeout=1.0)  # fmt: skip
    gone = time.monotonic()
    while httpx.get(f"{guarded.url}/health", headers=AUTH).json()["in_flight"] and time.monotonic() - gone < 10:
        time.sleep(0.05)
    assert time.monotonic() - gone < 4
    t0 = time.monotonic()
    res = httpx.post(f"{guarded.url}/run_code", json={"code": "print(7)", "language": "python"}, headers=AUTH)
    assert res.json()["run_result"]["stdout"] == "7\n" and time.monotonic() - t0 < 3


@pytest.mark.heavy
def test_one_request_that_times_out_does_not_end_the_batch(tmp_path):
    """The service is stopped (SIGSTOP) for 4 s after it answered /health, so the first request
    times out. The group's deadline ran from its first try and was shorter than one request's
    timeout (300 s against 600 s by default; 2 s against 3 s here): one read timeout ended the
    batch with EnvironmentMissing. It now runs from the first failure, and the group is tried
    again once the service is back."""
    hung = start(tmp_path, "-w", "1", "--timeout-s", "1")
    p = problems()[0]
    rollouts = [Rollout(id="r", problem_id=p.id, completion=fenced(p.reference_solutions[0]))]
    back = threading.Timer(4.0, lambda: hung.proc.send_signal(signal.SIGCONT))
    try:
        with RemoteJudge([hung.url], timeout_s=3, deadline_s=2, cooldown_s=1) as remote:
            hung.proc.send_signal(signal.SIGSTOP)
            back.start()
            (v,) = remote.judge({p.id: p}, rollouts)
        assert v.status == "accepted" and remote.failovers == 1
    finally:
        back.cancel()
        hung.proc.send_signal(signal.SIGCONT)
        hung.stop()


@pytest.mark.heavy
def test_a_service_on_the_network_needs_a_token_or_no_auth(tmp_path):
    """`--host 0.0.0.0` with no token started and ran code for anyone who reached the port."""
    cmd = [sys.executable, "-m", "mcoder", "judge", "serve", "--host", "0.0.0.0", "--port", "0", "-w", "1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={k: v for k, v in os.environ.items() if k != "MCODER_JUDGE_TOKEN"})  # fmt: skip
    try:
        out, err = proc.communicate(timeout=START_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"it started: {proc.communicate()[0]!r}")
    assert proc.returncode == 2 and "no token is set" in err and out == ""
    s = start(tmp_path, "--host", "0.0.0.0", "--no-auth", "-w", "1", host="0.0.0.0")
    try:
        port = s.url.rsplit(":", 1)[1]
        assert httpx.get(f"http://127.0.0.1:{port}/health").json()["status"] == "ok"
    finally:
        assert s.stop() == 0


# ---------------------------------------------------------------- red team through the service


def _adversarial_programs(names: tuple[str, ...]) -> list[str]:
    """The attack programs of these tests of the judge's red-team file: every string constant
    assigned to ``code`` or passed to its ``run(judge, CODE, ...)``."""
    tree = ast.parse((TESTS / "test_judge_adversarial.py").read_text())
    out = []
    for fn in tree.body:
        if not (isinstance(fn, ast.FunctionDef) and fn.name in names):
            continue
        for node in ast.walk(fn):
            value = None
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "code" for t in node.targets):
                value = node.value
            elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "run" and len(node.args) > 1:
                value = node.args[1]
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                out.append(textwrap.dedent(value.value))
    return out


RED_TEAM = (
    "test_an_always_equal_object_is_not_accepted",
    "test_reading_the_expected_value_from_frames_or_memory_is_not_accepted",
    "test_shadowing_what_the_check_uses_is_not_accepted",
    "test_forged_reports_on_inherited_descriptors_are_not_accepted",
    "test_no_nested_namespaces_mounts_tracing_or_netlink",
    "test_a_forged_ok_report_does_not_hide_a_crash",
)


@pytest.mark.slow
def test_red_team_programs_get_the_same_verdicts_through_the_service(tmp_path):
    spec = importlib.util.spec_from_file_location("adversarial", TESTS / "test_judge_adversarial.py")
    adv = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(adv)
    programs = _adversarial_programs(RED_TEAM)
    assert len(programs) >= 7
    contained = Problem(id="contained", source="t", question="", tests=list(adv.CONTAINED))
    limits = ["-w", "1", "--timeout-s", "1", "--memory-mb", "400", "--max-processes", "16", "--no-cache"]
    cfg = JudgeConfig(workers=1, timeout_s=1.0, memory_mb=400, max_processes=16, cache=False)
    s = start(tmp_path, *limits)
    try:
        with Judge(cfg) as local, RemoteJudge([s.url], expect=cfg) as remote:
            for problem in (adv.ADD, contained):
                rollouts = [
                    Rollout(id=f"r{i}", problem_id=problem.id, completion=fenced(c + "\n"))
                    for i, c in enumerate(programs)
                ]
                here = local.judge({problem.id: problem}, rollouts)
                there = remote.judge({problem.id: problem}, rollouts)
                key = lambda v: (v.rollout_id, v.status, v.passed, v.tests_passed, v.reward)
                assert [key(v) for v in there] == [key(v) for v in here]
                if (
                    problem is adv.ADD
                ):  # (on `contained` a program passes by printing that every attack failed)
                    assert not any(v.passed for v in there)
    finally:
        s.stop()


# ---------------------------------------------------------------- past one machine


@pytest.mark.slow
def test_a_service_killed_mid_batch_loses_and_doubles_no_verdict(tmp_path):
    a = start(tmp_path, "-w", "1", "--timeout-s", "2", "--no-cache")
    b = start(tmp_path, "-w", "1", "--timeout-s", "2", "--no-cache")
    ps = problems()[:6]
    slow = "import time\ntime.sleep(0.1)\n"  # each group takes a while on one worker
    rollouts, by_id = [], {p.id: p for p in ps}
    for p in ps:
        for j, code in enumerate([slow + p.reference_solutions[0], "print(0)\n"]):
            rollouts.append(Rollout(id=f"{p.id}-{j}", problem_id=p.id, completion=fenced(code)))
    delivered: list[int] = []

    def on_verdict(i, v):
        delivered.append(i)
        if len(delivered) == 2:
            b.proc.kill()  # mid-batch: b dies with requests in flight

    try:
        with RemoteJudge([a.url, b.url], per_service=2, cooldown_s=60) as remote:
            verdicts = remote.judge(by_id, rollouts, on_verdict)
        assert sorted(delivered) == list(range(len(rollouts)))  # each exactly once
        assert [v.rollout_id for v in verdicts] == [r.id for r in rollouts]
        assert [v.status for v in verdicts] == ["accepted", "wrong_answer"] * len(ps)
        assert b.proc.wait(30) != 0 and remote.failovers >= 1
    finally:
        a.stop()
        b.stop()


def test_the_load_is_answered_and_judged_right(service):
    """A small bounded load (the figures are benchmarks/judge_serve.py's): every request answered,
    200 with the right output or 503 busy, none lost."""
    from concurrent.futures import ThreadPoolExecutor

    def one(i: int):
        res = httpx.post(
            f"{service.url}/run_code", json={"code": f"print({i} * 2)", "language": "python"}, timeout=60
        )
        return i, res

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(one, range(40)))
    assert {r.status_code for _, r in answers} <= {200, 503}
    ok = [(i, r.json()) for i, r in answers if r.status_code == 200]
    assert len(ok) >= 8 and all(body["run_result"]["stdout"] == f"{i * 2}\n" for i, body in ok)


@pytest.mark.slow
def test_the_loop_judges_through_two_services_and_survives_one_killed(tiny_model, tmp_path):
    """`mcoder loop --judge-url A --judge-url B`: B is killed once step 1 is written; step 2
    is judged by A alone, and every step's verdicts are `mcoder judge`'s on its rollouts."""
    a = start(tmp_path, "-w", "1")
    b = start(tmp_path, "-w", "1")
    run = tmp_path / "run"
    killed: dict = {}

    def kill_b_after_step_1():
        deadline = time.monotonic() + 300
        while not list(run.glob("step_0001/verdicts*")) and time.monotonic() < deadline:
            time.sleep(0.05)
        b.proc.kill()
        killed["at"] = time.time()

    watcher = threading.Thread(target=kill_b_after_step_1, daemon=True)
    watcher.start()
    args = [
        "loop", "--model", str(tiny_model), "--problems", str(EXAMPLES / "stdin.jsonl"),
        "--run-dir", str(run), "--steps", "2", "-n", "2", "--train-batch-size", "2", "--max-tokens", "10",
        "--temperature", "1.0", "--lr", "1e-3", "--seed", "5", "--mini-batch-size", "1", "-q",
        "--judge-url", a.url, "--judge-url", b.url,
    ]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    try:
        r = subprocess.run(
            [sys.executable, "-m", "mcoder", *args],
            check=False,
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        assert r.returncode == 0, r.stderr[-3000:]
        watcher.join(10)
        step2 = next(run.glob("step_0002/verdicts*"))
        assert killed["at"] < step2.stat().st_mtime  # step 2 was judged after B was gone
        for step in (1, 2):
            rollouts = next(run.glob(f"step_{step:04d}/rollouts*"))
            verdicts = next(run.glob(f"step_{step:04d}/verdicts*"))
            out = tmp_path / f"local{step}.jsonl"
            cli = CliRunner().invoke(app, ["judge", "-p", str(EXAMPLES / "stdin.jsonl"), "-r", str(rollouts),
                                           "-o", str(out), "-w", "1", "-q"])  # fmt: skip
            assert cli.exit_code == 0, cli.output
            key = lambda line: (line["rollout_id"], line["status"], line["reward"])
            mine = sorted(key(json.loads(x)) for x in verdicts.read_text().splitlines())
            assert mine == sorted(key(json.loads(x)) for x in out.read_text().splitlines())
            assert len(mine) == 4
    finally:
        a.stop()
        b.stop()


def test_connections_send_without_waiting_for_acks():
    """TCP_NODELAY on every accepted connection: without it each response (headers, then body)
    waited for the client's delayed ACK, 44 ms per /health on loopback against 3.6 ms with it."""
    import socket

    from mcoder.integrations.serve import listen

    server, url = listen("127.0.0.1", 0)
    server.listen(1)
    with server, socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1]))):
        conn, _ = server.accept()
        with conn:
            assert conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0


# ---------------------------------------------------------------- where request data enters: total


def _json_values():
    from hypothesis import strategies as st

    keys = st.sampled_from(["problem", "problem_id", "completions", "rollout_ids", "tests", "id", "fn_name",
                            "input", "output", "kind", "source", "question", "code", "language", "stdin",
                            "files", "inputs", "outputs"]) | st.text(max_size=5)  # fmt: skip
    leaves = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
    return st.recursive(
        leaves, lambda c: st.lists(c, max_size=4) | st.dictionaries(keys, c, max_size=5), max_leaves=30
    )


def _total(fn, *args) -> None:
    """``fn(*args)`` returns or raises an McoderError, nothing else."""
    from mcoder.errors import McoderError

    try:
        fn(*args)
    except McoderError:
        pass


def test_request_bodies_and_ground_truths_are_requests_or_data_errors():
    from hypothesis import given, settings

    from mcoder.integrations.columns import problem_from_row
    from mcoder.integrations.serve import RunCode, native_request
    from mcoder.integrations.verl_reward import problem_of

    known = {p.id: p for p in problems()[:2]}
    run_code = RunCode()

    @settings(max_examples=150, deadline=None)
    @given(_json_values())
    def check(value):
        _total(native_request, value, known)
        _total(run_code.request, value)
        _total(problem_of, value, value, known)
        _total(problem_from_row, value if isinstance(value, dict) else {"problem": value}, known)
        _total(native_request, {"problem": value, "completions": ["x"]}, known)

    check()


def test_every_field_of_a_problem_sent_with_a_wrong_type_is_a_data_error():
    """Cases enumerated from the record's own fields: each field given each wrong kind of value."""
    import dataclasses

    from mcoder.errors import DataError
    from mcoder.integrations.serve import native_request

    good = to_dict(problems()[0])
    wrong = [None, 7, 1.5, True, "text", [1], {"a": 1}]
    checked = 0
    for f in dataclasses.fields(Problem):
        for value in wrong:
            body = {"problem": {**good, f.name: value}, "completions": ["x"]}
            try:
                native_request(body, {})
            except DataError as e:
                assert e.field and (f.name in e.field or e.field == "problem"), (f.name, value, e.field)
                checked += 1
    assert checked >= len(dataclasses.fields(Problem)) * 3


def test_the_client_refuses_other_settings_and_a_bad_problem_at_once(service):
    from mcoder.errors import DataError, UsageError

    with pytest.raises(UsageError, match="other settings .*timeout_s"):
        RemoteJudge([service.url], expect=JudgeConfig(timeout_s=5.0)).__enter__()
    bad = Problem(id="bad", source="t", question="", tests=[Test("1", "2", "call")])  # call tests, no fn_name
    remote = RemoteJudge([service.url], expect=JudgeConfig(timeout_s=1.0))
    with remote, pytest.raises(DataError, match="fn_name"):
        remote.judge({"bad": bad}, [Rollout(id="r", problem_id="bad", completion="x = 1")])
    assert remote.failovers == 0  # a request the service refuses is not sent elsewhere


@pytest.mark.heavy
def test_a_large_problem_sent_again_and_again_is_held_once():
    """Every request parses its problem (or, for /run_code, makes one of its stdin): the judge kept
    each object it met, +2 MiB a /run_code request with 1 MiB of stdin; /judge kept 512 problems
    whatever their size."""
    from starlette.testclient import TestClient

    from mcoder.integrations.serve import ServeConfig, make_app

    record = large_record(1.0)
    app = make_app(ServeConfig(), JudgeConfig(workers=1))

    def call(i: int) -> None:
        if i % 2:
            body = {"code": PROGRAM, "language": "python", "stdin": record["tests"][0]["input"]}
            res = client.post("/run_code", json=body).json()
            assert res["run_result"]["stdout"] == record["tests"][0]["output"], res
        else:
            res = client.post("/judge", json={"problem": record, "completions": [ANSWER]})
            assert json.loads(res.content)["passed"], res.content[:300]

    with TestClient(app) as client:
        assert retained_bytes(call, 20) < 4 << 20


def test_serve_usage_errors_exit_with_their_codes(tmp_path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        r = CliRunner().invoke(app, ["judge", "serve", "--port", str(port), "-w", "1"])
    assert r.exit_code == 2 and "cannot listen on 127.0.0.1" in r.stderr
    r = CliRunner().invoke(app, ["judge", "serve", "--problems", str(tmp_path / "missing.jsonl")])
    assert r.exit_code in (2, 3) and "missing.jsonl" in r.stderr
    r = CliRunner().invoke(app, ["judge", "serve", "--reward", "nope"])
    assert r.exit_code == 2 and "--reward" in r.stderr


def test_a_raw_sandboxfusion_payload_with_fields_mcoder_does_not_use_runs(service):
    """verl's sandbox reward posts SandboxFusion's full payload itself (timeouts, memory_limit_MB,
    empty files): fields that mcoder's limits replace are accepted and left unused."""
    payload = {"code": "print(input())", "stdin": "7\n", "language": "python", "compile_timeout": 10,
               "run_timeout": 10, "memory_limit_MB": -1, "files": {}, "fetch_files": []}  # fmt: skip
    res = httpx.post(f"{service.url}/run_code", json=payload).json()
    assert res["status"] == "Success", (res["message"], res["run_result"])
    assert res["run_result"]["stdout"] == "7\n" and res["compile_result"] is None


def test_run_code_returns_the_whole_stdout_and_says_when_stderr_was_cut(service):
    """verl's sandbox reward compares run_code's stdout with the answer: cut to 1,000 characters,
    every correct program with a longer output scored 0."""
    code = "import sys\nprint('x' * 200_000)\nsys.stderr.write('e' * 3000 + 'END')\n"
    res = httpx.post(f"{service.url}/run_code", json={"code": code, "language": "python"}).json()
    assert res["status"] == "Success" and res["run_result"]["stdout"] == "x" * 200_000 + "\n"
    assert res["run_result"]["stderr"].endswith("END") and len(res["run_result"]["stderr"]) == 2000
    assert res["message"] == "stderr cut to its last 2000 characters"
    short = httpx.post(f"{service.url}/run_code", json={"code": "print('x' * 999)", "language": "python"}).json()
    assert short["message"] == "" and short["run_result"]["stdout"] == "x" * 999 + "\n"


def test_run_code_runs_the_code_as_it_is_whatever_it_contains(service):
    """A program with `</think>` (or a fence) in it was refused with a 400, which SandboxFusion's
    client re-raised after 5 tries: the code went through the judge's search for a program in a
    completion."""
    for code in ("print('</think>')", "s = '```'\nprint(s + '~~~')"):
        res = httpx.post(f"{service.url}/run_code", json={"code": code, "language": "python"})
        assert res.status_code == 200 and res.json()["status"] == "Success", res.text
    assert res.json()["run_result"]["stdout"] == "```~~~\n"


def test_a_machine_without_the_sandbox_exits_4_before_listening(monkeypatch):
    # a fake kernel without Landlock (this machine has it): the fault cannot be caused otherwise
    monkeypatch.setattr(sandbox, "landlock_abi", lambda: 0)
    if sandbox.isolation_mode() != "root":
        pytest.skip("Landlock is checked in the root mode only")
    r = CliRunner().invoke(app, ["judge", "serve", "--port", "0", "-w", "1"])
    assert r.exit_code == 4 and "Landlock" in r.stderr and r.stdout == ""  # no URL: it never listened
