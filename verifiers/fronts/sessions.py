"""The session calls on the wire: gRPC ``SessionService`` and HTTP ``/v1/sessions``, thin conversions
around ``verifiers/service/sessions.py`` (docs/sessions.md).

    POST   /v1/sessions                 OpenSessionRequest          → SessionInfo
    GET    /v1/sessions                                             → ListSessionsResponse (the caller's own)
    POST   /v1/sessions/{id}/exec       ExecRequest (no session_id) → ExecResponse
    POST   /v1/sessions/{id}/fork       {"n": 8}                    → ForkSessionResponse
    DELETE /v1/sessions/{id}                                        → CloseSessionResponse
    POST   /v1/sessions/{id}/grade      GradeSessionRequest (no id) → VerifyResponse (session_grade.py)

The caller is the gRPC peer's (or HTTP client's) host plus its ``x-client-id`` (verifiers/service/callers.py),
as for grading; HTTP runs the same servicer methods through ``HttpContext``, so statuses and messages agree.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from google.protobuf import json_format

from proto.verifier.v1 import verifier_pb2 as pb
from proto.verifier.v1 import verifier_pb2_grpc as pb_grpc
from sandbox.deadline import Deadline
from sandbox.session import Cell
from verifiers.fronts.http import protojson
from verifiers.fronts.http.common import HttpError, error_response, run_in_lane
from verifiers.fronts.verdicts import verdict_to_proto
from verifiers.service import session_grade
from verifiers.service.callers import grpc_caller
from verifiers.service.sessions import SessionInfo, Sessions
from verifiers.shapes.base import ServiceError

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["SessionService"].full_name
LIMIT_FIELDS = ("cpu_s", "timeout_s", "memory_mb", "output_bytes", "nproc", "nofile", "fsize_mb")


def info_to_proto(i: SessionInfo) -> pb.SessionInfo:
    lim = pb.SessionLimits(**{k: getattr(i.limits, k) for k in LIMIT_FIELDS})
    return pb.SessionInfo(
        id=i.id,
        kind=i.kind,
        created=i.created,
        last_used=i.last_used,
        ttl_s=i.ttl_s,
        parent=i.parent,
        isolation=i.isolation,
        limits=lim,
    )


def cell_to_proto(c: Cell) -> pb.ExecResponse:
    r = pb.ExecResponse(
        status=c.status,
        stdout=c.stdout,
        stderr=c.stderr,
        stdout_truncated=c.stdout_truncated,
        stderr_truncated=c.stderr_truncated,
        cpu_s=c.cpu_s,
        wall_s=c.wall_s,
        ended=c.ended,
    )
    for name in ("value", "error", "exit_code"):
        if getattr(c, name) is not None:
            setattr(r, name, getattr(c, name))
    return r


def limits_from_proto(m: pb.SessionLimits) -> dict:
    """The limits a caller set (0: unset, the service's most)."""
    return {k: getattr(m, k) for k in LIMIT_FIELDS if getattr(m, k)}


class SessionServicer(pb_grpc.SessionServiceServicer):
    """``deadline_of``: a call's deadline from its context (gRPC: server.py's ``call_deadline``; HTTP: none);
    ``service``: the VerifierService that grades a session (GradeSession)."""

    def __init__(
        self,
        sessions: Sessions,
        deadline_of: Callable[[Any], Deadline | None] = lambda context: None,
        service: Any = None,
    ):
        self.sessions, self.deadline_of, self.service = sessions, deadline_of, service

    def _run(self, context, fn, *args, **kw):
        try:
            return fn(grpc_caller(context), *args, deadline=self.deadline_of(context), **kw)
        except ServiceError as e:
            context.abort(_code(e.status), str(e))

    def OpenSession(self, request, context):
        files = dict(request.files)
        info = self._run(
            context, self.sessions.open, request.kind, limits_from_proto(request.limits), files, request.ttl_s
        )
        return info_to_proto(info)

    def Exec(self, request, context):
        cell = self._run(
            context, self.sessions.exec, request.session_id, request.code, request.timeout_s, request.cpu_s
        )
        return cell_to_proto(cell)

    def ForkSession(self, request, context):
        infos = self._run(context, self.sessions.fork, request.session_id, request.n)
        return pb.ForkSessionResponse(sessions=[info_to_proto(i) for i in infos])

    def CloseSession(self, request, context):
        self._run(context, _no_deadline(self.sessions.close), request.session_id)
        return pb.CloseSessionResponse()

    def ListSessions(self, request, context):
        infos = self._run(context, _no_deadline(self.sessions.list))
        return pb.ListSessionsResponse(sessions=[info_to_proto(i) for i in infos])

    def GradeSession(self, request, context):
        fields = {"verifier": request.verifier, "reference": request.reference, "prompt": request.prompt,
                  "options": dict(request.options), "timeout_s": request.timeout_s, "id": request.id}  # fmt: skip
        grade = functools.partial(session_grade.grade, self.service, self.sessions)
        verdict = self._run(context, lambda caller, deadline: grade(caller, request.session_id, fields, deadline))
        return verdict_to_proto(verdict, request.id)


def _no_deadline(fn):
    return lambda caller, *args, deadline=None: fn(caller, *args)


def _code(status: str):
    import grpc

    return getattr(grpc.StatusCode, status)


def register(server: Any, service: Any, deadline_of: Callable[[Any], Deadline | None]) -> SessionServicer | None:
    """Serve ``service.sessions`` on ``server`` (server.py calls this); nothing for a service without sessions."""
    if getattr(service, "sessions", None) is None:
        return None
    servicer = SessionServicer(service.sessions, deadline_of, service)
    pb_grpc.add_SessionServiceServicer_to_server(servicer, server)
    return servicer


# -- HTTP ------------------------------------------------------------------------------------------------
def add_routes(app: Any, context: Callable[[Any, Any], Any]) -> None:
    """The /v1/sessions routes on ``app`` (api.py calls this with its ``HttpContext``, which answers what the
    servicer asks of a gRPC context: the caller's host and x-client-id)."""
    router = APIRouter(tags=["sessions"])

    async def call(request: Request, method: str, message: Any) -> Response:
        service = request.app.state.service
        servicer = SessionServicer(service.sessions, service=service)
        fn = functools.partial(getattr(servicer, method), message, context(request.headers, request.client))
        try:
            reply = await run_in_lane(request, "sandbox", fn)  # a cell blocks: the sandbox lane's threads
        except HttpError as e:
            return error_response(e.status, e.message, e.http_status)
        return Response(json.dumps(protojson.to_dict(reply), ensure_ascii=False), media_type="application/json")

    async def body(request: Request, cls: type) -> Any:
        try:
            return protojson.parse(await request.body() or b"{}", cls)
        except (json_format.ParseError, UnicodeDecodeError) as e:
            why = f"body is not a {cls.DESCRIPTOR.full_name} in protobuf's JSON mapping: {e}"
            raise HttpError("INVALID_ARGUMENT", why) from None

    @router.post("/v1/sessions")
    async def open_session(request: Request) -> Response:
        """Open a session (gRPC OpenSession)."""
        return await call(request, "OpenSession", await body(request, pb.OpenSessionRequest))

    @router.get("/v1/sessions")
    async def list_sessions(request: Request) -> Response:
        """The caller's open sessions (gRPC ListSessions)."""
        return await call(request, "ListSessions", pb.ListSessionsRequest())

    @router.post("/v1/sessions/{session_id}/exec")
    async def exec_cell(session_id: str, request: Request) -> Response:
        """Run one cell (gRPC Exec); the body is an ExecRequest without session_id."""
        msg = await body(request, pb.ExecRequest)
        msg.session_id = session_id
        return await call(request, "Exec", msg)

    @router.post("/v1/sessions/{session_id}/fork")
    async def fork_session(session_id: str, request: Request) -> Response:
        """n new sessions from a copy of this one (gRPC ForkSession); the body is {"n": N}."""
        msg = await body(request, pb.ForkSessionRequest)
        msg.session_id = session_id
        return await call(request, "ForkSession", msg)

    @router.post("/v1/sessions/{session_id}/grade")
    async def grade_session(session_id: str, request: Request) -> Response:
        """Grade the session's state with a verifier (gRPC GradeSession); the body is a GradeSessionRequest
        without session_id."""
        msg = await body(request, pb.GradeSessionRequest)
        msg.session_id = session_id
        return await call(request, "GradeSession", msg)

    @router.delete("/v1/sessions/{session_id}")
    async def close_session(session_id: str, request: Request) -> Response:
        """Close a session (gRPC CloseSession)."""
        return await call(request, "CloseSession", pb.CloseSessionRequest(session_id=session_id))

    app.include_router(router)
