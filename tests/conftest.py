"""Shared fixtures: real files in temp folders, the tiny model built once per session, and the
problem sets: rows the project writes itself in each source's format (``dataset_rows``), and the
third-party sets beside the checkout; the judge: ``sandbox_or_skip`` (the test is skipped where this
machine has no sandbox), ``judge_config`` for a test's own judge, one session ``judge`` for tests that
need no settings of their own, and ``judge_program`` to judge one program on its tests.

Tests on the third-party sets (the ``shared_data`` fixture, or the ``shared`` side of
``problem_sets``) are an additional layer: where the sets are absent they are deselected, and the
run's header says how many. Tests that need the tiny model are marked ``model`` (``make test-fast``
leaves them out)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "problems"
SHARED_DATA = Path(os.environ.get("MCODER_SHARED_DATA", ROOT.parent / "shared" / "data"))


# Test files that build and train models of their own (in process or under torchrun), without the
# tiny_model fixture: their tests are marked ``model`` too.
BUILD_THEIR_OWN_MODELS = {
    "test_gpu_path.py", "test_train_distributed.py", "test_sharded_checkpoints.py", "test_train_trl_parity.py",
    "test_train_speed_bench.py",
}
JUDGE_SETTINGS = {"workers": 2, "timeout_s": 3.0, "memory_mb": 256}  # the session ``judge``


def pytest_configure(config):
    config.addinivalue_line("markers", "shared_data: runs on the third-party sets of ../shared/data")


def pytest_collection_modifyitems(config, items):
    """A test that needs the tiny model is marked ``model`` (``make test-fast`` leaves those out).
    Without the third-party sets, their tests are deselected (counted in the header), not skipped."""
    for item in items:
        if "tiny_model" in item.fixturenames or item.path.name in BUILD_THEIR_OWN_MODELS:
            item.add_marker(pytest.mark.model)
    if SHARED_DATA.is_dir():
        return
    real = [i for i in items if "shared_data" in i.fixturenames or i.get_closest_marker("shared_data")]
    if real:
        config.hook.pytest_deselected(items=real)
        items[:] = [i for i in items if i not in set(real)]
        config.stash[_REAL_DESELECTED] = len(real)


_REAL_DESELECTED = pytest.StashKey[int]()


def pytest_report_collectionfinish(config, start_path, items):
    n = config.stash.get(_REAL_DESELECTED, 0)
    if n:
        return f"{n} tests on the third-party problem sets not run: {SHARED_DATA} not found (set MCODER_SHARED_DATA)"
    return None


@pytest.fixture(scope="session", params=["written", pytest.param("shared", marks=pytest.mark.shared_data)])
def problem_sets(request) -> Path:
    """A folder of source files named like ../shared/data's: the project's own rows, then the real ones."""
    return request.getfixturevalue("shared_data" if request.param == "shared" else "own_sets")


@pytest.fixture(scope="session")
def own_sets(tmp_path_factory) -> Path:
    """The source files of ``problem_sets`` with the project's own rows (``dataset_rows``)."""
    from dataset_rows import write_sets

    return write_sets(tmp_path_factory.mktemp("own-sets"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"third-party problem sets not found at {SHARED_DATA} (set MCODER_SHARED_DATA)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    """A random-weight Qwen3 model and a trained BPE tokenizer, saved to disk once per session."""
    from mcoder.testing import make_tiny_model

    return make_tiny_model(tmp_path_factory.mktemp("tiny-model"))


def sandbox_or_skip() -> None:
    """Skip the calling test where this machine has no sandbox (the judge would exit 4)."""
    from mcoder.errors import EnvironmentMissing
    from mcoder.judge import sandbox

    try:
        sandbox.check_isolation()
    except EnvironmentMissing as e:
        pytest.skip(f"no sandbox on this machine: {e.message}")


def judge_config(**settings):
    """A JudgeConfig for a test's own judge (skipped where there is no sandbox)."""
    from mcoder.judge.config import JudgeConfig

    sandbox_or_skip()
    return JudgeConfig(**settings)


@pytest.fixture(scope="session")
def judge():
    """One judge for the whole run (``JUDGE_SETTINGS``), for tests that need no settings of their own."""
    from mcoder.judge.core import Judge

    with Judge(judge_config(**JUDGE_SETTINGS)) as j:
        yield j


def judge_program(judge, code: str, tests, **problem):
    """The verdict of one program (fenced as a completion, dedented) on ``tests`` of a problem 'p'
    (``problem``: its other fields, e.g. fn_name)."""
    import textwrap

    from mcoder.records import Problem, Rollout

    p = Problem(id="p", source="test", question="", tests=list(tests), **problem)
    rollout = Rollout(id="r", problem_id="p", completion=f"```python\n{textwrap.dedent(code)}\n```")
    (v,) = judge.judge({"p": p}, [rollout])
    return v
