"""The fast path (lean decode, lean scoring, replay) is never silently wrong (issue 27, item 1).

- any optimizer step makes the decode's recording stale, whatever the optimizer: the trainer's default
  (fused AdamW, which does not bump the parameters' version counters), foreach AdamW, SGD, a user's own
  that writes through ``p.data``; the training forward then computes the new weights' log-probs;
- a model whose projections carry a LoRA adapter injected in place by transformers (``add_adapter``)
  is not lean: sampling, scoring and the training forward are the adapted model's (HF forward's);
- every dropout probability of the model (its config's ``attention_dropout`` too, not only ``nn.Dropout``
  modules) is zero after ``load_policy``: the training forward of the same rows gives the same numbers
  twice, in train mode, on the HF forward.
"""

from __future__ import annotations

import pytest
import torch

from tests.trainer.test_lean_forward import qwen2
from tests.trainer.test_replay import EXAMPLES, G, _rollout
from trainer.config import GRPOConfig
from trainer.pipelines.tiny import build_tokenizer
from trainer.policy import load_policy, make_optimizer
from trainer.rollout.decode import generate_rollout
from trainer.rollout.lean_forward import lean_supported, mask_positions
from trainer.rollout.logprobs import completion_logprobs
from trainer.rollout.sampling import token_logprobs

torch.set_num_threads(1)
T = 1.2  # the rollouts' temperature (tests/trainer/test_replay.py)


def hf_logprobs(model, ro, temperature: float = T) -> torch.Tensor:
    """(N, C) log-probs of the completions from the model's own forward over prompt + completion."""
    ids = torch.cat([ro.prompt_ids, ro.completion_ids], dim=1)
    attn = torch.cat([ro.prompt_mask, ro.completion_mask], dim=1)
    c = ro.completion_ids.shape[1]
    logits = model(input_ids=ids, attention_mask=attn, position_ids=mask_positions(attn)).logits[:, -c - 1 : -1]
    return token_logprobs(logits, ro.completion_ids, temperature)


class DataSGD(torch.optim.Optimizer):
    """A user's own optimizer: plain SGD written through ``p.data`` (no version counter moves)."""

    def __init__(self, params, lr: float):
        super().__init__(params, {"lr": lr})

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.data.add_(p.grad, alpha=-group["lr"])


OPTIMIZERS = {
    "default (fused AdamW)": lambda model: make_optimizer(GRPOConfig(lr=1e-2), model)[0],
    "foreach AdamW": lambda model: torch.optim.AdamW(model.parameters(), lr=1e-2, foreach=True),
    "SGD": lambda model: torch.optim.SGD(model.parameters(), lr=0.02),
    "own optimizer via p.data": lambda model: DataSGD(model.parameters(), lr=0.02),
}


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_any_optimizer_step_makes_the_recording_stale(name):
    """After one step of any optimizer the training forward's log-probs are the new weights' (HF's)."""
    model, ro = _rollout("qwen2", share_prefix=True)
    c = ro.completion_ids.shape[1]
    rows = torch.arange(len(ro))
    assert ro.replay.usable(model, c)
    lp, _ = completion_logprobs(model, ro, temperature=T, rows=rows, group_size=G)
    (lp * ro.completion_mask).sum().backward()
    opt = OPTIMIZERS[name](model)
    if name.startswith("default"):
        assert opt.defaults["fused"]  # the trainer's default on the CPU: the case version counters miss
    opt.step()
    assert not ro.replay.usable(model, c)
    got, _ = completion_logprobs(model, ro, temperature=T, rows=rows, group_size=G)
    want = hf_logprobs(model, ro)
    m = ro.completion_mask.bool()
    assert (got - lp).detach()[m].abs().max() > 1e-3  # the weights moved
    assert torch.allclose(got.detach()[m], want.detach()[m], atol=1e-5, rtol=0), (got - want)[m].abs().max()


def _adapted_qwen2(tok):
    """A tiny Qwen2 with a LoRA adapter injected in place by transformers (model.add_adapter), non-zero."""
    peft = pytest.importorskip("peft")
    model = qwen2(vocab_size=len(tok), pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
    model.add_adapter(peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "down_proj"]))
    torch.manual_seed(1)
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.3)
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = [tok.eos_token_id, *tok.convert_tokens_to_ids(["1", "="])]
    return model


def test_a_model_with_an_adapter_added_by_transformers_takes_the_hf_forward():
    """Sampling, scoring without gradients and the training forward (backward included) of a Qwen2 whose
    q/v/down projections carry a LoRA adapter are the HF forward's, to 1e-5."""
    tok = build_tokenizer()
    model = _adapted_qwen2(tok)
    assert not lean_supported(model)
    model.train()
    torch.manual_seed(5)
    ro = generate_rollout(
        model, tok, EXAMPLES, G, max_new_tokens=10, temperature=T, use_chat_template=False, record=True
    )
    assert ro.replay is None
    m = ro.completion_mask.bool()
    with torch.no_grad():
        model.eval()
        want = hf_logprobs(model, ro)
        model.train()
    assert torch.allclose(ro.sample_logprobs[m], want[m], atol=1e-5, rtol=0)
    with torch.inference_mode():
        scored, _ = completion_logprobs(model, ro, temperature=T, group_size=G)
    assert torch.allclose(scored[m], want[m], atol=1e-5, rtol=0), (scored - want)[m].abs().max()
    trained, _ = completion_logprobs(model, ro, temperature=T, group_size=G)
    (trained * ro.completion_mask).sum().backward()
    assert torch.allclose(trained.detach()[m], want[m], atol=1e-5, rtol=0)
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for n, p in model.named_parameters() if "lora_A" in n)


def test_every_dropout_of_the_config_is_off_after_load_policy():
    """attention_dropout 0.5 in the config (no nn.Dropout module carries it): after load_policy the training
    forward (train mode, HF forward: no recording) scores the same rows twice to the same numbers."""
    tok = build_tokenizer()
    base = qwen2(
        vocab_size=len(tok), pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, attention_dropout=0.5
    )
    base.generation_config.pad_token_id, base.generation_config.eos_token_id = tok.pad_token_id, tok.eos_token_id
    model, _ = load_policy(GRPOConfig(device="cpu"), model=base, tokenizer=tok)
    assert model.training and model.config.attention_dropout == 0.0
    torch.manual_seed(5)
    ro = generate_rollout(model, tok, EXAMPLES, G, max_new_tokens=8, use_chat_template=False)
    assert ro.replay is None
    torch.manual_seed(0)
    a, _ = completion_logprobs(model, ro, group_size=G)
    b, _ = completion_logprobs(model, ro, group_size=G)
    assert torch.equal(a, b)
