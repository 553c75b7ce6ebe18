"""Mixed precision (issue 14 a): fp32 parameters and AdamW state with bf16 autocast move the weights as the
fp32 step does at lr 1e-6; pure bf16 parameters do not (most updates fall below bf16's resolution)."""

from __future__ import annotations

import copy

import torch

from tests.trainer.test_rollout import tiny_model, tiny_tokenizer
from trainer.config import GRPOConfig
from trainer.policy import forward_context, load_policy, make_optimizer
from trainer.rollout.sampling import token_logprobs


def _update(base, tok, **kw) -> torch.Tensor:
    cfg = GRPOConfig(lr=1e-6, warmup_steps=0, weight_decay=0.0, device="cpu", **kw)
    model, _ = load_policy(cfg, model=copy.deepcopy(base), tokenizer=tok)
    before = torch.cat([p.detach().float().flatten() for p in model.parameters()])
    opt, _ = make_optimizer(cfg, model)
    ids = torch.randint(3, len(tok), (4, 12), generator=torch.Generator().manual_seed(0))
    with forward_context(cfg, torch.device("cpu")):
        logits = model(ids).logits
        loss = -token_logprobs(logits[:, :-1], ids[:, 1:]).mean()
    loss.backward()
    opt.step()
    after = torch.cat([p.detach().float().flatten() for p in model.parameters()])
    return after - before


def test_autocast_step_moves_weights_like_fp32_and_pure_bf16_does_not():
    tok = tiny_tokenizer()
    base = tiny_model(tok)
    ref = _update(base, tok, dtype="float32", autocast="none")
    mixed = _update(base, tok, dtype="auto", autocast="bf16")
    pure = _update(base, tok, dtype="bfloat16", autocast="none")
    cos = torch.nn.functional.cosine_similarity
    assert cos(ref, mixed, dim=0) >= 0.99
    assert cos(ref, pure, dim=0) < 0.9
    assert (mixed != 0).float().mean() > 0.9  # fp32 master weights: nearly every weight moves


def test_auto_keeps_fp32_parameters_on_cuda_style_configs():
    tok = tiny_tokenizer()
    cfg = GRPOConfig(device="cpu", autocast="bf16")
    model, _ = load_policy(cfg, model=tiny_model(tok), tokenizer=tok)
    assert all(p.dtype == torch.float32 for p in model.parameters())
