"""Client library for the verifier service: the only way the trainer and scripts reach it.

>>> with VerifierClient("127.0.0.1:50051") as c:                       # doctest: +SKIP
...     r = c.verify("think_format", "<think>2+2=4</think>4", "")
...     r.reward, r.outcome == Outcome.CORRECT, r.outcome in UNGRADED
(1.0, True, False)

Outcome names come from the proto enum (verifiers/shapes/outcome.py); ``Outcome``, ``OUTCOMES`` (what a
grader can answer) and ``UNGRADED`` (SANDBOX_ERROR, BAD_REFERENCE: not the model's fault) are exported
here for clients. ``Outcome`` members are strings, so ``r.outcome == "CORRECT"`` holds as well.
``VerifyItem`` (one thing to grade) is the very ``Request`` the server hands its verifiers
(verifiers/shapes/request.py): one shape on both sides of the wire.

Targets: one address (``host:port``), a list of replicas (``host:port,host:port``), or any gRPC
target (``dns:///svc:50051`` for a DNS name that resolves to every replica, ``unix:/path``). The
channel uses gRPC's own ``round_robin`` policy over every address; a batch is cut into one
sub-batch per replica address, sent at once, and put back together in request order.

Deadlines and retries: every call carries one deadline (``timeout_s``). A call answered
``UNAVAILABLE`` (a replica killed mid-call, a server starting or restarting) is tried again, and
round_robin sends it to another replica when one is up, within the deadline. While no replica
answers at all, a call keeps trying for up to ``wait_s`` (default 300 s, sized for training: a
restarted service is back within a minute; the commands take ``--wait-s``), logging a line that
names the target, then fails with "cannot reach the verifier service ..." (UNAVAILABLE): the grading
deadline is never a connect window. Once a server answers, the grading deadline starts again from
that attempt. A ``deadline_s`` given to one
call is a hard limit instead: it is retried within it, never past it. ``retries`` caps the number of
tries (``retries=0``: fail at once). Every other status is raised at once as
``VerifierError``. A sub-batch's results are taken from the one response that completed, so no
item is ever graded twice into a result.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import grpc

from proto.verifier.v1 import verifier_pb2 as pb
from proto.verifier.v1 import verifier_pb2_grpc as pb_grpc
from verifiers.shapes.outcome import OUTCOMES, UNGRADED, CaseStatus, Outcome  # noqa: F401 - for clients (the trainer)
from verifiers.shapes.request import Request as VerifyItem  # one thing to grade: the server's own Request
from verifiers.targets import TargetError, resolve_target  # noqa: F401 - TargetError for callers

log = logging.getLogger("verifiers.client")

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
DEFAULT_WAIT_S = 300.0  # how long a call waits for a service that answers UNAVAILABLE (every replica down)
MAX_BACKOFF_S = 2.0  # between tries while unavailable; also the channel's longest reconnect back-off
NOTE_EVERY_S = 10.0  # how often "still unavailable" is logged
SESSION_METHODS = frozenset(pb.DESCRIPTOR.services_by_name["SessionService"].methods_by_name)


@dataclass
class VerifyResult:
    """reward in [0, 1]; outcome is one of OUTCOMES (an ``Outcome``, a str); detail says why."""

    reward: float
    outcome: Outcome
    detail: str = ""
    elapsed_s: float = 0.0
    id: str = ""
    components: dict[str, float] = field(default_factory=dict)
    cached: bool = False
    cases: list[dict] = field(default_factory=list)  # code: per test case {"status", "detail", "elapsed_s"}
    steps: list[dict] = field(default_factory=list)  # process supervision: {"reward", "start", "end"} per step
    signals: list[str] = field(default_factory=list)  # exploit signals: what the completion tried (sorted names)

    @classmethod
    def from_proto(cls, r: pb.VerifyResponse) -> VerifyResult:
        return cls(
            reward=r.reward,
            outcome=Outcome.from_proto(r.outcome),
            detail=r.detail,
            elapsed_s=r.elapsed_s,
            id=r.id,
            components=dict(r.components),
            cached=r.cached,
            cases=[
                {
                    "status": CaseStatus.from_proto(c.status),
                    "detail": c.detail,
                    "elapsed_s": c.elapsed_s,
                }
                for c in r.cases
            ],
            steps=[{"reward": s.reward, "start": s.start, "end": s.end} for s in r.steps],
            signals=list(r.signals),
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
    """Talks to the service: one address, a list of replicas, or any gRPC target (see the module doc).

    ``timeout_s``: the deadline of one call. ``wait_s``: how long a call keeps trying while the service
    answers UNAVAILABLE (None: ``DEFAULT_WAIT_S``; 0: only within the deadline). ``retries``: a cap on
    the number of tries after the first (None: no cap, only the two time budgets). ``split``: how many
    sub-batches a batch is cut into (None: one per replica address).
    """

    def __init__(
        self,
        target: str,
        *,
        timeout_s: float = 120.0,
        retries: int | None = None,
        token: str | None = None,
        wait_s: float | None = None,
        split: int | None = None,
        client_id: str = "",
    ):
        self.target = target
        self.timeout_s = timeout_s
        self.retries = retries
        self.wait_s = DEFAULT_WAIT_S if wait_s is None else max(0.0, wait_s)
        meta = ((("authorization", f"Bearer {token}"),) if token else ()) + (
            (("x-client-id", client_id),) if client_id else ()
        )
        self._metadata = meta or None  # x-client-id: who this caller is beside its host (sessions are bound to it)
        self.grpc_target, self.replicas = resolve_target(target)
        self.split = max(1, split or self.replicas)
        opts = [
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.lb_policy_name", "round_robin"),
            # a replica back from a restart is used within seconds, not after gRPC's default 120 s back-off
            ("grpc.initial_reconnect_backoff_ms", 200),
            ("grpc.min_reconnect_backoff_ms", 200),
            ("grpc.max_reconnect_backoff_ms", int(MAX_BACKOFF_S * 1000)),
        ]
        self._channel = grpc.insecure_channel(self.grpc_target, options=opts)
        self._stub = pb_grpc.VerifierServiceStub(self._channel)
        self._session_stub = pb_grpc.SessionServiceStub(self._channel)
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    # -- plumbing ---------------------------------------------------------------------------------
    def _call(self, method: str, request: Any, timeout_s: float | None) -> Any:
        budget = timeout_s or self.timeout_s
        t0 = time.monotonic()
        # a deadline given for this call is the caller's hard limit; the client's own default deadline
        # is grading time, and waiting for an unavailable service (up to wait_s from its first UNAVAILABLE
        # answer) does not count against it. The grading deadline is never a connect window: a service
        # that cannot be reached fails the call once wait_s has passed, however long grading may take.
        deadline, hard = t0 + budget, bool(timeout_s)
        delay, tries, down_since, next_note, details = 0.1, 0, None, 0.0, ""
        while True:
            left = deadline - time.monotonic()
            if left <= 0 and down_since is not None:
                raise self._unavailable(details, time.monotonic() - t0, tries)
            if left <= 0:
                raise VerifierError(grpc.StatusCode.DEADLINE_EXCEEDED, f"{method}: no answer from {self.target}")
            try:
                stub = self._session_stub if method in SESSION_METHODS else self._stub
                response = getattr(stub, method)(request, timeout=left, metadata=self._metadata)
            except grpc.RpcError as e:
                code, details = e.code(), e.details() or ""
                if code != grpc.StatusCode.UNAVAILABLE:
                    raise VerifierError(code, details) from None
                now = time.monotonic()
                down_since = now if down_since is None else down_since
                wait_until = down_since + self.wait_s
                end = deadline if hard else wait_until
                if (self.retries is not None and tries >= self.retries) or now >= end:
                    raise self._unavailable(details, now - t0, tries + 1) from None
                if tries == 0 or now >= next_note:
                    window = self._retry_window(delay, tries, end - now)
                    if now == down_since:
                        log.warning(
                            "verifier service at %s unavailable (%s): retrying for up to %s",
                            self.target,
                            details,
                            window,
                        )
                    else:
                        log.warning(
                            "verifier service at %s still unavailable after %.0f s: retrying for up to %s more",
                            self.target,
                            now - down_since,
                            window,
                        )
                    next_note = now + NOTE_EVERY_S
                if not hard:  # time spent waiting for the service is not grading time
                    deadline = max(deadline, now + budget)
                time.sleep(min(delay, max(0.0, end - now)))
                delay, tries = min(delay * 2, MAX_BACKOFF_S), tries + 1
                continue
            if down_since is not None:
                log.warning(
                    "verifier service at %s answered again after %.1f s (%s)",
                    self.target,
                    time.monotonic() - down_since,
                    method,
                )
            return response

    def _retry_window(self, delay: float, tries: int, left_s: float) -> str:
        """How long the retries still to come can last, in words: ``left_s``, or less where ``retries`` ends them."""
        if self.retries is not None:
            total = 0.0
            for _ in range(self.retries - tries):
                total, delay = total + delay, min(delay * 2, MAX_BACKOFF_S)
            if total < left_s:
                return f"{total:.1f} s ({self.retries - tries} more tries)"
        return f"{left_s:.0f} s" if left_s >= 10 else f"{left_s:.1f} s"

    def _unavailable(self, details: str, waited_s: float, tries: int) -> VerifierError:
        return VerifierError(
            grpc.StatusCode.UNAVAILABLE,
            f"cannot reach the verifier service: {self.target} unavailable ({tries} tries in {waited_s:.1f} s: "
            f"{details}): is it running? (`make serve`, or set the target to where it runs)",
        )

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
        """Grade many; results in the order of ``items``, each exactly once.

        With several replicas the batch is cut into ``split`` contiguous sub-batches sent at once
        (round_robin spreads them); a sub-batch whose replica fails is sent again as a whole, and
        only the one response that completed is used."""
        protos = [_as_item(i).to_proto() for i in items]
        if not protos:
            return []
        n = min(self.split, len(protos))
        if n == 1:
            return self._batch(protos, deadline_s)
        size = -(-len(protos) // n)
        chunks = [protos[i : i + size] for i in range(0, len(protos), size)]
        with self._pool_lock:  # threads are started as needed; callers may batch from many threads at once
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max(32, 4 * self.split), thread_name_prefix="verify-batch")
        futures = [self._pool.submit(self._batch, c, deadline_s) for c in chunks[1:]]
        first = self._batch(chunks[0], deadline_s)  # the caller's own thread takes one sub-batch
        return first + [r for f in futures for r in f.result()]

    def _batch(self, protos: list[pb.VerifyRequest], deadline_s: float | None) -> list[VerifyResult]:
        resp = self._call("VerifyBatch", pb.VerifyBatchRequest(items=protos), deadline_s)
        if len(resp.results) != len(protos):
            raise VerifierError(grpc.StatusCode.INTERNAL, f"{len(resp.results)} results for {len(protos)} items")
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

    # -- sessions (docs/sessions.md) ----------------------------------------------------------------
    def open_session(
        self,
        kind: str = "python",
        *,
        files: Mapping[str, bytes | str] | None = None,
        ttl_s: float = 0.0,
        **limits: float,
    ) -> pb.SessionInfo:
        """A session (a sandbox that keeps its state) of ``kind`` ("python", "bash"); ``limits``: fields of
        ``SessionLimits`` (cpu_s, timeout_s, memory_mb, output_bytes, nproc, nofile, fsize_mb)."""
        self._one_replica()
        raw = {k: v.encode() if isinstance(v, str) else v for k, v in (files or {}).items()}
        req = pb.OpenSessionRequest(kind=kind, limits=pb.SessionLimits(**limits), files=raw, ttl_s=ttl_s)
        return self._call("OpenSession", req, None)

    def exec(self, session_id: str, code: str, *, timeout_s: float = 0.0, cpu_s: int = 0) -> pb.ExecResponse:
        """Run one cell; the call's deadline is the cell's time plus the client's own (``timeout_s``)."""
        req = pb.ExecRequest(session_id=session_id, code=code, timeout_s=timeout_s, cpu_s=cpu_s)
        return self._call("Exec", req, (timeout_s or 0.0) + self.timeout_s)

    def fork_session(self, session_id: str, n: int) -> list[pb.SessionInfo]:
        return list(self._call("ForkSession", pb.ForkSessionRequest(session_id=session_id, n=n), None).sessions)

    def close_session(self, session_id: str) -> None:
        self._call("CloseSession", pb.CloseSessionRequest(session_id=session_id), None)

    def list_sessions(self) -> list[pb.SessionInfo]:
        return list(self._call("ListSessions", pb.ListSessionsRequest(), None).sessions)

    def grade_session(
        self,
        session_id: str,
        verifier: str,
        reference: str = "",
        *,
        prompt: str = "",
        options: Mapping[str, str] | None = None,
        timeout_s: float = 0.0,
        id: str = "",
        deadline_s: float | None = None,
    ) -> VerifyResult:
        """Grade the session's state with ``verifier``: its cells that ran to their end, replayed in a fresh
        grading sandbox, are the completion; ``reference`` (hidden tests) never enters the session."""
        req = pb.GradeSessionRequest(
            session_id=session_id,
            verifier=verifier,
            reference=reference,
            prompt=prompt,
            options={str(k): str(v) for k, v in (options or {}).items()},
            timeout_s=timeout_s,
            id=id,
        )
        return VerifyResult.from_proto(self._call("GradeSession", req, deadline_s))

    def _one_replica(self) -> None:
        if self.replicas > 1:  # a session lives in one replica; round_robin would send its calls to others
            raise VerifierError(
                grpc.StatusCode.FAILED_PRECONDITION,
                "sessions need a client of one replica "
                f"(this one round-robins over {self.replicas}): make one per address",
            )

    def wait_ready(self, timeout_s: float = 120.0) -> None:
        """Block until the channel connects (not until the pool is ready: use health for that)."""
        grpc.channel_ready_future(self._channel).result(timeout=timeout_s)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        self._channel.close()

    def __enter__(self) -> VerifierClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
