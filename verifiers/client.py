"""Client library for the verifier service: the only way the trainer and scripts reach it.

>>> with VerifierClient("127.0.0.1:50051") as c:                       # doctest: +SKIP
...     r = c.verify("think_format", "<think>2+2=4</think>4", "")
...     r.reward, r.outcome
(1.0, 'CORRECT')

Deadlines: every call carries one (``timeout_s``). Retries: a call answered ``UNAVAILABLE`` (server
starting, restarting, or a replica going away) is retried with exponential back-off within the
deadline; every other status is raised at once as ``VerifierError``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import grpc

from proto.verifier.v1 import verifier_pb2 as pb
from proto.verifier.v1 import verifier_pb2_grpc as pb_grpc

OUTCOMES = ("CORRECT", "INCORRECT", "NO_ANSWER", "TIMEOUT", "RUNTIME_ERROR", "SANDBOX_ERROR")
MAX_MESSAGE_BYTES = 64 * 1024 * 1024


@dataclass
class VerifyItem:
    """One thing to grade. ``reference`` is the gold answer (math) or the tests (code)."""

    verifier: str
    completion: str
    reference: str = ""
    prompt: str = ""
    options: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = 0.0
    id: str = ""

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


@dataclass
class VerifyResult:
    """reward in [0, 1]; outcome is one of OUTCOMES; detail says why."""

    reward: float
    outcome: str
    detail: str = ""
    elapsed_s: float = 0.0
    id: str = ""
    components: dict[str, float] = field(default_factory=dict)
    cached: bool = False

    @classmethod
    def from_proto(cls, r: pb.VerifyResponse) -> VerifyResult:
        return cls(
            reward=r.reward,
            outcome=pb.Outcome.Name(r.outcome).removeprefix("OUTCOME_"),
            detail=r.detail,
            elapsed_s=r.elapsed_s,
            id=r.id,
            components=dict(r.components),
            cached=r.cached,
        )


class VerifierError(RuntimeError):
    """A call the service refused or could not answer; ``code`` is the grpc.StatusCode."""

    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message


def _as_item(x: VerifyItem | Mapping[str, Any]) -> VerifyItem:
    return x if isinstance(x, VerifyItem) else VerifyItem(**x)


class VerifierClient:
    """Talks to one service address (``host:port``, or any gRPC target such as ``dns:///svc:50051``)."""

    def __init__(self, target: str, *, timeout_s: float = 120.0, retries: int = 5, token: str | None = None):
        self.target = target
        self.timeout_s = timeout_s
        self.retries = retries
        self._metadata = (("authorization", f"Bearer {token}"),) if token else None
        opts = [
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.lb_policy_name", "round_robin"),
        ]
        self._channel = grpc.insecure_channel(target, options=opts)
        self._stub = pb_grpc.VerifierServiceStub(self._channel)

    # -- plumbing ---------------------------------------------------------------------------------
    def _call(self, method: str, request: Any, timeout_s: float | None) -> Any:
        deadline = time.monotonic() + (timeout_s or self.timeout_s)
        delay = 0.1
        for attempt in range(self.retries + 1):
            left = deadline - time.monotonic()
            if left <= 0:
                raise VerifierError(grpc.StatusCode.DEADLINE_EXCEEDED, f"{method}: no answer from {self.target}")
            try:
                return getattr(self._stub, method)(request, timeout=left, metadata=self._metadata)
            except grpc.RpcError as e:
                code = e.code()
                if code == grpc.StatusCode.UNAVAILABLE and attempt < self.retries:
                    time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
                    delay *= 2
                    continue
                raise VerifierError(code, e.details() or "") from None
        raise AssertionError("unreachable")

    # -- grading ----------------------------------------------------------------------------------
    def verify(
        self,
        verifier: str,
        completion: str,
        reference: str = "",
        *,
        prompt: str = "",
        options: Mapping[str, str] | None = None,
        timeout_s: float = 0.0,
        id: str = "",
        deadline_s: float | None = None,
    ) -> VerifyResult:
        """Grade one completion. ``timeout_s`` is the grading budget; ``deadline_s`` the RPC deadline."""
        item = VerifyItem(verifier, completion, reference, prompt, options or {}, timeout_s, id)
        return VerifyResult.from_proto(self._call("Verify", item.to_proto(), deadline_s))

    def verify_batch(
        self, items: Iterable[VerifyItem | Mapping[str, Any]], *, deadline_s: float | None = None
    ) -> list[VerifyResult]:
        """Grade many in one call; results in the order of ``items``."""
        req = pb.VerifyBatchRequest(items=[_as_item(i).to_proto() for i in items])
        if not req.items:
            return []
        resp = self._call("VerifyBatch", req, deadline_s)
        return [VerifyResult.from_proto(r) for r in resp.results]

    # -- registry ---------------------------------------------------------------------------------
    def list_verifiers(self) -> list[pb.VerifierInfo]:
        return list(self._call("ListVerifiers", pb.ListVerifiersRequest(), None).verifiers)

    def get_verifier(self, name: str) -> pb.VerifierInfo:
        return self._call("GetVerifier", pb.GetVerifierRequest(name=name), None)

    def register(self, request: pb.RegisterVerifierRequest) -> pb.VerifierInfo:
        return self._call("RegisterVerifier", request, None)

    def unregister(self, name: str) -> None:
        self._call("UnregisterVerifier", pb.UnregisterVerifierRequest(name=name), None)

    def wait_ready(self, timeout_s: float = 120.0) -> None:
        """Block until the channel connects (not until the pool is ready: use health for that)."""
        grpc.channel_ready_future(self._channel).result(timeout=timeout_s)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> VerifierClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
