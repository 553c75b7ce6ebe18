"""The one grading call of the trainer: items -> one VerifyBatch through ``verifiers.client`` -> one result
per item, in item order.

Every trainer path grades through ``grade_items``: training's reward (trainer/grpo/rewards.py ``VerifierReward``,
which training's evaluation uses too), rejection sampling (trainer/pipelines/rejection.py) and ``make eval``'s Grader
(trainer/evaluation/grade.py, which keeps its extras as layers on top: the format verifier's items, per-sample
options and timeouts, concurrent calls, the resume log). tests/test_train_eval.py fails if another trainer
module calls ``verify_batch`` directly.
"""

from __future__ import annotations

from collections.abc import Sequence

from verifiers.client import VerifierClient, VerifyItem, VerifyResult


def grade_items(
    client: VerifierClient, items: Sequence[VerifyItem], *, deadline_s: float | None = None
) -> list[VerifyResult]:
    """Grade ``items`` in one VerifyBatch call (the client may split it over replicas); results in order.

    ``deadline_s`` bounds the whole call (None: the client's default). The client checks that the service
    answered one result per item (a VerifierError otherwise), so grades never misalign."""
    return client.verify_batch(items, deadline_s=deadline_s)
