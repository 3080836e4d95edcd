"""What one GPU does with mcoder when vLLM is not installed (benchmarks/gpu_check.sh runs this then):
does the paper's regime (full fine-tuning of a Qwen3-1.7B shape at completions up to 8,192 tokens,
recipes/microcoder-grpo.toml's training settings) fit one GPU, and how fast is it.

  1. sampling with the transformers engine (`mcoder rollout --engine hf`, bfloat16 on a GPU):
     prompts x G up to --sample-tokens tokens (a random model almost never stops early): tokens/s;
  2. the full-parameter update of one rollout batch at each length of --lengths, at the recipe's
     own training settings (its micro-batch of 4 sequences; compute dtype auto: bf16 over float32
     master weights on a GPU; activation checkpointing auto: on): completion tokens/s, model FLOP
     utilisation against the chip's bfloat16 peak, peak GPU memory (torch.cuda.max_memory_allocated)
     and what the trainer keeps between updates (its weights and AdamW's moments: what stays while
     vLLM samples), each beside benchmarks/memory_model.py's figure when OUT/memory_model.json is
     there (gpu_check.sh writes it first); a length that runs out of memory reads OOM;
  3. the same update through FSDP2 (`fully_shard`, mcoder.train.distributed.FSDPTrainer) in the
     trainer's own one-process group (cpu:gloo,cuda:nccl), at --fsdp-length;
  4. the loop's step broken down (`mcoder loop --engine hf`: sample / judge / update), from
     benchmarks/loop_speed.py, with no checkpoint written (--save-every 0).

No checkpoint is written unless --save is given (then each update's checkpoint write is timed: at
1.7B full fine-tuning about 21 GB). The model is a real Qwen3-1.7B architecture with random weights
built from its config (mcoder.testing), or the tiny test model with --smoke (a CPU, seconds). The
update batches are made here: random completion tokens of exactly the length measured, half of the
samples passing, so every group has an advantage. Each update runs in a process of its own (an
out-of-memory one leaves the others); ``--set train.KEY=VALUE`` changes a recipe setting (e.g.
--set train.micro_batch_size=2).

    python benchmarks/gpu_bench.py --out gpu-check            # the full check (a GPU, ~6-8 min)
    python benchmarks/gpu_bench.py --out gpu-check --smoke    # tiny sizes on a CPU

(``python -m benchmarks.gpu_bench`` is the same.)
"""

from __future__ import annotations

import argparse
import json
import os
import random
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


RECIPE = ROOT / "recipes" / "microcoder-grpo.toml"


def recipe_train(a, **more):
    """The recipe's training settings (``--set train.KEY=VALUE`` over them, then ``more``)."""
    import tomllib

    from mcoder.loop.recipe import merge, parse_sets
    from mcoder.train.config import resolve

    train = merge({"train": tomllib.loads(RECIPE.read_text())["train"]}, parse_sets(a.set or ()))["train"]
    algo = train.pop("algo")
    return resolve(algo, {**train, **more}).settle()


def batch_records(folder: Path, config: dict, a, length: int, seed: int):
    from mcoder.jsonl import read_records
    from mcoder.records import Rollout, Verdict

    rpath, vpath = write_batch(folder, config, groups=a.update_groups, n=a.n, length=length, seed=seed)
    return list(read_records(rpath, Rollout)), {v.rollout_id: v for v in read_records(vpath, Verdict)}


def one_update(trainer, rollouts, verdicts, config: dict, length: int, a, out: Path) -> dict:
    """One rollout batch's updates on ``trainer``: rates, peak and resident GPU memory, and with
    --save the seconds of writing its checkpoint (then removed)."""
    import torch

    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    metrics = trainer.train_on_batch(rollouts, verdicts)
    row = {"length": length, **_rates(metrics, config, length, device_info()[1])}
    if cuda:
        torch.cuda.synchronize()
        row["peak_mib"] = torch.cuda.max_memory_allocated() / 2**20
        row["resident_mib"] = torch.cuda.memory_allocated() / 2**20  # weights and moments: the gradients are freed
    if a.save:
        t0 = time.perf_counter()
        trainer.save(out / "ckpt")
        row["save_s"] = time.perf_counter() - t0
        shutil.rmtree(out / "ckpt", ignore_errors=True)
    return row


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


def update_stage(model: Path, length: int, a, out: Path) -> dict:
    """One update at ``length`` in a process of its own (``--update-case``)."""
    return _case("update", model, length, a, out / f"update-{length}")


def update_case(model: Path, length: int, a, out: Path) -> dict:
    from mcoder.train.trainer import Trainer

    config = json.loads((model / "config.json").read_text())
    rollouts, verdicts = batch_records(out, config, a, length, seed=length)
    trainer = Trainer(str(model), recipe_train(a, max_tokens=length))
    return one_update(trainer, rollouts, verdicts, config, length, a, out)


def _rates(metrics: dict | None, config: dict, length: int, peak: float | None) -> dict:
    if not metrics:
        return {}
    tokens, secs = metrics.get("tokens", 0), metrics.get("time/train", 0.0)
    out = {"tokens": tokens, "train_s": secs, "tokens_per_s": tokens / secs if secs else 0.0}
    seq = PROMPT_TOKENS + length
    out["mfu"] = (tokens * model_flops_per_token(config, seq) / secs / peak) if peak and secs else None
    return out


def fsdp_case(model: Path, length: int, a, out: Path) -> dict:
    """In this process: the trainer's own one-rank process group, FSDPTrainer (fully_shard), one update."""
    from mcoder.train import distributed
    from mcoder.train.distributed import FSDPTrainer

    os.environ.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(29500 + os.getpid() % 1000),
                       "RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0"})  # fmt: skip
    distributed.join()  # the trainer's own group (cpu:gloo,cuda:nccl on a GPU), as under torchrun
    try:
        config = json.loads((model / "config.json").read_text())
        rollouts, verdicts = batch_records(out, config, a, length, seed=7)
        trainer = FSDPTrainer(str(model), recipe_train(a, max_tokens=length))
        return {**one_update(trainer, rollouts, verdicts, config, length, a, out), "sharded": type(trainer.model).__name__}
    finally:
        distributed.leave()


def fsdp_stage(model: Path, a, out: Path) -> dict:
    return _case("fsdp", model, a.fsdp_length, a, out / f"fsdp-{a.fsdp_length}")


def _case(kind: str, model: Path, length: int, a, folder: Path) -> dict:
    """``kind``'s case in a process of its own: its row, or its error (OOM when out of memory)."""
    folder.mkdir(parents=True, exist_ok=True)
    case = json.dumps({"kind": kind, "model": str(model), "length": length, "out": str(folder),
                       "args": vars(a) | {"out": str(a.out)}})  # fmt: skip
    log = folder / "log.txt"
    with GpuMemory() as mem:
        rc, seconds, tail = run([sys.executable, __file__, "--case", case], log)
    if rc != 0:
        return {"length": length, "error": "OOM" if out_of_memory(tail) else _last_line(tail, rc)}
    row = json.loads(next(x for x in reversed(log.read_text().splitlines()) if x.startswith("{")))
    return {**row, "wall_s": seconds, "smi_peak_mib": mem.peak}


def loop_stage(a, out: Path) -> tuple[int, str]:
    """benchmarks/loop_speed.py's table for the hf engine, full fine-tuning, on the same model."""
    shape = ["--shape", "tiny"] if a.smoke else ["--shape", "qwen3-1.7b", "--layers", "28"]
    cmd = [
        sys.executable, str(ROOT / "benchmarks" / "loop_speed.py"), *shape, "--cases", "hf-full",
        "--sync-models", "", "--steps", a.loop_steps, "--problems", a.loop_problems, "--n", a.n,
        "--max-tokens", a.loop_tokens, "--judge-workers", a.judge_workers, "--unsafe-no-sandbox",
        "--models-dir", out / "models", "--save-every", 0,
    ]  # fmt: skip
    rc, _, text = run(list(map(str, cmd)), out / "loop.log")
    return rc, text


# ---------------------------------------------------------------- the report


def fmt(v, spec: str, none: str = "n/a") -> str:
    return none if v is None else format(v, spec)


def predicted(config: dict, length: int, a) -> dict | None:
    """benchmarks/memory_model.py's peak and resident bytes for this model and update (its
    measured constants from OUT/memory_model.json), or None without that file."""
    constants = a.out / "memory_model.json"
    if not constants.is_file():
        return None
    m = json.loads(constants.read_text())
    t = common.MemoryTarget(
        "this", config["num_hidden_layers"], config["hidden_size"], config["num_attention_heads"],
        config["num_key_value_heads"], config["head_dim"], config["intermediate_size"], config["vocab_size"],
        bool(config.get("tie_word_embeddings")),
    )  # fmt: skip
    cfg = recipe_train(a)
    tokens = cfg.micro_batch_size * (PROMPT_TOKENS + length)
    return {"peak_mib": common.update_bytes(t, m, tokens, cfg.logprob_chunk_tokens) / 2**20,
            "resident_mib": common.resident_bytes(t, m) / 2**20}  # fmt: skip


def report(
    name: str, config: dict, sample: dict, updates: list[dict], fsdp: dict, loop: tuple[int, str], a
) -> str:
    shape = f"{config['num_hidden_layers']} layers x {config['hidden_size']} wide"
    cfg = recipe_train(a)
    lines = [f"device: {name}; model: {shape} (a Qwen3 architecture, random weights)"]
    lines.append("\nsampling, transformers engine (mcoder rollout --engine hf)")
    if "error" in sample:
        lines.append(f"  failed: {sample['error']}")
    else:
        lines.append(f"  {sample['sequences']} sequences, {sample['tokens']:,} tokens in {sample['seconds']:.1f} s: "
                     f"{sample['tokens_per_s']:.0f} tokens/s; peak GPU memory {fmt(sample['peak_mib'], ',')} MiB")  # fmt: skip
    lines.append(f"\nfull-parameter update, one rollout batch of {a.update_groups} x G={a.n}, the recipe's settings "
                 f"({cfg.dtype} compute over float32 masters, micro-batch {cfg.micro_batch_size} sequences, "
                 f"activation checkpointing {cfg.activation_checkpointing}); GiB: peak / memory model, resident "
                 f"after the update (weights + moments, what stays while vLLM samples) / memory model")  # fmt: skip
    head = (f"  {'L':>10} {'tokens':>8} {'train s':>8} {'tok/s':>8} {'MFU':>6} {'peak':>6} {'model':>6} "
            f"{'resid.':>6} {'model':>6} {'save s':>7}")  # fmt: skip
    lines += [head, "  " + "-" * (len(head) - 2)]
    for u in [*updates, {**fsdp, "label": "fsdp2"}]:
        label = f"{u.get('label', '')} {u['length']}".strip()
        if "error" in u:
            lines.append(f"  {label:>10} {u['error']}")
            continue
        mfu = f"{100 * u['mfu']:.1f}%" if u.get("mfu") else "n/a"
        model = predicted(config, u["length"], a) or {}
        gib = lambda mib: fmt(None if mib is None else mib / 1024, ".1f")
        lines.append(f"  {label:>10} {u.get('tokens', 0):>8,} {u.get('train_s', 0):>8.2f} {u.get('tokens_per_s', 0):>8.0f} "
                     f"{mfu:>6} {gib(u.get('peak_mib')):>6} {gib(model.get('peak_mib')):>6} "
                     f"{gib(u.get('resident_mib')):>6} {gib(model.get('resident_mib')):>6} {fmt(u.get('save_s'), '.1f'):>7}")  # fmt: skip
    lines += verdict(updates, a)
    lines.append("\nloop step, hf engine, full fine-tuning (benchmarks/loop_speed.py, no checkpoint)")
    rc, text = loop
    table = [x for x in text.splitlines() if x.startswith(("case", "hf-", "---", "loop step"))]
    lines += ["  " + x for x in table] if rc == 0 else [f"  failed ({rc}): {text.strip().splitlines()[-1:]}"]
    return "\n".join(lines)


def verdict(updates: list[dict], a) -> list[str]:
    """Does the longest update fit this GPU, and how much is left for vLLM while it samples."""
    import torch

    done = [u for u in updates if "error" not in u and u.get("peak_mib") is not None]
    if not torch.cuda.is_available() or not done:
        return []
    total = torch.cuda.mem_get_info()[1] / 2**20
    longest = max(done, key=lambda u: u["length"])
    left = total - longest["resident_mib"]
    return [(f"\n  fits: the update at L = {longest['length']} peaks at {longest['peak_mib'] / 1024:.1f} of "
            f"{total / 1024:.0f} GiB (vLLM asleep); while vLLM samples the trainer keeps "
            f"{longest['resident_mib'] / 1024:.1f} GiB, leaving {left / 1024:.0f} GiB ({left / total:.0%}) for its "
            f"weights and KV cache")]  # fmt: skip


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
    p.add_argument("--save", action="store_true", help="also time each update's checkpoint write (21 GB at 1.7B)")
    p.add_argument("--set", action="append", help="train.KEY=VALUE over the recipe's training settings")
    p.add_argument("--case", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.smoke:
        a.sample_tokens, a.sample_prompts, a.n, a.lengths, a.update_groups = 16, 2, 2, "16,32", 2
        a.fsdp_length, a.loop_steps, a.loop_problems, a.loop_tokens, a.judge_workers = 16, 2, 2, 12, 1
    return a


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    if a.case:  # a child: one update, one JSON line on stdout
        c = json.loads(a.case)
        vars(a).update({k: v for k, v in c["args"].items() if k != "case"})
        a.out = Path(a.out)
        case = fsdp_case if c["kind"] == "fsdp" else update_case
        print(json.dumps(case(Path(c["model"]), c["length"], a, Path(c["out"]))))
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
        updates.append(update_stage(model, length, a, a.out))
        save(updates=updates)
        print(f"[{time.perf_counter() - t0:4.0f}s] update: {updates[-1]}", file=sys.stderr, flush=True)
    fsdp = fsdp_stage(model, a, a.out)
    save(fsdp=fsdp)
    print(f"[{time.perf_counter() - t0:4.0f}s] fsdp2: {fsdp}", file=sys.stderr, flush=True)
    loop = loop_stage(a, a.out)
    print(f"[{time.perf_counter() - t0:4.0f}s] loop done (exit {loop[0]})", file=sys.stderr, flush=True)
    text = report(name, config, sample, updates, fsdp, loop, a)
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
