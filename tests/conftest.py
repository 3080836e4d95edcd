"""Shared fixtures: real files in temp folders, the tiny model built once per session, and the
third-party problem sets beside the checkout (tests that need them skip when absent)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "problems"
SHARED_DATA = Path(os.environ.get("MCODER_SHARED_DATA", ROOT.parent / "shared" / "data"))


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
