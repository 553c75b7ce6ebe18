"""Which models take the lean path, which fall back to the HF forward (docs/train.md, "Supported
architectures"): one row per case, each a tiny random model built from its family's config.

For every row: ``lean_supported`` says what the table says; a rollout (shared prompts, recording asked
for), the scoring pass (no gradients) and the training forward (with its backward) all run, and their
log-probs equal the model's own HF forward over prompt + completion to 1e-5. A lean row must have used
the lean forward (a recording was kept and replayed); a fallback row must not have. A model the lean
path does not recognise falls back, never fails.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import transformers as tf

import trainer.rollout.logprobs as logprobs_mod
from tests.trainer.test_fast_path import hf_logprobs
from trainer.data import Example
from trainer.pipelines.tiny import build_tokenizer
from trainer.rollout.decode import generate_rollout
from trainer.rollout.lean_forward import lean_supported
from trainer.rollout.logprobs import completion_logprobs
from trainer.rollout.replay import replay_logits

torch.set_num_threads(1)
G, T = 3, 1.1
EXAMPLES = [Example("1+2=", "3"), Example("12+30=", "42")]


def _cfg(**kw) -> dict:
    base = {
        "hidden_size": 32,
        "intermediate_size": 48,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 64,
        "bos_token_id": None,
    }
    return {**base, **kw}


def _noisy_biases(model):
    with torch.no_grad():  # biases start at zero: make them count
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                p.normal_(0, 0.1)
    return model


class MyQwen2(tf.Qwen2ForCausalLM):
    """A user's subclass: its forward could do anything."""


# name -> (model class, config class, config overrides, takes the lean path)
ROWS: dict[str, tuple[type, type, dict, bool]] = {
    "qwen2 tied, GQA, q/k/v biases": (tf.Qwen2ForCausalLM, tf.Qwen2Config, {"tie_word_embeddings": True}, True),
    "qwen2 untied, MQA": (tf.Qwen2ForCausalLM, tf.Qwen2Config, {"num_key_value_heads": 1}, True),
    "llama biases, head_dim 12 != hidden/heads": (
        tf.LlamaForCausalLM,
        tf.LlamaConfig,
        {"attention_bias": True, "mlp_bias": True, "head_dim": 12},
        True,
    ),
    "llama MHA, eager attention": (
        tf.LlamaForCausalLM,
        tf.LlamaConfig,
        {"num_key_value_heads": 4, "attn_implementation": "eager"},
        True,
    ),
    "qwen3 (q/k norms)": (tf.Qwen3ForCausalLM, tf.Qwen3Config, {"head_dim": 8}, False),
    "mistral": (tf.MistralForCausalLM, tf.MistralConfig, {"head_dim": 8, "sliding_window": None}, False),
    "gemma": (tf.GemmaForCausalLM, tf.GemmaConfig, {"head_dim": 8}, False),
    "phi3": (tf.Phi3ForCausalLM, tf.Phi3Config, {}, False),
    "llama rope scaling (linear)": (
        tf.LlamaForCausalLM,
        tf.LlamaConfig,
        {"rope_parameters": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e4}},
        False,
    ),
    "llama rope scaling (llama3)": (
        tf.LlamaForCausalLM,
        tf.LlamaConfig,
        {
            "rope_parameters": {
                "rope_type": "llama3",
                "factor": 8.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 16,
                "rope_theta": 1e4,
            }
        },
        False,
    ),
    "qwen2 sliding window": (
        tf.Qwen2ForCausalLM,
        tf.Qwen2Config,
        {"use_sliding_window": True, "sliding_window": 4, "max_window_layers": 0},
        False,
    ),
    "llama gelu MLP": (tf.LlamaForCausalLM, tf.LlamaConfig, {"hidden_act": "gelu"}, False),
    "a user's subclass of Qwen2ForCausalLM": (MyQwen2, tf.Qwen2Config, {}, False),
}


def _build(name: str, tok):
    cls, config_cls, kw, _ = ROWS[name]
    torch.manual_seed(0)
    config = config_cls(**_cfg(vocab_size=len(tok), pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, **kw))
    model = _noisy_biases(cls(config))
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = [tok.eos_token_id, *tok.convert_tokens_to_ids(["1", "="])]
    return model


def _lora(model):
    peft = pytest.importorskip("peft")
    model.add_adapter(peft.LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "down_proj"]))
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.3)
    return model


def _quantised(model):
    return torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)


def _hooked(model):
    model.model.layers[1].self_attn.o_proj.register_forward_hook(lambda mod, args, out: out * 1.5)
    return model


def _backward_hooked(model):
    model.model.layers[0].mlp.register_full_backward_hook(lambda mod, gin, gout: None)
    return model


# name -> (the row it starts from, what is done to the model, takes the lean path); bfloat16 weights and
# dynamic int8 (activations quantised per batch: a row's numbers depend on the batch) compare to 2e-2
CHANGED: dict[str, tuple[str, Callable, bool]] = {
    "qwen2 + LoRA injected by add_adapter": ("qwen2 tied, GQA, q/k/v biases", _lora, False),
    "llama + LoRA injected by add_adapter": ("llama biases, head_dim 12 != hidden/heads", _lora, False),
    "qwen2 quantised (dynamic int8 linears)": ("qwen2 untied, MQA", _quantised, False),
    "qwen2 + a forward hook": ("qwen2 tied, GQA, q/k/v biases", _hooked, False),
    "qwen2 + a backward hook": ("qwen2 tied, GQA, q/k/v biases", _backward_hooked, False),
    "qwen2 bfloat16 weights": ("qwen2 tied, GQA, q/k/v biases", lambda m: m.to(torch.bfloat16), False),
}


def _check(model, tok, lean: bool, tol: float = 1e-5) -> None:
    """The rollout, scoring and training forward of ``model`` equal its HF forward's log-probs (to ``tol``)."""
    calls: list[str] = []
    real = replay_logits

    def counted(*a, **kw):
        calls.append("replay" if kw.get("recording") is not None else "lean")
        return real(*a, **kw)

    assert lean_supported(model) == lean
    torch.manual_seed(5)
    ro = generate_rollout(
        model, tok, EXAMPLES, G, max_new_tokens=6, temperature=T, use_chat_template=False, record=True
    )
    assert (ro.replay is not None) == lean
    m = ro.completion_mask.bool()
    model.train()
    logprobs_mod.replay_logits = counted
    try:
        trained, _ = completion_logprobs(model, ro, temperature=T, group_size=G)
        (trained * ro.completion_mask).sum().backward()
        with torch.inference_mode():
            model.eval()
            scored, _ = completion_logprobs(model, ro, temperature=T, group_size=G)
    finally:
        logprobs_mod.replay_logits = real
    assert calls == (["replay", "lean"] if lean else [])
    with torch.no_grad():
        want = hf_logprobs(model, ro, T).float()
    for got in (trained.detach(), scored, ro.sample_logprobs):
        assert torch.allclose(got.float()[m], want[m], atol=tol, rtol=0), (got.float() - want)[m].abs().max()


@pytest.mark.parametrize("name", list(ROWS))
def test_family(name):
    tok = build_tokenizer()
    _check(_build(name, tok), tok, ROWS[name][3])


@pytest.mark.parametrize("name", list(CHANGED))
def test_changed_model(name):
    start, change, lean = CHANGED[name]
    tok = build_tokenizer()
    _check(change(_build(start, tok)), tok, lean, 2e-2 if "bfloat16" in name or "quantised" in name else 1e-5)


def test_attention_dropout_in_train_mode_is_refused_and_eval_mode_is_lean():
    """HF applies attention_dropout only in train mode: the lean path (which has none) is refused there."""
    tok = build_tokenizer()
    model = _build("qwen2 tied, GQA, q/k/v biases", tok)
    for att in (layer.self_attn for layer in model.model.layers):
        att.attention_dropout = 0.3
    assert lean_supported(model.eval())
    assert not lean_supported(model.train())
