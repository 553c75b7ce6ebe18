"""The loss never trains on what the policy did not sample: tool-output tokens carry no loss, no KL, no ratio and
are counted by no normaliser (grpo, token_mean, dr_grpo, GSPO's sequence ratio), checked against a float64
reference that only ever sees the policy's tokens; a planted leak (tool tokens with a gradient) is caught, in
grpo_loss and through the whole update (trainer/grpo/update.py's optimize on a tiny real model)."""

from __future__ import annotations

import copy
import math

import pytest
import torch

from tests.trainer import tool_helpers as th
from trainer.config import GRPOConfig, ToolsConfig
from trainer.data import DataStream
from trainer.grpo.loss import LossConfig, grpo_loss
from trainer.grpo.rewards import Batch, PythonReward
from trainer.grpo.step import collect_batch, token_loss_mask
from trainer.grpo.update import Learner, UpdateBatch, optimize

torch.set_num_threads(1)
EPS_LO, EPS_HI, BETA, BUDGET = 0.2, 0.28, 0.04, 12


def reference_loss(rows, loss_type: str, level: str) -> float:
    """DeepSeekMath / DAPO / Dr. GRPO / GSPO from their definitions, in float64 Python, over each row's POLICY
    tokens only: rows = [(adv, [(logp, old, ref), ...]), ...]."""
    per_row, total_tokens, total = [], 0, 0.0
    for adv, toks in rows:
        seq = math.exp(sum(lp - old for lp, old, _ in toks) / max(1, len(toks)))
        terms = []
        for lp, old, ref in toks:
            rho = seq if level == "sequence" else math.exp(lp - old)
            clipped = min(max(rho, 1 - EPS_LO), 1 + EPS_HI)
            d = ref - lp
            terms.append(-min(rho * adv, clipped * adv) + BETA * (math.exp(d) - d - 1))
        per_row.append(sum(terms) / max(1, len(terms)))
        total += sum(terms)
        total_tokens += len(terms)
    if loss_type == "grpo":
        return sum(per_row) / len(rows)
    if loss_type == "token_mean":
        return total / max(1, total_tokens)
    return total / (len(rows) * BUDGET)  # dr_grpo: N * max_new_tokens


def _batch(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    n, c = 4, 10
    logp = -torch.rand(n, c, generator=g, dtype=torch.float64) * 3
    old = logp + 0.3 * torch.randn(n, c, generator=g, dtype=torch.float64)
    ref = logp + 0.5 * torch.randn(n, c, generator=g, dtype=torch.float64)
    adv = torch.randn(n, generator=g, dtype=torch.float64)
    length = torch.tensor([10, 7, 9, 4])
    completion = (torch.arange(c)[None] < length[:, None]).long()
    policy = completion.clone()
    policy[0, 3:6] = 0  # tool output spans
    policy[1, 1:4] = 0
    policy[2, 5:9] = 0
    return logp, old, ref, adv, completion, policy


def _loss(logp, old, ref, adv, mask, loss_type, level):
    cfg = LossConfig(BETA, EPS_LO, EPS_HI, loss_type, level, BUDGET)
    return grpo_loss(logp, old, ref, adv, mask, cfg)[0]


def assert_no_tool_gradient(loss_fn, logp, completion, policy) -> torch.Tensor:
    """The gradient of ``loss_fn(logp)`` at every tool-output token is exactly 0; returns the gradient."""
    x = logp.clone().requires_grad_(True)
    loss_fn(x).backward()
    tool = completion.bool() & ~policy.bool()
    assert bool(tool.any())
    leak = x.grad[tool].abs().max().item()
    assert leak == 0.0, f"tool-output tokens get gradient (max |grad| {leak:.3g})"
    return x.grad


CASES = [(t, lv) for t in ("grpo", "token_mean", "dr_grpo") for lv in ("token", "sequence")]


@pytest.mark.parametrize(("loss_type", "level"), CASES)
def test_masked_loss_equals_float64_reference_over_policy_tokens(loss_type, level):
    logp, old, ref, adv, completion, policy = _batch()
    mask = completion * policy
    got = _loss(logp, old, ref, adv, mask, loss_type, level)
    rows = [
        (
            float(adv[i]),
            [(float(logp[i, t]), float(old[i, t]), float(ref[i, t])) for t in range(logp.shape[1]) if mask[i, t]],
        )
        for i in range(len(adv))
    ]
    assert got.dtype == torch.float64
    assert got.item() == pytest.approx(reference_loss(rows, loss_type, level), rel=1e-12, abs=1e-12)
    # changing anything at tool tokens (the log-probs the policy never sampled) changes nothing
    noisy = [x.clone() for x in (logp, old, ref)]
    for x in noisy:
        x[~policy.bool()] += 5.0
    assert _loss(*noisy, adv, mask, loss_type, level).item() == pytest.approx(got.item(), rel=1e-12)


@pytest.mark.parametrize(("loss_type", "level"), CASES)
def test_tool_tokens_carry_zero_gradient_and_a_planted_leak_is_caught(loss_type, level):
    logp, old, ref, adv, completion, policy = _batch(1)
    grad = assert_no_tool_gradient(
        lambda x: _loss(x, old, ref, adv, completion * policy, loss_type, level), logp, completion, policy
    )
    assert grad[policy.bool()].abs().sum() > 0
    with pytest.raises(AssertionError, match="tool-output tokens get gradient"):  # the leak: the completion mask
        assert_no_tool_gradient(
            lambda x: _loss(x, old, ref, adv, completion, loss_type, level), logp, completion, policy
        )


def _update_grads(cfg, batch: Batch, mask: torch.Tensor, model) -> torch.Tensor:
    """Run trainer/grpo/update.py's optimize once; the gradient that reached each completion position's logits."""
    seen = []
    c = batch.rollout.completion_ids.shape[1]

    def keep(_m, _i, out):
        if out.requires_grad:
            out.register_hook(lambda gr: seen.append(gr[:, -(c + 1) : -1].detach().abs().sum(-1)))

    h = model.lm_head.register_forward_hook(keep)
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda _: 1.0)
    adv = torch.linspace(-1, 1, len(batch.rollout))
    ref = copy.deepcopy(model)
    from trainer.grpo.update import score_logprobs

    ref_lp = score_logprobs(ref, batch.rollout, cfg)
    try:
        optimize(cfg, Learner(model, opt, sched), UpdateBatch(batch, adv, mask, None, ref_lp))
    finally:
        h.remove()
    assert len(seen) == 1
    return seen[0]


@pytest.mark.parametrize("loss_type", ["grpo", "token_mean", "dr_grpo"])
def test_the_update_gives_tool_tokens_no_gradient_and_catches_a_leak(loss_type):
    model, tok = th.caller()
    model = copy.deepcopy(model)
    cfg = GRPOConfig(
        group_size=2,
        prompts_per_step=2,
        max_new_tokens=96,
        tools=ToolsConfig(),
        beta=BETA,
        loss_type=loss_type,
        fast_path=False,
        share_prefix=False,
    )
    batch = collect_batch(
        cfg, model, tok, DataStream(th.examples("a"), 0), PythonReward(lambda c, r: 1.0), tools=th.runner()
    )
    ro = batch.rollout
    tool = ro.completion_mask.bool() & ~ro.sampled_mask().bool()
    assert bool(tool.any())
    grads = _update_grads(cfg, batch, token_loss_mask(cfg, batch), model)
    assert grads[tool].max().item() == 0.0
    assert grads[ro.sampled_mask().bool()].sum().item() > 0
    leaky = _update_grads(cfg, batch, ro.completion_mask.clone(), model)  # the planted leak
    assert leaky[tool].max().item() > 0
