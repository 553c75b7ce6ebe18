"""trainer/rollout/lean_forward.py: the lean decode forward computes what the HF model computes.

Each incremental step's logits are compared with the HF model's own full forward over the whole
sequence so far (left padding, attention mask, position ids from the mask), in fp32 to 1e-5, on a tiny
Qwen2 (grouped-query attention, q/k/v biases) and a tiny Llama (attention biases incl. o_proj); the
rollout's sampled tokens are identical to the HF-forward decode under one seed; configs it does not
reproduce fall back to HF.
"""

from __future__ import annotations

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

import trainer.rollout.decode_loop as decode_mod
from trainer.data import Example
from trainer.pipelines.tiny import build_tokenizer
from trainer.rollout.decode import generate_rollout
from trainer.rollout.lean_forward import LeanDecoder, lean_supported, mask_positions

torch.set_num_threads(1)
VOCAB = 40


def _common(**kw) -> dict:
    base = {
        "vocab_size": VOCAB,
        "hidden_size": 64,
        "intermediate_size": 96,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 128,
        "pad_token_id": 0,
        "eos_token_id": 1,
        "bos_token_id": None,
        "tie_word_embeddings": True,
    }
    return {**base, **kw}


def qwen2(**kw) -> Qwen2ForCausalLM:
    torch.manual_seed(0)
    return Qwen2ForCausalLM(Qwen2Config(**_common(**kw))).eval()


def llama(**kw) -> LlamaForCausalLM:
    torch.manual_seed(0)
    m = LlamaForCausalLM(LlamaConfig(**_common(attention_bias=True, tie_word_embeddings=False, **kw))).eval()
    with torch.no_grad():  # biases start at zero: make them count
        for name, p in m.named_parameters():
            if name.endswith("bias"):
                p.normal_(0, 0.1)
    return m


MODELS = {"qwen2": qwen2, "llama": llama}


def _prompts() -> tuple[torch.Tensor, torch.Tensor]:
    """Three left-padded prompts of lengths 5, 2 and 7: (3, 7) ids and mask."""
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(3, VOCAB, (3, 7), generator=g)
    mask = torch.ones(3, 7, dtype=torch.long)
    mask[0, :2], mask[1, :5] = 0, 0
    return ids.masked_fill(mask == 0, 0), mask


def _hf_last_logits(model, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    out = model(input_ids=ids, attention_mask=mask, position_ids=mask_positions(mask))
    return out.logits[:, -1].float()


@pytest.mark.parametrize("arch", list(MODELS))
def test_incremental_logits_equal_the_hf_full_forward(arch):
    """Prefill then 8 one-token steps (with a row whose mask is 0 from the start): every step's logits and
    log-probs equal HF's full forward over the sequence so far, fp32 to 1e-5."""
    model = MODELS[arch]()
    assert lean_supported(model)
    ids, mask = _prompts()
    g = torch.Generator().manual_seed(2)
    with torch.no_grad():
        lean = LeanDecoder(model, 3, ids.shape[1] + 9)
        got = lean.forward(ids, mask, mask_positions(mask))
        for step in range(9):
            want = _hf_last_logits(model, ids, mask)
            assert torch.allclose(got, want, atol=1e-5, rtol=0), (step, (got - want).abs().max())
            lp, lp_want = torch.log_softmax(got, -1), torch.log_softmax(want, -1)
            assert torch.allclose(lp, lp_want, atol=1e-5, rtol=0)
            nxt = torch.randint(3, VOCAB, (3, 1), generator=g)
            ids, mask = torch.cat([ids, nxt], 1), torch.cat([mask, mask.new_ones(3, 1)], 1)
            got = lean.forward(nxt, mask, mask_positions(mask)[:, -1:])


@pytest.mark.parametrize("arch", list(MODELS))
def test_shared_prompt_cache_repeated_equals_separate_rows(arch):
    """A prompt encoded once and its cache repeated G times gives the logits of G separate copies."""
    model = MODELS[arch]()
    ids, mask = _prompts()
    g = 3
    with torch.no_grad():
        shared = LeanDecoder(model, 3, 10)
        shared.forward(ids[:, :-1], mask[:, :-1], mask_positions(mask[:, :-1]))
        shared.repeat_interleave(g)
        rep_ids, rep_mask = ids.repeat_interleave(g, 0), mask.repeat_interleave(g, 0)
        got = shared.forward(rep_ids[:, -1:], rep_mask, mask_positions(rep_mask)[:, -1:])
        want = _hf_last_logits(model, rep_ids, rep_mask)
    assert got.shape == (9, VOCAB)
    assert torch.allclose(got, want, atol=1e-5, rtol=0)


def _tokenizer():
    return build_tokenizer()


@pytest.mark.parametrize("arch", list(MODELS))
@pytest.mark.parametrize("share_prefix", [True, False])
def test_rollout_samples_the_same_tokens_as_the_hf_forward(arch, share_prefix, monkeypatch):
    """One seed, the decode loop on the lean forward and on the HF forward: the same tokens, the same
    recorded log-probs (1e-5), with rows ending at different steps."""
    tok = _tokenizer()
    model = MODELS[arch](vocab_size=len(tok), pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
    stops = tok.convert_tokens_to_ids(["1", "="])
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = [tok.eos_token_id, *stops]
    examples = [Example("1+2=", "3"), Example("12+30=", "42"), Example("99-1=", "98")]
    kw = {"max_new_tokens": 10, "temperature": 1.2, "use_chat_template": False, "share_prefix": share_prefix}
    runs = []
    for lean in (True, False):
        monkeypatch.setattr(decode_mod, "lean_supported", lean_supported if lean else lambda m: False)
        torch.manual_seed(5)
        runs.append(generate_rollout(model, tok, examples, 4, **kw))
    a, b = runs
    assert torch.equal(a.completion_ids, b.completion_ids) and torch.equal(a.completion_mask, b.completion_mask)
    assert a.truncated.any() and not a.truncated.all()
    assert torch.allclose(a.sample_logprobs, b.sample_logprobs, atol=1e-5, rtol=0)


UNSUPPORTED = {
    "rope scaling (linear)": (llama, {"rope_parameters": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e4}}),
    "sliding window": (qwen2, {"use_sliding_window": True, "sliding_window": 4, "max_window_layers": 0}),
    "gelu MLP": (llama, {"hidden_act": "gelu"}),
    "forward hook": (qwen2, {}),
    "bfloat16 weights": (qwen2, {}),
}


@pytest.mark.parametrize("name", list(UNSUPPORTED))
def test_configs_it_does_not_reproduce_fall_back_to_hf(name):
    """lean_supported refuses them, and the rollout still samples (greedy) what model.generate gives."""
    tok = _tokenizer()
    build, kw = UNSUPPORTED[name]
    model = build(vocab_size=len(tok), pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, **kw)
    if name == "forward hook":
        model.model.layers[0].mlp.register_forward_hook(lambda *a: None)
    if name == "bfloat16 weights":
        model = model.to(torch.bfloat16)
    assert not lean_supported(model)
    model.generation_config.pad_token_id, model.generation_config.eos_token_id = tok.pad_token_id, tok.eos_token_id
    kw = {"max_new_tokens": 6, "do_sample": False, "use_chat_template": False}
    ex = [Example("1+2=", "3"), Example("12+30=", "42")]
    fast = generate_rollout(model, tok, ex, 2, fast_decode=True, **kw)
    slow = generate_rollout(model, tok, ex, 2, fast_decode=False, **kw)
    assert torch.equal(fast.completion_ids, slow.completion_ids)


def test_a_lora_wrapped_model_is_not_lean():
    """A peft model's forward adds the adapters' output: the lean path (bare HF weights) must not take it."""
    peft = pytest.importorskip("peft")
    inner = qwen2()
    assert lean_supported(inner)
    wrapped = peft.get_peft_model(inner, peft.LoraConfig(r=2, target_modules=["q_proj"], task_type="CAUSAL_LM"))
    assert not lean_supported(wrapped)
