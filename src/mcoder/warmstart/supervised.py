"""The supervised pass itself: the tiny model and its tokenizer, the gate's problems set aside, the
pass (``supervised_pass``, steps and checks on ``Schedule``), the checked model kept, and the
folder written whole."""

from __future__ import annotations

import copy
import json
import random
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

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

# Every warm start's folder has it: the mark that a folder at --out may be replaced.
SUMMARY = "warm_start.json"
# Chooses the likelihood gate's problems: the same for every --seed (sampled: by --seed, as before).
GATE_SEED = 0

# A check kept in memory: (step, gate value, weights)
Check = tuple[int, float, dict]


def build_tokenizer(problems, vocab: int):
    """testing's tokenizer recipe, trained on its corpus plus the rendered train prompts."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from mcoder import testing
    from mcoder.prompts import build_messages

    def render(p) -> str:  # the chat template of mcoder.testing, written out
        turns = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in build_messages(p))
        return turns + "<|im_start|>assistant\n"

    texts = testing._corpus() + [
        render(p) + f"```python\n{c}```" for p in problems for c in p.reference_solutions
    ]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(
        texts,
        trainer=trainers.BpeTrainer(
            vocab_size=vocab,
            special_tokens=testing.SPECIAL_TOKENS,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token=testing.EOS, pad_token="<|endoftext|>", padding_side="left"
    )
    fast.chat_template = testing.CHAT_TEMPLATE
    return fast


def check_out(out: str | Path) -> None:
    """Refuse an ``--out`` the pass must not replace: anything but a folder (a link, a device, a
    file), or a folder that is not an earlier warm start (no ``warm_start.json``: someone's files).
    The same for ``OUT.part``, the folder written beside. An earlier warm start is replaced whole,
    which is what every caller relies on (a rerun with other settings)."""
    from mcoder.outputs import check_target, refuse_foreign_folder

    out = Path(out)
    part = out.with_name(out.name + ".part")
    for p, mark in ((out, SUMMARY), (part, None)):
        check_target(p, flag="--out", kind="dir")
        if mark is not None:
            refuse_foreign_folder(p, expect=(mark,))


def tiny_model(problems, config: WarmStartConfig):
    """mcoder.testing's random Qwen3 of ``config.layers`` layers and ``config.seed``, with a
    tokenizer trained on the problems' prompts too; torch seeded by ``config.seed`` after it is
    built (for the batches' training)."""
    import torch

    from mcoder.testing import TinySpec, build_model

    spec = TinySpec(layers=config.layers, seed=config.seed)
    tokenizer = build_tokenizer(problems, spec.vocab)
    model = build_model(spec, len(tokenizer), tokenizer.eos_token_id, tokenizer.pad_token_id)
    torch.manual_seed(config.seed)
    return model, tokenizer


def split_gate(problems, tokenizer, config: WarmStartConfig) -> tuple[list, Gate | None]:
    """(the problems the pass trains on, the gate or None). With ``target_pass`` > 0,
    ``check_problems`` problems are set aside for the gate before the pass sees anything: the
    likelihood gate's chosen by a fixed seed (every seed's gate reads the same problems), the
    sampled gate's by ``seed``, as it always was (its published runs stay reproducible)."""
    if config.target_pass <= 0:
        return problems, None
    chooser = random.Random(GATE_SEED if config.gate == "likelihood" else config.seed)
    held = set(chooser.sample(range(len(problems)), min(config.check_problems, len(problems) - 1)))
    sft = [p for i, p in enumerate(problems) if i not in held]
    chosen = [problems[i] for i in sorted(held)]
    if config.gate == "likelihood":
        return sft, LikelihoodGate(chosen, tokenizer, target=config.target_pass)
    gate = TrainPassGate(
        chosen, tokenizer, target=config.target_pass, n=config.check_n, max_tokens=config.max_tokens,
        seed=config.seed,
    )  # fmt: skip
    return sft, gate


def sft_step(model, optimizer, rows, pad_id: int):
    """One optimizer step on ``rows`` (clipped at gradient norm 1); returns the loss tensor."""
    import torch

    ids, mask, labels = batch_tensors(rows, pad_id)
    loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss


@dataclass
class PassResult:
    steps: int
    """Optimizer steps taken."""
    reached: bool
    """The last check read the target."""
    best: Check | None
    """The check to keep (the approach phase's closest to the target), or None: the last step's model."""


def supervised_pass(model, rows, pad_id: int, optimizer, rng, gate: Gate | None, config: WarmStartConfig):
    """At most ``config.steps`` steps of ``sft_step`` on batches drawn from ``rows`` by ``rng``,
    the gate read on ``Schedule``. In the approach phase the checked model closest to the target
    is kept in memory (a check that jumps far past the target does not decide the start); a check
    that reads more than ``target_pass + overshoot`` is looked back from (``look_back_checks``)."""
    schedule = Schedule(config)
    t0 = time.perf_counter()
    done = 0
    best: Check | None = None
    copies: dict[int, dict] = {}  # with look_back: the weights since the last check (or the start), by step
    reached = False
    for step in range(1, config.steps + 1):
        loss = sft_step(model, optimizer, rng.sample(rows, min(config.batch, len(rows))), pad_id)
        done = step
        if step == 1 or step % 10 == 0 or step == config.steps:
            print(
                f"sft step {step}/{config.steps} | loss {loss.item():.4f} | {time.perf_counter() - t0:.0f}s",
                file=sys.stderr,
            )
        if gate is None:
            continue
        if not schedule.checks_at(step):
            # before the first check, copies from the start: a first check can read far past the band
            if schedule.copies_at(step):
                copies[step] = copy.deepcopy(model.state_dict())
            continue
        reached = gate.reached(model, step)
        schedule.approach(gate.last_rate, optimizer)
        if schedule.near:  # only the closest so far is kept: with a check every step there are hundreds
            now = (step, gate.last_rate, None)
            if best is None or closest_check([best, now], config.target_pass) is now:
                best = (step, gate.last_rate, copy.deepcopy(model.state_dict()))
        if reached:
            break
        copies.clear()
    if reached and copies and schedule.looks_back(gate.last_rate):
        best = look_back_checks(model, gate, copies, best, config.target_pass)
    return PassResult(done, reached, best)


def keep(model, result: PassResult) -> int:
    """Load the kept check's weights into ``model`` (the last step's when none); its step."""
    if result.best is None:
        return result.steps
    kept_step, rate, weights = result.best
    model.load_state_dict(weights)
    print(f"kept the model of step {kept_step} (gate {100 * rate:.1f}%)", file=sys.stderr)
    return kept_step


def summary(config: WarmStartConfig, result: PassResult, kept_step: int, gate: Gate | None) -> dict:
    """What ``warm_start.json`` records: the settings, every check and the step kept."""
    c = config
    return {
        "steps": result.steps,
        "kept_step": kept_step,
        "approach": {"from_fraction": c.approach, "lr_factor": c.approach_lr, "check_every": c.fine_every},
        **({"look_back": {"every": c.look_back, "overshoot": c.overshoot}} if c.look_back else {}),
        "max_steps": c.steps,
        "target_pass": c.target_pass,
        "gate": c.gate,
        "gate_problems": len(gate.problems) if gate else 0,
        **({"target_reached": result.reached} if gate else {}),
        "checks": gate.history if gate else [],
    }


def write_model(out: str | Path, model, tokenizer, record: dict) -> Path:
    """The model, its tokenizer and ``record`` (as ``warm_start.json``) written into ``OUT.part``,
    then moved into place: a folder at ``out`` is always a whole model, so a caller may take its
    presence as "done" after an interrupted run."""
    out = Path(out)
    part = out.with_name(out.name + ".part")
    check_out(out)  # again: the pass took minutes, and the path may have changed meanwhile
    shutil.rmtree(part, ignore_errors=True)
    model.save_pretrained(part)
    tokenizer.save_pretrained(part)
    (part / SUMMARY).write_text(json.dumps(record, indent=2))
    shutil.rmtree(out, ignore_errors=True)
    part.rename(out)
    return out


def warm_start(problems_path: str | Path, out: str | Path, config: WarmStartConfig) -> Path:
    """The supervised pass on the problems of ``problems_path`` (JSONL with reference solutions),
    its model written to the folder ``out``; ``warm_start.json`` there records every check and
    the step kept. With ``config.target_pass`` > 0 the pass stops at the first check where the
    gate reads it (``split_gate``, ``Schedule``); else it trains on every problem for all steps."""
    import torch

    from mcoder.jsonl import read_records
    from mcoder.records import Problem

    check_out(out)  # before the pass: a refused --out costs nothing
    problems = list(read_records(problems_path, Problem))
    model, tokenizer = tiny_model(problems, config)
    rng = random.Random(config.seed)
    model.train()
    sft, gate = split_gate(problems, tokenizer, config)
    rows = examples(sft, tokenizer)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    try:
        result = supervised_pass(model, rows, tokenizer.pad_token_id, optimizer, rng, gate, config)
    finally:
        if gate is not None:
            gate.close()
    kept_step = keep(model, result)
    return write_model(out, model, tokenizer, summary(config, result, kept_step, gate))
