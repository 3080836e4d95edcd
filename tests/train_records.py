"""Rollout and Verdict records made from the tiny model itself: real sampled tokens and their
sampling log-probs from ``generate``, for the trainer tests (not a test module)."""

from __future__ import annotations

import torch

from mcoder.records import Rollout, Verdict


def sample_rollouts(
    model, tokenizer, prompts: dict[str, str], *, n: int, max_tokens: int, temperature: float, seed: int = 0
) -> list[Rollout]:
    """n samples per prompt with transformers ``generate``; log-probs of the T-scaled logits."""
    out: list[Rollout] = []
    torch.manual_seed(seed)
    for pid, text in prompts.items():
        prompt = tokenizer.apply_chat_template(
            [{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True
        )
        ids = tokenizer(prompt, return_tensors="pt").input_ids
        with torch.no_grad():
            gen = model.generate(
                ids.repeat(n, 1),
                attention_mask=torch.ones_like(ids).repeat(n, 1),
                do_sample=True,
                temperature=temperature,
                top_k=0,
                top_p=1.0,
                max_new_tokens=max_tokens,
                output_scores=True,
                return_dict_in_generate=True,
                pad_token_id=tokenizer.pad_token_id,
            )
        steps = torch.stack(gen.scores, 1).float().log_softmax(-1)  # (n, C, V) processed = logits / T
        new = gen.sequences[:, ids.shape[1] :]  # (n, C)
        for i in range(n):
            toks = new[i].tolist()
            finish = "length"
            if tokenizer.eos_token_id in toks:
                toks = toks[: toks.index(tokenizer.eos_token_id) + 1]  # the EOS token is part of the output
                finish = "stop"
            lps = steps[i, torch.arange(len(toks)), torch.tensor(toks)].tolist()
            out.append(
                Rollout(
                    id=f"{pid}-{i}",
                    problem_id=pid,
                    completion=tokenizer.decode(toks),
                    sample_index=i,
                    prompt=prompt,
                    prompt_token_ids=ids[0].tolist(),
                    completion_token_ids=toks,
                    sampling_logprobs=lps,
                    finish_reason=finish,
                    temperature=temperature,
                    seed=seed,
                )
            )
    return out


def verdicts_for(rollouts: list[Rollout], reward) -> dict[str, Verdict]:
    """Verdicts with reward(rollout) in [0, 1]: 1 is accepted, else wrong_answer."""
    out = {}
    for r in rollouts:
        R = float(reward(r))
        out[r.id] = Verdict(
            rollout_id=r.id,
            problem_id=r.problem_id,
            reward=R,
            passed=R == 1.0,
            status="accepted" if R == 1.0 else "wrong_answer",
            tests_passed=int(R),
            tests_total=1,
        )
    return out


def write_batch(
    model_dir, out_dir, prompts: dict[str, str], *, n: int, max_tokens: int, temperature: float, reward
):
    """Sample a batch from the model in ``model_dir`` and write it as ``out_dir``/r.jsonl (rollouts)
    and v.jsonl (verdicts, ``reward(rollout)`` each); returns ``out_dir``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from mcoder.jsonl import RecordWriter

    model = AutoModelForCausalLM.from_pretrained(model_dir)
    tok = AutoTokenizer.from_pretrained(model_dir)
    rollouts = sample_rollouts(model, tok, prompts, n=n, max_tokens=max_tokens, temperature=temperature)
    with RecordWriter(out_dir / "r.jsonl", "id") as w:
        w.write_all(rollouts)
    with RecordWriter(out_dir / "v.jsonl", "rollout_id") as w:
        w.write_all(verdicts_for(rollouts, reward).values())
    return out_dir
