"""The transformers engine: batched sampling from an in-memory model, on CPU or one GPU.

mcoder runs its own sampling loop over the model's KV cache instead of ``model.generate``: the
loop is short, and it makes three guarantees that the trainer relies on and that generate's
logits processors make hard to audit:

- the recorded log-prob of each token is log_softmax(logits / T) of exactly the distribution it
  was drawn from (plain temperature sampling; top-k / top-p only when asked for);
- each row (one sample of one prompt) has its own random generator, seeded from the prompt's
  seed and the sample index, so a sample does not depend on what else was in its batch;
- prompts are left-padded with real attention masks and position ids that skip the padding,
  so a padded row computes the same logits as the prompt alone (within float rounding).

The model may be the trainer's live policy (a PeftModel whose weights change between calls):
each call switches it to eval mode under no_grad and restores its mode afterwards.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import torch

from mcoder.engines.base import Generation, decode, derive_seed, prompt_seeds
from mcoder.models import eos_ids, model_device


class HFEngine:
    """Sample from a transformers causal LM held in memory.

    ``batch_size`` is the number of rows (prompt x sample) decoded together.
    ``top_k`` 0 and ``top_p`` 1.0 mean off (plain temperature sampling).
    ``autocast``: a dtype the forwards run in under autocast (weights kept in another).
    """

    name = "hf"

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        batch_size: int = 32,
        top_k: int = 0,
        top_p: float = 1.0,
        autocast: torch.dtype | None = None,
    ):
        self.model = model
        self.autocast = autocast  # forwards under autocast to this dtype (float32 weights sampled in bf16)
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.top_k = top_k
        self.top_p = top_p
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        self.eos_ids = eos_ids(tokenizer, model)  # the ids the vllm engine reads from the folder

    def generate(
        self,
        prompt_ids: list[list[int]],
        *,
        n: int,
        max_tokens: int,
        temperature: float,
        seed: int | Sequence[int],
    ) -> list[list[Generation]]:
        groups: list[list[Generation]] = [[] for _ in prompt_ids]
        for i, group in self.stream(
            prompt_ids, n=n, max_tokens=max_tokens, temperature=temperature, seed=seed
        ):
            groups[i] = group
        return groups

    def stream(
        self,
        prompt_ids: list[list[int]],
        *,
        n: int,
        max_tokens: int,
        temperature: float,
        seed: int | Sequence[int],
    ) -> Iterator[tuple[int, list[Generation]]]:
        """Each prompt's group once its last row is decoded: rows are decoded ``batch_size`` at a
        time in prompt order, so the groups come in prompt order, a batch's worth at a time."""
        seeds = prompt_seeds(seed, len(prompt_ids))
        rows = [(p, derive_seed(s, j)) for p, s in zip(prompt_ids, seeds) for j in range(n)]
        samples: list[Generation] = []
        done = 0  # groups handed out
        with _inference(self.model, self.autocast):
            for start in range(0, len(rows), self.batch_size):
                chunk = rows[start : start + self.batch_size]
                samples.extend(self._generate_rows(chunk, max_tokens, temperature))
                while done < len(prompt_ids) and len(samples) >= (done + 1) * n:
                    yield done, samples[done * n : (done + 1) * n]
                    done += 1

    def _generate_rows(
        self, rows: list[tuple[list[int], int]], max_tokens: int, temperature: float
    ) -> list[Generation]:
        device = model_device(self.model)
        input_ids, mask = _left_pad([p for p, _ in rows], self.pad_id, device)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        gens = [torch.Generator(device=device).manual_seed(s) for _, s in rows]
        eos = torch.tensor(sorted(self.eos_ids), device=device)
        done = torch.zeros(len(rows), dtype=torch.bool, device=device)
        tokens, logprobs = [], []
        out = self.model(
            input_ids=input_ids, attention_mask=mask, position_ids=positions, use_cache=True, logits_to_keep=1
        )
        for _ in range(max_tokens):
            tok, lp = sample_next(out.logits[:, -1, :].float(), gens, temperature, self.top_k, self.top_p)
            tok = torch.where(done, torch.full_like(tok, self.pad_id), tok)
            tokens.append(tok)
            logprobs.append(lp)
            done = done | torch.isin(tok, eos)
            if bool(done.all()) or len(tokens) == max_tokens:
                break
            mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=-1)
            positions = positions[:, -1:] + 1
            # Finished rows keep decoding padding; their outputs are dropped below.
            out = self.model(
                input_ids=tok[:, None],
                attention_mask=mask,
                position_ids=positions,
                past_key_values=out.past_key_values,
                use_cache=True,
            )
        return self._to_samples(torch.stack(tokens, 1).tolist(), torch.stack(logprobs, 1).tolist())

    def next_token_logprobs(self, groups: list[list[tuple[list[int], list[int]]]]) -> list[list[list[float]]]:
        """log p(token | context) under the model's own next-token distribution (temperature 1,
        no top-k / top-p), for each query ``(context ids, token ids)``; nothing is sampled.

        The queries come in groups (one problem's) whose contexts share a long prefix: the prefix
        is run once per group, ``batch_size`` groups at a time and left-padded, then each query's
        own tail on that cache, right-padded (a row's real tokens come before its padding, so
        causal attention never reads the padding), and the cache is cut back to the prefix before
        the next query. Within float rounding, each value is what one unpadded forward pass of
        the context alone gives."""
        out: list[list[list[float]]] = [[[] for _ in g] for g in groups]
        with _inference(self.model, self.autocast):
            for start in range(0, len(groups), self.batch_size):
                chunk = groups[start : start + self.batch_size]
                got = self._group_logprobs(chunk)
                for i, rows in enumerate(got):
                    out[start + i] = rows
        return out

    def _group_logprobs(self, groups: list[list[tuple[list[int], list[int]]]]) -> list[list[list[float]]]:
        device = model_device(self.model)
        shared = [_common_prefix([ctx for ctx, _ in g]) for g in groups]
        if not all(shared):
            raise ValueError("the contexts of a group must share at least their first token")
        # a context that begins a longer one is read from the longer one's row
        rows = [_longest_contexts([ctx for ctx, _ in g]) for g in groups]
        ids, mask = _left_pad(shared, self.pad_id, device)
        first = self.model(
            input_ids=ids, attention_mask=mask, position_ids=(mask.cumsum(-1) - 1).clamp(min=0),
            use_cache=True, logits_to_keep=1,
        )  # fmt: skip
        cache, lengths = first.past_key_values, mask.sum(-1)
        # logp[b][(row, n)]: the next-token log-probs after the first n tokens of row `row`
        logp: list[dict[tuple[int, int], torch.Tensor]] = [{} for _ in groups]
        last = torch.log_softmax(first.logits[:, -1, :].float(), dim=-1)
        for b, s in enumerate(shared):
            for r in range(len(rows[b])):
                logp[b][(r, len(s))] = last[b]
        for k in range(max(len(r) for r in rows)):
            tails = [r[k][len(s) :] if k < len(r) else [] for r, s in zip(rows, shared)]
            if not any(tails):
                continue
            span = max(len(t) for t in tails)
            tail_ids = torch.full((len(groups), span), self.pad_id, dtype=torch.long)
            tail_mask = torch.zeros((len(groups), span), dtype=torch.long)
            for b, t in enumerate(tails):
                tail_ids[b, : len(t)] = torch.tensor(t, dtype=torch.long)
                tail_mask[b, : len(t)] = 1
            tail_ids, tail_mask = tail_ids.to(device), tail_mask.to(device)
            res = self.model(
                input_ids=tail_ids, attention_mask=torch.cat([mask, tail_mask], dim=-1),
                position_ids=lengths[:, None] + torch.arange(span, device=device)[None, :],
                past_key_values=cache, use_cache=True,
            )  # fmt: skip
            for b, t in enumerate(tails):
                for j in range(len(t)):
                    logp[b][(k, len(shared[b]) + j + 1)] = torch.log_softmax(
                        res.logits[b, j, :].float(), dim=-1
                    )
            cache = res.past_key_values
            cache.crop(-span)  # back to the shared prefixes for the next row
        out: list[list[list[float]]] = []
        for b, g in enumerate(groups):
            got = []
            for ctx, tokens in g:
                row = next(r for r, full in enumerate(rows[b]) if full[: len(ctx)] == ctx)
                got.append(logp[b][(row, len(ctx))][tokens].tolist())
            out.append(got)
        return out

    def _to_samples(self, tokens: list[list[int]], logprobs: list[list[float]]) -> list[Generation]:
        samples = []
        for ids, lps in zip(tokens, logprobs):
            end = next((i + 1 for i, t in enumerate(ids) if t in self.eos_ids), None)
            reason = "length" if end is None else "stop"
            end = len(ids) if end is None else end
            samples.append(Generation(ids[:end], lps[:end], reason, decode(self.tokenizer, ids[:end])))
        return samples


def sample_next(
    logits: torch.Tensor, gens: list[torch.Generator], temperature: float, top_k: int = 0, top_p: float = 1.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw one token per row; return (tokens [B], their log-probs [B]) under the sampled distribution.

    Gumbel-max with per-row noise: argmax(logp + g) is a draw from softmax(logp), and it lets
    each row use its own generator. Temperature 0 is greedy, whose distribution is a point mass
    (log-prob 0).
    """
    if temperature == 0:
        return logits.argmax(-1), torch.zeros(logits.shape[0], device=logits.device)
    logp = torch.log_softmax(filter_logits(logits / temperature, top_k, top_p), dim=-1)  # [B, V]
    noise = torch.stack([torch.rand(logits.shape[-1], generator=g, device=logits.device) for g in gens])
    gumbel = -torch.log(-torch.log(noise.clamp(min=1e-20, max=1 - 1e-7)))  # [B, V]
    tok = (logp + gumbel).argmax(-1)  # [B]
    return tok, logp.gather(-1, tok[:, None]).squeeze(-1)


def filter_logits(scaled: torch.Tensor, top_k: int, top_p: float) -> torch.Tensor:
    """Top-k then top-p (nucleus) filtering of temperature-scaled logits; masked entries -inf."""
    if top_k and top_k < scaled.shape[-1]:
        kth = scaled.topk(top_k, dim=-1).values[:, -1:]
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))
    if top_p < 1.0:
        sorted_logits, order = scaled.sort(dim=-1, descending=True)
        cum = sorted_logits.softmax(-1).cumsum(-1)
        drop_sorted = cum - sorted_logits.softmax(-1) >= top_p  # keep the smallest prefix reaching top_p
        drop = drop_sorted.scatter(-1, order, drop_sorted)
        scaled = scaled.masked_fill(drop, float("-inf"))
    return scaled


def _left_pad(prompts: list[list[int]], pad_id: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, width - len(p) :] = torch.tensor(p, dtype=torch.long)
        mask[i, width - len(p) :] = 1
    return ids.to(device), mask.to(device)


def _longest_contexts(contexts: list[list[int]]) -> list[list[int]]:
    """The contexts that begin no longer one (each other context is the start of one of them)."""
    rows: list[list[int]] = []
    for ctx in sorted(contexts, key=len, reverse=True):
        if not any(r[: len(ctx)] == ctx for r in rows):
            rows.append(ctx)
    return rows


def _common_prefix(rows: list[list[int]]) -> list[int]:
    first = rows[0]
    n = len(first)
    for r in rows[1:]:
        n = min(n, len(r))
        n = next((i for i in range(n) if r[i] != first[i]), n)
    return list(first[:n])


@contextlib.contextmanager
def _inference(model: Any, autocast: torch.dtype | None = None) -> Iterator[None]:
    was_training = model.training
    model.eval()
    cast = autocast is not None and autocast != torch.float32
    try:
        with torch.no_grad(), torch.autocast(model_device(model).type, dtype=autocast, enabled=cast):
            yield
    finally:
        model.train(was_training)
