"""Peak memory of one policy update, measured on a CPU at small sizes and extrapolated to Qwen3
1.7B / 4B / 8B at completions of 4K and 8K tokens (micro-batches of the recipe's 4 sequences), on
one 141 GB GPU and on 8 x 80 GB with FSDP2; and what the trainer holds while vLLM samples.

Measured (mcoder's own update, float32 master weights, bf16 compute by autocast, AdamW's foreach
path as on CUDA, the live bytes of every tensor the update makes, counted by storage as each op
returns it):

    per parameter   weights + AdamW moments, the gradients and autocast's bf16 copies at the peak
                    of the forward/backward; weights, moments, gradients and foreach's temporaries
                    (a list of whole-model tensors at once) at the optimizer step's
    per token       activations the forward leaves for the backward, per decoder layer and hidden
                    unit (with activation checkpointing off and on)
    per logit       the output layer's chunk: bytes per row per vocabulary entry
    resident        between updates: weights and moments only (the gradients are freed after each
                    step), what stays on the GPU while vLLM samples

from a small Qwen3-shaped model (intermediate = 3 x hidden, as every target) whose peak is
measured at two micro-batch lengths and two log-prob chunks: the slopes are the per-token and
per-logit costs, the rest divided by the parameter count the per-parameter one. Extrapolated:

    one GPU     P x per-param + T x H x (L x per-token(on) + per-token(off): the layer recomputed)
                + chunk x V x per-logit, or the optimizer
                step's P x per-param (AdamW's temporaries beside the gradients), the larger
    FSDP2 x N   P x 16 / N (sharded masters, gradients, moments) + two gathered layers and the
                output layer/embeddings in bf16 + the same activations and chunk (one rank's
                micro-batch), or the optimizer step on the shards, the larger

vLLM sleeps while the trainer updates (its weights and KV cache freed), so the update may take the
whole GPU; while vLLM samples the trainer holds its resident bytes, and vLLM's share
(``loop/samplers.vllm_memory_share``) is what is left less a margin. Not modelled: the CUDA context
and allocator fragmentation (a few GB), attention workspace beyond flash attention's linear memory.

    python benchmarks/memory_model.py [--tokens 512 1024] [--chunk 1024]
"""

from __future__ import annotations

import tempfile
import weakref
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode

if __package__:  # python -m benchmarks.memory_model, or imported
    from benchmarks import common
else:  # python benchmarks/memory_model.py: this folder is first on sys.path
    import common

GB = 1e9
GPU_ONE, GPU_MANY, N_GPUS = 141e9, 80e9, 8
MICRO_BATCH = 4  # sequences a micro-batch: TrainConfig's micro_batch_size, which the recipes keep
PROMPT = 256  # prompt tokens of each sequence (benchmarks/gpu_bench.py's made-up batches)
TARGETS, Target = common.QWEN3_TARGETS, common.MemoryTarget
update_bytes, resident_bytes = common.update_bytes, common.resident_bytes


class LiveBytes(TorchDispatchMode):
    """Bytes of every tensor storage alive, and their peak, counting storages made under this
    mode plus those handed to ``hold`` (weights and moments that existed before)."""

    def __init__(self):
        super().__init__()
        self.live: dict[int, int] = {}
        self.now = self.peak = 0

    def hold(self, tensors) -> None:
        for t in tensors:
            self._add(t)

    def _add(self, t: torch.Tensor) -> None:
        st = t.untyped_storage()
        key = st.data_ptr()
        if key == 0 or key in self.live:
            return
        self.live[key] = st.nbytes()
        self.now += st.nbytes()
        self.peak = max(self.peak, self.now)
        weakref.finalize(st, self._free, key)

    def _free(self, key: int) -> None:
        self.now -= self.live.pop(key, 0)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in torch.utils._pytree.tree_leaves(out):
            if isinstance(t, torch.Tensor) and t.device.type == "cpu":
                self._add(t)
        return out


def build(folder: Path, layers: int, hidden: int, vocab: int) -> Path:
    from mcoder.testing import TinySpec, make_tiny_model

    spec = TinySpec(
        layers=layers, hidden=hidden, heads=hidden // 64, kv_heads=max(1, hidden // 128), head_dim=64,
        intermediate=3 * hidden, model_vocab=vocab, max_positions=4096,
    )  # fmt: skip
    return make_tiny_model(folder, spec)


def peak_of_update(model: Path, tokens: int, chunk: int, checkpointing: bool) -> dict[str, int]:
    """Peak live bytes of one update of one sequence of ``tokens`` completion tokens: in its
    forward/backward (``fb``) and in its optimizer step (``opt``); and the parameter count."""
    from mcoder.records import Rollout, Verdict
    from mcoder.train.config import resolve
    from mcoder.train.trainer import Trainer

    cfg = resolve("dapo", {
        "dtype": "bfloat16", "truncation": "none", "dynamic_sampling": False, "logprob_temperature": 1.0,
        "micro_batch_size": 1, "mini_batch_size": 1, "logprob_chunk_tokens": chunk,
        "activation_checkpointing": "on" if checkpointing else "off",
    })  # fmt: skip
    trainer = Trainer(str(model), cfg)
    for group in trainer.optimizer.param_groups:
        group["foreach"] = True  # CUDA's default path (a CPU takes the single-tensor one)
    rollouts = [
        Rollout(id=f"r{i}", problem_id="p", completion="", prompt_token_ids=list(range(5, 29)),
                completion_token_ids=[(7 * j + i) % 900 + 5 for j in range(tokens)], finish_reason="stop",
                sampling_logprobs=[-3.0] * tokens)
        for i in range(2)
    ]  # fmt: skip
    verdicts = {
        r.id: Verdict(rollout_id=r.id, problem_id="p", reward=float(i), passed=bool(i),
                      status="accepted" if i else "wrong_answer", tests_passed=i, tests_total=1)
        for i, r in enumerate(rollouts)
    }  # fmt: skip
    trainer.train_on_batch(rollouts, verdicts)  # the moments exist from here on
    prep = trainer.prepare_samples(rollouts, verdicts)
    mini = prep.samples[1:]  # one sequence, advantage != 0
    trainer.optimizer.zero_grad(set_to_none=True)
    held = []  # bytes the forward leaves for the backward: the activations

    def start(*_):
        held.append(-mem.now)

    def end(*_):
        held[-1] += mem.now

    trainer.model.register_forward_pre_hook(start)
    trainer.model.register_forward_hook(end)
    with LiveBytes() as mem:
        mem.hold(trainer.model.parameters())
        mem.hold(v for st in trainer.optimizer.state.values() for v in st.values() if isinstance(v, torch.Tensor))
        trainer.accumulate_gradients(mini, prep.T, prep.L_max)
        fb = mem.peak
        mem.peak = mem.now
        trainer._optimizer_step()  # AdamW's temporaries, beside the gradients
        resident = mem.now  # after the step: the gradients are freed
    params = sum(p.numel() for p in trainer.model.parameters())
    return {"fb": fb, "opt": mem.peak, "held": held[-1], "params": params, "resident": resident}


def measure(a) -> dict[str, float]:
    layers, hidden, vocab = a.layers, a.hidden, a.vocab
    lo, hi = a.tokens
    c_lo, c_hi = a.chunks
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as d:
        model = build(Path(d) / "m", layers, hidden, vocab)
        for ckpt in ("off", "on"):
            low = peak_of_update(model, lo, c_lo, ckpt == "on")
            high = peak_of_update(model, hi, c_lo, ckpt == "on")
            held = (high["held"] - low["held"]) / (hi - lo)  # activations, bytes per token
            out[f"per_token_{ckpt}"] = held / (layers * hidden)
            slope = (high["fb"] - low["fb"]) / (hi - lo)  # the peak's, bytes per token
            if ckpt == "off":
                wide = peak_of_update(model, hi, c_hi, False)
                per_row = (wide["fb"] - high["fb"]) / (c_hi - c_lo)
                params = low["params"]
                out.update(
                    params=params,
                    per_logit=per_row / vocab,
                    per_param=(low["fb"] - lo * slope - c_lo * per_row) / params,  # forward/backward
                    per_param_opt=low["opt"] / params,  # the optimizer step
                    per_param_resident=low["resident"] / params,  # between updates
                )
    return out


def main() -> None:
    from mcoder.loop.samplers import VLLM_MEMORY_MARGIN

    ap = common.parser(__doc__)
    ap.add_argument("--tokens", type=int, nargs=2, default=[512, 1024], help="two micro-batch lengths measured")
    ap.add_argument("--chunks", type=int, nargs=2, default=[64, 128], help="two log-prob chunks measured")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--vocab", type=int, default=8192)
    ap.add_argument("--chunk", type=int, default=1024, help="the log-prob chunk of the extrapolation")
    ap.add_argument("--json", type=Path, help="also write the measured constants here (gpu_bench reads them)")
    a = ap.parse_args()
    torch.set_num_threads(1)
    m = measure(a)
    if a.json:
        common.write_json(a.json, m, benchmark="memory_model")
    print(
        f"measured on a CPU ({a.layers} layers, hidden {a.hidden}, vocab {a.vocab}, {m['params'] / 1e6:.1f}M "
        f"parameters, bf16 compute, AdamW foreach): {m['per_param']:.1f} B/param in the forward/backward, "
        f"{m['per_param_opt']:.1f} in the optimizer step, {m['per_param_resident']:.1f} held between updates; "
        f"activations {m['per_token_off']:.1f} B per token x layer x hidden unit without checkpointing, "
        f"{m['per_token_on']:.1f} with; {m['per_logit']:.1f} B per logit of the chunk"
    )
    print(f"\nextrapolated (activation checkpointing on, log-prob chunk {a.chunk}, micro-batches of {MICRO_BATCH} "
          f"sequences of {PROMPT} prompt + L completion tokens; vLLM asleep during the update, its share "
          f"while it samples what the trainer leaves less {VLLM_MEMORY_MARGIN / 2**30:.0f} GiB):\n")
    print("| model | params | L | 1 x 141 GB: update GB | resident while vLLM samples GB | vLLM's share then "
          "| 8 x 80 GB FSDP2: update GB/GPU | resident GB/GPU |")
    print("|---|---|---|---|---|---|---|---|")
    for t in TARGETS:
        for length in (4096, 8192):
            tokens = MICRO_BATCH * (PROMPT + length)
            one = update_bytes(t, m, tokens, a.chunk)
            many = update_bytes(t, m, tokens, a.chunk, shards=N_GPUS)
            rest = resident_bytes(t, m)
            share = (GPU_ONE - rest - VLLM_MEMORY_MARGIN) / GPU_ONE
            fits = "" if one <= GPU_ONE else " (over)"
            print(f"| {t.name} | {t.params() / 1e9:.2f}B | {length} | {one / GB:.0f}{fits} | {rest / GB:.0f} | "
                  f"{max(share, 0):.0%} | {many / GB:.0f} | {resident_bytes(t, m, N_GPUS) / GB:.0f} |")


if __name__ == "__main__":
    main()
