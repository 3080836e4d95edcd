"""The hf engine on the tiny model: group sizes, token ids that decode to the text, log-probs equal
to a forward pass at the sampling temperature, finish reasons, seeds, adapters, live models."""

from __future__ import annotations

import pytest
import torch
from tests.rollout_models import eos_prone, forward_logprobs, make_lora_adapter, one_torch_thread, problems

from mcoder.engines import HFEngine, make_engine
from mcoder.models import load_model, load_tokenizer
from mcoder.prompts import render_prompt

_one_thread = pytest.fixture(autouse=True, scope="module")(one_torch_thread)


@pytest.fixture(scope="module")
def tok(tiny_model):
    return load_tokenizer(tiny_model)


@pytest.fixture(scope="module")
def prompts(tok):
    return [render_prompt(p, tok)[1] for p in problems(3)]


@pytest.fixture(scope="module")
def eos_model(tiny_model, tok):
    return eos_prone(load_model(tiny_model), tok.eos_token_id, bias=5.0)


def _flat(groups):
    return [s for g in groups for s in g]


def test_prompts_differ_in_length(prompts):
    assert len({len(p) for p in prompts}) == 3  # so the batch is really left-padded


@pytest.mark.parametrize("temperature", [1.0, 0.7, 1.6])
def test_logprobs_equal_forward_pass_at_the_temperature(eos_model, tok, prompts, temperature):
    engine = HFEngine(eos_model, tok, batch_size=16)
    groups = engine.generate(prompts, n=4, max_tokens=12, temperature=temperature, seed=3)
    assert [len(g) for g in groups] == [4, 4, 4]
    for p, g in zip(prompts, groups):
        for s in g:
            assert len(s.logprobs) == len(s.completion_token_ids) > 0
            ref = forward_logprobs(eos_model, p, s.completion_token_ids, temperature)
            assert torch.allclose(torch.tensor(s.logprobs), ref, atol=1e-4), (s.logprobs, ref.tolist())


def test_finish_reason_length_exactly_when_max_tokens_hit(eos_model, tok, prompts):
    engine = HFEngine(eos_model, tok, batch_size=8)
    samples = _flat(engine.generate(prompts, n=8, max_tokens=10, temperature=1.0, seed=0))
    reasons = {s.finish_reason for s in samples}
    assert reasons == {"stop", "length"}  # the EOS bias gives both
    eos = tok.eos_token_id
    for s in samples:
        ids = s.completion_token_ids
        if s.finish_reason == "stop":
            assert ids[-1] == eos and eos not in ids[:-1]  # EOS kept, nothing after it
            assert len(ids) <= 10
        else:
            assert len(ids) == 10 and eos not in ids


def test_token_ids_decode_to_the_text(eos_model, tok, prompts):
    for s in _flat(HFEngine(eos_model, tok).generate(prompts, n=3, max_tokens=16, temperature=1.0, seed=5)):
        assert tok.decode(s.completion_token_ids, skip_special_tokens=True) == s.text


def test_seeds_reproduce_and_do_not_depend_on_the_batch(eos_model, tok, prompts):
    def ids(engine, ps, seed):
        return [[s.completion_token_ids for s in g] for g in engine.generate(ps, n=3, max_tokens=12, temperature=1.0, seed=seed)]

    big, small = HFEngine(eos_model, tok, batch_size=16), HFEngine(eos_model, tok, batch_size=2)
    seeds = [11, 12, 13]
    together = ids(big, prompts, seeds)
    assert together == ids(big, prompts, seeds)
    assert together == ids(small, prompts, seeds)  # other batch boundaries, same samples
    assert ids(big, prompts[2:], [13]) == together[2:]  # a prompt alone, same samples
    assert ids(big, prompts, [21, 22, 23]) != together


def test_top_k_samples_only_the_k_likeliest_and_records_the_filtered_logprob(eos_model, tok, prompts):
    engine = HFEngine(eos_model, tok, top_k=3)
    for s in _flat(engine.generate(prompts[:1], n=4, max_tokens=6, temperature=1.0, seed=1)):
        full = torch.tensor([prompts[0] + s.completion_token_ids])
        with torch.no_grad():
            logits = eos_model(full).logits[0, len(prompts[0]) - 1 : -1].float()
        top = logits.topk(3, -1)
        for i, t in enumerate(s.completion_token_ids):
            assert t in top.indices[i].tolist()
            expected = torch.log_softmax(top.values[i], -1)[top.indices[i].tolist().index(t)]
            assert abs(s.logprobs[i] - float(expected)) < 1e-4


def test_greedy_is_deterministic_with_zero_logprob(eos_model, tok, prompts):
    engine = HFEngine(eos_model, tok)
    a = engine.generate(prompts[:1], n=2, max_tokens=5, temperature=0.0, seed=1)[0]
    b = engine.generate(prompts[:1], n=1, max_tokens=5, temperature=0.0, seed=9)[0]
    assert a[0].completion_token_ids == a[1].completion_token_ids == b[0].completion_token_ids
    assert a[0].logprobs == [0.0] * len(a[0].logprobs)


def test_live_model_keeps_its_mode_and_sees_weight_changes(tiny_model, tok, prompts):
    model = load_model(tiny_model)
    model.train()
    engine = HFEngine(model, tok)
    before = engine.generate(prompts[:1], n=2, max_tokens=8, temperature=1.0, seed=4)[0]
    assert model.training  # restored after sampling
    with torch.no_grad():
        model.model.norm.weight.mul_(8.0)  # the trainer's update, in place
    after = engine.generate(prompts[:1], n=2, max_tokens=8, temperature=1.0, seed=4)[0]
    assert [s.completion_token_ids for s in before] != [s.completion_token_ids for s in after]
    ref = forward_logprobs(model.eval(), prompts[0], after[0].completion_token_ids, 1.0)
    assert torch.allclose(torch.tensor(after[0].logprobs), ref, atol=1e-4)


def test_adapter_changes_the_outputs(tiny_model, tok, prompts, tmp_path):
    adapter = make_lora_adapter(tiny_model, tmp_path / "adapter")
    plain = make_engine("hf", tiny_model, tokenizer=tok)
    adapted = make_engine("hf", tiny_model, adapter, tokenizer=tok)
    kw = {"n": 2, "max_tokens": 12, "temperature": 1.0, "seed": 7}
    a, b = plain.generate(prompts, **kw), adapted.generate(prompts, **kw)
    assert [s.completion_token_ids for s in _flat(a)] != [s.completion_token_ids for s in _flat(b)]
    s = b[0][0]  # the recorded log-probs are the adapted model's
    ref = forward_logprobs(adapted.model, prompts[0], s.completion_token_ids, 1.0)
    assert torch.allclose(torch.tensor(s.logprobs), ref, atol=1e-4)
