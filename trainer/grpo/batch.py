"""One step's training batch: the seeded ``DataStream`` of prompts -> rollout -> grades; with DAPO's
dynamic sampling, zero-variance groups are dropped and more prompts sampled. The policy samples in the
training forward's precision (``rollout_dtype``): bf16 autocast where training autocasts (CUDA)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from functools import partial

import torch
from torch import Tensor

from trainer.config import GRPOConfig
from trainer.data import DataStream
from trainer.grpo.overlap import GroupScorer
from trainer.grpo.rewards import RewardFn, Score, grade
from trainer.policy import autocast_dtype, pick_dtype
from trainer.rollout.decode import Rollout, generate_rollout


@dataclass
class Batch:
    """One step's training data: the rollout and its grades."""

    rollout: Rollout
    rewards: Tensor  # (N,) float32, SANDBOX_ERROR entries hold 0
    valid: Tensor  # (N,) bool: graded (not SANDBOX_ERROR / BAD_REFERENCE)
    scores: list[Score]
    verify_s: float
    rollouts: int  # how many generate calls built this batch (dynamic sampling refills)


def informative_groups(rewards: Tensor, valid: Tensor, g: int) -> Tensor:
    """(P,) bool: the group has >= 2 valid samples with different rewards."""
    r, v = rewards.view(-1, g), valid.view(-1, g)
    hi = torch.where(v, r, torch.full_like(r, -torch.inf)).amax(1)
    lo = torch.where(v, r, torch.full_like(r, torch.inf)).amin(1)
    return (v.sum(1) >= 2) & (hi > lo)


def _pad_cat(tensors: list[Tensor], value: int, left: bool) -> Tensor:
    width = max(t.shape[1] for t in tensors)
    pad = [(width - t.shape[1], 0) if left else (0, width - t.shape[1]) for t in tensors]
    return torch.cat([torch.nn.functional.pad(t, p, value=value) for t, p in zip(tensors, pad, strict=True)])


def rollout_dtype(cfg: GRPOConfig, device: torch.device) -> torch.dtype:
    """The precision rollouts sample in: ``cfg.rollout_dtype``, or (auto) the training forward's: bf16 where
    training runs under autocast (CUDA by default), else the parameters' dtype."""
    if cfg.rollout_dtype != "auto":
        return getattr(torch, cfg.rollout_dtype)
    return autocast_dtype(cfg, device) or pick_dtype(cfg.dtype, device)


def rollout_context(cfg: GRPOConfig, device: torch.device):
    """Autocast to ``rollout_dtype`` while the policy samples, where it differs from the parameters' dtype;
    a no-op otherwise (the CPU default: float32 throughout, the lean decode)."""
    dt = rollout_dtype(cfg, device)
    if dt == pick_dtype(cfg.dtype, device):
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=dt)


def concat_rollouts(parts: list[Rollout], pad_id: int) -> Rollout:
    """Stack rollouts of different widths: prompts padded on the left, completions on the right."""
    if len(parts) == 1:
        return parts[0]
    lps = [p.sample_logprobs for p in parts]
    return Rollout(
        _pad_cat([p.prompt_ids for p in parts], pad_id, left=True),
        _pad_cat([p.prompt_mask for p in parts], 0, left=True),
        _pad_cat([p.completion_ids for p in parts], pad_id, left=False),
        _pad_cat([p.completion_mask for p in parts], 0, left=False),
        torch.cat([p.truncated for p in parts]),
        sum((p.texts for p in parts), []),
        sum((p.prompts for p in parts), []),
        sum((p.references for p in parts), []),
        None if any(x is None for x in lps) else _pad_cat(lps, 0, left=False),
    )


def collect_batch(cfg: GRPOConfig, model, tokenizer, stream: DataStream, reward_fn: RewardFn, backend=None) -> Batch:
    """prompts x G -> rollout (the policy samples, or ``backend.generate``: rollout_backend.py) -> rewards. With dynamic sampling, keep only informative groups and
    sample more prompts (up to max_refills times); top up with uninformative groups if still short."""
    g, want = cfg.group_size, cfg.prompts_per_step
    kept: list[tuple[Rollout, Tensor, Tensor, list[Score]]] = []
    spare: list[tuple[Rollout, Tensor, Tensor, list[Score]]] = []
    verify_s, rollouts, have = 0.0, 0, 0
    while have < want and rollouts <= (cfg.max_refills if cfg.dynamic_sampling else 0):
        examples = stream.take(want - have if cfg.dynamic_sampling else want)
        scorer = None
        if cfg.overlap_scoring:  # each group is graded as soon as it is decoded (overlap.py)
            refs = [e.reference for e in examples for _ in range(g)]
            prompts = [e.prompt for e in examples for _ in range(g)]
            scorer = GroupScorer(reward_fn, g, refs, prompts, workers=cfg.scoring_workers)
        # the policy's own rollouts keep the decode's products for the update's first forward (replay.py)
        own = partial(generate_rollout, model, tokenizer, record=True, fast_path=cfg.fast_path)
        sample = own if backend is None else backend.generate
        with rollout_context(cfg, next(model.parameters()).device) if backend is None else contextlib.nullcontext():
            ro = sample(
                examples,
                g,
                max_new_tokens=cfg.max_new_tokens,
                temperature=cfg.temperature,
                top_p=cfg.top_p,
                use_chat_template=cfg.use_chat_template,
                share_prefix=cfg.share_prefix,
                fast_decode=cfg.fast_decode,
                on_groups_done=None if scorer is None else scorer.submit,
            )
        rewards, valid, scores, dt = grade(reward_fn, ro, scorer)
        verify_s, rollouts = verify_s + dt, rollouts + 1
        good = informative_groups(rewards, valid, g) if cfg.dynamic_sampling else torch.ones(len(ro) // g, dtype=bool)
        for keep, bucket in ((True, kept), (False, spare)):
            groups = [i for i in range(len(good)) if bool(good[i]) == keep]
            rows = [i * g + j for i in groups for j in range(g)]
            if rows:
                bucket.append((ro.select(rows), rewards[rows], valid[rows], [scores[i] for i in rows]))
        have = sum(len(k[0]) for k in kept) // g
    parts = _take_groups(kept + spare, want * g)
    ro = concat_rollouts([p[0] for p in parts], tokenizer.pad_token_id)
    return Batch(
        ro,
        torch.cat([p[1] for p in parts]),
        torch.cat([p[2] for p in parts]),
        sum((p[3] for p in parts), []),
        verify_s,
        rollouts,
    )


def _take_groups(parts: list, n_rows: int) -> list:
    out, left = [], n_rows
    for ro, r, v, s in parts:
        if left <= 0:
            break
        k = min(left, len(ro))
        out.append((ro.select(range(k)), r[:k], v[:k], s[:k]) if k < len(ro) else (ro, r, v, s))
        left -= k
    return out
