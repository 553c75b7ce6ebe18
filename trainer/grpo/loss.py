"""GRPO objective as pure functions: group advantages, the clipped surrogate, the k3 KL penalty.

References
- GRPO: DeepSeekMath, Shao et al. 2024, eq. 3 and sec. 4.1.2  https://arxiv.org/abs/2402.03300
- k3 KL estimator: http://joschu.net/blog/kl-approx.html  (unbiased, always >= 0)
- DAPO (token-mean loss, clip-higher, dynamic sampling): https://arxiv.org/abs/2503.14476
- Dr. GRPO (no std scaling, constant normaliser): https://arxiv.org/abs/2503.20783
- GSPO (sequence-level importance ratio): https://arxiv.org/abs/2507.18071
- Truncated importance sampling for the sampler/trainer gap (Yao et al. 2025, "Your efficient RL framework
  secretly brings you off-policy RL training"): https://fengyao.notion.site/off-policy-rl

Departures from the paper, all optional and off by default:
- ``eps`` is added to the std (1e-4, as TRL), so a group with a tiny spread does not explode;
  a group whose rewards are all equal gets advantages of exactly 0.
- A completion whose mask is all zero (e.g. the verifier's sandbox failed) contributes 0 to the
  loss and still counts in the mean over completions (``clamp(min=1)`` as TRL), so masking a
  sample scales the step by (N-1)/N instead of changing the other samples' weights.
- Truncated importance sampling (``tis_cap``, off unless asked): each token's whole loss term (surrogate
  and k3 alike) is weighted by min(pi_old / pi_sample, C), detached, where pi_sample is the log-prob the
  sampler recorded. TRL and verl weight the surrogate only; here the k3 estimate, taken on the same
  samples, is corrected the same way, so the objective is GRPO's expectation over pi_old's samples.

Process supervision (DeepSeekMath sec. 4.1.3), ``advantage: process``: per-token advantages from per-step rewards.

A verifier that returns step rewards (``VerifyResponse.steps``: a reward and the character span
``completion[start:end]`` of each step, e.g. the built-in ``arith_steps``) lets the trainer run with
``advantage: process``. For the G outputs of a group:

1. every step reward of every (valid) output of the group is normalised together:
   r~ = (r - mean) / (std + eps), mean and std over all those step rewards;
2. the advantage of token t of output i is the sum of the normalised rewards of the steps of output i
   that end at or after t:  A_{i,t} = sum_{j : index(j) >= t} r~_i^{index(j)}.

``index(j)`` is the token where step j ends. Character spans are mapped to tokens by decode-prefix
lengths, which is exact for any tokenizer: token k of the completion covers the characters
``[len(decode(ids[:k])), len(decode(ids[:k+1])))`` of the text the verifier graded (the same
``decode(..., skip_special_tokens=True)`` the rollout made). A step ending at character ``end``
(exclusive) ends at the token that holds its last character ``end - 1``: the first k with
``len(decode(ids[:k+1])) >= end``. A step that ends inside a token therefore counts for that token.
The lookup is a binary search (prefix lengths only grow), O(log C) decodes per step.

Where this departs from the paper (switchable): ``process_outcome_step`` (default on) appends the
verdict's overall reward as one more step that ends at the completion's last token (its EOS). The
paper's reward model scores the final step, answer included; ``arith_steps`` scores only the written
steps, so without it an output with no gradable step (``<think>estimate</think><answer>20</answer>``)
and the final answer itself would get no signal. With it off, exactly the steps the verifier returned.

Outputs graded SANDBOX_ERROR / BAD_REFERENCE (``valid`` False) are left out of the statistics and get
advantage 0, as in outcome mode. A group whose step rewards are all equal (or that has fewer than two
step rewards) gets advantage 0 everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from trainer.config.grpo import ImportanceLevel, LossType, Scale, Std, weighs_tokens

if TYPE_CHECKING:
    from trainer.config import GRPOConfig


def group_advantages(
    rewards: Tensor,
    group_size: int,
    *,
    valid: Tensor | None = None,
    scale: Scale = "group",
    std: Std = "population",
    eps: float = 1e-4,
) -> Tensor:
    """A_i = (r_i - mean_g) / (std + eps) for the G contiguous completions of each prompt.

    ``valid`` (N,) bool marks the members that were graded (not SANDBOX_ERROR / BAD_REFERENCE): mean and
    std are taken over a group's valid members only, so the others' placeholder rewards change nothing,
    and invalid members get 0. A group whose valid rewards are all equal (or with fewer than two valid
    members) gets 0. ``scale="batch"`` takes the std over every valid reward of the batch.

    >>> group_advantages(torch.tensor([1.0, 0.0]), 2, std="unbiased")
    tensor([ 0.7070, -0.7070])
    >>> group_advantages(torch.tensor([1.0, 0.0, 9.0]), 3, valid=torch.tensor([True, True, False]), std="unbiased")
    tensor([ 0.7070, -0.7070,  0.0000])
    """
    if rewards.dim() != 1 or rewards.numel() % group_size != 0:
        raise ValueError(
            f"rewards must be (N,) with N divisible by group_size={group_size}, got {tuple(rewards.shape)}"
        )
    if valid is None:
        valid = torch.ones_like(rewards, dtype=torch.bool)
    if valid.shape != rewards.shape:
        raise ValueError(f"valid must have the shape of rewards {tuple(rewards.shape)}, got {tuple(valid.shape)}")
    correction = 1 if std == "unbiased" else 0
    ok = valid.view(-1, group_size)  # (P, G) bool
    w = ok.to(rewards.dtype)  # (P, G)
    r = torch.where(ok, rewards.view(-1, group_size), torch.zeros((), dtype=rewards.dtype))  # (P, G)
    n = w.sum(dim=1, keepdim=True)  # (P, 1) valid members per group
    mean = r.sum(dim=1, keepdim=True) / n.clamp(min=1)  # (P, 1)
    centred = torch.where(ok, r - mean, torch.zeros_like(r))  # (P, G), exactly 0 for invalid members
    hi = torch.where(ok, r, torch.full_like(r, -torch.inf)).amax(dim=1, keepdim=True)
    lo = torch.where(ok, r, torch.full_like(r, torch.inf)).amin(dim=1, keepdim=True)
    constant = (n < 2) | (hi == lo)  # (P, 1) zero-variance groups
    if scale == "group":
        var = centred.pow(2).sum(dim=1, keepdim=True) / (n - correction).clamp(min=1)  # (P, 1)
        adv = centred / (var.sqrt() + eps)
    elif scale == "batch":
        adv = centred / (rewards[valid].std(correction=correction).nan_to_num(0.0) + eps)
    elif scale == "none":
        adv = centred
    else:
        raise ValueError(f"scale must be 'group', 'batch' or 'none', got {scale!r}")
    return torch.where(constant, torch.zeros_like(adv), adv).view(-1)  # (N,)


def masked_group_advantages(cfg: GRPOConfig, rewards: Tensor, valid: Tensor) -> Tensor:
    """``group_advantages`` with the config's group size, scale and std; statistics over the valid (graded)
    members only, invalid members get 0. rewards, valid: (N,) -> (N,).

    >>> from trainer.config import GRPOConfig
    >>> cfg = GRPOConfig(group_size=2, prompts_per_step=1, std="unbiased")
    >>> masked_group_advantages(cfg, torch.tensor([1.0, 0.0]), torch.tensor([1, 1]))
    tensor([ 0.7070, -0.7070])
    """
    return group_advantages(rewards, cfg.group_size, valid=valid.bool(), scale=cfg.scale_rewards, std=cfg.std)


def k3_kl(logprobs: Tensor, ref_logprobs: Tensor) -> Tensor:
    """Per-token k3 estimate of KL(pi_theta || pi_ref): exp(ref - logp) - (ref - logp) - 1, >= 0."""
    d = ref_logprobs - logprobs
    return torch.exp(d) - d - 1


def _masked_mean(x: Tensor, mask: Tensor) -> Tensor:
    return (x * mask).sum() / mask.sum().clamp(min=1)


@dataclass(frozen=True)
class LossConfig:
    """What the loss needs of a run's config: GRPOConfig's fields of the same names (``LossConfig.of(cfg)``),
    with GRPOConfig's defaults."""

    beta: float = 0.04  # k3 KL weight
    clip_eps_low: float = 0.2  # rho >= 1 - eps_low
    clip_eps_high: float = 0.2  # rho <= 1 + eps_high (DAPO's clip-higher: 0.28)
    loss_type: LossType = "grpo"  # the reduction: DeepSeekMath eq. 3, DAPO's token mean, Dr. GRPO's constant
    importance_level: ImportanceLevel = "token"  # "sequence": GSPO's sequence-level ratio
    max_new_tokens: int | None = None  # the generation budget: dr_grpo's normaliser
    tis_cap: float | None = None  # truncated importance sampling's cap C; None: off

    @classmethod
    def of(cls, cfg: GRPOConfig) -> LossConfig:
        tis_cap = cfg.tis_cap if cfg.tis_on else None
        return cls(
            cfg.beta,
            cfg.clip_eps_low,
            cfg.clip_eps_high,
            cfg.loss_type,
            cfg.importance_level,
            cfg.max_new_tokens,
            tis_cap,
        )


def grpo_loss(
    logprobs: Tensor,
    old_logprobs: Tensor | None,
    ref_logprobs: Tensor | None,
    advantages: Tensor,
    mask: Tensor,
    cfg: LossConfig = LossConfig(),
    *,
    sample_logprobs: Tensor | None = None,
    **changes: Any,
) -> tuple[Tensor, dict[str, Tensor]]:
    """Clipped surrogate + beta * k3, reduced per ``cfg.loss_type``. Returns (loss, detached stats).

    logprobs, old_logprobs, ref_logprobs, mask: (N, T); advantages: (N,) or (N, T). ``changes``: fields of
    ``cfg`` set otherwise for this call (``beta=0.0``). ``max_new_tokens`` (the generation budget) is required
    for ``dr_grpo``, whose normaliser is the constant N * max_new_tokens: the padded width T would change with
    the batch's longest completion. ``tis_cap`` C with ``sample_logprobs`` (N, T), the sampler's own log-prob of
    each token: every token's term is weighted by ``tis_weights`` = min(pi_old / pi_sample, C) (truncated
    importance sampling; None: no weighting).
    """
    c = replace(cfg, **changes) if changes else cfg
    if c.loss_type == "dr_grpo" and (c.max_new_tokens is None or c.max_new_tokens < mask.shape[1]):
        raise ValueError(
            f"loss_type='dr_grpo' divides by the generation budget: pass max_new_tokens >= the completion width "
            f"{mask.shape[1]} (got {c.max_new_tokens})"
        )
    mask = mask.to(logprobs.dtype)  # (N, T)
    if old_logprobs is None:  # one optimisation pass per rollout: rho == 1, gradient of rho*A is A*grad(logp)
        old_logprobs = logprobs.detach()
    log_ratio = logprobs - old_logprobs  # (N, T)
    if c.importance_level == "token":
        ratio = torch.exp(log_ratio)  # (N, T)
    elif c.importance_level == "sequence":
        seq = (log_ratio * mask).sum(dim=1, keepdim=True) / mask.sum(dim=1, keepdim=True).clamp(min=1)  # (N, 1)
        ratio = torch.exp(seq).expand_as(log_ratio)  # (N, T)
    else:
        raise ValueError(f"importance_level must be 'token' or 'sequence', got {c.importance_level!r}")
    adv = advantages.to(logprobs.dtype)  # (N,) one per completion, or (N, T) per token (process supervision)
    adv = adv.unsqueeze(1) if adv.dim() == 1 else adv  # (N, 1) or (N, T)
    clipped = torch.clamp(ratio, 1 - c.clip_eps_low, 1 + c.clip_eps_high)  # (N, T)
    per_token = -torch.min(ratio * adv, clipped * adv)  # (N, T)
    if c.beta != 0.0:
        if ref_logprobs is None:
            raise ValueError("ref_logprobs is required when beta != 0")
        kl = k3_kl(logprobs, ref_logprobs)  # (N, T)
        per_token = per_token + c.beta * kl
    else:
        kl = torch.zeros_like(logprobs) if ref_logprobs is None else k3_kl(logprobs, ref_logprobs)
    if c.tis_cap is not None:
        if sample_logprobs is None:
            raise ValueError("tis_cap needs sample_logprobs: the sampler's log-prob of each token")
        per_token = per_token * tis_weights(old_logprobs, sample_logprobs, c.tis_cap)  # (N, T), detached

    if c.loss_type == "grpo":  # DeepSeekMath eq. 3: 1/G sum_i 1/|o_i| sum_t
        loss = ((per_token * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)).mean()
    elif c.loss_type == "token_mean":  # DAPO: every token weighs the same
        loss = _masked_mean(per_token, mask)
    elif c.loss_type == "dr_grpo":  # Dr. GRPO: constant normaliser N * max_new_tokens
        loss = (per_token * mask).sum() / (mask.shape[0] * c.max_new_tokens)
    else:
        raise ValueError(f"loss_type must be 'grpo', 'token_mean' or 'dr_grpo', got {c.loss_type!r}")

    with torch.no_grad():
        low = (ratio < 1 - c.clip_eps_low) & (adv < 0)
        high = (ratio > 1 + c.clip_eps_high) & (adv > 0)
        stats = {
            "kl": _masked_mean(kl.detach(), mask),
            "clip_ratio/low": _masked_mean(low.to(mask.dtype), mask),
            "clip_ratio/high": _masked_mean(high.to(mask.dtype), mask),
            "clip_ratio/region": _masked_mean((low | high).to(mask.dtype), mask),
            "ratio/mean": _masked_mean(ratio.detach(), mask),
        }
    return loss, stats


def tis_weights(old_logprobs: Tensor, sample_logprobs: Tensor, cap: float) -> Tensor:
    """min(pi_old / pi_sample, cap) per token, detached: (N, T), (N, T) -> (N, T). A token whose sampler
    log-prob is unknown (NaN: an engine that did not report it) gets weight 1.

    >>> tis_weights(torch.tensor([[-1.0, -1.0, -1.0]]), torch.tensor([[-1.0, -2.0, float("nan")]]), 2.0)
    tensor([[1., 2., 1.]])
    """
    d = (old_logprobs.detach() - sample_logprobs.to(old_logprobs.dtype)).nan_to_num(nan=0.0)  # (N, T)
    return torch.exp(d).clamp(max=cap)


@torch.no_grad()
def mismatch_stats(
    old_logprobs: Tensor, sample_logprobs: Tensor, mask: Tensor, tis_cap: float | None = None
) -> dict[str, float]:
    """How far the sampler's log-probs are from pi_old's over the completion tokens (mask (N, T); tokens
    whose sampler log-prob is NaN are left out): the mean and max of |log pi_sample - log pi_old|, their
    mean signed difference log pi_old - log pi_sample, and with ``tis_cap`` the mean TIS weight and the
    share of tokens whose ratio the cap truncated.

    >>> s = mismatch_stats(torch.tensor([[-1.0, -2.0]]), torch.tensor([[-1.5, -1.0]]), torch.ones(1, 2), 1.5)
    >>> {k.removeprefix("mismatch/"): round(v, 4) for k, v in s.items()}
    {'logp_abs_mean': 0.75, 'logp_abs_max': 1.0, 'logp_diff_mean': -0.25, 'tis_weight_mean': 0.9339, 'tis_capped_frac': 0.5}
    """
    d = old_logprobs.float() - sample_logprobs.float()  # (N, T)
    keep = mask.bool() & ~d.isnan()  # (N, T)
    n = int(keep.sum())
    dk = d[keep]  # (n,)
    out = {
        "mismatch/logp_abs_mean": float(dk.abs().mean()) if n else 0.0,
        "mismatch/logp_abs_max": float(dk.abs().max()) if n else 0.0,
        "mismatch/logp_diff_mean": float(dk.mean()) if n else 0.0,
    }
    if tis_cap is not None:
        w = torch.exp(dk)  # (n,)
        out["mismatch/tis_weight_mean"] = float(w.clamp(max=tis_cap).mean()) if n else 1.0
        out["mismatch/tis_capped_frac"] = float((w > tis_cap).float().mean()) if n else 0.0
    return out


def minibatch_weight(loss_type: LossType, mask_mb: Tensor, mask_all: Tensor) -> float:
    """Weight of one minibatch's loss so that the weighted sum over minibatches equals the full-batch loss.

    "grpo" and "dr_grpo" average over completions (n/N); "token_mean" over tokens (tokens_mb/tokens_all).
    """
    if weighs_tokens(loss_type):
        return float(mask_mb.sum()) / max(float(mask_all.sum()), 1.0)
    return mask_mb.shape[0] / mask_all.shape[0]


# -- process supervision: per-token advantages from step rewards --------------------------------------------
StepSpan = tuple[float, int, int]  # (reward, start, end): completion[start:end]


def process_advantages(
    step_rewards: Sequence[Sequence[float]],
    step_tokens: Sequence[Sequence[int]],
    valid: Tensor,
    group_size: int,
    width: int,
    *,
    std: str = "population",
    eps: float = 1e-4,
) -> Tensor:
    """(N, width) advantages A_{i,t} = sum of output i's normalised step rewards whose step ends at token >= t.

    step_rewards[i] / step_tokens[i]: output i's step rewards and the token index (0 <= index < width)
    where each step ends, N = len(step_rewards) outputs in contiguous groups of ``group_size``; valid: (N,)
    bool. Mean and std are taken per group over every step reward of its valid outputs.

    >>> process_advantages([[1.0], [0.0]], [[1], [0]], torch.tensor([True, True]), 2, 3, std="population")
    tensor([[ 0.9998,  0.9998,  0.0000],
            [-0.9998,  0.0000,  0.0000]])
    """
    n = len(step_rewards)
    if n % group_size or len(step_tokens) != n or valid.shape != (n,):
        raise ValueError(
            f"need N divisible by group_size={group_size} with N step lists, N token lists and valid of shape "
            f"(N,); got {n}, {len(step_tokens)}, {tuple(valid.shape)}"
        )
    correction = 1 if std == "unbiased" else 0
    points = torch.zeros(n, width)  # (N, C): normalised reward of each step at the token where it ends
    for g0 in range(0, n, group_size):
        rows = [i for i in range(g0, g0 + group_size) if bool(valid[i])]
        for i in rows:
            if len(step_rewards[i]) != len(step_tokens[i]):
                raise ValueError(f"output {i}: {len(step_rewards[i])} step rewards but {len(step_tokens[i])} ends")
        flat = torch.tensor([float(r) for i in rows for r in step_rewards[i]])  # (S,) every step of the group
        if flat.numel() < 2 or bool((flat == flat[0]).all()):
            continue  # zero-variance group: advantage 0
        mean = flat.mean()
        sd = flat.var(correction=correction).sqrt()
        for i in rows:
            for r, t in zip(step_rewards[i], step_tokens[i], strict=True):
                if not 0 <= t < width:
                    raise ValueError(f"output {i}: step ends at token {t}, outside [0, {width})")
                points[i, t] += (float(r) - mean) / (sd + eps)
    return points.flip(1).cumsum(1).flip(1)  # (N, C): suffix sums, A[i, t] = sum_{k >= t} points[i, k]


def char_to_token_end(ids: Sequence[int], end: int, tokenizer) -> int:
    """Index of the token of ``ids`` (a completion, EOS and padding cut off) that holds character ``end - 1``
    of ``tokenizer.decode(ids, skip_special_tokens=True)``; past the text's end: the last token."""
    lo, hi = 0, len(ids) - 1  # invariant: the answer is in [lo, hi]
    while lo < hi:
        mid = (lo + hi) // 2
        if len(tokenizer.decode(ids[: mid + 1], skip_special_tokens=True)) >= end:
            hi = mid
        else:
            lo = mid + 1
    return lo


def steps_to_tokens(
    completion_ids: Tensor,
    completion_mask: Tensor,
    steps: Sequence[Sequence[StepSpan]],
    outcome_rewards: Sequence[float] | None,
    tokenizer,
) -> tuple[list[list[float]], list[list[int]]]:
    """Step rewards and the token index where each step ends, per output.

    completion_ids, completion_mask: (N, C); steps[i]: output i's (reward, start, end) spans in its text.
    ``outcome_rewards`` (N,), when given, adds one last step per output ending at its last token
    (``process_outcome_step``).
    """
    rewards: list[list[float]] = []
    tokens: list[list[int]] = []
    for i in range(completion_ids.shape[0]):
        length = int(completion_mask[i].sum())  # tokens up to and including EOS
        if length == 0:
            rewards.append([])
            tokens.append([])
            continue
        ids = completion_ids[i, :length].tolist()
        r = [float(s[0]) for s in steps[i]]
        t = [char_to_token_end(ids, int(s[2]), tokenizer) for s in steps[i]]
        if outcome_rewards is not None:
            r.append(float(outcome_rewards[i]))
            t.append(length - 1)
        rewards.append(r)
        tokens.append(t)
    return rewards, tokens


def batch_process_advantages(cfg, batch, tokenizer) -> Tensor:
    """(N, C) process advantages of a training batch (trainer.rollout.Batch) under a GRPOConfig."""
    ro = batch.rollout
    outcome = batch.rewards.tolist() if cfg.process_outcome_step else None
    rewards, tokens = steps_to_tokens(
        ro.completion_ids.cpu(), ro.completion_mask.cpu(), [s.steps for s in batch.scores], outcome, tokenizer
    )
    return process_advantages(
        rewards, tokens, batch.valid.cpu(), cfg.group_size, ro.completion_ids.shape[1], std=cfg.std
    )
