"""A custom reward function for verl: ``compute_score(data_source, solution_str, ground_truth,
extra_info)`` returns mcoder's reward (1.0 / 0.0, or the share of tests passed) as a float.

verl loads a custom reward function from a file path and a name, and passes the optional
``custom_reward_function.reward_kwargs`` as keyword arguments::

    python -m verl.trainer.main_ppo ... \\
        custom_reward_function.path=$(python -c "import mcoder.integrations.verl_reward as m; print(m.__file__)") \\
        custom_reward_function.name=compute_score \\
        +custom_reward_function.reward_kwargs.workers=8            # optional: see compute_score

With ``reward_model.reward_manager=batch``, name ``compute_score_batch`` instead: one judge call per
batch, its programs run in parallel by the judge's workers.

The ground truth (``reward_model.ground_truth`` of verl's parquet rows) is, in order of trial:

- an mcoder problem record (a dict or its JSON text, with ``tests``);
- test cases as ``{"inputs": [...], "outputs": [...], "fn_name": ...}`` (dict or JSON text;
  with ``fn_name`` the tests are call tests, each input the arguments);
- the id of a problem of the ``problems`` file given in ``reward_kwargs`` (also read from
  ``extra_info["problem_id"]``).

Each process that scores keeps one judge (its sandboxed workers started at the first call, closed
at exit; one per core unless ``workers`` says otherwise, so several scoring processes on one node
should split the cores); with ``judge_url`` the scores come from ``mcoder judge serve`` services.
"""

from __future__ import annotations

import atexit
import json
import threading
from typing import Any

from mcoder.errors import DataError
from mcoder.integrations.columns import load_problems, plain, record
from mcoder.judge.config import JudgeConfig
from mcoder.records import Problem, Rollout, Test

_JUDGES: dict[str, Any] = {}  # one judge per setting in this process
_PROBLEMS: dict[str, dict[str, Problem]] = {}
_LOCK = threading.Lock()


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict | None = None,
    *,
    problems: str | None = None,
    judge_url: str | list[str] | None = None,
    token: str | None = None,
    **judge_settings: Any,
) -> float:
    """mcoder's reward of ``solution_str`` on the problem ``ground_truth`` stands for.

    Keyword arguments (verl's ``custom_reward_function.reward_kwargs``): ``problems``, a
    problems JSONL that ids refer to; ``judge_url`` (one or a list) and ``token``, judge on those
    services; any ``JudgeConfig`` field (``workers``, ``timeout_s``, ``memory_mb``, ``reward``,
    ``compare``...) for the local judge. ``data_source`` is not used: every source is judged
    the same way."""
    known = _loaded(problems)
    problem = problem_of(ground_truth, extra_info, known)
    judge = _judge(judge_url, token, judge_settings)
    rollout = Rollout(id="verl", problem_id=problem.id, completion=solution_str)
    (verdict,) = judge.judge({problem.id: problem}, [rollout])
    return float(verdict.reward)


def compute_score_batch(
    data_sources: list[str],
    solution_strs: list[str],
    ground_truths: list[Any],
    extra_infos: list[dict | None] | None = None,
    **kwargs: Any,
) -> list[float]:
    """``compute_score`` over a batch in one judge call, so that the judge's workers run the batch
    in parallel: for verl's batch reward manager (``reward_model.reward_manager=batch``)."""
    known = _loaded(kwargs.pop("problems", None))
    judge = _judge(kwargs.pop("judge_url", None), kwargs.pop("token", None), kwargs)
    extra_infos = extra_infos if extra_infos is not None else [None] * len(solution_strs)
    by_id: dict[str, Problem] = {}
    rollouts = []
    for i, (solution, truth, extra) in enumerate(zip(solution_strs, ground_truths, extra_infos, strict=True)):
        problem = problem_of(truth, extra, known)
        by_id.setdefault(problem.id, problem)
        if by_id[problem.id] != problem:
            raise DataError(f"two different problems share the id {problem.id!r}", field="ground_truth")
        rollouts.append(Rollout(id=f"verl-{i}", problem_id=problem.id, completion=solution))
    return [float(v.reward) for v in judge.judge(by_id, rollouts)]


def problem_of(ground_truth: Any, extra_info: dict | None, known: dict[str, Problem]) -> Problem:
    """The problem a verl ground truth stands for (see the module's docstring for the forms)."""
    value = plain(ground_truth)  # parquet rows arrive with numpy arrays inside
    if isinstance(value, (str, bytes)):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            value = ground_truth  # not JSON: an id
    if isinstance(value, dict) and "tests" in value:
        return record(value, "ground_truth")
    if isinstance(value, dict) and "inputs" in value and "outputs" in value:
        return _from_cases(value)
    extra = plain(extra_info) if isinstance(plain(extra_info), dict) else {}
    for pid in (value, extra.get("problem_id")):
        if isinstance(pid, str) and pid in known:
            return known[pid]
    raise DataError(
        f"the ground truth is not a problem record, test cases or a known problem id: {str(ground_truth)[:80]!r}",
        field="ground_truth",
        hint="store mcoder problem records (or {inputs, outputs, fn_name}) as reward_model.ground_truth, "
        "or ids with reward_kwargs.problems=problems.jsonl",
    )


def _from_cases(cases: dict) -> Problem:
    inputs, outputs, fn_name = cases["inputs"], cases["outputs"], cases.get("fn_name") or None
    if not isinstance(inputs, list) or not isinstance(outputs, list) or len(inputs) != len(outputs):
        raise DataError("inputs and outputs must be lists of one length", field="ground_truth")
    kind = "call" if fn_name else "stdin"

    def text(value: Any, args: bool) -> str:
        if isinstance(value, str):
            return value
        if args and isinstance(value, list):
            return "\n".join(json.dumps(a) for a in value)
        return json.dumps(value)

    tests = [Test(text(i, True), text(o, False), kind) for i, o in zip(inputs, outputs, strict=True)]
    data = {
        "tests": [{"input": t.input, "output": t.output, "kind": t.kind} for t in tests],
        "fn_name": fn_name,
    }
    return record(data, "ground_truth")


def _loaded(path: str | None) -> dict[str, Problem]:
    if path is None:
        return {}
    with _LOCK:
        if path not in _PROBLEMS:
            _PROBLEMS[path] = load_problems(path)
        return _PROBLEMS[path]


def _judge(urls: str | list[str] | None, token: str | None, settings: dict[str, Any]):
    """This process's judge for these settings, started once."""
    key = json.dumps([urls, token, settings], sort_keys=True, default=str)
    with _LOCK:
        judge = _JUDGES.get(key)
        if judge is None:
            if urls:
                from mcoder.integrations.remote import RemoteJudge

                judge = RemoteJudge([urls] if isinstance(urls, str) else list(urls), token=token).__enter__()
            else:
                from mcoder.judge.core import Judge

                judge = Judge(JudgeConfig(**settings)).__enter__()
            _JUDGES[key] = judge
        return judge


@atexit.register
def close() -> None:
    """Close every judge this process started (also run at exit)."""
    with _LOCK:
        judges = list(_JUDGES.values())
        _JUDGES.clear()
    for judge in judges:
        judge.close()
