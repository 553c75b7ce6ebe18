"""One GRPO step called directly: ``run_step(parts, step)`` on a ``StepParts`` built by hand (a tiny model, a
pure reward, no service), as a notebook or a benchmark would drive the loop one step at a time.

- the step draws ``prompts_per_step`` prompts from ``parts.data``, grades G completions of each, moves the
  policy and logs the completions on the steps ``log_completions_every`` names (and the first and last);
- two runs from the same seed give the same metrics (the parts carry all the state a step needs);
- ``StepParts`` is frozen: a step cannot swap the run's model or optimizer.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch

from tests.trainer.test_rollout import tiny_model, tiny_tokenizer
from trainer.config import GRPOConfig
from trainer.data import DataStream, Example
from trainer.grpo.rewards import PythonReward
from trainer.grpo.step import StepParts, run_step
from trainer.policy import make_optimizer, make_reference, seed_everything
from trainer.run.metrics import MetricsLogger

torch.set_num_threads(1)
EXAMPLES = [Example(f"{i}+{i}=", str(2 * i)) for i in range(6)]


def parts(run_dir: Path, seed: int = 0) -> StepParts:
    seed_everything(seed)
    tok = tiny_tokenizer()
    model = tiny_model(tok, seed=seed)
    cfg = GRPOConfig(
        group_size=4,
        prompts_per_step=2,
        max_new_tokens=6,
        lr=3e-3,
        beta=0.04,
        steps=4,
        log_completions_every=2,
        seed=seed,
    )
    optimizer, scheduler = make_optimizer(cfg, model)
    return StepParts(
        cfg=cfg,
        model=model,
        tokenizer=tok,
        ref=make_reference(cfg, model),
        optimizer=optimizer,
        scheduler=scheduler,
        data=DataStream(EXAMPLES, seed),
        reward_fn=PythonReward(_reward),
        logger=MetricsLogger(run_dir, report_to=[]),
    )


def _reward(completion: str, reference: str) -> float:
    return float(len(completion) % 2)


def test_run_step_moves_the_policy_and_logs_on_schedule(tmp_path):
    p = parts(tmp_path)
    before = [t.detach().clone() for t in p.model.parameters()]
    m1, m2 = run_step(p, 1), run_step(p, 2)
    assert p.data.state() == {"epoch": 0, "pos": 4}  # 2 prompts per step
    assert sum(m1[f"outcome/{o}"] for o in ("CORRECT", "INCORRECT", "NO_ANSWER")) == 8
    assert "loss/kl" in m2 and m2["perf/tokens"] > 0
    assert any(not torch.equal(a, b) for a, b in zip(before, p.model.parameters(), strict=True))
    p.logger.close()
    logged = [json.loads(x) for x in p.logger.completions_path.read_text().splitlines()]
    assert {r["step"] for r in logged} == {1, 2} and len(logged) == 16  # every 2 steps, and the first one


def test_same_seed_same_metrics(tmp_path):
    def run(name: str) -> list[dict[str, float]]:
        p = parts(tmp_path / name, seed=3)
        return [{k: v for k, v in run_step(p, s).items() if not k.startswith(("perf/", "verifier/"))} for s in (1, 2)]

    assert run("a") == run("b")


def test_step_parts_are_frozen(tmp_path):
    p = parts(tmp_path)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.model = None  # type: ignore[misc]
