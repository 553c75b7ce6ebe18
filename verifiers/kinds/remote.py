"""``remote`` verifiers: forward ``Verify`` to another server that implements ``VerifierService.Verify``
(this one, or any language's). The forwarded call carries the caller's remaining deadline.

A remote that cannot be reached, refuses the request or does not answer in time gives SANDBOX_ERROR
(infrastructure, not the model's fault: the trainer masks it out), never a fake 0. Remote verdicts
are not cached here: the remote may change what its verifier means without this server knowing.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field

import grpc

from proto.verifier.v1 import verifier_pb2 as pb
from proto.verifier.v1 import verifier_pb2_grpc as pb_grpc
from verifiers.kinds.steps import BadSteps, check_steps
from verifiers.shapes.base import BadRequest, Context, ServiceError, Step, Verdict
from verifiers.shapes.outcome import Outcome
from verifiers.shapes.request import Request

DEFAULT_TIMEOUT_S = 30.0
CHECK_TIMEOUT_S = 5.0
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
INSTANCE_HEADER = "x-verifier-instance"  # sent by this project's servers with GetVerifier's answer


class Unreachable(ServiceError):
    status = "FAILED_PRECONDITION"


# host:port only: a DNS name or IPv4 address, or an IPv6 address in brackets. No scheme: gRPC's target
# syntax also reaches unix sockets (unix:///var/run/docker.sock), which a remote verifier must never name.
_HOST = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\]")


def check_target(target: str) -> None:
    """Raises BadRequest unless ``target`` is ``host:port`` (no scheme, no path, no socket file)."""
    if not target or len(target) > 256 or any(c.isspace() for c in target):
        raise BadRequest(f"remote.target {target!r} is not an address: give host:port of a VerifierService")
    host, sep, port = target.rpartition(":")
    if not (sep and _HOST.fullmatch(host) and port.isdigit() and 0 < int(port) < 65536):
        raise BadRequest(
            f"remote.target {target[:100]!r} is not host:port (e.g. 127.0.0.1:50052): schemes "
            "(dns:, unix:, ipv4:, …) and socket paths are not accepted"
        )


def _channel(target: str) -> grpc.Channel:
    opts = [("grpc.max_send_message_length", MAX_MESSAGE_BYTES), ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)]
    return grpc.insecure_channel(target, options=opts)


def check_reachable(target: str, verifier: str, timeout_s: float = CHECK_TIMEOUT_S) -> str:
    """Registration check: the target answers, and has ``verifier`` if it implements GetVerifier.
    Returns the target's instance id when it is one of this project's servers, else ""."""
    check_target(target)
    ch = _channel(target)
    try:
        get = pb_grpc.VerifierServiceStub(ch).GetVerifier
        _, call = get.with_call(pb.GetVerifierRequest(name=verifier), timeout=timeout_s)
        return dict(call.initial_metadata() or ()).get(INSTANCE_HEADER, "")
    except grpc.RpcError as e:
        code = e.code()
        if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            raise Unreachable(
                f"remote target {target} is not reachable ({code.name}: {e.details()}): start that "
                "server first or fix the address"
            ) from None
        if code == grpc.StatusCode.NOT_FOUND:
            raise Unreachable(f"remote target {target} has no verifier {verifier!r}: {e.details()}") from None
        if code != grpc.StatusCode.UNIMPLEMENTED:  # a Verify-only server is fine
            raise Unreachable(f"remote target {target} answered GetVerifier with {code.name}: {e.details()}") from None
        return ""
    finally:
        ch.close()


@dataclass
class RemoteVerifier:
    name: str
    target: str
    verifier: str = ""  # its name on the remote (default: ours)
    description: str = ""
    version: int = 1
    kind: str = "remote"
    default_timeout_s: float = DEFAULT_TIMEOUT_S
    cacheable: bool = False
    _stub: pb_grpc.VerifierServiceStub | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def remote_name(self) -> str:
        return self.verifier or self.name

    def spec(self) -> dict:
        return {"target": self.target, "verifier": self.verifier}

    def stub(self) -> pb_grpc.VerifierServiceStub:
        with self._lock:
            if self._stub is None:
                self._stub = pb_grpc.VerifierServiceStub(_channel(self.target))
            return self._stub

    def verify(self, req: Request, ctx: Context) -> Verdict:
        left = ctx.time_left()
        if left <= 0.01:
            return Verdict.of(Outcome.SANDBOX_ERROR, f"no time left to ask the remote at {self.target}")
        msg = pb.VerifyRequest(
            verifier=self.remote_name,
            completion=req.completion,
            reference=req.reference,
            prompt=req.prompt,
            options=req.options,
            timeout_s=req.timeout_s,
            id=req.id,
        )
        try:
            r = self.stub().Verify(msg, timeout=left)
        except grpc.RpcError as e:
            return Verdict.of(
                Outcome.SANDBOX_ERROR, f"remote {self.target} ({self.remote_name}): {e.code().name}: {e.details()}"
            )
        try:
            outcome = Outcome.from_proto(r.outcome)
        except ValueError:  # a value this build does not know
            outcome = Outcome.UNSPECIFIED
        if outcome is Outcome.UNSPECIFIED:
            return Verdict.of(Outcome.SANDBOX_ERROR, f"remote {self.target} answered without an outcome")
        try:  # the remote's steps obey the same rules as ours (verifiers/kinds/steps.py)
            steps = check_steps([Step(s.reward, s.start, s.end) for s in r.steps], req.completion, "remote steps")
        except BadSteps as e:
            return Verdict.of(Outcome.SANDBOX_ERROR, f"remote {self.target} ({self.remote_name}): {e}")
        return Verdict(r.reward, outcome, r.detail, dict(r.components), steps=steps, signals=sorted(set(r.signals)))
