"""GRPO (DeepSeekMath, https://arxiv.org/abs/2402.03300), top to bottom:

    config -> model, reference, optimizer -> for each step:
        prompts x G -> rollout (own decode loop) -> one VerifyBatch call -> group advantages
        -> mu epochs over minibatches (grad accumulation over micro-batches) -> clip -> AdamW + schedule
        -> metrics -> checkpoint -> (every K steps) pi_ref <- pi_theta

    python -m trainer.train --config configs/x.yaml [--key value ...] [--resume auto]

Where this departs from the paper (all switchable in the config):
- Samples graded ``SANDBOX_ERROR`` or ``BAD_REFERENCE`` (not the model's fault) are masked out of the
  loss, and the group's mean and std are taken over its valid members only (they get advantage 0).
- With ``mu == 1`` and one minibatch the old policy is the current one (rho == 1, no extra forward).
- The G completions of a prompt share its encoding: the prompt runs once and its KV cache is repeated
  G times, when sampling and in every log-prob forward (gradients flow through the shared cache).
  Minibatches are then drawn as whole groups. Same numbers, less compute (``share_prefix``).
- DAPO's dynamic sampling, clip-higher and token-mean loss, Dr. GRPO's unscaled advantages and
  GSPO's sequence-level ratio are options, off by default.
- Log-probs are taken at the sampling temperature, as the samples were drawn from that distribution.
- Sampling uses the trainer's own decode loop (``fast_decode``), not ``model.generate``: the same
  distribution (tests check it token for token against generate), without generate's per-token overhead.
"""

from __future__ import annotations

import contextlib
import copy
import random
import resource
import sys
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from trainer import distributed, passk
from trainer.batch import Batch, collect_batch, informative_groups
from trainer.checkpoint import checkpoint_dir, load_trainer_state, resolve_resume, save_checkpoint, set_rng_state
from trainer.config import GRPOConfig, load_config
from trainer.data import DataStream, Example, load_examples
from trainer.decode import Rollout, generate_rollout
from trainer.logprobs import completion_logprobs
from trainer.loss import group_advantages, grpo_loss, minibatch_weight
from trainer.metrics import MetricsLogger
from trainer.process import batch_process_advantages
from trainer.rewards import RewardFn, Score, VerifierReward
from trainer.rollout_backend import make_backend

# ---------------------------------------------------------------------------------------------
# setup
# ---------------------------------------------------------------------------------------------


def pick_device(name: str = "auto") -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def pick_dtype(name: str, device: torch.device) -> torch.dtype:
    """Parameter (and AdamW state) dtype: auto is float32; bf16 compute comes from autocast (forward_context)."""
    if name == "auto":
        return torch.float32
    return getattr(torch, name)


def autocast_dtype(cfg: GRPOConfig, device: torch.device) -> torch.dtype | None:
    """bfloat16 when forward/backward run under autocast, else None."""
    if cfg.autocast == "none" or pick_dtype(cfg.dtype, device) != torch.float32:
        return None
    if cfg.autocast == "auto" and not (device.type == "cuda" and torch.cuda.is_bf16_supported()):
        return None
    return torch.bfloat16


def forward_context(cfg: GRPOConfig, device: torch.device):
    """torch.autocast(bf16) over fp32 weights when cfg asks for it (auto: on CUDA); a no-op context otherwise."""
    dt = autocast_dtype(cfg, device)
    return torch.autocast(device.type, dtype=dt, enabled=dt is not None)


def _warn_half_precision(cfg: GRPOConfig) -> None:
    if cfg.dtype in ("bfloat16", "float16") and cfg.lr < 1e-4:
        warnings.warn(
            f"dtype={cfg.dtype}: pure half-precision weights and AdamW state; at lr={cfg.lr:g} most updates are "
            "below the format's resolution and are lost (the model barely trains). Use dtype: auto (fp32 weights, "
            "bf16 autocast) unless memory forces this.",
            stacklevel=2,
        )


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _disable_dropout(model: torch.nn.Module) -> None:
    for m in model.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0


def load_policy(cfg: GRPOConfig, model=None, tokenizer=None):
    """The model to train (loaded from cfg.model unless given), on cfg's device, LoRA-wrapped if asked."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    device = pick_device(cfg.device)
    dtype = pick_dtype(cfg.dtype, device)
    _warn_half_precision(cfg)
    if model is None:
        if cfg.model is None:
            raise SystemExit("no model: set `model:` in the config (a folder or hub id) or pass one to train()")
        model = AutoModelForCausalLM.from_pretrained(cfg.model, dtype=dtype)
    if tokenizer is None:
        if (cfg.tokenizer or cfg.model) is None:
            raise SystemExit("no tokenizer: set `tokenizer:` (or `model:`) in the config, or pass one to train()")
        tokenizer = AutoTokenizer.from_pretrained(cfg.tokenizer or cfg.model)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = model.to(device=device, dtype=dtype)
    _disable_dropout(model)
    if cfg.gradient_checkpointing:
        model.gradient_checkpointing_enable()
        model.config.use_cache = False  # training forwards; generate() still asks for its cache
    if cfg.lora is not None and not hasattr(model, "peft_config"):  # wrapped once (the pipeline loads first)
        try:
            import peft
        except ImportError:
            raise SystemExit("lora: needs peft; install it with `pip install .[lora]`") from None
        lc = cfg.lora
        pc = peft.LoraConfig(
            r=lc.r,
            lora_alpha=lc.alpha,
            lora_dropout=lc.dropout,
            target_modules=lc.target_modules,
            task_type="CAUSAL_LM",
        )
        model = peft.get_peft_model(model, pc)
        if cfg.gradient_checkpointing:
            model.enable_input_require_grads()
    _disable_dropout(model)  # LoRA dropout too (TRL's disable_dropout): rollouts and scoring see one policy
    model.train()
    return model, tokenizer


def make_reference(cfg: GRPOConfig, model):
    """Frozen copy of the policy; None when beta == 0 (no KL) or with LoRA (adapters off = reference)."""
    if cfg.beta == 0 or cfg.lora is not None:
        return None
    ref = copy.deepcopy(model).eval()
    ref.requires_grad_(False)
    return ref


def make_optimizer(cfg: GRPOConfig, model) -> tuple[torch.optim.Optimizer, Any]:
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr, betas=cfg.adam_betas, weight_decay=cfg.weight_decay)
    total = cfg.steps * cfg.mu * cfg.minibatches

    def factor(i: int) -> float:
        if i < cfg.warmup_steps:
            return (i + 1) / cfg.warmup_steps
        frac = (i - cfg.warmup_steps) / max(1, total - cfg.warmup_steps)
        if cfg.lr_schedule == "linear":
            return max(0.0, 1.0 - frac)
        if cfg.lr_schedule == "cosine":
            return 0.5 * (1.0 + np.cos(np.pi * min(frac, 1.0)))
        return 1.0

    return opt, torch.optim.lr_scheduler.LambdaLR(opt, factor)


# ---------------------------------------------------------------------------------------------
# advantages (SANDBOX_ERROR samples do not count)
# ---------------------------------------------------------------------------------------------


def masked_group_advantages(cfg: GRPOConfig, rewards: Tensor, valid: Tensor) -> Tensor:
    """The config's group_advantages with statistics over the valid (graded) members only; invalid get 0."""
    return group_advantages(rewards, cfg.group_size, valid=valid.bool(), scale=cfg.scale_rewards, std=cfg.std)


# ---------------------------------------------------------------------------------------------
# one step: the update
# ---------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _reference_mode(model, ref):
    """The reference policy: the frozen copy, or the LoRA model with its adapters switched off."""
    if ref is not None:
        yield ref
    elif hasattr(model, "disable_adapter"):
        with model.disable_adapter():
            yield model
    else:
        raise RuntimeError("no reference model (beta > 0 needs one)")


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
                        model, rollout, temperature=cfg.temperature, rows=s, group_size=_shared_group(cfg)
                    )[0]
                    for s in _chunks(len(rollout), cfg.micro_batch_size)
                ]
            )
    finally:
        model.train(was)
    return out.clone()


def optimize(
    cfg: GRPOConfig,
    model,
    optimizer,
    scheduler,
    batch: Batch,
    adv: Tensor,
    loss_mask: Tensor,
    old_lp,
    ref_lp,
    ctx: distributed.Dist = distributed.Dist(),
):
    """mu epochs x minibatches optimizer steps; each minibatch accumulates over micro-batches. Under torchrun
    ``model`` is the DDP/FSDP-wrapped policy (gradients all-reduced on each minibatch's last micro-batch)."""
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
                    )
                loss, stats = grpo_loss(
                    logp,
                    None if old_lp is None else old_lp[idx],
                    None if ref_lp is None else ref_lp[idx],
                    adv[idx],
                    loss_mask[idx],
                    beta=cfg.beta,
                    clip_eps_low=cfg.clip_eps_low,
                    clip_eps_high=cfg.clip_eps_high,
                    loss_type=cfg.loss_type,
                    importance_level=cfg.importance_level,
                    max_new_tokens=cfg.max_new_tokens,
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
    return {k: v / count for k, v in sums.items()}


# ---------------------------------------------------------------------------------------------
# metrics of one step
# ---------------------------------------------------------------------------------------------


def peak_memory_mb(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def step_metrics(cfg: GRPOConfig, batch: Batch, adv: Tensor, loss_mask: Tensor, opt_stats: dict) -> dict[str, float]:
    ro, r, v = batch.rollout, batch.rewards, batch.valid
    g = cfg.group_size
    lengths = ro.completion_mask.sum(1).float().cpu()
    rv = r[v] if v.any() else torch.zeros(1)
    outcomes = Counter(s.outcome for s in batch.scores)
    m: dict[str, float] = {
        "reward/mean": rv.mean().item(),
        "reward/std": rv.std(correction=0).item(),
        "reward/accuracy": outcomes["CORRECT"] / max(1, int(v.sum())),
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
    for o in passk.OUTCOMES:
        m[f"outcome/{o}"] = float(outcomes[o])
    for k, val in opt_stats.items():
        prefix = "policy/" if k in ("entropy", "grad_norm") else "loss/"
        m[prefix + k] = val
    return m


def _completion_rows(batch: Batch, adv: Tensor, k: int = 8) -> list[dict[str, Any]]:
    return [
        {
            "prompt": batch.rollout.prompts[i],
            "completion": batch.rollout.texts[i],
            "reference": batch.rollout.references[i],
            "reward": round(batch.rewards[i].item(), 4),
            "outcome": batch.scores[i].outcome,
            "advantage": round(adv[i].item() if adv.dim() == 1 else adv[i, 0].item(), 4),  # process: token 0's
        }
        for i in range(min(k, len(batch.rollout)))
    ]


# ---------------------------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------------------------


def _save(cfg, step, model, tokenizer, optimizer, scheduler, stream, ref, ctx=None) -> Path:
    """Rank 0 writes. Under FSDP every rank must call it: the weights and optimizer state are gathered
    (a collective) and written unsharded, so the checkpoint loads with from_pretrained."""
    full: dict[str, Any] = {}
    if distributed.is_sharded(model):
        full["state_dict"], full["optimizer_state"] = distributed.full_state(model, optimizer)
        if ctx is not None and not ctx.is_main:
            return checkpoint_dir(cfg.run_dir, step)
    extra = {"data": stream.state(), "config": cfg.model_dump()}
    if ref is not None:
        extra["reference"] = {k: t.detach().cpu() for k, t in ref.state_dict().items()}
    return save_checkpoint(
        cfg.run_dir, step, model, tokenizer, optimizer, scheduler, extra=extra, keep=cfg.keep_checkpoints, **full
    )


def _resume(cfg, model, optimizer, scheduler, stream, ref) -> int:
    """Load the checkpoint named by cfg.resume into the live objects; returns its step (0: fresh start)."""
    path = resolve_resume(cfg.resume, cfg.run_dir) if cfg.resume else None
    if path is None:
        return 0
    if distributed.is_sharded(model):
        raise distributed.DistributedError(f"--resume {path}: resuming a `parallel: fsdp` run is not supported yet")
    from safetensors.torch import load_file

    state = load_trainer_state(path)
    if cfg.lora is not None:
        import peft

        peft.set_peft_model_state_dict(model, load_file(str(path / "adapter_model.safetensors")))
    else:
        weights = load_file(str(path / "model.safetensors"))
        missing, unexpected = model.load_state_dict(weights, strict=False)
        tied = set(getattr(model, "_tied_weights_keys", None) or [])
        if unexpected or [k for k in missing if k not in tied and "lm_head" not in k]:
            raise SystemExit(f"--resume {path}: weights do not match the model ({missing[:3]} {unexpected[:3]})")
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    stream.load(state["data"])
    if ref is not None and "reference" in state:
        ref.load_state_dict(state["reference"])
    set_rng_state(state["rng"])
    print(f"resumed from {path} (step {state['step']})", file=sys.stderr)
    return int(state["step"])


def _loss_mask(cfg: GRPOConfig, batch: Batch) -> Tensor:
    keep = batch.valid.to(batch.rollout.completion_mask.device)
    if cfg.mask_truncated:
        keep = keep & ~batch.rollout.truncated
    return batch.rollout.completion_mask * keep[:, None]  # (N, C)


def train(cfg: GRPOConfig, model=None, tokenizer=None, reward_fn: RewardFn | None = None) -> dict[str, Any]:
    """Run GRPO as ``cfg`` says. ``model``/``tokenizer`` override cfg.model; ``reward_fn`` overrides the
    verifier client (benchmarks). Returns {"model", "tokenizer", "run_dir", "checkpoint", "metrics"}."""
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    ctx = distributed.setup(pick_device(cfg.device))  # torchrun: join the job (a no-op for one process)
    if ctx.active:
        per_rank = distributed.check_batch(cfg.prompts_per_step, ctx)
        cfg = cfg.model_copy(update={"device": distributed.rank_device(cfg.device, ctx)})
    seed_everything(cfg.seed)
    model, tokenizer = load_policy(cfg, model, tokenizer)
    if cfg.data is None:
        raise SystemExit("no data: set `data:` to a JSONL file of {prompt, answer} or {prompt, tests} rows")
    stream = DataStream(load_examples(cfg.data), cfg.seed)
    eval_examples = load_examples(cfg.eval_data)[: cfg.eval_limit] if cfg.eval_data and cfg.eval_every else []
    ref = make_reference(cfg, model)
    train_model = distributed.wrap(model, ctx, cfg.parallel)  # DDP/FSDP under torchrun, else model itself
    optimizer, scheduler = make_optimizer(cfg, train_model)
    rank_cfg, data = cfg, stream
    if ctx.active:  # each rank samples its own share of the step's prompts, with its own sampling seed
        rank_cfg = cfg.model_copy(update={"prompts_per_step": per_rank})
        data = distributed.RankStream(stream, ctx)
        torch.manual_seed(cfg.seed + ctx.rank)
    backend = None
    if cfg.rollout_backend != "hf":  # hf: the policy samples its own rollouts (collect_batch's default)
        backend = make_backend(
            cfg.rollout_backend,
            model,
            tokenizer,
            model_path=cfg.model,
            gpu_memory_utilization=cfg.vllm_gpu_memory_utilization,
            seed=cfg.seed + ctx.rank,
        )
    own_reward = reward_fn is None
    if reward_fn is None:
        reward_fn = VerifierReward(cfg.verifier, cfg.verifier_target, timeout_s=cfg.verifier_timeout_s)
        reward_fn.check()
    logger = (
        MetricsLogger(cfg.run_dir, report_to=cfg.report_to, config=cfg.model_dump(mode="json"))
        if ctx.is_main
        else distributed.NullLogger()
    )
    start = _resume(cfg, model, optimizer, scheduler, stream, ref)
    logger.truncate_after(start)
    device = next(model.parameters()).device
    last: dict[str, float] = {}
    saved = start
    t_loop, cpu_loop = time.perf_counter(), time.process_time()
    try:
        for step in range(start + 1, cfg.steps + 1):
            last = run_step(
                rank_cfg,
                step,
                model,
                tokenizer,
                ref,
                optimizer,
                scheduler,
                data,
                reward_fn,
                logger,
                train_model,
                ctx,
                backend,
            )
            last = distributed.reduce_metrics(last, ctx)
            if eval_examples and step % cfg.eval_every == 0:
                with distributed.gathered(model):  # every rank (FSDP: a collective); rank 0 evaluates
                    if ctx.is_main:
                        ev = evaluate(
                            model,
                            tokenizer,
                            eval_examples,
                            reward_fn,
                            max_new_tokens=cfg.max_new_tokens,
                            use_chat_template=cfg.use_chat_template,
                        )
                        last.update({f"eval/{k}": v for k, v in ev.items() if isinstance(v, float)})
            last["perf/peak_mem_mb"] = peak_memory_mb(device)
            last["perf/elapsed_s"] = time.perf_counter() - t_loop  # since this process's first step
            last["perf/elapsed_cpu_s"] = time.process_time() - cpu_loop
            logger.log(step, last)
            if cfg.ref_reset_every and ref is not None and step % cfg.ref_reset_every == 0:
                ref.load_state_dict(distributed.full_model_state(model))
            if cfg.save_every and step % cfg.save_every == 0:
                if ctx.is_main or distributed.is_sharded(model):  # only rank 0 writes (FSDP: all gather)
                    _save(cfg, step, model, tokenizer, optimizer, scheduler, stream, ref, ctx)
                saved = step
        final = checkpoint_dir(cfg.run_dir, cfg.steps)
        if distributed.is_sharded(model):  # every rank takes part in the gather
            if saved != cfg.steps or not distributed.exists_on_main(final, ctx):
                final = _save(cfg, cfg.steps, model, tokenizer, optimizer, scheduler, stream, ref, ctx)
        elif (saved != cfg.steps or not final.exists()) and ctx.is_main:
            final = _save(cfg, cfg.steps, model, tokenizer, optimizer, scheduler, stream, ref)
        distributed.barrier(ctx)
    finally:
        logger.close()
        if own_reward:
            reward_fn.close()
        if backend is not None:
            backend.close()
        distributed.teardown(ctx)
    return {"model": model, "tokenizer": tokenizer, "run_dir": Path(cfg.run_dir), "checkpoint": final, "metrics": last}


def run_step(
    cfg,
    step,
    model,
    tokenizer,
    ref,
    optimizer,
    scheduler,
    stream,
    reward_fn,
    logger,
    train_model=None,
    ctx=None,
    backend=None,
) -> dict[str, float]:
    """One GRPO step: rollout + rewards -> advantages -> old/ref log-probs -> update. Returns metrics.
    Under torchrun ``cfg.prompts_per_step`` is this rank's share and ``train_model`` the DDP/FSDP wrapper.
    ``backend``: where rollouts come from (rollout_backend.py; None: the policy samples), synced after the update."""
    ctx = ctx or distributed.Dist()
    t0, cpu0 = time.perf_counter(), time.process_time()
    with distributed.gathered(model):  # FSDP: full weights while sampling and scoring (no-op otherwise)
        batch = collect_batch(cfg, model, tokenizer, stream, reward_fn, backend)
        t1 = time.perf_counter()
        device = batch.rollout.completion_ids.device
        if cfg.advantage == "process":  # per-token advantages from the verifier's step rewards (process.py)
            adv = batch_process_advantages(cfg, batch, tokenizer).to(device)  # (N, C)
        else:
            adv = masked_group_advantages(cfg, batch.rewards, batch.valid).to(device)  # (N,)
        loss_mask = _loss_mask(cfg, batch)  # (N, C)
        old_lp = score_logprobs(model, batch.rollout, cfg) if cfg.off_policy else None
        ref_lp = None
        if cfg.beta > 0:
            with _reference_mode(model, ref) as ref_model:
                ref_lp = score_logprobs(ref_model, batch.rollout, cfg)
    opt_stats = optimize(cfg, train_model or model, optimizer, scheduler, batch, adv, loss_mask, old_lp, ref_lp, ctx)
    if backend is not None:
        with distributed.gathered(model):
            backend.sync_weights(model)  # e.g. vLLM: push the updated weights before the next rollout
    t2 = time.perf_counter()
    m = step_metrics(cfg, batch, adv, loss_mask, opt_stats)
    tokens = int(batch.rollout.completion_mask.sum())
    m.update(
        {
            "policy/lr": scheduler.get_last_lr()[0],
            "perf/step_s": t2 - t0,
            "perf/step_cpu_s": time.process_time() - cpu0,
            "perf/rollout_s": t1 - t0 - batch.verify_s,
            "perf/update_s": t2 - t1,
            "perf/tokens_per_s": tokens / (t2 - t0),
            "perf/tokens": float(tokens),
        }
    )
    if cfg.log_completions_every and step % cfg.log_completions_every == 0:
        logger.log_completions(step, _completion_rows(batch, adv))
    return m


# ---------------------------------------------------------------------------------------------
# evaluation: greedy, through the same reward path
# ---------------------------------------------------------------------------------------------


def evaluate(
    model,
    tokenizer,
    examples: list[Example],
    reward_fn: RewardFn,
    *,
    max_new_tokens: int,
    batch_size: int = 64,
    use_chat_template: bool = True,
) -> dict[str, Any]:
    """Greedy completions for ``examples`` graded by ``reward_fn``: accuracy (share CORRECT), reward mean,
    outcome counts, and the completions themselves."""
    scores: list[Score] = []
    texts: list[str] = []
    for i in range(0, len(examples), batch_size):
        part = examples[i : i + batch_size]
        ro = generate_rollout(
            model,
            tokenizer,
            part,
            1,
            max_new_tokens=max_new_tokens,
            do_sample=False,
            use_chat_template=use_chat_template,
        )
        scores += reward_fn(ro.texts, ro.references, ro.prompts)
        texts += ro.texts
    n = max(1, len(scores))
    outcomes = Counter(s.outcome for s in scores)
    return {
        "accuracy": outcomes["CORRECT"] / n,
        "reward_mean": sum(s.reward for s in scores) / n,
        "outcomes": dict(outcomes),
        "completions": texts,
        "n": len(scores),
    }


def evaluate_accuracy(
    model,
    tokenizer,
    examples: list[Example] | str | Path,
    *,
    verifier: str = "math",
    target: str = "127.0.0.1:50051",
    max_new_tokens: int = 64,
    batch_size: int = 64,
    use_chat_template: bool = True,
) -> dict[str, Any]:
    """Greedy held-out accuracy through the verifier service (examples: a list or a JSONL path)."""
    if not isinstance(examples, list):
        examples = load_examples(examples)
    reward = VerifierReward(verifier, target)
    try:
        return evaluate(
            model,
            tokenizer,
            examples,
            reward,
            max_new_tokens=max_new_tokens,
            batch_size=batch_size,
            use_chat_template=use_chat_template,
        )
    finally:
        reward.close()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """``python -m trainer.train --config FILE [--key value ...]``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__)
        print("fields:")
        for name, f in GRPOConfig.model_fields.items():
            print(f"  --{name:<22} {f.description} (default: {f.default!r})")
        raise SystemExit(0)
    path = None
    if "--config" in argv:
        i = argv.index("--config")
        path = argv[i + 1] if i + 1 < len(argv) else None
        if path is None:
            raise SystemExit("--config needs a file")
        del argv[i : i + 2]
    cfg = load_config(path, argv)
    out = train(cfg)
    print(f"done: {cfg.steps} steps, checkpoint {out['checkpoint']}, metrics {Path(cfg.run_dir) / 'metrics.jsonl'}")
    return out


if __name__ == "__main__":
    main()
