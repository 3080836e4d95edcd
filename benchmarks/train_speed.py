"""Training speed and memory of one GRPO step: mcoder's trainer against TRL's GRPOTrainer.

The same model, the same fixed batch (P prompts x G completions of L tokens, each ended by EOS,
rewards with variance in every group), the same settings (token-level loss, ε 0.2 / ε_high 0.28,
β 0, T 1.0, one optimizer step over the whole batch, one forward of the whole batch, no gradient
checkpointing: TRL's GRPOConfig turns it on by default, recomputing the forward in the backward
to save memory, and mcoder's is off on a CPU, so both are off unless ``--checkpointing``).
mcoder computes log-probs and entropy from the last hidden states 1,024 tokens at a time
(``--logprob-chunk-tokens``, 0: all at once, as before).
TRL gets the batch through its ``rollout_func`` hook, so neither side samples.

The model is built once per run (random weights, no download) and both sides load it, in float32:
by default the 0.4M-parameter tiny Qwen3 of mcoder.testing, where framework overhead dominates;
``--shape`` takes instead the architecture of a real Qwen3 checkpoint (mcoder.testing.SHAPES),
``--layers`` cuts its depth and ``--model-vocab`` its embedding rows (default the real 151,936;
the batch's token ids come from the 1,024-token test tokenizer either way), so that compute
dominates. The header prints the parameter count (the tied output layer counted once).

Each measurement runs in a fresh subprocess (peak RSS is per process): ``steps`` steps, the first
a warm-up; reported are completion tokens per second of the later steps and the process's peak
RSS (and its rise over the RSS just before the first step). Several repeats give mean ± std.

    python benchmarks/train_speed.py [--repeats 3] [--prompts 8] [--group 4] [--length 64] [--steps 3]
    python benchmarks/train_speed.py --shape qwen3-0.6b --layers 4 --model-vocab 1024 --threads 1
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__:  # python -m benchmarks.train_speed, or imported
    from benchmarks import common
else:  # python benchmarks/train_speed.py: this folder is first on sys.path
    import common


def rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def fixed_batch(tokenizer, prompts: int, group: int, length: int, seed: int):
    """Token ids only: P prompts of 24 tokens, G completions of ``length`` tokens ending in EOS."""
    import random

    rng = random.Random(seed)
    vocab = [i for i in range(3, len(tokenizer))]
    p_ids = [[rng.choice(vocab) for _ in range(24)] for _ in range(prompts)]
    c_ids = [
        [rng.choice(vocab) for _ in range(length - 1)] + [tokenizer.eos_token_id]
        for _ in range(prompts * group)
    ]
    rewards = [float(i % 2) for i in range(prompts * group)]  # variance in every group
    return p_ids, c_ids, rewards


def run_mcoder(model_dir: str, a) -> dict:
    import torch

    from mcoder.records import Rollout, Verdict
    from mcoder.train.config import resolve
    from mcoder.train.trainer import Trainer

    torch.set_num_threads(a.threads)
    cfg = resolve(
        "dapo",
        {
            "lr": 1e-5,
            "dynamic_sampling": False,
            "truncation": "none",
            "logprob_temperature": 1.0,
            "mini_batch_size": a.prompts,
            "micro_batch_size": a.prompts * a.group,
            "shuffle": False,
            "activation_checkpointing": "on" if a.checkpointing else "off",
            "logprob_chunk_tokens": a.logprob_chunk_tokens,
        },
    )
    trainer = Trainer(model_dir, cfg)
    p_ids, c_ids, rewards = fixed_batch(trainer.tokenizer, a.prompts, a.group, a.length, a.seed)
    rollouts, verdicts = [], {}
    for i, c in enumerate(c_ids):
        rid = f"r{i}"
        rollouts.append(
            Rollout(
                id=rid,
                problem_id=f"p{i // a.group}",
                completion="",
                prompt_token_ids=p_ids[i // a.group],
                completion_token_ids=c,
                finish_reason="stop",
            )
        )
        verdicts[rid] = Verdict(
            rollout_id=rid,
            problem_id=f"p{i // a.group}",
            reward=rewards[i],
            passed=bool(rewards[i]),
            status="accepted" if rewards[i] else "wrong_answer",
            tests_passed=0,
            tests_total=1,
        )
    # π_old as a rollout engine would have recorded it (TRL, on-policy, skips this forward too)
    for s in trainer.prepare_samples(rollouts, verdicts).samples:
        s.rollout.sampling_logprobs = s.old_logprobs
    before = rss_mb()
    times = []
    for _ in range(a.steps):
        t0 = time.perf_counter()
        m = trainer.train_on_batch(rollouts, verdicts)
        times.append(time.perf_counter() - t0)
        assert m["updates"] == 1
    return {"times": times, "tokens": len(c_ids) * a.length, "rss_before": before, "peak": peak_rss_mb()}


def run_trl(model_dir: str, a) -> dict:
    import torch
    from datasets import Dataset
    from transformers import AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    torch.set_num_threads(a.threads)
    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    tok = AutoTokenizer.from_pretrained(model_dir)
    p_ids, c_ids, rewards = fixed_batch(tok, a.prompts, a.group, a.length, a.seed)
    index = {}  # completion tuple -> reward

    def rollout_func(prompts, trainer):
        ids = [p_ids[int(p) // 1] for p in prompts]  # the prompt text is its index
        comps = [c_ids[int(p) * a.group + k % a.group] for k, p in enumerate(prompts)]
        for c, p, k in zip(comps, prompts, range(len(prompts))):
            index[tuple(c)] = rewards[int(p) * a.group + k % a.group]
        return {"prompt_ids": ids, "completion_ids": comps, "logprobs": [[0.0] * len(c) for c in comps]}

    def reward(completions, completion_ids, **kw):
        return [index[tuple(c)] for c in completion_ids]

    class Clock(TrainerCallback):
        def __init__(self):
            self.marks = []

        def on_step_begin(self, args, state, control, **kw):
            self.marks.append(["begin", time.perf_counter(), rss_mb()])

        def on_step_end(self, args, state, control, **kw):
            self.marks.append(["end", time.perf_counter(), rss_mb()])

    clock = Clock()
    with tempfile.TemporaryDirectory() as out:
        args = GRPOConfig(
            output_dir=out,
            per_device_train_batch_size=a.prompts * a.group,
            num_generations=a.group,
            max_completion_length=a.length,
            temperature=1.0,
            loss_type="dapo",
            epsilon=0.2,
            epsilon_high=0.28,
            beta=0.0,
            learning_rate=1e-5,
            max_steps=a.steps,
            report_to="none",
            use_cpu=True,
            bf16=False,
            logging_steps=1000,
            save_strategy="no",
            shuffle_dataset=False,
            seed=a.seed,
            disable_tqdm=True,
            dataloader_num_workers=0,
            gradient_checkpointing=a.trl_gradient_checkpointing or a.checkpointing,
        )
        ds = Dataset.from_list([{"prompt": str(i)} for i in range(a.prompts)])
        trainer = GRPOTrainer(
            model=model_dir,
            reward_funcs=reward,
            args=args,
            train_dataset=ds,
            processing_class=tok,
            rollout_func=rollout_func,
            callbacks=[clock],
        )
        before = rss_mb()
        trainer.train()
    begins = [t for kind, t, _ in clock.marks if kind == "begin"]
    ends = [t for kind, t, _ in clock.marks if kind == "end"]
    # TRL samples (here: hands over the fixed batch) inside the step, so a step is begin -> end.
    times = [e - b for b, e in zip(begins, ends)]
    return {"times": times, "tokens": len(c_ids) * a.length, "rss_before": before, "peak": peak_rss_mb()}


def child(a) -> None:
    result = (run_mcoder if a.which == "mcoder" else run_trl)(a.model, a)
    print("RESULT " + json.dumps(result))


def main() -> None:
    ap = common.parser(__doc__)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--group", type=int, default=4)
    ap.add_argument("--length", type=int, default=64)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--shape", help="a real Qwen3 architecture from mcoder.testing.SHAPES (default: the tiny model)"
    )
    ap.add_argument("--layers", type=int, help="decoder layers (default: the tiny model's 2, or the shape's)")
    ap.add_argument(
        "--model-vocab", type=int, help="embedding rows of a --shape model (default: the shape's)"
    )
    ap.add_argument(
        "--trl-gradient-checkpointing",
        action="store_true",
        help="TRL's default: recompute activations in the backward (TRL alone; --checkpointing: both)",
    )
    ap.add_argument("--checkpointing", action="store_true", help="activation checkpointing on both sides")
    ap.add_argument("--logprob-chunk-tokens", type=int, default=1024, help="mcoder's log-prob chunk (0: all at once)")
    ap.add_argument("--which", choices=["mcoder", "trl"])
    ap.add_argument("--model")
    a = ap.parse_args()
    if a.which:
        child(a)
        return

    from mcoder.testing import make_tiny_model

    spec, name = model_spec(a)
    params = parameter_count(spec)
    with tempfile.TemporaryDirectory() as d:
        model = str(make_tiny_model(Path(d) / "model", spec))
        results: dict[str, list[dict]] = {"mcoder": [], "trl": []}
        for rep in range(a.repeats):
            for which in ("mcoder", "trl"):  # interleaved, so machine load hits both alike
                cmd = [
                    sys.executable,
                    __file__,
                    "--which",
                    which,
                    "--model",
                    model,
                    *[f"--{k}={getattr(a, k)}" for k in ("prompts", "group", "length", "steps", "threads")],
                    f"--seed={a.seed + rep}",
                    *(["--trl-gradient-checkpointing"] if a.trl_gradient_checkpointing else []),
                    *(["--checkpointing"] if a.checkpointing else []),
                    f"--logprob-chunk-tokens={a.logprob_chunk_tokens}",
                ]
                out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
                results[which].append(json.loads(out.split("RESULT ", 1)[1]))
    print(
        f"one GRPO step: {a.prompts} prompts x G={a.group} x {a.length} completion tokens, {name}, "
        f"{params / 1e6:.1f}M parameters (float32), {a.threads} torch threads, "
        f"TRL gradient checkpointing {'on' if a.trl_gradient_checkpointing or a.checkpointing else 'off'}, "
        f"mcoder's {'on' if a.checkpointing else 'off'}, mcoder log-prob chunk {a.logprob_chunk_tokens} tokens, "
        f"{a.repeats} repeats (first of {a.steps} steps is warm-up)"
    )
    print(f"{'':8} {'tokens/s':>18} {'step s':>14} {'peak RSS MiB':>16} {'RSS rise MiB':>16}")
    for which, rs in results.items():
        tps = [r["tokens"] / statistics.fmean(r["times"][1:]) for r in rs]
        step = [statistics.fmean(r["times"][1:]) for r in rs]
        peak = [r["peak"] for r in rs]
        rise = [r["peak"] - r["rss_before"] for r in rs]
        print(f"{which:8} {_ms(tps):>18} {_ms(step, 3):>14} {_ms(peak, 0):>16} {_ms(rise, 0):>16}")
    # Each repeat ran both back to back, so their ratio cancels most of the machine's load swings.
    ratio = [
        statistics.fmean(t["times"][1:]) / statistics.fmean(m["times"][1:])
        for m, t in zip(results["mcoder"], results["trl"], strict=True)
    ]
    print(
        f"speed-up of mcoder over TRL (paired by repeat, TRL step time / mcoder step time): {_ms(ratio, 2)}"
    )


def model_spec(a):
    """The spec of the model to build (always float32, what both trainers train in) and its name."""
    from dataclasses import replace

    from mcoder.testing import SHAPES, TinySpec

    if a.shape is None:
        if a.model_vocab is not None:
            raise SystemExit("--model-vocab needs --shape (the tiny model's vocabulary is its tokenizer's)")
        spec = replace(TinySpec(), layers=a.layers or TinySpec.layers)
        return spec, f"tiny Qwen3 ({spec.layers} layers, hidden {spec.hidden}, vocab {spec.vocab})"
    if a.shape not in SHAPES:
        raise SystemExit(f"--shape {a.shape}: unknown; one of {', '.join(sorted(SHAPES))}")
    spec = SHAPES[a.shape]
    vocab = a.model_vocab or spec.model_vocab
    if vocab < spec.vocab:
        raise SystemExit(f"--model-vocab {vocab}: at least the tokenizer's {spec.vocab}")
    spec = replace(spec, layers=a.layers or spec.layers, model_vocab=vocab, dtype="float32")
    return (
        spec,
        f"{a.shape} shape ({spec.layers} layers, hidden {spec.hidden}, vocab {vocab}, random weights)",
    )


def parameter_count(spec) -> int:
    """Parameters of the model ``spec`` describes, counted on an empty (meta-device) model."""
    import torch
    from transformers import Qwen3ForCausalLM

    from mcoder.testing import build_config

    with torch.device("meta"):
        model = Qwen3ForCausalLM(build_config(spec, vocab_size=spec.vocab, eos_id=2, pad_id=0))
    return sum(p.numel() for p in model.parameters())  # the tied output layer once


def _ms(xs: list[float], digits: int = 0) -> str:
    sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
    return f"{statistics.fmean(xs):.{digits}f} ± {sd:.{digits}f}"


if __name__ == "__main__":
    main()
