"""The gap between the policy that sampled a batch and the one that trains on it: measured every step and
corrected by truncated importance sampling (trainer/grpo/loss.py ``tis_weights``, ``mismatch_stats``).

- On a bandit whose samples come from a deliberately perturbed sampler q (not pi_old), the expected
  gradient of the TIS-weighted GRPO loss is the on-policy one (exactly while no ratio reaches the cap,
  and much closer than the unweighted loss's with the default cap of 2); a Monte Carlo batch says the same.
- Through ``run_step``: the CPU default's sampler is the training forward to ~1e-6 (metrics say so, and
  TIS changes nothing there); a rollout backend sampling at another temperature shows a large gap, which
  the TIS metrics report; a backend that records no log-probs is refused when TIS is on.
- Rollouts sample in the training forward's precision: bf16 autocast sampling when training autocasts.
- top_p < 1: the recorded log-prob is of the nucleus, so pi_old/pi_sample is the kept mass, <= 1.
- Dynamic sampling's refills keep the sampler's log-probs; vLLM's reported log-probs reach the Rollout.
"""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from tests.trainer.test_rollout import tiny_model, tiny_tokenizer
from trainer.config import GRPOConfig
from trainer.data import DataStream, Example
from trainer.errors import ConfigError
from trainer.grpo.loss import grpo_loss, mismatch_stats, tis_weights
from trainer.grpo.rewards import PythonReward
from trainer.grpo.step import StepParts, concat_rollouts, rollout_dtype, run_step
from trainer.grpo.update import score_logprobs
from trainer.policy import make_optimizer, make_reference, seed_everything
from trainer.rollout.decode import Rollout, generate_rollout
from trainer.rollout.vllm import rollout_from_ids, sampled_logprobs
from trainer.run.metrics import MetricsLogger

torch.set_num_threads(1)
K = 8  # bandit arms


def _bandit(seed: int = 0):
    """pi = softmax(theta), a reference policy, rewards per arm, and a perturbed sampler q = softmax(theta + d)."""
    g = torch.Generator().manual_seed(seed)
    theta = torch.randn(K, generator=g, dtype=torch.float64)
    ref = theta + 0.3 * torch.randn(K, generator=g, dtype=torch.float64)
    reward = torch.rand(K, generator=g, dtype=torch.float64)
    q_logits = theta + 0.8 * torch.randn(K, generator=g, dtype=torch.float64)
    return theta, ref, reward, q_logits


def _grad_per_arm(theta, ref, reward, log_q, arm: int, beta: float, cap: float | None) -> torch.Tensor:
    """d/dtheta of the GRPO loss of one sample (arm drawn, its sampler log-prob log_q[arm]) on one token."""
    t = theta.clone().requires_grad_(True)
    logp = torch.log_softmax(t, 0)
    base = (torch.softmax(theta, 0) * reward).sum()  # a fixed baseline: E_pi[r]
    loss, _ = grpo_loss(
        logp[arm].view(1, 1),
        None,  # mu == 1: pi_old is pi_theta
        torch.log_softmax(ref, 0)[arm].view(1, 1),
        (reward[arm] - base).view(1),
        torch.ones(1, 1, dtype=torch.float64),
        beta=beta,
        sample_logprobs=log_q[arm].view(1, 1),
        tis_cap=cap,
    )
    loss.backward()
    return t.grad


def _expected_grad(theta, ref, reward, q_logits, beta: float, cap: float | None) -> torch.Tensor:
    """E_{a ~ q}[grad of the loss of sample a]: the exact expectation over the sampler's arms."""
    q = torch.softmax(q_logits, 0)
    log_q = torch.log_softmax(q_logits, 0)
    return sum(q[a] * _grad_per_arm(theta, ref, reward, log_q, a, beta, cap) for a in range(K))


@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_tis_turns_a_perturbed_samplers_expected_gradient_into_the_on_policy_one(beta):
    theta, ref, reward, q_logits = _bandit()
    on_policy = _expected_grad(theta, ref, reward, theta, beta, None)  # samples from pi_old itself
    plain = _expected_grad(theta, ref, reward, q_logits, beta, None)
    exact = _expected_grad(theta, ref, reward, q_logits, beta, 1e9)  # a cap no ratio reaches
    capped = _expected_grad(theta, ref, reward, q_logits, beta, 2.0)
    ratios = torch.softmax(theta, 0) / torch.softmax(q_logits, 0)
    assert ratios.max() > 2.0 and ratios.min() < 0.5  # the sampler is far off, and the default cap binds

    def err(g):
        return float((g - on_policy).norm() / on_policy.norm())

    assert err(plain) > 0.3  # the perturbation matters: without TIS the expected gradient is wrong
    assert err(exact) < 1e-9  # untruncated IS: the on-policy gradient exactly
    assert err(capped) < 0.5 * err(plain)  # truncation at 2 leaves a bias, much smaller than none


def test_tis_on_a_sampled_batch_lands_closer_to_the_on_policy_gradient():
    theta, ref, reward, q_logits = _bandit()
    on_policy = _expected_grad(theta, ref, reward, theta, 0.0, None)
    gen = torch.Generator().manual_seed(0)
    arms = torch.multinomial(torch.softmax(q_logits, 0), 20000, replacement=True, generator=gen)  # (N,)
    base = (torch.softmax(theta, 0) * reward).sum()

    def batch_grad(cap):
        t = theta.clone().requires_grad_(True)
        logp = torch.log_softmax(t, 0)[arms][:, None]  # (N, 1)
        adv = reward[arms] - base  # (N,)
        sample = torch.log_softmax(q_logits, 0)[arms][:, None]  # (N, 1)
        loss, _ = grpo_loss(logp, None, None, adv, torch.ones_like(logp), beta=0.0, sample_logprobs=sample, tis_cap=cap)
        loss.backward()
        return t.grad

    err_plain = float((batch_grad(None) - on_policy).norm() / on_policy.norm())
    err_tis = float((batch_grad(2.0) - on_policy).norm() / on_policy.norm())
    err_is = float((batch_grad(1e9) - on_policy).norm() / on_policy.norm())
    assert err_tis < 0.5 * err_plain and err_is < 0.5 * err_plain, (err_tis, err_is, err_plain)


def test_tis_weights_and_mismatch_stats_follow_their_definitions():
    old = torch.tensor([[-1.0, -2.0, -0.5, -3.0]])
    sample = torch.tensor([[-1.0, -0.5, -2.0, float("nan")]])
    mask = torch.tensor([[1, 1, 1, 0]])
    w = tis_weights(old, sample, 2.0)
    assert torch.allclose(w, torch.tensor([[1.0, math.exp(-1.5), 2.0, 1.0]]))
    s = mismatch_stats(old, sample, mask, 2.0)
    assert s["mismatch/logp_abs_mean"] == pytest.approx(1.0) and s["mismatch/logp_abs_max"] == pytest.approx(1.5)
    assert s["mismatch/logp_diff_mean"] == pytest.approx(0.0)
    assert s["mismatch/tis_capped_frac"] == pytest.approx(1 / 3)
    assert s["mismatch/tis_weight_mean"] == pytest.approx((1 + math.exp(-1.5) + 2) / 3)
    assert "mismatch/tis_weight_mean" not in mismatch_stats(old, sample, mask)
    with pytest.raises(ValueError, match="sample_logprobs"):
        grpo_loss(old, None, None, torch.ones(1), mask, beta=0.0, tis_cap=2.0)


# ---------------------------------------------------------------------------------------------
# through run_step
# ---------------------------------------------------------------------------------------------

EXAMPLES = [Example(f"{i}+{i}=", str(2 * i)) for i in range(6)]


class TemperatureSampler:
    """A rollout backend that samples from another distribution than the trainer scores (temperature x
    ``factor``) and records that distribution's log-probs, as an inference engine with its own kernels would."""

    name = "perturbed"

    def __init__(self, model, tok, factor: float, record: bool = True):
        self.model, self.tok, self.factor, self.record = model, tok, factor, record

    def generate(self, examples, group_size, **kw) -> Rollout:
        kw["temperature"] = kw["temperature"] * self.factor
        ro = generate_rollout(self.model, self.tok, examples, group_size, **kw)
        if not self.record:
            ro.sample_logprobs = None
        return ro

    def sync_weights(self, model) -> None: ...

    def close(self) -> None: ...


def _parts(run_dir: Path, backend_factor: float | None = None, record: bool = True, **over) -> StepParts:
    seed_everything(0)
    tok = tiny_tokenizer()
    model = tiny_model(tok, seed=0)
    cfg = GRPOConfig(
        group_size=4,
        prompts_per_step=2,
        max_new_tokens=6,
        lr=3e-3,
        beta=0.04,
        steps=2,
        seed=0,
        log_completions_every=0,
        **over,
    )
    optimizer, scheduler = make_optimizer(cfg, model)
    backend = None if backend_factor is None else TemperatureSampler(model, tok, backend_factor, record)
    return StepParts(
        cfg=cfg,
        model=model,
        tokenizer=tok,
        ref=make_reference(cfg, model),
        optimizer=optimizer,
        scheduler=scheduler,
        data=DataStream(EXAMPLES, 0),
        reward_fn=PythonReward(_reward),
        logger=MetricsLogger(run_dir, report_to=[]),
        backend=backend,
    )


def _reward(completion: str, reference: str) -> float:
    return float(len(completion) % 2)


@pytest.mark.parametrize("mu,minibatches", [(1, 1), (2, 2)])
def test_the_cpu_default_samples_the_distribution_it_trains_and_tis_is_off(tmp_path, mu, minibatches):
    m = run_step(_parts(tmp_path, mu=mu, minibatches=minibatches), 1)
    assert m["mismatch/logp_abs_max"] < 1e-4  # lean decode vs the training forward: float rounding only
    assert "mismatch/tis_weight_mean" not in m  # tis: auto is off for the hf backend
    on = run_step(_parts(tmp_path / "on", tis="on", mu=mu, minibatches=minibatches), 1)
    assert on["mismatch/tis_weight_mean"] == pytest.approx(1.0, abs=1e-4) and on["mismatch/tis_capped_frac"] == 0
    assert on["policy/grad_norm"] == pytest.approx(m["policy/grad_norm"], rel=1e-5)  # weights of 1: same gradient


def test_a_perturbed_sampler_is_measured_and_weighted(tmp_path):
    off = run_step(_parts(tmp_path / "off", backend_factor=2.0, tis="off"), 1)
    on = run_step(_parts(tmp_path / "on", backend_factor=2.0, tis="on", tis_cap=1.5), 1)
    assert off["mismatch/logp_abs_mean"] > 0.01  # ~1e-7 when the sampler is the trainer; here twice its temperature
    assert on["mismatch/logp_abs_mean"] == off["mismatch/logp_abs_mean"]  # same seed, same samples
    assert on["mismatch/logp_abs_max"] >= on["mismatch/logp_abs_mean"]
    assert 0 < on["mismatch/tis_weight_mean"] <= 1.5 and 0 < on["mismatch/tis_capped_frac"] < 1
    assert on["policy/grad_norm"] != pytest.approx(off["policy/grad_norm"], rel=1e-2)  # the weights act


def test_tis_needs_a_sampler_that_records_log_probs(tmp_path):
    p = _parts(tmp_path, backend_factor=1.0, record=False, tis="on")
    with pytest.raises(ConfigError, match="tis: off"):
        run_step(p, 1)
    m = run_step(_parts(tmp_path / "off", backend_factor=1.0, record=False, tis="off"), 1)
    assert not any(k.startswith("mismatch/") for k in m)  # nothing recorded, nothing to measure


def test_tis_auto_is_on_for_vllm_only_and_config_is_validated():
    assert not GRPOConfig().tis_on and GRPOConfig(rollout_backend="vllm").tis_on
    assert not GRPOConfig(rollout_backend="vllm", tis="off").tis_on and GRPOConfig(tis="on").tis_on
    assert GRPOConfig().tis_cap == 2.0
    with pytest.raises(ValueError, match="tis_cap"):
        GRPOConfig(tis_cap=0.5)
    with pytest.raises(ValueError, match="rollout_dtype=float32"):
        GRPOConfig(dtype="bfloat16", rollout_dtype="float32")


# ---------------------------------------------------------------------------------------------
# precision, refills, engines
# ---------------------------------------------------------------------------------------------


def test_rollouts_sample_in_the_training_precision_unless_told_otherwise():
    cpu = torch.device("cpu")
    assert rollout_dtype(GRPOConfig(), cpu) == torch.float32  # CPU default: fp32 throughout
    assert rollout_dtype(GRPOConfig(autocast="bf16"), cpu) == torch.bfloat16  # training autocasts: so does sampling
    assert rollout_dtype(GRPOConfig(autocast="bf16", rollout_dtype="float32"), cpu) == torch.float32
    assert rollout_dtype(GRPOConfig(dtype="bfloat16"), cpu) == torch.bfloat16


def test_bf16_training_samples_in_bf16(tmp_path):
    """Training under bf16 autocast: sampling in bf16 too (the default) is closer to pi_old than fp32 sampling."""
    same = run_step(_parts(tmp_path / "a", autocast="bf16"), 1)
    fp32 = run_step(_parts(tmp_path / "b", autocast="bf16", rollout_dtype="float32"), 1)
    assert same["mismatch/logp_abs_mean"] < 0.5 * fp32["mismatch/logp_abs_mean"], (same, fp32)


def test_dynamic_sampling_refills_keep_the_sampler_log_probs():
    tok = tiny_tokenizer()
    model = tiny_model(tok)
    torch.manual_seed(0)
    a = generate_rollout(model, tok, EXAMPLES[:1], 2, max_new_tokens=3)
    b = generate_rollout(model, tok, EXAMPLES[1:3], 2, max_new_tokens=6)
    both = concat_rollouts([a, b], tok.pad_token_id)
    assert both.sample_logprobs is not None and both.sample_logprobs.shape == both.completion_ids.shape
    assert torch.equal(both.sample_logprobs[:2, : a.sample_logprobs.shape[1]], a.sample_logprobs)
    assert torch.equal(both.sample_logprobs[2:, : b.sample_logprobs.shape[1]], b.sample_logprobs)


def test_engine_log_probs_reach_the_rollout_nan_where_not_reported():
    tok = tiny_tokenizer()
    x, eos = tok.convert_tokens_to_ids("x"), tok.eos_token_id
    reported = [{x: SimpleNamespace(logprob=-0.25)}, {eos: SimpleNamespace(logprob=-1.5)}]
    assert sampled_logprobs([x, eos], reported) == [-0.25, -1.5]
    assert all(math.isnan(v) for v in sampled_logprobs([x, x], None))
    ro = rollout_from_ids(
        tok, EXAMPLES[:1], 2, [[x]], [[x, eos], [x]], [eos], sample_logprobs=[[-0.25, -1.5], [math.nan]]
    )
    assert ro.sample_logprobs[0].tolist() == [-0.25, -1.5] and math.isnan(ro.sample_logprobs[1, 0])
    assert ro.sample_logprobs[1, 1] == 0.0  # past the row's end


def test_top_p_samples_log_probs_of_the_nucleus_so_every_weight_is_its_kept_mass():
    """With top_p < 1 the recorded log-prob is the token's under the truncated, renormalised distribution:
    log pi_sample = log pi_old - log Z_t, Z_t <= 1 the nucleus mass at that position. So pi_old/pi_sample is
    Z_t on every token: TIS scales each token's term down by its position's kept mass, never up."""
    tok = tiny_tokenizer()
    model = tiny_model(tok)
    torch.manual_seed(0)
    ro = generate_rollout(model, tok, EXAMPLES, 4, max_new_tokens=6, top_p=0.7)
    cfg = GRPOConfig(group_size=4, prompts_per_step=6, top_p=0.7)
    old = score_logprobs(model, ro, cfg)  # (N, C) pi_old: the full softmax at the temperature
    m = ro.completion_mask.bool()
    ratio = torch.exp(old - ro.sample_logprobs)[m]  # Z_t per token
    assert (ratio <= 1 + 1e-5).all() and (ratio > 0.7 - 1e-5).all()  # a nucleus holds top_p or more
    assert ratio.min() < 0.99  # and here it truncates something
    stats = mismatch_stats(old, ro.sample_logprobs, ro.completion_mask, 2.0)
    assert stats["mismatch/logp_diff_mean"] < 0 and stats["mismatch/tis_capped_frac"] == 0.0
