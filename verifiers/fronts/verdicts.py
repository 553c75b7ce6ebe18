"""A verdict on the wire: ``Verdict`` → ``VerifyResponse``, for every front that answers one (Verify, VerifyBatch,
GradeSession)."""

from __future__ import annotations

from proto.verifier.v1 import verifier_pb2 as pb
from verifiers.shapes.base import Verdict


def verdict_to_proto(v: Verdict, req_id: str) -> pb.VerifyResponse:
    return pb.VerifyResponse(
        reward=v.reward,
        outcome=v.outcome.to_proto(),
        detail=v.detail,
        elapsed_s=v.elapsed_s,
        id=req_id,
        components=v.components,
        cached=v.cached,
        cases=[pb.CaseVerdict(status=c.status.to_proto(), detail=c.detail, elapsed_s=c.elapsed_s) for c in v.cases],
        steps=[pb.StepReward(reward=s.reward, start=s.start, end=s.end) for s in v.steps],
        signals=v.signals,
    )
