"""The execution cache's key: every JudgeConfig setting that can change an outcome is in it, and a
setting left out says why; an outcome made under one library profile is never reused under another."""

from __future__ import annotations

import dataclasses
import textwrap

import pytest

from conftest import sandbox_or_skip
from mcoder.judge.cache import keyed, limits_key
from mcoder.judge.config import JudgeConfig
from mcoder.judge.core import Judge
from mcoder.records import Problem, Rollout, Test

# A valid value other than the default, for the fields whose type alone does not give one.
OTHER = {
    "compare": "strict",
    "reward": "fraction",
    "early_exit": False,
    "libraries": "none",
    "allow_packages": ("numpy",),
    "first_uid": 62000,
    "wall_factor": 5.0,
}


def _other(f: dataclasses.Field, value):
    if f.name in OTHER:
        return OTHER[f.name]
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    raise AssertionError(f"JudgeConfig.{f.name}: give this test a valid other value in OTHER")


@pytest.mark.parametrize("f", dataclasses.fields(JudgeConfig), ids=lambda f: f.name)
def test_every_field_is_keyed_or_says_why_not(f):
    base = JudgeConfig(workers=1)
    changed = JudgeConfig(**{"workers": 1, "early_exit": base.early_exit, f.name: _other(f, getattr(base, f.name))})
    if not keyed(f, base):
        assert len(f.metadata["why"]) > 20  # a reason, not a placeholder
        assert limits_key(changed) == limits_key(base)
    else:
        assert limits_key(changed) != limits_key(base), f"JudgeConfig.{f.name} can change a verdict: key it"


def test_the_key_is_the_text_it_was_before_the_fields_were_marked():
    # the fields left out were a list in judge/cache.py (workers, reward, first_uid, cache_size,
    # cache); read from the fields' markers now, the key must not change a byte
    assert limits_key(JudgeConfig(workers=1)) == (
        "(('timeout_s', 6.0), ('wall_factor', 3.0), ('slot_cpus', 1.0), ('memory_mb', 1024), "
        "('max_processes', 32), ('max_output_mb', 16.0), ('max_disk_mb', 64), ('rollout_wall_s', 300.0), "
        "('compare', 'microcoder'), ('early_exit', True), ('unsafe_no_sandbox', False), "
        "('allow_packages', ()), ('libraries', 'auto'), ('process_per_test', False))"
    )  # (process_per_test came later, and is keyed: a shared process is a different run)


def test_the_library_profile_and_the_slots_cpus_are_keyed():
    # both were missing from the key: a cached outcome made with numpy visible was reused where it is not
    assert limits_key(JudgeConfig(workers=1, libraries="contest")) != limits_key(JudgeConfig(workers=1, libraries="none"))
    assert limits_key(JudgeConfig(workers=1, slot_cpus=1.0)) != limits_key(JudgeConfig(workers=1, slot_cpus=0.0))
    # the profile a problem resolves to stands in for the field
    cfg = JudgeConfig(workers=1, libraries="contest")
    assert limits_key(cfg, libraries="none") == limits_key(JudgeConfig(workers=1, libraries="none"))


NUMPY = """\
    import numpy as np
    print(int(np.array([int(input())]).sum() * 2))
    """


def test_an_outcome_with_numpy_visible_is_not_reused_where_it_is_not():
    try:
        import numpy  # noqa: F401
    except ImportError:
        pytest.skip("numpy is not installed")
    sandbox_or_skip()
    problem = Problem(id="p", source="test", question="", tests=[Test("4\n", "8\n")])
    rollout = Rollout(id="r", problem_id="p", completion=f"```python\n{textwrap.dedent(NUMPY)}\n```")
    common = {"workers": 1, "timeout_s": 20.0, "memory_mb": 1024}
    with Judge(JudgeConfig(**common, libraries="contest")) as judge:
        (v,) = judge.judge({"p": problem}, [rollout])
        assert v.status == "accepted", v.first_failure
        cache = judge.cache
    with Judge(JudgeConfig(**common, libraries="none")) as judge:
        judge.cache = cache  # one cache across the two runs (as a long-lived process may keep it)
        (v,) = judge.judge({"p": problem}, [rollout])
    assert not v.cached and v.status == "runtime_error", v


def test_prepared_tests_are_kept_by_content_within_a_bound_in_bytes():
    """Problems come as fresh objects call after call; their prepared tests are kept once per
    content, and many large problems push the oldest out instead of growing without end."""
    from helpers.large import ANSWER, large_record
    from mcoder.records import from_dict

    sandbox_or_skip()
    with Judge(JudgeConfig(workers=1)) as judge:
        judge.prepared.max_bytes = 5 << 20  # room for two of these problems
        for name in ("a", "b", "a", "c", "d"):
            p = from_dict(Problem, large_record(1.0, name=name) | {"tests": [
                {**large_record(1.0)["tests"][0], "output": f"{name}\n"}]})  # fmt: skip
            (v,) = judge.judge({p.id: p}, [Rollout(id="r", problem_id=p.id, completion=ANSWER)])
            assert v.status == "wrong_answer"
        assert len(judge.prepared) == 2 and judge.prepared.bytes <= 5 << 20
