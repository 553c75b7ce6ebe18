"""The fast path is an optimisation only (issue 27, item 4): for each family the lean path supports, one
GRPO step (``run_step``) with mu = 2, minibatches = 2 (four optimizer steps, three of them after the
decode's recording went stale), the trainer's default optimizer (fused AdamW) and a KL term, LoRA on and
off, moves the weights to the same place with ``fast_path`` on and forced off (``grpo.fast_path: false``:
the HF forward for decoding, scoring and training).

Same seed, same samples (the lean decode draws the HF decode's tokens, tests/trainer/test_lean_forward.py); the
updated weights agree to 1e-5 of their norm, tensor by tensor, while the step moved them by far more.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import trainer.rollout.logprobs as logprobs_mod
from tests.trainer.test_architectures import _build
from trainer.config import GRPOConfig
from trainer.data import DataStream, Example
from trainer.grpo.rewards import PythonReward
from trainer.grpo.step import StepParts, run_step
from trainer.pipelines.tiny import build_tokenizer
from trainer.policy import load_policy, make_optimizer, make_reference, seed_everything
from trainer.rollout.lean_forward import lean_supported
from trainer.rollout.replay import replay_logits
from trainer.run.metrics import MetricsLogger

torch.set_num_threads(1)
EXAMPLES = [Example(f"{i}+{i}=", str(2 * i)) for i in range(6)]
FAMILIES = ["qwen2 tied, GQA, q/k/v biases", "qwen2 untied, MQA", "llama biases, head_dim 12 != hidden/heads"]


def _reward(completion: str, reference: str) -> float:
    return float(len(completion) % 2)


def _parts(run_dir: Path, family: str, lora: bool, fast_path: bool) -> StepParts:
    seed_everything(0)
    tok = build_tokenizer()
    cfg = GRPOConfig(
        group_size=4,
        prompts_per_step=2,
        max_new_tokens=6,
        lr=1e-3,
        beta=0.04,
        mu=2,
        minibatches=2,
        steps=1,
        log_completions_every=0,
        device="cpu",
        fast_path=fast_path,
        lora={"r": 2, "alpha": 4, "target_modules": ["q_proj", "v_proj", "down_proj"]} if lora else None,
    )
    model, tok = load_policy(cfg, model=_build(family, tok), tokenizer=tok)
    optimizer, scheduler = make_optimizer(cfg, model)
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
    )


@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
@pytest.mark.parametrize("family", FAMILIES)
def test_one_step_moves_the_weights_alike_with_and_without_the_fast_path(family, lora, tmp_path, monkeypatch):
    calls: list[str] = []
    real = replay_logits

    def counted(*a, **kw):
        calls.append("replay" if kw.get("recording") is not None else "lean")
        return real(*a, **kw)

    monkeypatch.setattr(logprobs_mod, "replay_logits", counted)
    runs = {}
    for fast in (True, False):
        calls.clear()
        p = _parts(tmp_path / str(fast), family, lora, fast)
        assert p.optimizer.defaults["fused"]  # the trainer's default on the CPU
        start = {n: t.detach().clone() for n, t in p.model.named_parameters() if t.requires_grad}
        assert lean_supported(p.model) == (not lora)
        metrics = run_step(p, 1)
        p.logger.close()
        # fast: the first forward replays the recording, pi_old and pi_ref are the lean forward's; then the
        # recording is stale (three training forwards on the HF forward). Forced off, or LoRA: never lean.
        assert calls == (["lean", "lean", "replay"] if fast and not lora else [])
        runs[fast] = {n: t.detach().clone() for n, t in p.model.named_parameters() if t.requires_grad}, metrics
    (fast_w, fast_m), (slow_w, slow_m) = runs[True], runs[False]
    assert fast_m["perf/tokens"] == slow_m["perf/tokens"] and fast_m["reward/mean"] == slow_m["reward/mean"]
    moved = max(((slow_w[n] - start[n]).norm() / start[n].norm()).item() for n in start)
    assert moved > 1e-3
    for name, want in slow_w.items():
        err = ((fast_w[name] - want).norm() / want.norm()).item()
        assert err < 1e-5, (name, err)
