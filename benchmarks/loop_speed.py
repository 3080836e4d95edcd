"""Where a loop step's time goes: sample, judge, update, sync, for the hf and vLLM engines, full
fine-tuning and LoRA; and how long a full-weight sync into vLLM takes against parameter count.

Loop cases: ``mcoder loop`` (``run_loop``) on the bundled problems, each case in a fresh
subprocess (one vLLM engine at a time; peak RSS per case), ``--steps`` steps; reported are the
means over the steps after the first (the first has no sync and warms up), from the run's own
``metrics.jsonl`` (time/rollout, time/judge and the part of it hidden behind sampling,
time/update, time/sync, time/step), and the process's peak RSS.

Sync cases: a full-parameter trainer and an in-process vLLM engine on the same model; the
trainer's weights are streamed into the engine ``--sync-repeats`` times (mcoder.loop.samplers:
``policy_weights`` -> ``VLLMEngine.load_weights``); reported are the mean seconds, the parameter
count, and the largest difference between vLLM's log-prob of a sampled completion and the
trainer's forward pass after the sync (float32 on a CPU: ~1e-6 expected).

Models: ``--shape`` (mcoder.testing: a real Qwen3 architecture with random weights, cut to
``--layers``) or the tiny test model. The default CPU size, qwen3-0.6b's width cut to 2 layers
(187M parameters, most of them the 151,936-row embedding), fits 24 GiB with AdamW beside vLLM.

    .venv-vllm/bin/python benchmarks/loop_speed.py [--shape qwen3-0.6b --layers 2] [--steps 3]
        [--cases hf-full,hf-lora,vllm-full,vllm-lora] [--sync-models tiny,qwen3-0.6b:1,qwen3-0.6b:2]
        (a case ending in -off1, e.g. vllm-full-off1, runs the loop with --off-policy 1)
    .venv-vllm/bin/python benchmarks/loop_speed.py --smoke      # the tiny model, 2 steps (CI)

(``python -m benchmarks.loop_speed`` is the same.)

``--sample-tokens L`` adds vLLM's sampling speed alone at L tokens (benchmarks/gpu_check.sh).

The vLLM engine starts worker processes (LoRA cases), hence the ``__main__`` guard.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__:  # python -m benchmarks.loop_speed, or imported
    from benchmarks import common
else:  # python benchmarks/loop_speed.py: this folder is first on sys.path
    import common

ROOT = common.ROOT
PROBLEMS = common.PROBLEMS / "stdin.jsonl"
PHASES = ("time/rollout", "time/judge", "time/judge_hidden", "time/update", "time/sync", "time/step")


def build_model(spec: str, root: Path) -> Path:
    """``tiny`` or ``SHAPE[:LAYERS]`` (mcoder.testing), built once under ``root``."""
    return common.tiny_model(root, spec)


def _dtype() -> str:
    import torch

    return "bfloat16" if torch.cuda.is_available() else "float32"


def _peak() -> dict:
    import torch

    out = {"peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}
    if torch.cuda.is_available():
        out["peak_gpu_gb"] = torch.cuda.max_memory_reserved() / 2**30  # the trainer's; vLLM's own pool aside
    return out


# ---------------------------------------------------------------- one case, in its own process


def loop_case(model: Path, engine: str, lora: bool, a, off_policy: int = 0) -> dict:
    from mcoder.judge.config import JudgeConfig
    from mcoder.loop.config import LoopConfig
    from mcoder.loop.loop import run_loop
    from mcoder.rollout.sampling import SamplingConfig
    from mcoder.train.config import resolve

    overrides = {"lr": 1e-5, "seed": 1, "dtype": _dtype(), "lora_rank": 8 if lora else 0}
    train = resolve("microcoder-grpo", overrides)
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        cfg = LoopConfig(
            model=str(model), problems=PROBLEMS, run_dir=run, steps=a.steps,
            train_batch_size=a.problems, engine=engine, train=train, off_policy=off_policy, save_every=a.save_every,
            sampling=SamplingConfig(n=a.n, max_tokens=a.max_tokens, temperature="1.0"),
            judge=JudgeConfig(workers=a.judge_workers, unsafe_no_sandbox=a.unsafe_no_sandbox),
        )  # fmt: skip
        t0 = time.perf_counter()
        run_loop(cfg)
        wall = time.perf_counter() - t0
        rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    later = rows[1:] or rows
    out = {k: statistics.mean(r.get(k, 0.0) for r in later) for k in (*PHASES, "rollout_tokens_per_s")}
    out["step"] = out["time/step"]  # sync + sampling + the judging left after it + update
    out["start"] = wall - sum(r["time/step"] for r in rows)  # load, engine start, saves
    return {**out, **_peak()}


def sync_case(model: Path, a) -> dict:
    import torch

    from mcoder.loop.samplers import policy_weights, vllm_engine
    from mcoder.rollout.sample import make_rollouts
    from mcoder.testing import forward_logprobs, problems
    from mcoder.train.config import resolve
    from mcoder.train.trainer import Trainer

    cfg = resolve("microcoder-grpo", {"seed": 1, "dtype": _dtype()})
    trainer = Trainer(str(model), cfg)
    with torch.no_grad():  # a visible change, so that a sync that did nothing would show
        for p in trainer.model.parameters():
            p.mul_(0.9)
    engine = vllm_engine(str(model), cfg, in_process=True)
    seconds = []
    for _ in range(a.sync_repeats):
        t0 = time.perf_counter()
        engine.load_weights(policy_weights(trainer))
        seconds.append(time.perf_counter() - t0)
    rollouts = make_rollouts(
        problems(1), engine, trainer.tokenizer, n=2, max_tokens=8, temperature=1.0, seed=3, model_name="m"
    )
    policy = trainer.model.eval()
    diff = max(
        float((torch.tensor(r.sampling_logprobs) - forward_logprobs(policy, r.prompt_token_ids,
              r.completion_token_ids, 1.0).to(torch.float32)).abs().max())
        for r in rollouts
    )  # fmt: skip
    params = sum(p.numel() for p in trainer.model.parameters())
    return {"params": params, "sync_s": statistics.mean(seconds), "logprob_diff": diff, **_peak()}


def sample_case(model: Path, a) -> dict:
    """vLLM's sampling speed alone: --sample-prompts prompts x G=--n, up to --sample-tokens each
    (a random model almost never ends early)."""
    from mcoder.loop.samplers import vllm_engine
    from mcoder.models import load_tokenizer
    from mcoder.rollout.sample import make_rollouts
    from mcoder.testing import problems
    from mcoder.train.config import resolve

    cfg = resolve("microcoder-grpo", {"seed": 1, "dtype": _dtype()})
    engine = vllm_engine(str(model), cfg, in_process=True)
    tok = load_tokenizer(model)
    kw = {"n": a.n, "max_tokens": a.sample_tokens, "temperature": 1.0, "model_name": "m"}
    make_rollouts(problems(1), engine, tok, seed=0, **{**kw, "max_tokens": 8})  # warm-up
    t0 = time.perf_counter()
    rollouts = make_rollouts(problems(a.sample_prompts), engine, tok, seed=1, **kw)
    seconds = time.perf_counter() - t0
    tokens = sum(len(r.completion_token_ids) for r in rollouts)
    return {
        "sequences": len(rollouts),
        "tokens": tokens,
        "seconds": seconds,
        "tokens_per_s": tokens / seconds,
        **_peak(),
    }


def _in_subprocess(kind: str, **kw) -> dict:
    cmd = [sys.executable, __file__, "--case", json.dumps({"kind": kind, **kw}, default=str)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=ROOT)
    if done.returncode != 0:
        sys.exit(f"case {kw} failed:\n{done.stderr[-4000:]}")
    # the child's last JSON line: vLLM's worker processes may print after it as they shut down
    return json.loads(next(x for x in reversed(done.stdout.splitlines()) if x.startswith("{")))


# ---------------------------------------------------------------- the tables


def loop_table(model: Path, label: str, a) -> None:
    print(f"\nloop step on {label}: {a.problems} problems x G={a.n}, {a.max_tokens} tokens, "
          f"means over steps 2..{a.steps} (seconds)")  # fmt: skip
    head = (
        f"{'case':<15} {'sample':>8} {'judge':>8} {'hidden':>8} {'update':>8} {'sync':>8} {'step':>8} "
        f"{'tok/s':>8} {'start':>7} {'RSS GB':>7}"
    )
    print(head)
    print("-" * len(head))
    for case in a.cases.split(","):
        engine, mode, *off = case.split("-")  # e.g. vllm-full, or vllm-full-off1 (--off-policy 1)
        off_policy = int(off[0].removeprefix("off")) if off else 0
        r = _in_subprocess(
            "loop", model=str(model), engine=engine, lora=mode == "lora", off_policy=off_policy, args=vars(a)
        )
        print(
            f"{case:<15} {r['time/rollout']:>8.2f} {r['time/judge']:>8.2f} {r['time/judge_hidden']:>8.2f} "
            f"{r['time/update']:>8.2f} "
            f"{r['time/sync']:>8.2f} {r['step']:>8.2f} {r['rollout_tokens_per_s']:>8.0f} {r['start']:>7.1f} "
            f"{r['peak_rss_gb']:>7.2f}",
            flush=True,
        )


def sample_table(model: Path, label: str, a) -> None:
    r = _in_subprocess("sample", model=str(model), args=vars(a))
    print(f"\nvLLM sampling on {label}: {r['sequences']} sequences up to {a.sample_tokens} tokens")
    print(f"{'tokens':>10} {'seconds':>9} {'tok/s':>9}")
    print(f"{r['tokens']:>10,} {r['seconds']:>9.1f} {r['tokens_per_s']:>9.0f}", flush=True)


def sync_table(models: list[tuple[str, Path]], a) -> None:
    print(f"\nfull-weight sync into vLLM (in-process engine, {_dtype()}, mean of {a.sync_repeats})")
    head = f"{'model':<16} {'params':>12} {'sync s':>8} {'GB/s':>7} {'max |dlogp|':>12}"
    print(head)
    print("-" * len(head))
    for label, model in models:
        r = _in_subprocess("sync", model=str(model), args=vars(a))
        gb = r["params"] * (2 if _dtype() == "bfloat16" else 4) / 1e9
        print(
            f"{label:<16} {r['params']:>12,} {r['sync_s']:>8.3f} {gb / r['sync_s']:>7.2f} {r['logprob_diff']:>12.2e}",
            flush=True,
        )


def main(argv: list[str] | None = None) -> int:
    p = common.parser(__doc__)
    p.add_argument(
        "--shape", default="qwen3-0.6b", help="model for the loop table (mcoder.testing shape, or tiny)"
    )
    p.add_argument("--layers", type=int, default=2, help="decoder layers of --shape")
    p.add_argument("--cases", default="hf-full,hf-lora,vllm-full,vllm-lora")
    p.add_argument(
        "--sync-models", default="tiny,qwen3-0.6b:1,qwen3-0.6b:2", help="SHAPE[:LAYERS],...; '' skips"
    )
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--problems", type=int, default=2)
    p.add_argument("--n", type=int, default=4)
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--judge-workers", type=int, default=2)
    p.add_argument("--sync-repeats", type=int, default=3)
    p.add_argument(
        "--sample-tokens", type=int, default=0, help="also time vLLM sampling alone at this length"
    )
    p.add_argument("--sample-prompts", type=int, default=8)
    p.add_argument(
        "--unsafe-no-sandbox", action="store_true", help="judge without the sandbox (random outputs)"
    )
    p.add_argument("--models-dir", type=Path, help="where the models are built (default: a temp folder)")
    p.add_argument("--save-every", type=int, help="the loop's --save-every (0: no checkpoint; default: the loop's)")
    p.add_argument("--smoke", action="store_true", help="tiny model, 2 steps, vllm-full only (CI)")
    p.add_argument("--case", help=argparse.SUPPRESS)
    a = p.parse_args(argv)

    if a.case:  # a child: one measurement, one JSON line on stdout
        c = json.loads(a.case)
        for k, v in c["args"].items():
            setattr(a, k, v)
        model = Path(c["model"])
        if c["kind"] == "loop":
            r = loop_case(model, c["engine"], c["lora"], a, c.get("off_policy", 0))
        else:
            r = sync_case(model, a) if c["kind"] == "sync" else sample_case(model, a)
        print(json.dumps(r))
        return 0
    if a.smoke:
        a.shape, a.cases, a.sync_models, a.steps, a.n, a.max_tokens = (
            "tiny",
            "hf-full,vllm-full",
            "tiny",
            2,
            2,
            12,
        )
        a.sync_repeats, a.judge_workers = 2, 1

    with tempfile.TemporaryDirectory() as tmp:
        root = a.models_dir or Path(tmp)
        spec = "tiny" if a.shape == "tiny" else f"{a.shape}:{a.layers}"
        model = build_model(spec, root)
        if a.sample_tokens:
            sample_table(model, spec, a)
        loop_table(model, spec, a)
        models = [(s, build_model(s, root)) for s in a.sync_models.split(",") if s]
        if models:
            sync_table(models, a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
