"""The GRPO objective against an independent float64 implementation written with plain loops,
and against the numbers TRL gives for the same inputs."""

from __future__ import annotations

import doctest
import itertools
import math

import pytest
import torch

import trainer.grpo.loss
from trainer.config import GRPOConfig
from trainer.grpo.loss import (
    LossConfig,
    group_advantages,
    grpo_loss,
    k3_kl,
    masked_group_advantages,
    minibatch_weight,
)
from trainer.rollout.sampling import token_entropy, token_logprobs

# ---------------------------------------------------------------------------------------------
# reference implementation: python floats / loops, float64 autograd only for the gradient
# ---------------------------------------------------------------------------------------------


def ref_advantages(rewards, g, scale, std, eps):
    n = len(rewards)
    ddof = 1 if std == "unbiased" else 0

    def sd(xs):
        m = sum(xs) / len(xs)
        return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - ddof))

    out = []
    for p in range(n // g):
        grp = rewards[p * g : (p + 1) * g]
        m = sum(grp) / g
        if all(x == grp[0] for x in grp):
            out += [0.0] * g
            continue
        denom = {"group": sd(grp) + eps, "batch": sd(rewards) + eps, "none": 1.0}[scale]
        out += [(x - m) / denom for x in grp]
    return out


def ref_loss(logp, old, ref, adv, mask, beta, lo, hi, loss_type, level, max_new_tokens=None):
    """logp: float64 (N, T) leaf tensor; everything else python lists. dr_grpo divides by N * max_new_tokens."""
    n, t = logp.shape
    rows, tok_sum, tok_count, kls, ratios = [], 0.0, 0.0, [], []
    for i in range(n):
        idx = [j for j in range(t) if mask[i][j]]
        seq_lr = sum(logp[i, j] - old[i][j] for j in idx) / max(len(idx), 1) if idx else logp[i, 0] * 0
        row = 0.0
        for j in idx:
            rho = torch.exp(seq_lr) if level == "sequence" else torch.exp(logp[i, j] - old[i][j])
            surr = torch.minimum(rho * adv[i], torch.clamp(rho, 1 - lo, 1 + hi) * adv[i])
            d = ref[i][j] - logp[i, j]
            kl = torch.exp(d) - d - 1
            term = -surr + beta * kl
            row = row + term
            tok_sum = tok_sum + term
            tok_count += 1
            kls.append(kl.item())
            ratios.append(rho.item())
        rows.append(row / max(len(idx), 1))
    if loss_type == "grpo":
        loss = sum(rows) / n
    elif loss_type == "token_mean":
        loss = tok_sum / max(tok_count, 1)
    else:
        loss = tok_sum / (n * max_new_tokens)
    return loss, sum(kls) / max(len(kls), 1), sum(ratios) / max(len(ratios), 1)


# ---------------------------------------------------------------------------------------------


def test_trl_fixture_advantages():
    adv = group_advantages(torch.tensor([1.0, 0.0]), 2, std="unbiased")
    assert adv.tolist() == pytest.approx([0.70701, -0.70701], abs=1e-5)


def test_trl_fixture_k3():
    assert k3_kl(torch.tensor(-1.0), torch.tensor(-1.2)).item() == pytest.approx(0.018731, abs=1e-6)


@pytest.mark.parametrize(
    "scale,std,rewards,g",
    [
        ("group", "population", [1, 0, 0, 1, 1, 1, 0.5, 0.2, 0.9, 0.0, 0.0, 0.0], 3),
        ("group", "unbiased", [1, 0, 0, 1, 1, 1, 0.5, 0.2, 0.9, 0.0, 0.0, 0.0], 3),
        ("batch", "population", [1, 0, 0, 1, 1, 1, 0.5, 0.2], 4),
        ("batch", "unbiased", [1, 0, 0, 1, 1, 1, 0.5, 0.2], 2),
        ("none", "population", [1, 0, 0.3, 0.3, 0.7, 0.1], 2),
    ],
)
def test_advantages_match_reference(scale, std, rewards, g):
    got = group_advantages(torch.tensor(rewards, dtype=torch.float64), g, scale=scale, std=std)
    assert got.tolist() == pytest.approx(ref_advantages(rewards, g, scale, std, 1e-4), abs=1e-6)


def test_zero_variance_group_is_exactly_zero():
    adv = group_advantages(torch.tensor([0.1, 0.1, 0.1, 0.7, 0.7, 0.7]), 3)
    assert adv.tolist() == [0.0] * 6


def test_advantages_reject_bad_shape():
    with pytest.raises(ValueError, match="divisible"):
        group_advantages(torch.zeros(5), 2)


def _inputs(seed, n=6, t=7, full_row_masked=False):
    g = torch.Generator().manual_seed(seed)
    logp = -torch.rand(n, t, generator=g, dtype=torch.float64) * 3
    old = logp + torch.randn(n, t, generator=g, dtype=torch.float64) * 0.3  # ratios on both sides of the clip
    ref = logp + torch.randn(n, t, generator=g, dtype=torch.float64) * 0.5
    adv = torch.randn(n, generator=g, dtype=torch.float64)
    lengths = torch.randint(1, t + 1, (n,), generator=g)
    mask = (torch.arange(t)[None, :] < lengths[:, None]).to(torch.float64)
    if full_row_masked:
        mask[1] = 0
    return logp, old, ref, adv, mask


BUDGET = 11  # the generation budget (max_new_tokens) dr_grpo divides by; wider than any mask here

CASES = list(
    itertools.product(
        ["grpo", "token_mean", "dr_grpo"], ["token", "sequence"], [0.0, 0.04, 0.5], [(0.2, 0.2), (0.2, 0.28)]
    )
)


@pytest.mark.parametrize("loss_type,level,beta,clip", CASES)
@pytest.mark.parametrize("full_row_masked", [False, True])
def test_loss_values_and_gradients_match_float64_reference(loss_type, level, beta, clip, full_row_masked):
    logp, old, ref, adv, mask = _inputs(CASES.index((loss_type, level, beta, clip)), full_row_masked=full_row_masked)
    lo, hi = clip
    a = logp.clone().requires_grad_(True)
    cfg = LossConfig(beta, lo, hi, loss_type, level, BUDGET)
    loss, stats = grpo_loss(a, old, ref, adv, mask, cfg)
    loss.backward()

    b = logp.clone().requires_grad_(True)
    want, want_kl, want_ratio = ref_loss(
        b, old.tolist(), ref.tolist(), adv.tolist(), mask.tolist(), beta, lo, hi, loss_type, level, BUDGET
    )
    want.backward()
    assert loss.item() == pytest.approx(want.item(), abs=1e-6)
    assert torch.allclose(a.grad, b.grad, atol=1e-6, rtol=0)
    assert stats["ratio/mean"].item() == pytest.approx(want_ratio, abs=1e-6)
    assert stats["kl"].item() == pytest.approx(want_kl, abs=1e-6)


def test_float32_inputs_match_float64_within_tolerance():
    logp, old, ref, adv, mask = _inputs(3)
    l64, _ = grpo_loss(logp, old, ref, adv, mask)
    l32, _ = grpo_loss(logp.float(), old.float(), ref.float(), adv.float(), mask.float())
    assert l32.item() == pytest.approx(l64.item(), abs=1e-6)


def test_old_none_means_ratio_one_and_policy_gradient():
    logp, _, _, adv, mask = _inputs(4)
    a = logp.clone().requires_grad_(True)
    loss, stats = grpo_loss(a, None, None, adv, mask, beta=0.0)
    loss.backward()
    assert stats["ratio/mean"].item() == pytest.approx(1.0)
    assert stats["clip_ratio/region"].item() == 0.0
    # gradient of -mean_i(1/|o_i| sum_t A_i logp_it) w.r.t. logp_it = -A_i / (|o_i| N)
    want = -adv[:, None] * mask / mask.sum(1, keepdim=True) / mask.shape[0]
    assert torch.allclose(a.grad, want, atol=1e-12)


def test_beta_without_reference_is_an_error():
    logp, _, _, adv, mask = _inputs(5)
    with pytest.raises(ValueError, match="ref_logprobs"):
        grpo_loss(logp, None, None, adv, mask, beta=0.04)


def test_clip_ratio_counts():
    logp = torch.log(torch.tensor([[1.5, 0.5, 1.0]]))  # rho = 1.5, 0.5, 1.0 against old = 0
    old = torch.zeros(1, 3)
    mask = torch.ones(1, 3)
    _, pos = grpo_loss(logp, old, None, torch.tensor([1.0]), mask, beta=0.0)
    _, neg = grpo_loss(logp, old, None, torch.tensor([-1.0]), mask, beta=0.0)
    assert pos["clip_ratio/high"].item() == pytest.approx(1 / 3) and pos["clip_ratio/low"].item() == 0
    assert neg["clip_ratio/low"].item() == pytest.approx(1 / 3) and neg["clip_ratio/high"].item() == 0


@pytest.mark.parametrize("loss_type", ["grpo", "token_mean", "dr_grpo"])
def test_minibatch_weights_reassemble_the_full_batch_gradient(loss_type):
    logp, old, ref, adv, mask = _inputs(6, n=8)
    full = logp.clone().requires_grad_(True)
    grpo_loss(full, old, ref, adv, mask, loss_type=loss_type, max_new_tokens=BUDGET)[0].backward()
    acc = logp.clone().requires_grad_(True)
    for s in (slice(0, 3), slice(3, 8)):
        loss, _ = grpo_loss(acc[s], old[s], ref[s], adv[s], mask[s], loss_type=loss_type, max_new_tokens=BUDGET)
        (loss * minibatch_weight(loss_type, mask[s], mask)).backward()
    assert torch.allclose(full.grad, acc.grad, atol=1e-12)


def _pad(x, extra, value=0.0):
    return torch.nn.functional.pad(x, (0, extra), value=value)


@pytest.mark.parametrize("loss_type", ["grpo", "token_mean", "dr_grpo"])
def test_loss_does_not_change_with_longer_padding(loss_type):
    """Padding is not data: a batch padded wider (a longer completion elsewhere) has the same loss.
    dr_grpo divides by a fixed N * max_new_tokens, never by the padded width N*T, which changes with the
    batch's longest completion."""
    logp, old, ref, adv, mask = _inputs(7)
    narrow, _ = grpo_loss(logp, old, ref, adv, mask, loss_type=loss_type, max_new_tokens=BUDGET)
    wide, _ = grpo_loss(
        _pad(logp, 4), _pad(old, 4), _pad(ref, 4), adv, _pad(mask, 4), loss_type=loss_type, max_new_tokens=BUDGET
    )
    assert wide.item() == pytest.approx(narrow.item(), abs=1e-12)


def test_dr_grpo_needs_the_generation_budget():
    logp, old, ref, adv, mask = _inputs(8)
    with pytest.raises(ValueError, match="max_new_tokens"):
        grpo_loss(logp, old, ref, adv, mask, loss_type="dr_grpo")
    with pytest.raises(ValueError, match="max_new_tokens"):
        grpo_loss(logp, old, ref, adv, mask, loss_type="dr_grpo", max_new_tokens=mask.shape[1] - 1)


@pytest.mark.parametrize("scale,std", [("group", "population"), ("group", "unbiased"), ("batch", "population")])
def test_invalid_members_leave_the_valid_members_their_own_group_statistics(scale, std):
    """2 of 8 members failed in the sandbox: the other 6 get exactly the advantages of a 6-member group
    (mean and std over the valid members only), the failed ones 0, whatever reward they carry."""
    g = torch.Generator().manual_seed(0)
    rewards = torch.rand(16, generator=g, dtype=torch.float64)
    valid = torch.ones(16, dtype=torch.bool)
    valid[[1, 6, 9, 10]] = False  # two invalid in each group of 8
    rewards[~valid] = torch.tensor([0.0, 5.0, -3.0, 0.0], dtype=torch.float64)  # placeholders must not matter
    got = group_advantages(rewards, 8, valid=valid, scale=scale, std=std)
    valid_rewards = rewards[valid].tolist()
    want = ref_advantages(valid_rewards, 6, scale, std, 1e-4)
    assert got[valid].tolist() == pytest.approx(want, abs=1e-9)
    assert got[~valid].tolist() == [0.0] * 4


def test_a_group_with_at_most_one_valid_member_gets_zero():
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, 0.0, 1.0])
    valid = torch.tensor([True, False, False, False, False, False])
    assert group_advantages(rewards, 3, valid=valid, std="unbiased").tolist() == [0.0] * 6


def test_sandbox_errors_get_zero_advantage_and_do_not_move_the_group_mean():
    cfg = GRPOConfig(group_size=4, prompts_per_step=1)
    valid = torch.tensor([True, True, False, True])
    adv = masked_group_advantages(cfg, torch.tensor([1.0, 0.0, 0.0, 1.0]), valid)
    assert adv[2] == 0 and adv[0] > 0 > adv[1] and adv[0] == adv[3]


@pytest.mark.parametrize(
    "scale,std", [("group", "population"), ("group", "unbiased"), ("batch", "unbiased"), ("none", "population")]
)
def test_masked_group_advantages_follow_the_config(scale, std):
    """The config's group size, scale and std reach group_advantages; a 0/1 (int) valid mask works as bool."""
    cfg = GRPOConfig(group_size=3, prompts_per_step=2, scale_rewards=scale, std=std)
    rewards = torch.tensor([0.2, 0.9, 0.4, 1.0, 0.0, 7.0], dtype=torch.float64)
    valid = torch.tensor([1, 1, 1, 1, 1, 0])
    got = masked_group_advantages(cfg, rewards, valid)
    want = group_advantages(rewards, 3, valid=valid.bool(), scale=scale, std=std)
    assert got.tolist() == want.tolist() and got[5] == 0.0
    others = GRPOConfig(group_size=3, prompts_per_step=2, scale_rewards="group" if scale != "group" else "none")
    assert masked_group_advantages(others, rewards, valid).tolist() != got.tolist()  # the config is not ignored


def test_docstring_examples_of_the_loss_module_hold():
    result = doctest.testmod(trainer.grpo.loss, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 3 and result.failed == 0


def test_token_logprobs_and_entropy():
    logits = torch.randn(2, 3, 5, dtype=torch.float64)
    targets = torch.randint(0, 5, (2, 3))
    want = torch.log_softmax(logits / 0.7, -1).gather(-1, targets[..., None])[..., 0]
    assert torch.allclose(token_logprobs(logits, targets, 0.7).double(), want, atol=1e-6)
    p = torch.softmax(logits, -1)
    assert torch.allclose(token_entropy(logits).double(), -(p * p.log()).sum(-1), atol=1e-6)


@pytest.mark.parametrize("loss_type", ["grpo", "token_mean", "dr_grpo"])
@pytest.mark.parametrize("level", ["token", "sequence"])
def test_tis_weights_every_token_term_by_the_capped_ratio(loss_type, level):
    """A sampler whose log-prob is log(pi_old) - log(k) on every token: ratio k, so the loss (surrogate and
    k3 alike) and its gradient are k times the unweighted ones, or cap times them when k exceeds the cap."""
    logp, old, ref, adv, mask = _inputs(7)
    kw = dict(beta=0.04, loss_type=loss_type, importance_level=level, max_new_tokens=BUDGET)

    def run(**tis):
        a = logp.clone().requires_grad_(True)
        loss, _ = grpo_loss(a, old, ref, adv, mask, **kw, **tis)
        loss.backward()
        return loss.detach(), a.grad

    base, g0 = run()
    for k, cap, want in [(1.5, 2.0, 1.5), (0.25, 2.0, 0.25), (3.0, 2.0, 2.0)]:
        loss, g = run(sample_logprobs=old - math.log(k), tis_cap=cap)
        assert loss.item() == pytest.approx(want * base.item(), rel=1e-9)
        assert torch.allclose(g, want * g0, atol=1e-12)
    same, g1 = run(sample_logprobs=old, tis_cap=2.0)  # the sampler is pi_old: weights of exactly 1
    assert same.item() == base.item() and torch.equal(g1, g0)


def test_loss_config_takes_a_grpo_configs_loss_fields():
    cfg = GRPOConfig(
        beta=0.1,
        clip_eps_low=0.1,
        clip_eps_high=0.28,
        loss_type="dr_grpo",
        importance_level="sequence",
        max_new_tokens=64,
        tis="on",
        tis_cap=3.0,
    )
    assert LossConfig.of(cfg) == LossConfig(0.1, 0.1, 0.28, "dr_grpo", "sequence", 64, 3.0)
    assert LossConfig.of(GRPOConfig()).tis_cap is None  # tis "auto" on the hf backend: off
    assert LossConfig.of(GRPOConfig()) == LossConfig(max_new_tokens=GRPOConfig().max_new_tokens)  # same defaults


def test_a_change_for_one_call_equals_the_config_that_holds_it():
    logp, old, ref, adv, mask = _inputs(3)
    base = LossConfig(beta=0.04, loss_type="dr_grpo", max_new_tokens=BUDGET)
    changed, _ = grpo_loss(logp, old, ref, adv, mask, base, beta=0.5, clip_eps_high=0.28)
    held, _ = grpo_loss(logp, old, ref, adv, mask, LossConfig(0.5, 0.2, 0.28, "dr_grpo", "token", BUDGET))
    assert changed.item() == held.item() and changed.item() != grpo_loss(logp, old, ref, adv, mask, base)[0].item()
    with pytest.raises(TypeError, match="clip_eps"):
        grpo_loss(logp, old, ref, adv, mask, base, clip_eps=0.3)
