"""What `mcoder loop --engine vllm` accepts, without vllm (these run in `make test`): full
fine-tuning is accepted in one process and under torchrun, and refused with a hint where its
weight sync does not reach (a tensor-parallel engine), rather than sampling from stale weights."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcoder.errors import UsageError
from mcoder.loop.config import LoopConfig
from mcoder.train.config import resolve


def _cfg(**kw) -> LoopConfig:
    train = resolve("microcoder-grpo", {"lora_rank": kw.pop("lora_rank", 0)})
    return LoopConfig(
        model="m", problems=Path("p.jsonl"), run_dir=Path("r"), engine="vllm", train=train, **kw
    )


def test_full_fine_tuning_with_vllm_is_accepted_in_one_process_and_under_torchrun(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    cfg = _cfg().validate()
    assert cfg.vllm_sleep is True  # GPU only; no effect on a CPU
    monkeypatch.setenv("WORLD_SIZE", "2")  # each rank's engine is sent the weights (tests/loop/test_vllm_sync.py)
    _cfg().validate()


def test_full_fine_tuning_with_vllm_is_refused_where_the_sync_does_not_reach(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    with pytest.raises(UsageError, match="tensor-parallel-size 1") as e:
        _cfg(tensor_parallel_size=2).validate()
    assert "--lora-rank" in e.value.hint
    _cfg(lora_rank=8, tensor_parallel_size=2).validate()  # LoRA: the adapter is handed over


def test_sleep_mode_may_change_on_resume():
    from mcoder.loop.config import changed_settings

    a, b = _cfg().settings(), _cfg(vllm_sleep=False).settings()
    assert changed_settings(a, b) == []
