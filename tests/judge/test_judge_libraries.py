"""Which libraries a candidate's profile shows is the workers' interpreter's business, not the
caller's: a process whose ``sys.path`` holds more than a worker's (vLLM puts setuptools' vendored
packages there) still judges in the real sandbox, and a profile's library that the workers
cannot import is left out, never an error."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mcoder.judge import sandbox
from test_judge_resources import _judge, run


def _absent_for_workers() -> str:
    """A platform library that this interpreter, started as a worker is (isolated), cannot import."""
    names = sorted({n for libs in sandbox.PLATFORM_LIBRARIES.values() for n in libs})
    code = "import importlib.util, sys; print([n for n in sys.argv[1:] if importlib.util.find_spec(n) is None])"
    absent = eval(subprocess.run([sys.executable, "-I", "-c", code, *names], capture_output=True, text=True,
                                 check=True, env={"PATH": "/usr/bin:/bin"}).stdout)  # fmt: skip
    if not absent:
        pytest.skip("every platform library is installed here")
    return absent[0]


def test_a_library_only_the_callers_sys_path_has_does_not_stop_the_sandboxed_judge(tmp_path, monkeypatch):
    name = _absent_for_workers()
    extra = tmp_path / "caller-only"
    (extra / name).mkdir(parents=True)
    (extra / name / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(extra))  # as importing vLLM does for setuptools/_vendor
    sandbox.installed_for_workers.cache_clear()
    import importlib.util

    assert importlib.util.find_spec(name) is not None, "the caller finds it"
    assert name not in sandbox.platform_packages("contest"), "the workers do not"
    with _judge() as judge:  # the default: sandboxed, libraries by the problem's platform
        v = run(judge, "print(2 * int(input()))", platform="atcoder")
        assert v.status == "accepted", v.first_failure
        v = run(judge, f"import {name}\nprint(8)", platform="atcoder")
        assert v.status == "runtime_error" and "ModuleNotFoundError" in v.first_failure["stderr"]
