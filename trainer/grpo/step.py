"""One GRPO step (DeepSeekMath, https://arxiv.org/abs/2402.03300), top to bottom:

    prompts x G -> rollout (sample: trainer.rollout.decode.generate_rollout, or a rollout backend)
      -> one VerifyBatch call (rewards.py) -> group advantages (loss.py)
      -> old/reference log-probs and mu epochs of the clipped surrogate + k3 KL (update.py)
      -> metrics

``run_step(parts, step)`` is the step; ``collect_batch`` the batch it learns from (with DAPO's dynamic
sampling, zero-variance groups are dropped and more prompts sampled). The policy samples in the training
forward's precision (``rollout_dtype``): bf16 autocast where training autocasts (CUDA). The step reads in
four files: this one, update.py (the optimizer steps), loss.py (advantages and the objective, pure
functions) and rewards.py (the verifier service as a reward); sampling and log-probs come through two
doors of trainer/rollout/ (``generate_rollout``, ``completion_logprobs``), whichever path runs behind them.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import torch
from torch import Tensor

from trainer import distributed
from trainer.alarm.watch import AlarmWatch
from trainer.config import GRPOConfig
from trainer.data import DataStream
from trainer.errors import ConfigError
from trainer.grpo.loss import batch_process_advantages, masked_group_advantages
from trainer.grpo.rewards import Batch, GroupScorer, RewardFn, Score, grade, informative_groups
from trainer.grpo.update import Learner, UpdateBatch, optimize, score_logprobs
from trainer.policy import autocast_dtype, pick_dtype
from trainer.rollout.backends import RolloutBackend
from trainer.rollout.decode import Rollout, generate_rollout
from trainer.rollout.tool_decode import generate_tool_rollout
from trainer.rollout.tools import ToolRunner, ToolTrace, tool_signals
from trainer.run.metrics import MetricsLogger
from verifiers.client import OUTCOMES, Outcome


@dataclass(frozen=True)
class StepParts:
    """What ``train`` builds once and every step uses; ``run_step(parts, step)`` is one GRPO step on them."""

    cfg: GRPOConfig  # this rank's config: under torchrun prompts_per_step is the rank's share
    model: Any  # the policy, unwrapped: it samples, scores and is saved
    tokenizer: Any
    ref: Any | None  # the frozen reference (None: beta == 0, or LoRA, whose reference is the adapters off)
    optimizer: torch.optim.Optimizer
    scheduler: Any  # the LR schedule (policy.make_optimizer)
    data: DataStream | distributed.RankStream  # this rank's prompts
    reward_fn: RewardFn
    logger: MetricsLogger | distributed.NullLogger  # rank 0 writes, the other ranks hold a NullLogger
    train_model: Any = None  # the DDP/FSDP wrapper under torchrun (None: model itself)
    ctx: distributed.Dist = field(default_factory=distributed.Dist)
    backend: RolloutBackend | None = None  # where rollouts come from (None: the policy samples them)
    alarm: AlarmWatch | None = None  # the reward-hacking alarm (--grpo.alarm true; trainer/alarm/)
    tools: ToolRunner | None = None  # tool rollouts (cfg.tools): each rollout's sandbox session (rollout/tools.py)


def run_step(parts: StepParts, step: int) -> dict[str, float]:
    """One GRPO step on ``parts``: rollout + rewards -> advantages -> old/ref log-probs -> update. Returns
    metrics. Under torchrun ``parts.cfg.prompts_per_step`` is this rank's share and ``parts.train_model``
    the DDP/FSDP wrapper; a rollout backend gets the updated weights after the update."""
    cfg, model, tokenizer, backend = parts.cfg, parts.model, parts.tokenizer, parts.backend
    t0, cpu0 = time.perf_counter(), time.process_time()
    with distributed.gathered(model):  # FSDP: full weights while sampling and scoring (no-op otherwise)
        batch = collect_batch(cfg, model, tokenizer, parts.data, parts.reward_fn, backend, parts.tools)
        t1 = time.perf_counter()
        if cfg.tis_on and batch.rollout.sample_logprobs is None:
            raise ConfigError(
                f"tis needs the sampler's log-prob of each token, and the {cfg.rollout_backend!r} rollout backend "
                "did not record them: set `tis: off`"
            )
        device = batch.rollout.completion_ids.device
        if cfg.advantage == "process":  # per-token, from the verifier's step rewards (loss.py)
            adv = batch_process_advantages(cfg, batch, tokenizer).to(device)  # (N, C)
        else:
            adv = masked_group_advantages(cfg, batch.rewards, batch.valid).to(device)  # (N,)
        loss_mask = token_loss_mask(cfg, batch)  # (N, C)
        alarm_m: dict[str, float] = {}
        if parts.alarm is not None:  # audit, rules, evidence; drop: flagged rows leave the loss; stop: raises
            adv, loss_mask, alarm_m = parts.alarm.check(step, batch, adv, loss_mask)
        old_lp = score_logprobs(model, batch.rollout, cfg) if cfg.off_policy else None
        ref_lp = None
        if cfg.beta > 0:
            with reference_mode(model, parts.ref) as ref_model:
                ref_lp = score_logprobs(ref_model, batch.rollout, cfg)
    learner = Learner(parts.train_model or model, parts.optimizer, parts.scheduler, parts.ctx)
    opt_stats = optimize(cfg, learner, UpdateBatch(batch, adv, loss_mask, old_lp, ref_lp))
    if backend is not None:
        with distributed.gathered(model):
            backend.sync_weights(model)  # e.g. vLLM: push the updated weights before the next rollout
    t2 = time.perf_counter()
    m = step_metrics(cfg, batch, adv, loss_mask, opt_stats)
    m.update(alarm_m)
    tokens = int(batch.rollout.sampled_mask().sum())  # the policy's own tokens
    m.update(
        {
            "policy/lr": parts.scheduler.get_last_lr()[0],
            "perf/step_s": t2 - t0,
            "perf/step_cpu_s": time.process_time() - cpu0,
            "perf/rollout_s": t1 - t0 - batch.verify_s,
            "perf/update_s": t2 - t1,
            "perf/tokens_per_s": tokens / (t2 - t0),
            "perf/tokens": float(tokens),
        }
    )
    if cfg.logs_completions_at(step):  # every K steps, and the first and last
        parts.logger.log_completions(step, completion_rows(batch, adv))
    return m


def collect_batch(
    cfg: GRPOConfig, model, tokenizer, stream: DataStream, reward_fn: RewardFn, backend=None, tools=None
) -> Batch:
    """prompts x G -> rollout (the policy samples, or ``backend.generate``: trainer/rollout/backends.py) -> rewards. With dynamic sampling, keep only informative groups and
    sample more prompts (up to max_refills times); top up with uninformative groups if still short. With
    ``cfg.tools`` the policy's rollouts call tools through ``tools`` (trainer/rollout/tool_decode.py)."""
    if cfg.tools is not None and tools is None:
        raise ConfigError("tools: set in the config but no tool runner was given (StepParts.tools)")
    g, want = cfg.group_size, cfg.prompts_per_step
    kept: list[tuple[Rollout, Tensor, Tensor, list[Score]]] = []
    spare: list[tuple[Rollout, Tensor, Tensor, list[Score]]] = []
    verify_s, rollouts, have = 0.0, 0, 0
    while have < want and rollouts <= (cfg.max_refills if cfg.dynamic_sampling else 0):
        examples = stream.take(want - have if cfg.dynamic_sampling else want)
        scorer = None
        if (
            cfg.overlap_scoring and cfg.tools is None
        ):  # each group is graded as soon as it is decoded (rewards.py, GroupScorer)
            refs = [e.reference for e in examples for _ in range(g)]
            prompts = [e.prompt for e in examples for _ in range(g)]
            scorer = GroupScorer(reward_fn, g, refs, prompts, workers=cfg.scoring_workers)
        # the policy's own rollouts keep the decode's products for the update's first forward (replay.py)
        own = partial(generate_rollout, model, tokenizer, record=True, fast_path=cfg.fast_path)
        if cfg.tools is not None:
            own = partial(
                generate_tool_rollout, model, tokenizer, runner=tools, tools=cfg.tools, fast_path=cfg.fast_path
            )
        sample = own if backend is None else backend.generate
        if backend is not None and cfg.tools is not None:  # the same tool loop, driving the backend's engine
            sample = partial(backend.generate, tools=cfg.tools, runner=tools)
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
        rewards, valid = tool_outcomes(ro, rewards, valid, scores)
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


def tool_outcomes(ro: Rollout, rewards: Tensor, valid: Tensor, scores: list[Score]) -> tuple[Tensor, Tensor]:
    """Tool rollouts: each score gets the tool-use signals (``tools.tool_signals``: a call printed an answer's
    shape or the reference; the alarm reads them with the verifier's), and rows whose tool session failed get the
    infrastructure outcome: SANDBOX_ERROR, masked out of the loss (not a zero reward). ``scores`` change in place."""
    tr = ro.tool_trace
    if tr is None:
        return rewards, valid
    for s, outs, codes, ref, own in zip(scores, tr.outputs, tr.codes, ro.references, ro.texts, strict=True):
        s.signals = [*s.signals, *(x for x in tool_signals(outs, ref, codes, own) if x not in s.signals)]
    if not any(tr.infra):
        return rewards, valid
    rewards, valid = rewards.clone(), valid.clone()
    for i, dead in enumerate(tr.infra):
        if dead:
            rewards[i], valid[i] = 0.0, False
            scores[i] = Score(0.0, Outcome.SANDBOX_ERROR, {}, scores[i].elapsed_s, [], ["tool.session_failed"])
    return rewards, valid


def _take_groups(parts: list, n_rows: int) -> list:
    out, left = [], n_rows
    for ro, r, v, s in parts:
        if left <= 0:
            break
        k = min(left, len(ro))
        out.append((ro.select(range(k)), r[:k], v[:k], s[:k]) if k < len(ro) else (ro, r, v, s))
        left -= k
    return out


def concat_rollouts(parts: list[Rollout], pad_id: int) -> Rollout:
    """Stack rollouts of different widths: prompts padded on the left, completions on the right."""
    if len(parts) == 1:
        return parts[0]
    lps = [p.sample_logprobs for p in parts]
    tooled = any(p.policy_mask is not None for p in parts)
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
        policy_mask=_pad_cat([p.sampled_mask() for p in parts], 0, left=False) if tooled else None,
        full_texts=sum((p.full_texts or p.texts for p in parts), []) if tooled else None,
        tool_trace=_concat_traces([p.tool_trace for p in parts]) if tooled else None,
    )


def _concat_traces(traces: list[ToolTrace | None]) -> ToolTrace:
    ts = [t for t in traces if t is not None]
    return ToolTrace(
        sum((t.calls for t in ts), []),
        sum((t.errors for t in ts), []),
        sum((t.infra for t in ts), []),
        sum(t.tool_s for t in ts),
        sum((t.outputs for t in ts), []),
        sum((t.codes for t in ts), []),
    )


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


def token_loss_mask(cfg: GRPOConfig, batch: Batch) -> Tensor:
    keep = batch.valid.to(batch.rollout.completion_mask.device)
    if cfg.mask_truncated:
        keep = keep & ~batch.rollout.truncated
    return batch.rollout.sampled_mask() * keep[:, None]  # (N, C): tool output never counts (Rollout.sampled_mask)


@contextlib.contextmanager
def reference_mode(model, ref):
    """The reference policy: the frozen copy, or the LoRA model with its adapters switched off."""
    if ref is not None:
        yield ref
    elif hasattr(model, "disable_adapter"):
        with model.disable_adapter():
            yield model
    else:
        raise RuntimeError("no reference model (beta > 0 needs one)")


def step_metrics(cfg: GRPOConfig, batch: Batch, adv: Tensor, loss_mask: Tensor, opt_stats: dict) -> dict[str, float]:
    ro, r, v = batch.rollout, batch.rewards, batch.valid
    g = cfg.group_size
    lengths = ro.completion_mask.sum(1).float().cpu()
    rv = r[v] if v.any() else torch.zeros(1)
    outcomes = Counter(s.outcome for s in batch.scores)
    m: dict[str, float] = {
        "reward/mean": rv.mean().item(),
        "reward/std": rv.std(correction=0).item(),
        "reward/accuracy": outcomes[Outcome.CORRECT] / max(1, int(v.sum())),
        "group/frac_zero_std": 1.0 - informative_groups(r, v, g).float().mean().item(),
        "group/advantage_abs_mean": adv.abs().mean().item(),
        "completion/length_mean": lengths.mean().item(),
        "completion/length_max": lengths.max().item(),
        "completion/truncated_frac": ro.truncated.float().mean().item(),
        "completion/masked_frac": 1.0 - (loss_mask.sum(1) > 0).float().mean().item(),
        "verifier/batch_s": batch.verify_s,
        "verifier/item_s_mean": float(np.mean([s.elapsed_s for s in batch.scores])),
        "dynamic/rollouts": float(batch.rollouts),
    }
    for name in sorted({k for s in batch.scores for k in s.components}):
        vals = [s.components.get(name, 0.0) for s, ok in zip(batch.scores, v.tolist(), strict=True) if ok]
        m[f"reward/{name}/mean"] = float(np.mean(vals)) if vals else 0.0
    for o in OUTCOMES:
        m[f"outcome/{o}"] = float(outcomes[o])
    m.update(tool_metrics(ro))
    for k, val in opt_stats.items():
        prefix = "" if k.startswith("mismatch/") else "policy/" if k in ("entropy", "grad_norm") else "loss/"
        m[prefix + k] = val
    return m


def tool_metrics(ro: Rollout) -> dict[str, float]:
    """Tool rollouts: calls per completion, the share of calls that failed, the share of completion tokens that
    are tool output, the step's seconds in tools, failed sessions. Empty without tools."""
    tr = ro.tool_trace
    if tr is None:
        return {}
    calls = sum(tr.calls)
    tokens = float(ro.completion_mask.sum())
    return {
        "tool/calls_per_completion": calls / max(1, len(tr.calls)),
        "tool/error_rate": sum(tr.errors) / max(1, calls),
        "tool/output_share": 1.0 - float(ro.sampled_mask().sum()) / max(1.0, tokens),
        "tool/sessions_failed": float(sum(tr.infra)),
        "perf/tool_s": tr.tool_s,  # calls, and opening, forking and closing the sessions
    }


def completion_rows(batch: Batch, adv: Tensor, k: int = 8) -> list[dict[str, Any]]:
    return [
        {
            "prompt": batch.rollout.prompts[i],
            "completion": (batch.rollout.full_texts or batch.rollout.texts)[i],
            "reference": batch.rollout.references[i],
            "reward": round(batch.rewards[i].item(), 4),
            "outcome": batch.scores[i].outcome,
            "advantage": round(adv[i].item() if adv.dim() == 1 else adv[i, 0].item(), 4),  # process: token 0's
        }
        for i in range(min(k, len(batch.rollout)))
    ]
