"""One GRPO update: old/reference log-probs, mu epochs over minibatches of whole groups with gradient
accumulation over micro-batches, the clipped surrogate + k3 KL (trainer/grpo/loss.py), clipping and the
optimizer step. The advantages and the loss mask come in (trainer/grpo/step.py ``run_step``)."""

from __future__ import annotations

import resource
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from trainer import distributed
from trainer.config import GRPOConfig
from trainer.grpo.loss import LossConfig, grpo_loss, minibatch_weight, mismatch_stats
from trainer.grpo.rewards import Batch
from trainer.policy import forward_context
from trainer.rollout.decode import Rollout
from trainer.rollout.logprobs import completion_logprobs


def _chunks(n: int, size: int | None) -> list[slice]:
    size = size or n
    return [slice(i, min(i + size, n)) for i in range(0, n, size)]


def _shared_group(cfg: GRPOConfig) -> int:
    """G when a group's prompt can be encoded once for its G completions (not with gradient checkpointing,
    which turns the KV cache off in training)."""
    return cfg.group_size if cfg.share_prefix and not cfg.gradient_checkpointing else 0


def _shuffled_rows(cfg: GRPOConfig, n: int) -> Tensor:
    """A random order of the rows; whole groups stay together when prompts are shared."""
    g = cfg.group_size if _shared_group(cfg) else 1
    groups = torch.randperm(n // g)
    return (groups[:, None] * g + torch.arange(g)).view(-1)


def score_logprobs(model, rollout: Rollout, cfg: GRPOConfig) -> Tensor:
    """(N, C) log-probs of the batch under ``model`` without gradients, in micro-batches (under
    inference_mode, cheaper per op than no_grad; the clone makes a normal tensor for the loss)."""
    was = model.training
    model.eval()
    try:
        with torch.inference_mode(), forward_context(cfg, next(model.parameters()).device):
            out = torch.cat(
                [
                    completion_logprobs(
                        model,
                        rollout,
                        temperature=cfg.temperature,
                        rows=s,
                        group_size=_shared_group(cfg),
                        fast_path=cfg.fast_path,
                    )[0]
                    for s in _chunks(len(rollout), cfg.micro_batch_size)
                ]
            )
    finally:
        model.train(was)
    return out.clone()


@dataclass(frozen=True)
class Learner:
    """What an update steps: the policy as it trains, its optimizer and LR schedule, the process group."""

    model: Any  # under torchrun the DDP/FSDP wrapper (gradients all-reduced on a minibatch's last micro-batch)
    optimizer: torch.optim.Optimizer
    scheduler: Any  # stepped after every optimizer step (policy.make_optimizer)
    ctx: distributed.Dist = field(default_factory=distributed.Dist)


@dataclass(frozen=True)
class UpdateBatch:
    """What one step's update learns from: the graded batch, its advantages, loss mask and log-probs."""

    batch: Batch
    adv: Tensor  # (N,) one per completion, or (N, C) per token (process advantages)
    loss_mask: Tensor  # (N, C) completion tokens that count (step.token_loss_mask)
    old_lp: Tensor | None = None  # (N, C) under the sampling policy; None: mu == 1, one pass (rho == 1)
    ref_lp: Tensor | None = None  # (N, C) under the reference; None: beta == 0


def optimize(cfg: GRPOConfig, learner: Learner, data: UpdateBatch) -> dict[str, float]:
    """mu epochs x minibatches optimizer steps; each minibatch accumulates over micro-batches. Returns the
    loss statistics and grad_norm, averaged over the optimizer steps."""
    model, optimizer, scheduler, ctx = learner.model, learner.optimizer, learner.scheduler, learner.ctx
    batch, adv, loss_mask, old_lp, ref_lp = data.batch, data.adv, data.loss_mask, data.old_lp, data.ref_lp
    sample_lp = batch.rollout.sample_logprobs  # (N, C) the sampler's own log-probs (None: not recorded)
    loss_cfg = LossConfig.of(cfg)  # tis_cap: truncated importance sampling (loss.tis_weights), None when off
    pi_old = torch.zeros_like(loss_mask, dtype=torch.float32) if old_lp is None else old_lp  # mu == 1: below
    n = len(batch.rollout)
    mb = n // cfg.minibatches
    params = [p for p in model.parameters() if p.requires_grad]
    sums: Counter = Counter()
    count = 0
    for _ in range(cfg.mu):
        order = _shuffled_rows(cfg, n) if cfg.minibatches > 1 else torch.arange(n)
        for m in range(cfg.minibatches):
            idx_mb = order[m * mb : (m + 1) * mb].to(adv.device)
            optimizer.zero_grad(set_to_none=True)
            micro = _chunks(mb, cfg.micro_batch_size)
            scale = distributed.global_token_scale(cfg.loss_type, loss_mask[idx_mb], ctx)  # 1.0 on one process
            for j, s in enumerate(micro):
                idx = idx_mb[s]
                with forward_context(cfg, adv.device):
                    logp, ent = completion_logprobs(
                        model,
                        batch.rollout,
                        temperature=cfg.temperature,
                        with_entropy=True,
                        rows=idx,
                        group_size=_shared_group(cfg),
                        fast_path=cfg.fast_path,
                    )
                if old_lp is None:  # one pass: these log-probs are pi_old's
                    pi_old[idx] = logp.detach()
                loss, stats = grpo_loss(
                    logp,
                    None if old_lp is None else old_lp[idx],
                    None if ref_lp is None else ref_lp[idx],
                    adv[idx],
                    loss_mask[idx],
                    loss_cfg,
                    sample_logprobs=None if sample_lp is None else sample_lp[idx],
                )
                w = minibatch_weight(cfg.loss_type, loss_mask[idx], loss_mask[idx_mb])
                with distributed.no_sync(model, sync=j == len(micro) - 1):
                    (loss * (w * scale)).backward()
                m_tok = loss_mask[idx].float()
                stats["entropy"] = (ent * m_tok).sum() / m_tok.sum().clamp(min=1)
                for k, v in {"total": loss.detach(), **stats}.items():
                    sums[k] += float(v) * w
            norm = torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip if cfg.grad_clip > 0 else float("inf"))
            sums["grad_norm"] += float(norm)
            optimizer.step()
            scheduler.step()
            count += 1
    out = {k: v / count for k, v in sums.items()}
    if sample_lp is not None:  # the sampler/trainer gap over every sampled token (loss.mismatch_stats)
        out.update(mismatch_stats(pi_old, sample_lp, batch.rollout.sampled_mask(), loss_cfg.tis_cap))
    return out


def peak_memory_mb(device: torch.device) -> float:
    """This process's peak memory in MiB: CUDA's allocator on a GPU, else the resident set size."""
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
