"""Run by test_train_distributed.py under ``torchrun --nproc-per-node 2`` (gloo, CPU): the loop's
diversity-chosen temperature (``temperature auto``), with every prompt each rank's engine samples
counted; each rank writes its count and T to OUT/rank<N>.json, rank 0 the record OUT/temperature.json.

    python -m torch.distributed.run --standalone --nproc-per-node 2 probe_run.py MODEL PROBLEMS OUT
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mcoder.engines.hf_engine import HFEngine
from mcoder.loop.loop import load_problems
from mcoder.loop.temperature_stages import loop_temperatures
from mcoder.models import load_model, load_tokenizer
from mcoder.rollout.sampling import SamplingConfig
from mcoder.train import distributed as D

SAMPLING = {"n": 2, "max_tokens": 8, "temperature": "auto", "temperature_rule": "knee",
            "temperature_candidates": "0.5,1.0,1.5", "probe_problems": 5}  # fmt: skip


class CountingEngine(HFEngine):
    prompts = 0

    def generate(self, prompt_ids, **kwargs):
        CountingEngine.prompts += len(prompt_ids)
        return super().generate(prompt_ids, **kwargs)


def probe(model: str, problems: str, out: Path) -> tuple[float, int]:
    """(T chosen for step 1, prompts this process's engine sampled)."""
    engine = CountingEngine(load_model(model, dtype="float32", device="cpu"), load_tokenizer(model))
    T = loop_temperatures(SamplingConfig(**SAMPLING).validate(), 3, out / "temperature.json", engine,
                            engine.tokenizer, load_problems(Path(problems)), 1)(1)  # fmt: skip
    return T, CountingEngine.prompts


def main(model: str, problems: str, out: str) -> None:
    D.setup()
    T, prompts = probe(model, problems, Path(out))
    (Path(out) / f"rank{D.rank()}.json").write_text(json.dumps({"T": T, "prompts": prompts}))


if __name__ == "__main__":
    main(*sys.argv[1:4])
