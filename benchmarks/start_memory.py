"""Peak host memory of a trainer's start: one process against two torchrun ranks (gloo, CPU).

One process loads the whole policy (P bytes of float32 masters). Under torchrun, rank 0 loads it
and the other ranks build it empty on the meta device, each unit (decoder layer, then the root:
embeddings, final norm) broadcast to them just before it is sharded (train/distributed.py), so the
ranks together should hold at most P + one shard (P / 2) + one unit above the one process. Each
process measures its own peak resident memory above what it held once its imports were done
(/proc/self/status VmHWM, reset through /proc/self/clear_refs before the trainer is built), its
weights read once as a first forward reads them (transformers maps a weights file into memory
and reads it only when used).

    python benchmarks/start_memory.py [--layers 32 --hidden 512 --vocab 32000] [--json OUT.json]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

if __package__:  # python -m benchmarks.start_memory, or imported
    from benchmarks import common
else:  # python benchmarks/start_memory.py: this folder is first on sys.path
    import common

MB = 2**20


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def trainer_start(model: str) -> dict:
    """In this process (a torchrun rank or alone): the peak resident bytes above the start while
    ``make_trainer`` builds the policy, and this process's rank."""
    import peft  # noqa: F401 - imports done before the window: what is measured is the model
    import torch.distributed as dist
    import torch.distributed.fsdp  # noqa: F401
    import transformers.models.qwen3.modeling_qwen3  # noqa: F401

    from mcoder.train import distributed
    from mcoder.train.config import resolve

    distributed.setup()  # under torchrun: the group (its buffers) before the window
    Path("/proc/self/clear_refs").write_text("5")  # the high-water mark starts again from here
    start = _status_kib("VmRSS")
    trainer = distributed.make_trainer(model, resolve("microcoder-grpo", {"device": "cpu", "dtype": "float32"}))
    for p in trainer.model.parameters():  # read once, as the first forward does: loaded weights may be
        float(getattr(p, "to_local", lambda p=p: p)().detach().sum())  # a file mapping not yet in memory
    backends = dist.get_backend_config() if distributed.joined() else None  # (cpu:gloo,cuda:nccl on a GPU)
    return {"rank": distributed.rank(), "peak_above_start": (_status_kib("VmHWM") - start) * 1024, "group": backends}


def sizes(model: Path) -> dict[str, int]:
    """The float32 bytes of the whole policy and of its largest unit (a layer, or the root's own
    tensors), from the model's config."""
    config = json.loads((model / "config.json").read_text())
    h, inter, hd = config["hidden_size"], config["intermediate_size"], config["head_dim"]
    heads, kv = config["num_attention_heads"], config["num_key_value_heads"]
    layer = h * hd * (heads + 2 * kv) + heads * hd * h + 3 * h * inter + 2 * h + 2 * hd
    root = config["vocab_size"] * h * (1 if config.get("tie_word_embeddings") else 2) + h
    return {"policy": 4 * (config["num_hidden_layers"] * layer + root), "unit": 4 * max(layer, root)}


def measure(model: Path) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    with tempfile.TemporaryDirectory() as d:
        one = subprocess.run([sys.executable, __file__, "--child", str(model), "--child-out", d],
                             env=env, capture_output=True, text=True, check=False)  # fmt: skip
        torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2"]
        two = subprocess.run([*torchrun, __file__, "--child", str(model), "--child-out", d],
                             env=env, capture_output=True, text=True, check=False)  # fmt: skip
        for done in (one, two):
            if done.returncode != 0:
                raise SystemExit(done.stderr[-3000:])
        ranks = sorted((json.loads(p.read_text()) for p in Path(d).glob("rank*.json")), key=lambda r: r["rank"])
    alone = next(r for r in ranks if r.get("alone"))
    two_ranks = [r for r in ranks if not r.get("alone")]
    s = sizes(model)
    out = {
        **s,
        "one_process": alone["peak_above_start"],
        "two_ranks": [r["peak_above_start"] for r in two_ranks],
        "group": two_ranks[0]["group"],
    }
    out["two_ranks_sum"] = sum(out["two_ranks"])
    out["bound"] = out["one_process"] + s["policy"] // 2 + s["unit"]
    return out


def main(argv: list[str] | None = None) -> int:
    p = common.parser(__doc__)
    p.add_argument("--layers", type=int, default=32)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--vocab", type=int, default=32000, help="embedding rows")
    p.add_argument("--json", type=Path, help="write the figures here too")
    p.add_argument("--child", help=argparse_hidden())
    p.add_argument("--child-out", help=argparse_hidden())
    a = p.parse_args(argv)
    if a.child:
        r = trainer_start(a.child)
        alone = "WORLD_SIZE" not in os.environ
        name = "rank-alone.json" if alone else f"rank{r['rank']}.json"
        (Path(a.child_out) / name).write_text(json.dumps({**r, "alone": alone}))
        return 0
    from mcoder.testing import TinySpec, make_tiny_model

    with tempfile.TemporaryDirectory() as d:
        spec = TinySpec(layers=a.layers, hidden=a.hidden, heads=a.hidden // 64, kv_heads=max(1, a.hidden // 128),
                        head_dim=64, intermediate=3 * a.hidden, model_vocab=a.vocab)  # fmt: skip
        m = measure(make_tiny_model(Path(d) / "model", spec))
    print(f"policy {m['policy'] / MB:.0f} MiB of float32 (largest unit {m['unit'] / MB:.0f} MiB): peak resident "
          f"memory above the start, one process {m['one_process'] / MB:.0f} MiB; two ranks "
          + " + ".join(f"{x / MB:.0f}" for x in m["two_ranks"])
          + f" = {m['two_ranks_sum'] / MB:.0f} MiB; bound (one process + a shard + a unit) {m['bound'] / MB:.0f} MiB: "
          + ("within" if m["two_ranks_sum"] <= m["bound"] else "OVER"))  # fmt: skip
    if a.json:
        common.write_json(a.json, m, benchmark="start_memory")
    return 0


def argparse_hidden():
    import argparse

    return argparse.SUPPRESS


if __name__ == "__main__":
    raise SystemExit(main())
