"""What one GPU does with mcoder when vLLM is not installed (benchmarks/gpu_check.sh runs this then):

  1. sampling with the transformers engine (`mcoder rollout --engine hf`, bfloat16 on a GPU):
     prompts x G up to --sample-tokens tokens (a random model almost never stops early): tokens/s;
  2. the full-parameter update (`mcoder train` on one rollout batch) of the model at each length of
     --lengths (the paper's L_max is 8,192): completion tokens/s, model FLOP utilisation against the
     chip's bfloat16 peak, peak GPU memory; a length that runs out of memory reads OOM;
  3. the same update through FSDP2 (`fully_shard`, mcoder.train.distributed.FSDPTrainer) in a
     one-process group, at --fsdp-length;
  4. the loop's step broken down (`mcoder loop --engine hf`: sample / judge / update), from
     benchmarks/loop_speed.py.

The model is a real Qwen3-1.7B architecture with random weights built from its config (mcoder.testing),
or the tiny test model with --smoke (a CPU, seconds). The update batches are made here: random
completion tokens of exactly the length measured, half of the samples passing, so every group has
an advantage. Stages 1, 2 and 4 call the mcoder CLI in a subprocess, so whatever `mcoder train`
does by default (its memory settings included) is what is measured; GPU_TRAIN_ARGS adds flags to
every `mcoder train` call here (e.g. GPU_TRAIN_ARGS="--micro-batch-size 2").

    python benchmarks/gpu_bench.py --out gpu-check            # the full check (a GPU, ~6-8 min)
    python benchmarks/gpu_bench.py --out gpu-check --smoke    # tiny sizes on a CPU

(``python -m benchmarks.gpu_bench`` is the same.)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

if __package__:  # python -m benchmarks.gpu_bench, or imported
    from benchmarks import common
else:  # python benchmarks/gpu_bench.py: this folder is first on sys.path
    import common

ROOT = common.ROOT
PROBLEMS = common.PROBLEMS / "stdin.jsonl"
PROMPT_TOKENS = 256  # the prompt part of each made-up update sample
# bfloat16 dense tensor-core peaks (vendor datasheets, without sparsity), by device-name substring
PEAK_TFLOPS = {"H200": 989.4, "H100": 989.4, "A100": 312.0, "L40S": 362.1, "A10G": 70.0, "L4": 121.0}


# ---------------------------------------------------------------- measuring


class GpuMemory:
    """The most GPU memory in use (MiB, all processes, nvidia-smi read twice a second) while the
    block runs; None without nvidia-smi."""

    def __init__(self):
        self.peak: int | None = None
        self._stop = threading.Event()
        self._thread = None

    def _read(self) -> int | None:
        try:
            out = subprocess.run(
                ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                capture_output=True, text=True, timeout=10, check=True,
            ).stdout  # fmt: skip
            return max(int(x) for x in out.split())
        except (OSError, subprocess.SubprocessError, ValueError):
            return None

    def _watch(self) -> None:
        while not self._stop.wait(0.5):
            used = self._read()
            if used is not None:
                self.peak = max(self.peak or 0, used)

    def __enter__(self):
        if shutil.which("nvidia-smi"):
            self._thread = threading.Thread(target=self._watch, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread:
            self._thread.join()


mcoder = common.mcoder


def run(cmd: list[str], log: Path) -> tuple[int, float, str]:
    """(exit code, wall seconds, the last of its output) of one command; its output goes to ``log``."""
    ran = common.run_stage(cmd, log, check=False, echo=False, output_to_log=True, append=False, cwd=ROOT)
    return ran.returncode, ran.seconds, ran.tail()


def _last_line(text: str, rc: int) -> str:
    lines = text.strip().splitlines()
    return f"exit {rc}: {lines[-1]}" if lines else f"exit {rc}"


def out_of_memory(text: str) -> bool:
    return "out of memory" in text.lower() or "OutOfMemoryError" in text


def device_info() -> tuple[str, float | None]:
    """The device's name and its bfloat16 peak in FLOP/s (None when unknown: set MCODER_PEAK_TFLOPS)."""
    import torch

    if not torch.cuda.is_available():
        return "cpu", None
    name = torch.cuda.get_device_name()
    if os.environ.get("MCODER_PEAK_TFLOPS"):
        return name, float(os.environ["MCODER_PEAK_TFLOPS"]) * 1e12
    peak = next((v for k, v in PEAK_TFLOPS.items() if k in name), None)
    return name, peak * 1e12 if peak else None


# ---------------------------------------------------------------- the model and the batches


def build_model(out: Path, smoke: bool) -> tuple[Path, dict]:
    """The model, built where benchmarks/loop_speed.py looks for it (so it is built once)."""
    path = common.tiny_model(out / "models", "tiny" if smoke else "qwen3-1.7b:28")
    config = json.loads((path / "config.json").read_text())
    return path, config


def model_flops_per_token(config: dict, seq: int) -> float:
    """Forward + backward FLOPs per trained token: 6 x the parameters a token passes through (the
    embedding lookup aside; the tied output layer counted), plus causal attention's scores and
    values (6 x layers x seq x heads x head_dim, half of the full 12 for the causal mask)."""
    h, layers, inter = config["hidden_size"], config["num_hidden_layers"], config["intermediate_size"]
    heads, kv, hd = config["num_attention_heads"], config["num_key_value_heads"], config["head_dim"]
    per_layer = h * heads * hd + 2 * h * kv * hd + heads * hd * h + 3 * h * inter
    params = layers * per_layer + h * config["vocab_size"]
    return 6 * params + 6 * layers * seq * heads * hd


def write_batch(
    folder: Path, config: dict, *, groups: int, n: int, length: int, seed: int
) -> tuple[Path, Path]:
    """Rollouts and verdicts of ``groups`` x ``n`` made-up samples: a random prompt of
    PROMPT_TOKENS tokens and a random completion of exactly ``length``; every other sample passes."""
    from mcoder.jsonl import RecordWriter
    from mcoder.records import Rollout, Verdict

    rng = random.Random(seed)
    vocab = min(config["vocab_size"], 1000)  # plain tokens: the special ones sit at the top
    folder.mkdir(parents=True, exist_ok=True)
    rpath, vpath = folder / "rollouts.jsonl", folder / "verdicts.jsonl"
    with RecordWriter(rpath, "id", resume=False) as rw, RecordWriter(vpath, "rollout_id", resume=False) as vw:
        for g in range(groups):
            prompt = [rng.randrange(vocab) for _ in range(PROMPT_TOKENS)]
            for i in range(n):
                rid = f"b{g}-{i}"
                rw.write(
                    Rollout(
                        id=rid, problem_id=f"b{g}", completion="", sample_index=i, prompt_token_ids=prompt,
                        completion_token_ids=[rng.randrange(vocab) for _ in range(length)],
                        sampling_logprobs=[-7.0] * length, finish_reason="stop", temperature=1.0, seed=seed,
                    )
                )  # fmt: skip
                ok = i % 2 == 0
                vw.write(
                    Verdict(
                        rollout_id=rid, problem_id=f"b{g}", reward=float(ok), passed=ok,
                        status="accepted" if ok else "wrong_answer", tests_passed=int(ok), tests_total=1,
                    )
                )  # fmt: skip
    return rpath, vpath


def dtype() -> str:
    import torch

    return "bfloat16" if torch.cuda.is_available() else "float32"


def train_args() -> list[str]:
    return ["--dtype", dtype(), *shlex.split(os.environ.get("GPU_TRAIN_ARGS", ""))]


# ---------------------------------------------------------------- the stages


def sample_stage(model: Path, a, out: Path) -> dict:
    rollouts = out / "sample" / "rollouts.jsonl"
    rollouts.parent.mkdir(parents=True, exist_ok=True)
    cmd = mcoder(
        "rollout", "--engine", "hf", "-p", PROBLEMS, "-m", model, "-o", rollouts, "--limit", a.sample_prompts,
        "--n", a.n, "--max-tokens", a.sample_tokens, "--seed", 1, "--overwrite", "-q",
    )  # fmt: skip
    with GpuMemory() as mem:
        rc, seconds, tail = run(cmd, out / "sample" / "log.txt")
    if rc != 0:
        return {"error": _last_line(tail, rc)}
    rows = [json.loads(x) for x in rollouts.read_text().splitlines()]
    tokens = sum(len(r["completion_token_ids"]) for r in rows)
    return {"sequences": len(rows), "tokens": tokens, "seconds": seconds, "tokens_per_s": tokens / seconds,
            "peak_mib": mem.peak}  # fmt: skip


def update_stage(model: Path, config: dict, length: int, a, out: Path, peak: float | None) -> dict:
    """One `mcoder train` on a made-up batch at ``length``; its metrics.json has time/train."""
    folder = out / f"update-{length}"
    rpath, vpath = write_batch(folder, config, groups=a.update_groups, n=a.n, length=length, seed=length)
    cmd = mcoder(
        "train", "--model", model, "--rollouts", rpath, "--verdicts", vpath, "--out", folder / "ckpt",
        "--max-tokens", length, "--lr", "1e-6", "--mini-batch-size", a.update_groups, "--micro-batch-size", 1,
        "--overwrite", "-q",
        *train_args(),
    )  # fmt: skip
    with GpuMemory() as mem:
        rc, seconds, tail = run(cmd, folder / "log.txt")
    metrics_file = folder / "ckpt" / "metrics.json"
    metrics = json.loads(metrics_file.read_text()) if rc == 0 and metrics_file.exists() else None
    shutil.rmtree(folder / "ckpt", ignore_errors=True)  # GBs of weights and optimizer state: not kept
    if rc != 0:
        return {"length": length, "error": "OOM" if out_of_memory(tail) else _last_line(tail, rc)}
    return {
        "length": length,
        "peak_mib": mem.peak,
        "wall_s": seconds,
        **_rates(metrics, config, length, peak),
    }


def _rates(metrics: dict | None, config: dict, length: int, peak: float | None) -> dict:
    if not metrics:
        return {}
    tokens, secs = metrics.get("tokens", 0), metrics.get("time/train", 0.0)
    out = {"tokens": tokens, "train_s": secs, "tokens_per_s": tokens / secs if secs else 0.0}
    seq = PROMPT_TOKENS + length
    out["mfu"] = (tokens * model_flops_per_token(config, seq) / secs / peak) if peak and secs else None
    return out


def fsdp_case(model: Path, length: int, a, out: Path) -> dict:
    """In this process: a one-rank process group, FSDPTrainer (fully_shard), one update."""
    import torch

    from mcoder.jsonl import read_records
    from mcoder.records import Rollout, Verdict
    from mcoder.train import distributed
    from mcoder.train.config import resolve
    from mcoder.train.distributed import FSDPTrainer

    os.environ.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(29500 + os.getpid() % 1000),
                       "RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0"})  # fmt: skip
    cuda = torch.cuda.is_available()
    distributed.join()  # the trainer's own group (cpu:gloo,cuda:nccl on a GPU), as under torchrun
    try:
        config = json.loads((model / "config.json").read_text())
        rpath, vpath = write_batch(
            out / f"fsdp-{length}", config, groups=a.update_groups, n=a.n, length=length, seed=7
        )
        rollouts = list(read_records(rpath, Rollout))
        verdicts = {v.rollout_id: v for v in read_records(vpath, Verdict)}
        cfg = resolve(
            "microcoder-grpo",
            {
                "lr": 1e-6,
                "max_tokens": length,
                "mini_batch_size": a.update_groups,
                "micro_batch_size": 1,
                "dtype": dtype(),
            },
        )
        trainer = FSDPTrainer(str(model), cfg)
        metrics = trainer.train_on_batch(rollouts, verdicts)
        peak_mib = torch.cuda.max_memory_allocated() / 2**20 if cuda else None
        return {"length": length, "peak_mib": peak_mib, "sharded": type(trainer.model).__name__,
                **_rates(metrics, config, length, device_info()[1])}  # fmt: skip
    finally:
        distributed.leave()


def fsdp_stage(model: Path, a, out: Path) -> dict:
    case = json.dumps({"model": str(model), "length": a.fsdp_length, "args": vars(a) | {"out": str(a.out)}})
    log = out / "fsdp.log"
    rc, _, tail = run([sys.executable, __file__, "--fsdp-case", case], log)
    if rc != 0:
        return {"length": a.fsdp_length, "error": "OOM" if out_of_memory(tail) else _last_line(tail, rc)}
    return json.loads(next(x for x in reversed(log.read_text().splitlines()) if x.startswith("{")))


def loop_stage(a, out: Path) -> tuple[int, str]:
    """benchmarks/loop_speed.py's table for the hf engine, full fine-tuning, on the same model."""
    shape = ["--shape", "tiny"] if a.smoke else ["--shape", "qwen3-1.7b", "--layers", "28"]
    cmd = [
        sys.executable, str(ROOT / "benchmarks" / "loop_speed.py"), *shape, "--cases", "hf-full",
        "--sync-models", "", "--steps", a.loop_steps, "--problems", a.loop_problems, "--n", a.n,
        "--max-tokens", a.loop_tokens, "--judge-workers", a.judge_workers, "--unsafe-no-sandbox",
        "--models-dir", out / "models",
    ]  # fmt: skip
    rc, _, text = run(list(map(str, cmd)), out / "loop.log")
    return rc, text


# ---------------------------------------------------------------- the report


def fmt(v, spec: str, none: str = "n/a") -> str:
    return none if v is None else format(v, spec)


def report(
    name: str, config: dict, sample: dict, updates: list[dict], fsdp: dict, loop: tuple[int, str]
) -> str:
    shape = f"{config['num_hidden_layers']} layers x {config['hidden_size']} wide"
    lines = [f"device: {name}; model: {shape} (a Qwen3 architecture, random weights)"]
    lines.append("\nsampling, transformers engine (mcoder rollout --engine hf)")
    if "error" in sample:
        lines.append(f"  failed: {sample['error']}")
    else:
        lines.append(f"  {sample['sequences']} sequences, {sample['tokens']:,} tokens in {sample['seconds']:.1f} s: "
                     f"{sample['tokens_per_s']:.0f} tokens/s; peak GPU memory {fmt(sample['peak_mib'], ',')} MiB")  # fmt: skip
    lines.append("\nfull-parameter update (mcoder train, one rollout batch)")
    head = f"  {'L':>10} {'tokens':>8} {'train s':>8} {'tok/s':>8} {'MFU':>6} {'peak MiB':>9}"
    lines += [head, "  " + "-" * (len(head) - 2)]
    for u in [*updates, {**fsdp, "label": "fsdp2"}]:
        label = f"{u.get('label', '')} {u['length']}".strip()
        if "error" in u:
            lines.append(f"  {label:>10} {u['error']}")
            continue
        mfu = f"{100 * u['mfu']:.1f}%" if u.get("mfu") else "n/a"
        lines.append(f"  {label:>10} {u.get('tokens', 0):>8,} {u.get('train_s', 0):>8.2f} {u.get('tokens_per_s', 0):>8.0f} "
                     f"{mfu:>6} {fmt(u.get('peak_mib'), ',.0f'):>9}")  # fmt: skip
    lines.append("\nloop step, hf engine, full fine-tuning (benchmarks/loop_speed.py)")
    rc, text = loop
    table = [x for x in text.splitlines() if x.startswith(("case", "hf-", "---", "loop step"))]
    lines += ["  " + x for x in table] if rc == 0 else [f"  failed ({rc}): {text.strip().splitlines()[-1:]}"]
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The check's settings: its options, then the --smoke sizes over them."""
    p = common.parser(__doc__)
    p.add_argument("--out", type=Path, default=Path("gpu-check"))
    p.add_argument("--smoke", action="store_true", help="the tiny model and tiny sizes (a CPU, CI)")
    p.add_argument("--sample-tokens", type=int, default=1024)
    p.add_argument("--sample-prompts", type=int, default=8)
    p.add_argument("--n", type=int, default=4, help="G: samples per problem (sampling, updates, loop)")
    p.add_argument("--lengths", default="1024,4096,8192", help="completion lengths of the update")
    p.add_argument("--update-groups", type=int, default=2, help="problems per update batch (x --n)")
    p.add_argument("--fsdp-length", type=int, default=4096)
    p.add_argument(
        "--loop-steps", type=int, default=2, help="the first is the warm-up; the rest are averaged"
    )
    p.add_argument("--loop-problems", type=int, default=4)
    p.add_argument("--loop-tokens", type=int, default=1024)
    p.add_argument("--judge-workers", type=int, default=8, help="judge workers of the loop stage")
    p.add_argument("--fsdp-case", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.smoke:
        a.sample_tokens, a.sample_prompts, a.n, a.lengths, a.update_groups = 16, 2, 2, "16,32", 2
        a.fsdp_length, a.loop_steps, a.loop_problems, a.loop_tokens, a.judge_workers = 16, 2, 2, 12, 1
    return a


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    if a.fsdp_case:
        c = json.loads(a.fsdp_case)
        vars(a).update({k: v for k, v in c["args"].items() if k != "fsdp_case"})
        print(json.dumps(fsdp_case(Path(c["model"]), c["length"], a, Path(c["args"]["out"]))))
        return 0
    return common.one_writer(a.out, lambda: measure(a), "gpu_bench")  # it removes OUT/*/ckpt folders


def measure(a: argparse.Namespace) -> int:
    """Every stage of the check into ``a.out`` (claimed and locked by ``main``); 1 when one failed."""
    t0 = time.perf_counter()
    model, config = build_model(a.out, a.smoke)
    print(f"[{time.perf_counter() - t0:4.0f}s] model ready: {model}", file=sys.stderr, flush=True)
    name, peak = device_info()
    record = {"device": name, "peak_flops": peak}

    def save(**part) -> None:  # after each stage: a run cut short keeps what it measured
        record.update(part)
        common.write_json(a.out / "gpu_bench.json", record, benchmark="gpu_bench")

    sample = sample_stage(model, a, a.out)
    save(sample=sample)
    print(f"[{time.perf_counter() - t0:4.0f}s] sampling: {sample}", file=sys.stderr, flush=True)
    updates = []
    for length in (int(x) for x in a.lengths.split(",")):
        updates.append(update_stage(model, config, length, a, a.out, peak))
        save(updates=updates)
        print(f"[{time.perf_counter() - t0:4.0f}s] update: {updates[-1]}", file=sys.stderr, flush=True)
    fsdp = fsdp_stage(model, a, a.out)
    save(fsdp=fsdp)
    print(f"[{time.perf_counter() - t0:4.0f}s] fsdp2: {fsdp}", file=sys.stderr, flush=True)
    loop = loop_stage(a, a.out)
    print(f"[{time.perf_counter() - t0:4.0f}s] loop done (exit {loop[0]})", file=sys.stderr, flush=True)
    text = report(name, config, sample, updates, fsdp, loop)
    print(text)
    save(loop_exit=loop[0])
    failed = (
        "error" in sample
        or loop[0] != 0
        or any("error" in u and u["error"] != "OOM" for u in [*updates, fsdp])
    )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
