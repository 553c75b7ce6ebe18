"""Samples that could not be graded for reasons that are not the model's (SANDBOX_ERROR: the sandbox
failed; BAD_REFERENCE: the reference itself cannot be parsed) are masked out of the loss and left out of
every evaluation denominator, never trained on or scored as a 0."""

from __future__ import annotations

import torch

from trainer.evaluation import passk
from trainer.grpo.loss import group_advantages
from trainer.grpo.rewards import Score, grade
from trainer.rollout.decode import Rollout

OUTCOMES = ["CORRECT", "BAD_REFERENCE", "INCORRECT", "SANDBOX_ERROR", "CORRECT", "INCORRECT"]


def _rollout(n: int) -> Rollout:
    z = torch.zeros(n, 2, dtype=torch.long)
    return Rollout(z, z, z, z, torch.zeros(n, dtype=torch.bool), ["x"] * n, ["p"] * n, ["r"] * n)


def test_bad_reference_and_sandbox_error_are_not_valid_samples():
    def reward_fn(texts, references, prompts):
        return [Score(1.0 if o == "CORRECT" else 0.0, o) for o in OUTCOMES]

    rewards, valid, scores, _ = grade(reward_fn, _rollout(len(OUTCOMES)))
    assert valid.tolist() == [True, False, True, False, True, True]
    adv = group_advantages(rewards, 3, valid=valid)
    assert adv[1] == 0 and adv[3] == 0
    # the first group's valid members are 1 and 0: +-1 (population std 0.5), like a 2-member group
    assert adv[[0, 2]].tolist() == group_advantages(torch.tensor([1.0, 0.0]), 2).tolist()


def test_bad_reference_is_left_out_of_the_evaluation_denominators():
    records = [
        {"id": "a", "sample": i, "verifier": "math", "reward": float(o == "CORRECT"), "outcome": o, "elapsed_s": 0.1}
        for i, o in enumerate(["CORRECT", "BAD_REFERENCE", "INCORRECT", "BAD_REFERENCE"])
    ]
    r = passk.summarize(records)
    assert r["n"] == 4 and r["n_graded"] == 2 and r["infra_errors"] == 2
    assert r["accuracy"] == 0.5 and r["outcomes"]["BAD_REFERENCE"] == 2
    assert r["pass@k"]["1"] == 0.5
