"""A tiny Qwen3 model and a code tokenizer, made in-process, for tests and the demo.

No weights can be downloaded where mcoder is tested, so this builds a real (random-weight)
``Qwen3ForCausalLM`` and a byte-level BPE tokenizer trained on Python source, with a chat
template, and saves both to a folder that ``AutoModelForCausalLM`` and ``AutoTokenizer`` load
with no network. head_dim is 64 because vLLM's CPU attention kernels accept no smaller.

``--shape`` builds instead a model with the architecture of a real Qwen3 checkpoint (layers,
heads, head_dim, intermediate size, vocabulary, RoPE base), random weights in bfloat16 and the
same small tokenizer: random text at the real cost, so speed and memory can be measured at
scale without downloading weights. The tokenizer knows 1,024 tokens of the model's 151,936;
ids beyond it decode to nothing.

    python -m mcoder.testing OUT_DIR [--layers 2] [--seed 0]
    python -m mcoder.testing OUT_DIR --shape qwen3-1.7b [--layers 4]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict, dataclass, replace
from pathlib import Path

EOS = "<|im_end|>"
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", EOS]

# A Qwen-style chat template: <|im_start|>role\ncontent<|im_end|>\n ..., then the assistant turn.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


@dataclass(frozen=True)
class TinySpec:
    """The size of the tiny model. Defaults run a forward pass in milliseconds on a CPU."""

    layers: int = 2
    hidden: int = 128
    heads: int = 2
    kv_heads: int = 1
    head_dim: int = 64  # vLLM's CPU attention needs 64; 16 fails there
    intermediate: int = 256
    vocab: int = 1024  # the tokenizer's
    max_positions: int = 2048
    seed: int = 0
    model_vocab: int | None = None  # the embedding rows, when more than the tokenizer's (real shapes)
    rope_theta: float = 10000.0
    dtype: str = "float32"  # what the weights are saved in


# The architectures of Qwen3's dense checkpoints (their config.json): all tie the output layer to
# the embeddings, have 8 KV heads of 128 dims, and RoPE base 1e6.
SHAPES: dict[str, TinySpec] = {
    name: TinySpec(
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=8,
        head_dim=128,
        intermediate=inter,
        model_vocab=151936,
        max_positions=40960,
        rope_theta=1_000_000.0,
        dtype="bfloat16",
    )
    for name, (layers, hidden, heads, inter) in {
        "qwen3-0.6b": (28, 1024, 16, 3072),
        "qwen3-1.7b": (28, 2048, 16, 6144),
        "qwen3-4b": (36, 2560, 32, 9728),
    }.items()
}


def _corpus() -> list[str]:
    """Deterministic training text: Python sources of a few stdlib modules and the bundled problems."""
    import collections
    import heapq
    import json as json_mod
    import textwrap

    texts = []
    for mod in (collections, heapq, json_mod.decoder, json_mod.encoder, textwrap):
        path = getattr(mod, "__file__", None)
        if path and path.endswith(".py"):
            texts.append(Path(path).read_text(encoding="utf-8"))
    examples = Path(__file__).resolve().parents[2] / "examples" / "problems"
    if examples.is_dir():
        for f in sorted(examples.glob("*.jsonl")):
            texts.append(f.read_text(encoding="utf-8"))
    texts.append("def solve():\n    n = int(input())\n    print(n)\n\nsolve()\n```python\n```\n")
    return texts


def build_tokenizer(vocab: int = 1024):
    """A byte-level BPE tokenizer trained on Python source, wrapped for transformers."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=EOS,
        pad_token="<|endoftext|>",
        bos_token=None,
        unk_token=None,
        padding_side="left",
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def build_config(spec: TinySpec, vocab_size: int, eos_id: int, pad_id: int):
    """The transformers config of ``spec`` (``vocab_size``: the tokenizer's, unless the spec has more rows)."""
    from transformers import Qwen3Config

    return Qwen3Config(
        vocab_size=spec.model_vocab or vocab_size,
        hidden_size=spec.hidden,
        intermediate_size=spec.intermediate,
        num_hidden_layers=spec.layers,
        num_attention_heads=spec.heads,
        num_key_value_heads=spec.kv_heads,
        head_dim=spec.head_dim,
        max_position_embeddings=spec.max_positions,
        rope_theta=spec.rope_theta,
        rms_norm_eps=1e-6,
        tie_word_embeddings=True,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        bos_token_id=None,
        dtype=spec.dtype,
    )


def build_model(spec: TinySpec, vocab_size: int, eos_id: int, pad_id: int):
    import torch
    from transformers import Qwen3ForCausalLM

    config = build_config(spec, vocab_size, eos_id, pad_id)
    torch.manual_seed(spec.seed)
    before = torch.get_default_dtype()
    torch.set_default_dtype(getattr(torch, spec.dtype))  # a 4B model initialised in float32 would need 16 GB
    try:
        model = Qwen3ForCausalLM(config)
    finally:
        torch.set_default_dtype(before)
    model.generation_config.eos_token_id = eos_id
    model.generation_config.pad_token_id = pad_id
    return model


def make_tiny_model(out_dir: str | os.PathLike, spec: TinySpec | None = None) -> Path:
    """Build (or reuse, when ``out_dir`` already holds the same spec) the tiny model and tokenizer."""
    spec = spec or TinySpec()
    out = Path(out_dir)
    stamp = out / "mcoder_tiny.json"
    if stamp.exists() and json.loads(stamp.read_text()) == asdict(spec):
        return out
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(spec.vocab)
    model = build_model(spec, len(tokenizer), tokenizer.eos_token_id, tokenizer.pad_token_id)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    stamp.write_text(json.dumps(asdict(spec)))
    return out


def named_spec(name: str) -> TinySpec:
    """``tiny`` (the default ``TinySpec``), a shape of ``SHAPES``, or either cut to ``NAME:LAYERS``
    decoder layers (``qwen3-0.6b:2``)."""
    base, _, layers = name.partition(":")
    if base != "tiny" and base not in SHAPES:
        raise ValueError(f"model {name!r}: use tiny or one of {', '.join(sorted(SHAPES))}, optionally :LAYERS")
    spec = TinySpec() if base == "tiny" else SHAPES[base]
    return replace(spec, layers=int(layers)) if layers else spec


def problems(count: int = 3):
    """``count`` small problems, stdin and call-based in turn, of different statement lengths (so
    prompts need padding): what a sampler or a trainer can be run on without a data set."""
    from mcoder.records import Problem, Test

    out = []
    for i in range(count):
        if i % 2:
            out.append(Problem(
                id=f"call-{i}", source="test", question="Return the sum of a and b. " * (i + 1),
                starter_code="class Solution:\n    def add(self, a: int, b: int) -> int:\n        ",
                fn_name="add", tests=[Test("1\n2", "3", "call")],
            ))  # fmt: skip
        else:
            out.append(Problem(
                id=f"stdin-{i}", source="test", question="Read n and print n squared. " * (i + 1),
                tests=[Test("2\n", "4\n")],
            ))  # fmt: skip
    return out


def forward_logprobs(model, prompt_ids: list[int], completion_ids: list[int], temperature: float):
    """log_softmax(logits / T) of each completion token, from one unpadded forward pass: the
    reference an engine's sampling log-probs are compared with."""
    import torch

    ids = torch.tensor([prompt_ids + completion_ids])
    with torch.no_grad():
        logits = model(ids).logits[0].float()
    scaled = logits[len(prompt_ids) - 1 : -1] / temperature
    return torch.log_softmax(scaled, -1).gather(-1, torch.tensor(completion_ids)[:, None]).squeeze(-1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mcoder.testing", description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir")
    parser.add_argument("--shape", choices=sorted(SHAPES), help="a real Qwen3 architecture, random weights")
    parser.add_argument(
        "--layers", type=int, help=f"decoder layers (default {TinySpec.layers}, or the shape's)"
    )
    parser.add_argument("--seed", type=int, default=TinySpec.seed)
    args = parser.parse_args(argv)
    from mcoder.console import quiet_third_party

    quiet_third_party()  # the path on stdout is the whole output: no "Writing model shards" bar on stderr
    spec = SHAPES[args.shape] if args.shape else TinySpec()
    spec = replace(spec, layers=args.layers or spec.layers, seed=args.seed)
    path = make_tiny_model(args.out_dir, spec)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
