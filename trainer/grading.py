"""The one grading call of the trainer: every room that grades completions (the GRPO reward, make eval,
rejection sampling, the alarm's audit) sends them through ``grade_items``, so a change to how the trainer
talks to the service (deadlines, replicas, result checks) is made once. tests/trainer/test_train_eval.py checks that
no other module calls the client's ``verify_batch``.
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
