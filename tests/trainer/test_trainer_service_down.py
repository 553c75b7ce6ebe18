"""Fault: the verifier service is down for 30 s while the trainer grades a step.

The trainer's own reward path (``VerifierReward`` as ``train.py`` builds it, called through
``rollout.grade``) must wait for the service with a clear log line and then return the real grades
for the same step: no exception that ends the run, no placeholder rewards, no sample masked out."""

from __future__ import annotations

import logging
import socket
import threading

import pytest
import torch

from trainer.config import GRPOConfig
from trainer.grpo.rewards import VerifierReward, grade
from trainer.rollout.decode import Rollout
from verifiers.launch import LocalServer

pytestmark = [pytest.mark.docker, pytest.mark.slow]

DOWN_S = 30.0
# (completion, reference, reward, outcome): what the math verifier gives each one
CASES = [
    ("<think>2+2</think>\\boxed{4}", "4", 1.0, "CORRECT"),
    ("so it is \\boxed{5}", "4", 0.0, "INCORRECT"),
    ("\\boxed{\\frac{1}{2}}", "0.5", 1.0, "CORRECT"),
    ("I do not know", "7", 0.0, "NO_ANSWER"),
]


def _rollout() -> Rollout:
    n = len(CASES)
    ids = torch.ones(n, 1, dtype=torch.long)
    return Rollout(
        ids,
        ids.clone(),
        ids.clone(),
        ids.clone(),
        torch.zeros(n, dtype=torch.bool),
        [c for c, *_ in CASES],
        ["q"] * n,
        [r for _, r, *_ in CASES],
    )


@pytest.mark.slow
def test_trainer_waits_for_a_service_down_for_30_s_and_grades_the_same_step(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="verifiers.client")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    target = f"127.0.0.1:{port}"
    timeout_s = GRPOConfig.model_fields["verifier_timeout_s"].default  # what train.py passes the client
    reward_fn = VerifierReward("math", target, timeout_s=timeout_s)
    srv = LocalServer(pool_size=1, port=port, log_path=str(tmp_path / "server.log"))
    fired = threading.Event()
    started = threading.Timer(DOWN_S, lambda: (fired.set(), srv.start()))
    try:
        started.start()
        rewards, valid, scores, took = grade(reward_fn, _rollout())
        assert fired.is_set()  # it really waited for the service: graded only after the start began
        assert rewards.tolist() == [r for *_, r, _ in CASES]
        assert [s.outcome for s in scores] == [o for *_, o in CASES]
        assert valid.all()  # nothing masked, nothing placeholder: every sample graded by the service
        assert f"verifier service at {target} unavailable" in caplog.text
        assert "retrying for up to" in caplog.text and f"verifier service at {target} answered again" in caplog.text
    finally:
        started.join(120)
        srv.stop()
        reward_fn.close()
