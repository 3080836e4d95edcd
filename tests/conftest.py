"""Shared fixtures: real files in temp folders, the tiny model built once per session, and the
problem sets: rows the project writes itself in each source's format (``dataset_rows``), and the
third-party sets beside the checkout. Tests on the third-party sets (the ``shared_data`` fixture,
or the ``shared`` side of ``problem_sets``) are an additional layer: where the sets are absent they
are deselected, and the run's header says how many."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "problems"
SHARED_DATA = Path(os.environ.get("MCODER_SHARED_DATA", ROOT.parent / "shared" / "data"))


def pytest_configure(config):
    config.addinivalue_line("markers", "shared_data: runs on the third-party sets of ../shared/data")


def pytest_collection_modifyitems(config, items):
    """Without the third-party sets, their tests are deselected (counted in the header), not skipped."""
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
