"""GRPO (DeepSeekMath, https://arxiv.org/abs/2402.03300), top to bottom:

    config -> model, reference, optimizer -> for each step:
        prompts x G -> rollout (own decode loop) -> one VerifyBatch call -> group advantages
        -> mu epochs over minibatches (grad accumulation over micro-batches) -> clip -> AdamW + schedule
        -> metrics -> checkpoint -> (every K steps) pi_ref <- pi_theta

    python -m trainer.train --config configs/x.yaml [--key value ...] [--resume auto]

This module is the run: ``train`` builds the parts once (``StepParts``), calls ``run_step`` for each
step (trainer/grpo/step.py: one GRPO step, top to bottom), evaluates every ``eval_every`` steps, saves
checkpoints (trainer/run/checkpoint.py) and is the entry point. The parts come from trainer/policy.py (device,
precision, policy, reference, optimizer), trainer/rollout/backends.py (where rollouts come from),
trainer/grpo/rewards.py (the verifier service as a reward) and trainer/run/metrics.py.

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

import shlex
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

import torch

from trainer import cli, distributed
from trainer.alarm.evidence import ALARMS_FILE, AlarmStopped
from trainer.alarm.watch import AlarmStop, AlarmWatch
from trainer.config import GRPOConfig, load_config
from trainer.data import DataStream, Example, load_examples
from trainer.errors import ConfigError, DataError, exit_on_error
from trainer.evaluation.evaluator import evaluate
from trainer.grpo.rewards import RewardFn, VerifierReward
from trainer.grpo.step import StepParts, rollout_dtype, run_step
from trainer.grpo.update import (
    peak_memory_mb,
)
from trainer.policy import (
    keep_freed_cpu_memory,
    load_policy,
    make_optimizer,
    make_reference,
    pick_device,
    seed_everything,
)
from trainer.rollout.backends import make_backend
from trainer.rollout.session_runner import SessionToolRunner
from trainer.rollout.tools import ToolRunner, transcript_text
from trainer.run import interrupt, own_model, preflight
from trainer.run.checkpoint import checkpoint_dir, resume_run, save_run
from trainer.run.metrics import MetricsLogger
from verifiers.client import VerifierClient


def train(
    cfg: GRPOConfig, model=None, tokenizer=None, reward_fn: RewardFn | None = None, tools: ToolRunner | None = None
) -> dict[str, Any]:
    """Run GRPO as ``cfg`` says. ``model``/``tokenizer`` override cfg.model; ``reward_fn`` overrides the
    verifier client (benchmarks); ``tools`` the sessions of the service (cfg.tools; trainer/rollout/tools.py).
    Returns {"model", "tokenizer", "run_dir", "checkpoint", "metrics"}."""
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    device = pick_device(cfg.device)
    if device.type == "cpu":
        keep_freed_cpu_memory()  # activations reuse freed memory instead of faulting in fresh pages each step
    ctx = distributed.setup(device)  # torchrun: join the job (a no-op for one process)
    if ctx.active:
        distributed.check_batch(cfg.prompts_per_step, ctx)  # before anything loads
        cfg = cfg.model_copy(update={"device": distributed.rank_device(cfg.device, ctx)})
    own_reward, own_tools = reward_fn is None, tools is None
    parts, stream, eval_examples = _build(cfg, ctx, model, tokenizer, reward_fn, tools)
    model, tokenizer, ref, logger = parts.model, parts.tokenizer, parts.ref, parts.logger
    state = (model, tokenizer, parts.optimizer, parts.scheduler, stream, ref)  # what a checkpoint holds
    start = resume_run(cfg, model, parts.optimizer, parts.scheduler, stream, ref, alarm=parts.alarm)
    logger.truncate_after(start)
    if parts.alarm is not None:
        parts.alarm.start(start)  # canaries through the training reward, before any update
    device = next(model.parameters()).device
    last: dict[str, float] = {}
    saved = start
    t_loop, cpu_loop = time.perf_counter(), time.process_time()
    try:
        for step in range(start + 1, cfg.steps + 1):
            data_before = stream.state()
            try:
                last = distributed.reduce_metrics(run_step(parts, step), ctx)
            except AlarmStop as e:  # on_alarm stop: the step's update was not applied
                stream.load(data_before)  # the checkpoint is the run as it stood before this step
                logger.log(step, e.metrics)
                raise alarm_stopped(e, step, save_run(cfg, step - 1, *state, ctx, parts.alarm), cfg) from None
            if eval_examples and step % cfg.eval_every == 0:
                last.update(_periodic_eval(parts, eval_examples))
                if parts.alarm is not None and "eval/accuracy" in last:
                    parts.alarm.note_eval(step, last["eval/accuracy"])
            last["perf/peak_mem_mb"] = peak_memory_mb(device)
            last["perf/elapsed_s"] = time.perf_counter() - t_loop  # since this process's first step
            last["perf/elapsed_cpu_s"] = time.process_time() - cpu_loop
            logger.log(step, last)
            if cfg.ref_reset_every and ref is not None and step % cfg.ref_reset_every == 0:
                ref.load_state_dict(distributed.full_model_state(model))
            if cfg.save_every and step % cfg.save_every == 0:
                save_run(cfg, step, *state, ctx, parts.alarm)  # rank 0 writes
                saved = step
            if interrupt.requested():  # SIGINT/SIGTERM inside interrupt.deferred(): this step's checkpoint, then stop
                done = checkpoint_dir(cfg.run_dir, step)
                if saved != step:
                    done = save_run(cfg, step, *state, ctx, parts.alarm)
                raise interrupt.Interrupted(step, done)
        final = checkpoint_dir(cfg.run_dir, cfg.steps)
        if saved != cfg.steps or not distributed.exists_on_main(final, ctx):  # the same answer on every rank
            final = save_run(cfg, cfg.steps, *state, ctx, parts.alarm)
        distributed.barrier(ctx)
    finally:
        logger.close()
        if own_reward:
            parts.reward_fn.close()
        if parts.backend is not None:
            parts.backend.close()
        if own_tools and parts.tools is not None:
            parts.tools.client.close()  # the sessions' client train() opened (each step closes its sessions)
        if parts.alarm is not None:
            parts.alarm.close()
        distributed.teardown(ctx)
    return {"model": model, "tokenizer": tokenizer, "run_dir": Path(cfg.run_dir), "checkpoint": final, "metrics": last}


def alarm_stopped(e: AlarmStop, step: int, checkpoint: Path, cfg: GRPOConfig) -> AlarmStopped:
    return AlarmStopped(
        f"{e}\nstopped before step {step}'s update; checkpoint of step {step - 1}: {checkpoint}; evidence: "
        f"{Path(cfg.run_dir) / ALARMS_FILE}; resume from it with --resume {checkpoint} (add --on_alarm warn to train "
        "past the alarm)",
        step - 1,
        checkpoint,
    )


def _build(
    cfg: GRPOConfig, ctx: distributed.Dist, model, tokenizer, reward_fn: RewardFn | None, tools: ToolRunner | None
) -> tuple[StepParts, DataStream, list[Example]]:
    """The run's parts, in this order: seed, policy, data, reference, DDP/FSDP wrapper, optimizer, rollout
    backend, reward (checked against the service when it is ours), metrics logger. Also the whole data
    stream (what a checkpoint saves) and the held-out examples for periodic evaluation."""
    seed_everything(cfg.seed)
    model, tokenizer = load_policy(cfg, model, tokenizer)
    if cfg.data is None:
        raise DataError("no data: set `data:` to a JSONL file of {prompt, answer} or {prompt, tests} rows")
    stream = DataStream(load_examples(cfg.data), cfg.seed)
    check = preflight.check(
        tokenizer,
        model,
        [cfg.verifier],
        stream.examples[0].prompt,
        model_dir=cfg.model,
        use_chat_template=cfg.use_chat_template,
        max_new_tokens=cfg.max_new_tokens,
    )
    preflight.raise_errors(check)  # the verifier's tags survive decoding (trainer/run/preflight.py)
    own_model.check_trainable(model, cfg.model or "(passed in)")  # not an empty parameter list at the optimizer
    eval_examples = load_examples(cfg.eval_data)[: cfg.eval_limit] if cfg.eval_data and cfg.eval_every else []
    ref = make_reference(cfg, model)
    train_model = distributed.wrap(model, ctx, cfg.parallel)  # DDP/FSDP under torchrun, else model itself
    optimizer, scheduler = make_optimizer(cfg, train_model)
    rank_cfg, data = cfg, stream
    if ctx.active:  # each rank samples its own share of the step's prompts, with its own sampling seed
        rank_cfg = cfg.model_copy(update={"prompts_per_step": distributed.check_batch(cfg.prompts_per_step, ctx)})
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
            dtype=rollout_dtype(cfg, next(model.parameters()).device),  # the training forward's, unless set
        )
    if reward_fn is None:
        reward_fn = VerifierReward(cfg.verifier, cfg.target, timeout_s=cfg.verifier_timeout_s)
        reward_fn.check()
    if cfg.tools is not None and tools is None:  # each rollout's calls in its own session of the service
        tools = SessionToolRunner(VerifierClient(cfg.target.split(",")[0]), workers=cfg.tools.workers)
    alarm = None
    if cfg.alarm:
        if ctx.active:
            raise ConfigError("alarm: not supported under torchrun yet (each rank would audit its own share)")
        # a tool run's canaries are graded by the tool loop's rule: the policy's own tokens only
        alarm = AlarmWatch(cfg, graded_text=partial(transcript_text, tokenizer) if cfg.tools is not None else None)
    logger = (
        MetricsLogger(cfg.run_dir, report_to=cfg.report_to, config=cfg.model_dump(mode="json"))
        if ctx.is_main
        else distributed.NullLogger()
    )
    parts = StepParts(
        cfg=rank_cfg,
        model=model,
        tokenizer=tokenizer,
        ref=ref,
        optimizer=optimizer,
        scheduler=scheduler,
        data=data,
        reward_fn=reward_fn,
        logger=logger,
        train_model=train_model,
        ctx=ctx,
        backend=backend,
        alarm=alarm,
        tools=tools,
    )
    return parts, stream, eval_examples


def _periodic_eval(parts: StepParts, examples: list[Example]) -> dict[str, float]:
    """Greedy held-out figures (evaluator.evaluate) as ``eval/*`` metrics. Every rank calls it (FSDP
    gathers the weights, a collective); rank 0 evaluates, the others return nothing."""
    out: dict[str, float] = {}
    with distributed.gathered(parts.model):
        if parts.ctx.is_main:
            ev = evaluate(
                parts.model,
                parts.tokenizer,
                examples,
                parts.reward_fn,
                max_new_tokens=parts.cfg.max_new_tokens,
                use_chat_template=parts.cfg.use_chat_template,
                tools=parts.cfg.tools,  # tool rollouts are evaluated with their tools, in sessions of the same service
                runner=parts.tools,
            )
            out = {f"eval/{k}": v for k, v in ev.items() if isinstance(v, float)}
            out["eval/ungraded"] = float(ev["ungraded"])
    return out


def resume_commands(argv: list[str], checkpoint: Path) -> tuple[str, str]:
    """The command line that resumes a stopped ``python -m trainer.train`` run from ``checkpoint`` (``argv``
    with its --resume replaced), and the one that trains past the alarm (--on_alarm warn in place of its own)."""
    base = [*_without(argv, {"--resume"}), "--resume", str(checkpoint)]
    past = [*_without(base, {"--on_alarm", "--on-alarm"}), "--on_alarm", "warn"]
    return shlex.join(["python", "-m", "trainer.train", *base]), shlex.join(["python", "-m", "trainer.train", *past])


def _without(argv: list[str], flags: set[str]) -> list[str]:
    """``argv`` less ``--flag value`` and ``--flag=value`` for each of ``flags``."""
    out, i = [], 0
    while i < len(argv):
        if argv[i].split("=", 1)[0] in flags:
            i += 1 if "=" in argv[i] else 2
            continue
        out.append(argv[i])
        i += 1
    return out


@exit_on_error
def main(argv: list[str] | None = None) -> dict[str, Any]:
    """``python -m trainer.train --config FILE [--key value ...]``. A TrainerError (a setting, a file, the
    service) becomes its message on stderr and exit status 1 (errors.exit_on_error)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if cli.wants_help(argv):
        print(cli.help_text(GRPOConfig, __doc__))
        return {}
    path, over = cli.parse_argv(GRPOConfig, argv)  # the one override parser (trainer/cli.py)
    cfg = load_config(path, over)
    try:
        out = train(cfg)
    except AlarmStopped as e:  # the message ends with the commands that go on, this command line's own
        again, past = resume_commands(argv, e.checkpoint)
        raise AlarmStopped(
            f"{e}\nresume with: {again}\nto train past the alarm: {past}", e.step, e.checkpoint
        ) from None
    print(f"done: {cfg.steps} steps, checkpoint {out['checkpoint']}, metrics {Path(cfg.run_dir) / 'metrics.jsonl'}")
    return out


if __name__ == "__main__":
    main()
