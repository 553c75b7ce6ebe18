"""LoRA (issue 14 c): the policy is wrapped once even when the pipeline and train() both call load_policy,
LoRA dropout is off, and the saved adapter reloads with PeftModel.from_pretrained (and merges) to the
policy's own log-probs."""

from __future__ import annotations

import copy

import pytest
import torch

from tests.trainer.test_rollout import tiny_model, tiny_tokenizer
from trainer.config import GRPOConfig
from trainer.policy import load_policy
from trainer.rollout.sampling import token_logprobs

peft = pytest.importorskip("peft")


def _logp(model, ids):
    model.eval()
    with torch.no_grad():
        return token_logprobs(model(ids).logits[:, :-1], ids[:, 1:])


def test_lora_adapter_wraps_once_reloads_and_merges(tmp_path):
    tok = tiny_tokenizer()
    base = tiny_model(tok)
    cfg = GRPOConfig(device="cpu", lora={"r": 4, "alpha": 8, "dropout": 0.5, "target_modules": ["q_proj", "v_proj"]})
    model, _ = load_policy(cfg, model=copy.deepcopy(base), tokenizer=tok)  # the pipeline (warm start)
    model, _ = load_policy(cfg, model=model, tokenizer=tok)  # train() again on the same model
    assert not isinstance(model.get_base_model(), peft.PeftModel)  # one wrapper, not two
    assert all(m.p == 0.0 for m in model.modules() if isinstance(m, torch.nn.Dropout))
    with torch.no_grad():  # stands in for training: a non-zero adapter
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.add_(torch.randn_like(p) * 0.1)
    ids = torch.randint(3, len(tok), (3, 10), generator=torch.Generator().manual_seed(0))
    want = _logp(model, ids)
    model.train()
    assert torch.allclose(_logp(model, ids), want)  # dropout off: train() mode changes nothing
    model.save_pretrained(tmp_path / "adapter")
    reloaded = peft.PeftModel.from_pretrained(copy.deepcopy(base), tmp_path / "adapter")
    assert torch.allclose(_logp(reloaded, ids), want, atol=1e-5)
    merged = reloaded.merge_and_unload()
    assert torch.allclose(_logp(merged, ids), want, atol=1e-4)
    with model.disable_adapter():  # the reference: the base model
        assert torch.allclose(_logp(model, ids), _logp(base, ids), atol=1e-6)
