"""One thing to grade, the same shape on both sides of the wire: a client builds it (``verifiers.client``
names it ``VerifyItem``), the server reads it off the proto, and every verifier receives it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from proto.verifier.v1 import verifier_pb2 as pb


@dataclass
class Request:
    """``reference`` is the gold answer (math) or the tests (code); ``options`` the kind's options, as
    strings; ``timeout_s`` the caller's budget (0: the verifier's default); ``id`` comes back in the result."""

    verifier: str
    completion: str
    reference: str = ""
    prompt: str = ""
    options: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = 0.0
    id: str = ""

    @classmethod
    def from_proto(cls, r: pb.VerifyRequest) -> Request:
        return cls(r.verifier, r.completion, r.reference, r.prompt, dict(r.options), r.timeout_s, r.id)

    def to_proto(self) -> pb.VerifyRequest:
        return pb.VerifyRequest(
            verifier=self.verifier,
            completion=self.completion,
            reference=self.reference,
            prompt=self.prompt,
            options={str(k): str(v) for k, v in self.options.items()},
            timeout_s=self.timeout_s,
            id=self.id,
        )
