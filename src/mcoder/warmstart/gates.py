"""The gates that stop the supervised pass: each reads one number off the model on train problems
the pass never trains on, and the pass stops once it reaches the target. The default,
``LikelihoodGate``, reads the probability of the reference programs (one forward pass, nothing
sampled); ``TrainPassGate`` samples and judges. Why each exists, and what was measured with them:
docs/measurements.md, "The warm start"."""

from __future__ import annotations

import sys


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
    """The share of ``n`` samples per gate problem (T = 1.0, ``max_tokens``) that mcoder's
    sandboxed judge passes.

    The supervised pass is a phase change (the model either copies the expression from the prompt
    or it does not), so a fixed number of steps leaves seeds at very different starts; stopping at
    a pass rate on unseen train-family problems gives every seed a comparable one. The held-out
    part is never looked at; RL then trains on the whole train part, the gate's problems included.
    The jump itself is fast, so the pass slows down near the band (``Schedule``) and the model kept
    is the checked one closest to the target, not merely the first one past it."""

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
    pass over the gate's problems gives it; nothing is sampled, so it has no sampling noise and
    costs a few milliseconds, and the gate can read many problems often. It is a lower bound of
    the pass rate in principle (another correct program also passes); on a family whose
    warm-started model writes the reference's format it tracks held-out pass@1 closely."""

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
