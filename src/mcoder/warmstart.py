"""The supervised warm start: a tiny model for a problem family, given a short supervised pass.

    python -m mcoder.warmstart --problems train.jsonl --out WARM_DIR [--steps 500] [--seed 0]
    python -m mcoder.warmstart --problems train.jsonl --out WARM_DIR --steps 1500 --target-pass 0.35

(``examples/learn/warm_start.py`` runs this module with the same arguments.)

RL needs a policy that sometimes succeeds: a random-weight model never writes a program that
passes, so every group's rewards are equal and GRPO has no signal. This step teaches the format
(the same chat prompt `mcoder rollout` renders, then a fenced program and the end-of-turn token)
on the train problems only, with the loss on completion tokens only. It is kept deliberately
short: the point of the proof is what RL adds afterwards, on problems this pass never saw.

The tiny model is mcoder.testing's random Qwen3, but its byte-level BPE tokenizer is trained on
the rendered prompts too (beside testing's Python corpus): the fixed system and format text then
costs ~130 tokens instead of ~340, which makes every rollout and update ~2.5x cheaper on a CPU.

Plain torch + transformers; the output folder is an ordinary model folder for every mcoder stage.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import time
from pathlib import Path

# Every warm start's folder has it: the mark that a folder at --out may be replaced.
SUMMARY = "warm_start.json"
# Chooses the likelihood gate's problems: the same for every --seed (sampled: by --seed, as before).
GATE_SEED = 0


def examples(problems, tokenizer) -> list[tuple[list[int], list[int]]]:
    """(prompt ids, completion ids) per reference solution: the rollout stage's prompt, then
    the program in a python fence and eos (the model must learn to stop)."""
    from mcoder.prompts import render_prompt

    out = []
    for p in problems:
        _, prompt_ids = render_prompt(p, tokenizer)
        for code in p.reference_solutions:
            text = f"```python\n{code}```"
            ids = tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
            out.append((prompt_ids, ids))
    return out


def batch_tensors(rows, pad_id: int):
    """Right-padded input ids, attention mask and labels (-100 on prompt and padding)."""
    import torch

    width = max(len(p) + len(c) for p, c in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    labels = torch.full((len(rows), width), -100, dtype=torch.long)
    for i, (p, c) in enumerate(rows):
        seq = p + c
        ids[i, : len(seq)] = torch.tensor(seq)
        mask[i, : len(seq)] = 1
        labels[i, len(p) : len(seq)] = torch.tensor(c)
    return ids, mask, labels


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


class Gate:
    """What both gates share: ``reached`` measures (``measure``), records the check under ``KEY``
    and says whether it reads the target."""

    KEY = ""  # the name of the gate's value in warm_start.json
    LABEL = ""  # how the log line names it

    def __init__(self, problems, target: float):
        self.problems = list(problems)
        self.target = target
        self.history: list[dict] = []

    def measure(self, model, step: int) -> float:
        raise NotImplementedError

    def reached(self, model, step: int) -> bool:
        rate = self.measure(model, step)
        self.history.append({"step": step, self.KEY: rate})
        print(
            f"sft step {step}: {self.LABEL} {100 * rate:.1f}% on {len(self.problems)} unseen train problems "
            f"(target {100 * self.target:.0f}%)",
            file=sys.stderr,
        )
        return rate >= self.target

    @property
    def last_rate(self) -> float:
        return self.history[-1][self.KEY]

    def close(self) -> None:
        pass


class TrainPassGate(Gate):
    """Stops the supervised pass once the model solves ``target`` of a few train problems that
    the pass itself never trains on (the gate's own split), sampled at T = 1.0 and judged by
    mcoder's sandboxed judge.

    Why: the supervised pass is a phase change (the model either copies the expression from the
    prompt or it does not). With a fixed 500 steps one seed stayed near 10 % held-out while another
    passed 88 %, which leaves RL nothing to add; and a gate on problems the pass trains on stops a
    seed that has memorised expressions without learning to compose them (28 % on train, 7.5 %
    held-out). Stopping at a pass rate on unseen train-family problems gives every seed a
    comparable start; the held-out part is never looked at. RL then trains on the whole train
    part, the gate's problems included.

    The jump itself is fast: checked every 25 steps at a constant learning rate, one check read
    34 % and the next 59 %, and another machine's float rounding moved seed 0 from 30 % to 84 %
    between two checks. So the pass slows down near the band (``warm_start``: once a check
    reaches ``approach`` x target, the learning rate drops and checks come more often) and the
    model kept is the checked one closest to the target, not merely the first one past it.
    """

    KEY, LABEL = "gate_pass_rate", "pass rate"

    def __init__(self, problems, tokenizer, *, target: float, n: int, max_tokens: int, seed: int):
        from mcoder.judge.config import JudgeConfig
        from mcoder.judge.core import Judge

        super().__init__(problems, target)
        self.by_id = {p.id: p for p in self.problems}
        self.tokenizer, self.n, self.max_tokens, self.seed = tokenizer, n, max_tokens, seed
        self.judge = Judge(JudgeConfig()).__enter__()  # closed by close()

    def measure(self, model, step: int) -> float:
        import torch

        from mcoder.engines import HFEngine
        from mcoder.rollout.sample import make_rollouts

        model.eval()
        with torch.no_grad():
            rollouts = make_rollouts(
                self.problems,
                HFEngine(model, self.tokenizer),
                self.tokenizer,
                n=self.n,
                max_tokens=self.max_tokens,
                temperature=1.0,
                seed=self.seed + step,
                model_name="warm-start",
            )
        model.train()
        verdicts = self.judge.judge(self.by_id, rollouts)
        return sum(v.passed for v in verdicts) / max(len(verdicts), 1)

    def close(self) -> None:
        self.judge.close()


class LikelihoodGate(Gate):
    """The default gate: the probability that the model, sampling at T = 1.0, writes the reference
    program of an unseen train problem exactly, averaged over the gate's problems. One forward
    pass over the gate's problems gives it; nothing is sampled.

    Why: the sampled gate (``TrainPassGate``) reads 128 samples per check, so one check is several
    points of noise, costs as much as ~30 steps of the pass, and its 16 problems' own difficulty
    moved the start by seed (gate 30 % gave held-out 11 %, gate 34 % gave 43 %). This number has no
    sampling noise and costs a few milliseconds, so the gate can read many problems often. On this
    family it tracks held-out pass@1 (sampled at T = 1.0) closely because the warm-started model
    writes the reference's format: over seeds 0 and 1, checked at 0.05-0.44, the held-out pass rate
    of 100 problems x 8 samples was within 0.06 of the gate's value (it is a lower bound in
    principle: another correct program also passes)."""

    KEY, LABEL = "gate_reference_prob", "P(reference)"

    def __init__(self, problems, tokenizer, *, target: float):
        super().__init__(problems, target)
        self.rows = examples(self.problems, tokenizer)
        self.pad_id = tokenizer.pad_token_id

    def measure(self, model, step: int = 0) -> float:  # the step does not change it: nothing is sampled
        import torch

        model.eval()
        with torch.no_grad():
            ids, mask, labels = batch_tensors(self.rows, self.pad_id)
            logits = model(input_ids=ids, attention_mask=mask).logits[:, :-1].float()
            targets = labels[:, 1:]
            logp = (
                torch.log_softmax(logits, dim=-1).gather(-1, targets.clamp(min=0).unsqueeze(-1)).squeeze(-1)
            )
            per_row = (logp * (targets != -100)).sum(dim=-1)
        model.train()
        return per_row.exp().mean().item()


def closest_check(kept: list[tuple[int, float, dict]], target: float) -> tuple[int, float, dict]:
    """Of (step, pass rate, weights) checks, the one whose rate is closest to ``target``; the
    later one on a tie (it has trained longer at the same distance)."""
    return min(reversed(kept), key=lambda k: abs(k[1] - target))


def look_back_checks(model, gate: Gate, copies: dict[int, dict], best, target: float):
    """``best`` is the (step, gate value, weights) of the check that read far past ``target`` (the
    approach phase has begun by then, so it is always set); the ``copies`` taken since the check
    before are read by bisection, assuming the gate grows with the steps (it is noisy: the closest
    of every reading is kept, whatever the order). Returns the closest (step, gate value, weights)."""
    found = [best]
    steps = sorted(copies)
    lo, hi = 0, len(steps) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        model.load_state_dict(copies[steps[mid]])
        above = gate.reached(model, steps[mid])
        found.append((steps[mid], gate.last_rate, copies[steps[mid]]))
        if above:
            hi = mid - 1
        else:
            lo = mid + 1
    return closest_check(sorted(found, key=lambda k: k[0]), target)


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


def warm_start(
    problems_path: str,
    out: str,
    *,
    steps: int,
    batch: int,
    lr: float,
    seed: int,
    layers: int,
    target_pass: float = 0.0,
    gate: str = "likelihood",
    check_every: int = 5,
    first_check: int = 0,
    check_problems: int = 48,
    check_n: int = 8,
    max_tokens: int = 64,
    approach: float = 0.5,
    approach_lr: float = 0.25,
    fine_every: int = 1,
    look_back: int = 0,
    overshoot: float = 0.1,
    weight_decay: float = 0.0,
) -> Path:
    """Supervised pass of at most ``steps`` optimizer steps. With ``target_pass`` > 0,
    ``check_problems`` train problems are kept out of the pass and it stops at the first check
    (every ``check_every`` steps, from step ``first_check`` on) where the gate reads
    ``target_pass``: with ``gate="likelihood"`` (``LikelihoodGate``) the mean probability of
    writing their reference programs, with ``gate="sampled"`` (``TrainPassGate``) the pass rate of
    ``check_n`` judged samples each (a check then costs more than 25 steps of the pass). The
    likelihood gate's problems are chosen with a fixed seed, so every seed's gate reads the same
    problems; the sampled gate's by ``seed``, as it always was (its published runs stay
    reproducible).

    Near the band the pass slows down: from the first check whose pass rate reaches
    ``approach`` x ``target_pass`` on, the learning rate is multiplied by ``approach_lr`` and checks
    come every ``fine_every`` steps. The checked model of that phase whose gate value is closest to
    the target (the later one on a tie) is kept in memory and written, so a check that jumps far
    past the target does not decide the start. With ``look_back`` > 0 the pass also keeps a copy of
    the weights every ``look_back`` steps between checks (and before the first one, from the
    start: seed 5's first check at step 200 read 61.7 %), and a check that reads more than
    ``target_pass + overshoot`` is looked back from: those copies are checked by bisection (two or
    three checks) and the closest of all is kept. A gate read every 25 steps jumped from 16 % to
    59 % between two checks (the phase change is faster than the checks are frequent), and a start
    that far past the band leaves RL little to gain. ``warm_start.json`` records every check and the
    step kept."""
    import copy

    import torch

    from mcoder.jsonl import read_records
    from mcoder.records import Problem
    from mcoder.testing import TinySpec, build_model

    check_out(out)  # before the pass: a refused --out costs nothing
    problems = list(read_records(problems_path, Problem))
    spec = TinySpec(layers=layers, seed=seed)
    tokenizer = build_tokenizer(problems, spec.vocab)
    model = build_model(spec, len(tokenizer), tokenizer.eos_token_id, tokenizer.pad_token_id)
    torch.manual_seed(seed)
    rng = random.Random(seed)
    model.train()
    if gate not in ("likelihood", "sampled"):
        raise SystemExit(f"--gate {gate}: use likelihood or sampled")
    kind, gate = gate, None
    sft = problems
    if target_pass > 0:  # the gate's problems are set aside before the pass sees anything
        chooser = random.Random(GATE_SEED if kind == "likelihood" else seed)
        held = set(chooser.sample(range(len(problems)), min(check_problems, len(problems) - 1)))
        sft = [p for i, p in enumerate(problems) if i not in held]
        chosen = [problems[i] for i in sorted(held)]
        if kind == "likelihood":
            gate = LikelihoodGate(chosen, tokenizer, target=target_pass)
        else:
            gate = TrainPassGate(
                chosen, tokenizer, target=target_pass, n=check_n, max_tokens=max_tokens, seed=seed
            )
    rows = examples(sft, tokenizer)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    t0 = time.perf_counter()
    done = 0
    near = False  # in the approach phase (slower pass, finer checks)
    # the approach phase's closest check so far: (step, gate value, weights)
    best: tuple[int, float, dict] | None = None
    copies: dict[int, dict] = {}  # with look_back: the weights since the last check (or the start), by step
    reached = False
    try:
        for step in range(1, steps + 1):
            ids, mask, labels = batch_tensors(rng.sample(rows, min(batch, len(rows))), tokenizer.pad_token_id)
            loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            done = step
            if step == 1 or step % 10 == 0 or step == steps:
                print(
                    f"sft step {step}/{steps} | loss {loss.item():.4f} | {time.perf_counter() - t0:.0f}s",
                    file=sys.stderr,
                )
            every = fine_every if near else check_every
            checking = gate is not None and step >= first_check and step % every == 0
            if not checking:
                # before the first check, copies from the start: a first check can read far past the band
                if gate is not None and look_back and step % look_back == 0:
                    copies[step] = copy.deepcopy(model.state_dict())
                continue
            reached = gate.reached(model, step)
            if not near and gate.last_rate >= approach * target_pass:
                near = True
                for group in optimizer.param_groups:
                    group["lr"] = lr * approach_lr
            if near:  # only the closest so far is kept: with a check every step there are hundreds
                now = (step, gate.last_rate, None)
                if best is None or closest_check([best, now], target_pass) is now:
                    best = (step, gate.last_rate, copy.deepcopy(model.state_dict()))
            if reached:
                break
            copies.clear()
        if reached and copies and gate.last_rate > target_pass + overshoot:
            best = look_back_checks(model, gate, copies, best, target_pass)
    finally:
        if gate is not None:
            gate.close()
    kept_step = done
    if best is not None:
        kept_step, rate, weights = best
        model.load_state_dict(weights)
        print(f"kept the model of step {kept_step} (gate {100 * rate:.1f}%)", file=sys.stderr)
    # Written beside, then moved into place: a folder at `out` is always a whole model, so a
    # caller may take its presence as "done" after an interrupted run.
    out = Path(out)
    part = out.with_name(out.name + ".part")
    check_out(out)  # again: the pass took minutes, and the path may have changed meanwhile
    shutil.rmtree(part, ignore_errors=True)
    model.save_pretrained(part)
    tokenizer.save_pretrained(part)
    summary = {
        "steps": done,
        "kept_step": kept_step,
        "approach": {"from_fraction": approach, "lr_factor": approach_lr, "check_every": fine_every},
        **({"look_back": {"every": look_back, "overshoot": overshoot}} if look_back else {}),
        "max_steps": steps,
        "target_pass": target_pass,
        "gate": kind,
        "gate_problems": len(gate.problems) if gate else 0,
        **({"target_reached": reached} if gate else {}),
        "checks": gate.history if gate else [],
    }
    (part / SUMMARY).write_text(json.dumps(summary, indent=2))
    shutil.rmtree(out, ignore_errors=True)
    part.rename(out)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", required=True, help="problems JSONL with reference_solutions")
    parser.add_argument("--out", required=True, help="folder for the warm-started model")
    parser.add_argument(
        "--steps", type=int, default=500, help="optimizer steps (the most, with --target-pass)"
    )
    parser.add_argument("--batch", type=int, default=16, help="sequences per step")
    parser.add_argument("--lr", type=float, default=2e-3, help="AdamW learning rate")
    parser.add_argument("--weight-decay", type=float, default=0.0, help="AdamW weight decay")
    parser.add_argument("--layers", type=int, default=2, help="transformer layers of the tiny model")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random init and the batches")
    parser.add_argument(
        "--target-pass",
        type=float,
        default=0.0,
        help="stop once the gate reads this on its unseen train problems: the mean probability of "
        "their reference programs (--gate likelihood) or their samples' pass rate (--gate sampled); "
        "0: no gate, train on every problem for all --steps",
    )
    parser.add_argument(
        "--gate",
        choices=["likelihood", "sampled"],
        default="likelihood",
        help="what the gate reads: the probability of the reference programs (no sampling) or the "
        "judged pass rate of --check-n samples per problem",
    )
    parser.add_argument("--check-every", type=int, default=5, help="steps between gate checks")
    parser.add_argument("--first-check", type=int, default=0, help="no gate check before this step")
    parser.add_argument(
        "--check-problems", type=int, default=48, help="train problems kept out of the pass for the gate"
    )
    parser.add_argument(
        "--check-n", type=int, default=8, help="--gate sampled: samples per gate problem per check (T = 1.0)"
    )
    parser.add_argument("--max-tokens", type=int, default=64, help="sampling limit of the checks")
    parser.add_argument(
        "--approach",
        type=float,
        default=0.5,
        help="from the first check at this fraction of --target-pass on, the pass slows down",
    )
    parser.add_argument(
        "--approach-lr", type=float, default=0.25, help="learning-rate factor once the pass slows down"
    )
    parser.add_argument("--fine-every", type=int, default=1, help="steps between checks once it slows down")
    parser.add_argument(
        "--look-back",
        type=int,
        default=0,
        help="keep the weights every this many steps between checks; a check past the target by more "
        "than --overshoot is looked back from (0: never)",
    )
    parser.add_argument(
        "--overshoot", type=float, default=0.1, help="how far past --target-pass a check must read to look back"
    )
    args = parser.parse_args(argv)
    from mcoder.errors import McoderError
    from mcoder.outputs import hold_lock

    # OUT.lock, held as every stage holds it, refuses a second pass on the same --out while this one
    # runs; --out is checked before the lock file is made beside it (as claim_output does), then
    # warm_start checks it again before the pass and before writing
    try:
        check_out(args.out)
        with hold_lock(args.out):
            out = warm_start(
                args.problems,
                args.out,
                steps=args.steps,
                batch=args.batch,
                lr=args.lr,
                weight_decay=args.weight_decay,
                seed=args.seed,
                layers=args.layers,
                target_pass=args.target_pass,
                gate=args.gate,
                check_every=args.check_every,
                first_check=args.first_check,
                check_problems=args.check_problems,
                check_n=args.check_n,
                max_tokens=args.max_tokens,
                approach=args.approach,
                approach_lr=args.approach_lr,
                fine_every=args.fine_every,
                look_back=args.look_back,
                overshoot=args.overshoot,
            )
    except McoderError as e:
        print(e.plain(), file=sys.stderr)
        return e.exit_code
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
