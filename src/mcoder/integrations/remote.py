"""``RemoteJudge``: ``Judge``'s interface over one or more ``mcoder judge serve`` services.

    with RemoteJudge(["http://judge-a:8080", "http://judge-b:8080"]) as judge:
        verdicts = judge.judge(problems_by_id, rollouts)

A batch is split by problem (a GRPO group per request), the requests spread round robin over
the services, several at a time. A request's verdicts are taken whole or not at all: a service
that fails (refused connection, reset, timeout, an answer that is not the verdicts asked for) is
set aside for ``cooldown_s`` and the group is sent to the next one, so a verdict is never lost,
and never counted twice, when a service dies mid-batch. A busy service (503) is not a failure:
the group tries the others, then waits a little. A service answers every request within the
bound it publishes (``request_wall_s`` in /health: what is not judged by then comes back as
``time_limit``), and a request waits that long and ``REQUEST_MARGIN_S`` more: a timeout means the
service is broken, not slow. With no service answering for ``deadline_s`` after a group's first
failure the batch fails with ``EnvironmentMissing``.

Scaling past a handful of services is a load balancer's job: give its one URL here.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Self

import orjson

from mcoder.console import warn
from mcoder.errors import DataError, EnvironmentMissing, UsageError
from mcoder.judge.config import JudgeConfig
from mcoder.records import Problem, Rollout, Verdict, from_dict, to_dict

BUSY_WAIT_S = 0.2
REQUEST_MARGIN_S = 30.0  # past a service's published request bound: the network, a slow start
DEFAULT_TIMEOUT_S = 600.0  # a request's limit where the service publishes no bound


class ServiceFailed(Exception):
    """One request to one service did not bring back its verdicts."""


class RemoteJudge:
    def __init__(
        self,
        urls: list[str],
        *,
        token: str | None = None,
        expect: JudgeConfig | None = None,
        per_service: int | None = None,
        timeout_s: float | None = None,
        cooldown_s: float = 5.0,
        deadline_s: float = 300.0,
    ):
        """``expect``: the judge settings the run was configured with; a service judging with
        others is refused at start. ``per_service``: requests (groups) in flight per URL (None: from
        the service's /health, a request per two of its workers, at least 4; behind a load
        balancer that is one service's share: give ``per_service`` for the whole fleet).
        ``timeout_s``: one request's limit (None: the bound each service publishes, plus
        ``REQUEST_MARGIN_S``); ``deadline_s``: how long a group may find no service after its
        first failure."""
        if not urls:
            raise UsageError("no judge service URL given", hint="--judge-url http://HOST:PORT (repeatable)")
        self.urls = [u.rstrip("/") for u in urls]
        self.token, self.expect = token, expect
        self.timeout_s = timeout_s
        self.timeouts = {u: timeout_s or DEFAULT_TIMEOUT_S for u in self.urls}  # a request's limit per URL
        self.slots = {u: per_service or 4 for u in self.urls}  # requests in flight per URL
        self._fixed = per_service is not None
        self.cooldown_s, self.deadline_s = cooldown_s, deadline_s
        self._down: dict[str, float] = {}  # url -> when it may be tried again
        self._next = itertools.count()
        self._lock = threading.Lock()
        self._client = None
        self.failovers = 0  # requests that failed on a service and went to the next
        self.aborted = False

    def __enter__(self) -> Self:
        import httpx

        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        self._client = httpx.Client(
            headers=headers, timeout=self.timeout_s or DEFAULT_TIMEOUT_S, limits=httpx.Limits(max_connections=None)
        )
        try:
            self._check_services()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def abort(self) -> None:
        """Ctrl-C: no request is sent any more (those in flight end with their own timeout)."""
        self.aborted = True

    # ---------------------------------------------------------------- public

    def judge(
        self,
        problems_by_id: dict[str, Problem],
        rollouts: list[Rollout],
        on_verdict: Callable[[int, Verdict], None] | None = None,
    ) -> list[Verdict]:
        """A verdict per rollout, in order, as ``Judge.judge``."""
        if self._client is None:
            raise RuntimeError("use RemoteJudge as a context manager")
        groups: dict[str, list[int]] = {}
        for i, r in enumerate(rollouts):
            if r.problem_id not in problems_by_id:
                raise DataError(f"rollout {r.id!r}: no problem with id {r.problem_id!r}", field="problem_id")
            groups.setdefault(r.problem_id, []).append(i)
        verdicts: list[Verdict | None] = [None] * len(rollouts)
        lock = threading.Lock()

        def one(pid: str, indexes: list[int]) -> None:
            got = self._group(problems_by_id[pid], [rollouts[i] for i in indexes])
            with lock:
                for i, v in zip(indexes, got, strict=True):
                    if verdicts[i] is not None:  # a bug of this module: never hand a run two verdicts
                        raise RuntimeError(f"rollout {rollouts[i].id!r} got a second verdict")
                    verdicts[i] = v
                    if on_verdict is not None:
                        on_verdict(i, v)

        workers = max(1, min(len(groups), sum(self.slots.values())))
        with ThreadPoolExecutor(workers, thread_name_prefix="remote-judge") as pool:
            for f in [pool.submit(one, pid, idx) for pid, idx in groups.items()]:
                f.result()
        lost = [rollouts[i].id for i, v in enumerate(verdicts) if v is None]
        if lost:  # a bug of this module: never hand a run a batch with holes
            raise RuntimeError(f"no verdict for {len(lost)} rollouts (first: {lost[0]!r})")
        return verdicts  # type: ignore[return-value]

    # ---------------------------------------------------------------- one group

    def _group(self, problem: Problem, rollouts: list[Rollout]) -> list[Verdict]:
        if self.aborted:
            raise KeyboardInterrupt
        body = orjson.dumps(
            {
                "problem": to_dict(problem),
                "completions": [r.completion for r in rollouts],
                "rollout_ids": [r.id for r in rollouts],
            }
        )
        deadline = None  # set at the first failure: a group being judged is not a group without a service
        last = "no service was tried"
        while deadline is None or time.monotonic() < deadline:
            busy = 0
            for url in self._order():
                try:
                    return self._send(url, body, rollouts)
                except _Busy:
                    busy += 1
                except ServiceFailed as e:
                    last = f"{url}: {e}"
                    self._set_down(url, str(e))
                    with self._lock:
                        self.failovers += 1
                if deadline is None:
                    deadline = time.monotonic() + self.deadline_s
            time.sleep(BUSY_WAIT_S if busy else min(1.0, self.cooldown_s))
        raise EnvironmentMissing(
            f"no judge service judged problem {problem.id!r} within {self.deadline_s:g}s of its first failure (last: {last})",
            hint="start `mcoder judge serve` on the --judge-url hosts, or check their logs",
        )

    def _send(self, url: str, body: bytes, rollouts: list[Rollout]) -> list[Verdict]:
        import httpx

        try:
            res = self._client.post(
                url + "/judge", content=body, headers={"Content-Type": "application/json"},
                timeout=self.timeouts[url],
            )
        except httpx.HTTPError as e:
            raise ServiceFailed(f"{type(e).__name__}: {e}") from None
        if res.status_code == 503:
            raise _Busy()
        if res.status_code in (400, 413):  # the request itself is wrong: no other service takes it either
            raise DataError(f"judge service {url} refused the request: {_reason(res)}", field="problem")
        if res.status_code == 401:
            raise UsageError(f"judge service {url} wants a token", hint="set MCODER_JUDGE_TOKEN to its token")
        if res.status_code != 200:
            raise ServiceFailed(f"HTTP {res.status_code}: {res.text[:200]}")
        try:
            got = [
                from_dict(Verdict, orjson.loads(line)) for line in res.content.splitlines() if line.strip()
            ]
        except Exception as e:  # noqa: BLE001 - any malformed answer is that service's failure
            raise ServiceFailed(f"an answer that is not verdicts ({e})") from None
        if [v.rollout_id for v in got] != [r.id for r in rollouts]:
            raise ServiceFailed("the answer's verdicts are not the rollouts sent")
        return got

    def _order(self) -> list[str]:
        """The services to try, round robin from the next one, those set aside last."""
        start = next(self._next) % len(self.urls)
        ring = self.urls[start:] + self.urls[:start]
        now = time.monotonic()
        with self._lock:
            up = [u for u in ring if self._down.get(u, 0) <= now]
        return up + [u for u in ring if u not in up]

    def _set_down(self, url: str, why: str) -> None:
        with self._lock:
            fresh = self._down.get(url, 0) <= time.monotonic()
            self._down[url] = time.monotonic() + self.cooldown_s
        if fresh:
            warn(f"judge service {url} failed ({why[:120]}); its work goes to the others")

    def _check_services(self) -> None:
        """Every reachable service judges with the run's settings; at least one answers."""
        from mcoder.integrations.serve import settings_of

        answered = 0
        for url in self.urls:
            try:
                health = self._client.get(url + "/health", timeout=10).json()
            except Exception:  # noqa: BLE001 - an unreachable service is tried again later
                warn(f"judge service {url} does not answer yet")
                continue
            answered += 1
            if "settings" not in health:  # what /health shows only with the service's token
                raise UsageError(f"judge service {url} did not take the token", hint="set MCODER_JUDGE_TOKEN to its token")
            if not self._fixed and isinstance(health.get("workers"), int):
                self.slots[url] = max(4, health["workers"] // 2)
            bound = health.get("request_wall_s")
            if self.timeout_s is None and isinstance(bound, (int, float)) and bound > 0:
                self.timeouts[url] = float(bound) + REQUEST_MARGIN_S
            if self.expect is not None:
                want = orjson.loads(orjson.dumps(settings_of(self.expect)))
                theirs = health.get("settings")
                if theirs != want:
                    diff = sorted(k for k in want if (theirs or {}).get(k) != want[k])
                    raise UsageError(
                        f"judge service {url} judges with other settings ({', '.join(diff)})",
                        hint="start `mcoder judge serve` with the run's judge options",
                    )
        if not answered:
            raise EnvironmentMissing(
                f"no judge service answers at {', '.join(self.urls)}",
                hint="start `mcoder judge serve` there first",
            )


def _reason(res) -> str:
    try:
        body = res.json()
        return " ".join(filter(None, [str(body.get("error", "")), str(body.get("hint") or "")]))[:500]
    except Exception:  # noqa: BLE001 - any answer: shown as text
        return res.text[:500]


class _Busy(Exception):
    pass
