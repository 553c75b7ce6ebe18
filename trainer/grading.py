"""The one grading call of the trainer's evaluations: items -> one VerifyBatch through ``verifiers.client``
-> one result per item, in item order.

``make eval``'s Grader (trainer/eval_grade.py) sends every batch through ``grade_items`` and keeps its extras
as layers on top (the format verifier's items, per-sample options and timeouts, concurrent calls, the resume
log). Training's reward (trainer/rewards.py ``VerifierReward``, which training's evaluation grades with) is the
other caller meant to use it; tests/test_train_eval.py lists who still calls ``verify_batch`` directly.
"""

from __future__ import annotations

from collections.abc import Sequence

from trainer.overlap import ScoringError
from verifiers.client import VerifierClient, VerifyItem, VerifyResult


def grade_items(
    client: VerifierClient, items: Sequence[VerifyItem], *, deadline_s: float | None = None
) -> list[VerifyResult]:
    """Grade ``items`` in one VerifyBatch call (the client may split it over replicas); results in order.

    ``deadline_s`` bounds the whole call (None: the client's default). A service that answers with a
    different number of results than items raises ScoringError rather than misaligning grades."""
    items = list(items)
    results = client.verify_batch(items, deadline_s=deadline_s) if items else []
    if len(results) != len(items):
        raise ScoringError(f"the verifier service returned {len(results)} results for {len(items)} items")
    return results
