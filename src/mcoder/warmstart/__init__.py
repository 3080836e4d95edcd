"""The supervised warm start: a tiny model for a problem family, given a short supervised pass.

    python -m mcoder.warmstart --problems train.jsonl --out WARM_DIR [--steps 500] [--seed 0]
    python -m mcoder.warmstart --problems train.jsonl --out WARM_DIR --steps 1500 --target-pass 0.35

(``examples/learn/warm_start.py`` runs this command with the same arguments; its options are
generated from ``WarmStartConfig``'s fields, ``mcoder.cli.warmstart``.)

RL needs a policy that sometimes succeeds: a random-weight model never writes a program that
passes, so every group's rewards are equal and GRPO has no signal. This step teaches the format
(the same chat prompt `mcoder rollout` renders, then a fenced program and the end-of-turn token)
on the train problems only, with the loss on completion tokens only. It is kept deliberately
short: the point of the proof is what RL adds afterwards, on problems this pass never saw.

The tiny model is mcoder.testing's random Qwen3, but its byte-level BPE tokenizer is trained on
the rendered prompts too (beside testing's Python corpus): the fixed system and format text then
costs fewer tokens, which makes every rollout and update cheaper on a CPU.

The parts: ``config`` (the settings and the schedule of checks and learning rate), ``gates``
(what stops the pass), ``supervised`` (the pass and the folder it writes). Plain torch +
transformers; the output folder is an ordinary model folder for every mcoder stage. What was
measured with it: docs/measurements.md, "The warm start".
"""

from mcoder.warmstart.config import Schedule, WarmStartConfig
from mcoder.warmstart.gates import (
    Gate,
    LikelihoodGate,
    TrainPassGate,
    batch_tensors,
    closest_check,
    examples,
    look_back_checks,
)
from mcoder.warmstart.supervised import GATE_SEED, SUMMARY, build_tokenizer, check_out, warm_start

__all__ = [
    "GATE_SEED",
    "SUMMARY",
    "Gate",
    "LikelihoodGate",
    "Schedule",
    "TrainPassGate",
    "WarmStartConfig",
    "batch_tensors",
    "build_tokenizer",
    "check_out",
    "closest_check",
    "examples",
    "look_back_checks",
    "warm_start",
]
