"""Shared by the HTTP routes: gRPC status → HTTP status, the error body, running blocking work off the
event loop, and OpenAPI schemas derived from the proto descriptors (so the document cannot drift from the
wire contract)."""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from verifiers.service.callers import CALLER, http_caller

# gRPC status name → HTTP status (FAILED_PRECONDITION: 412; RESOURCE_EXHAUSTED: 429, or 413 for a body
# over the size limit, answered by http_limits.InputLimits before any route runs)
HTTP_STATUS = {
    "OK": 200,
    "INVALID_ARGUMENT": 400,
    "OUT_OF_RANGE": 400,
    "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403,
    "NOT_FOUND": 404,
    "ALREADY_EXISTS": 409,
    "ABORTED": 409,
    "FAILED_PRECONDITION": 412,
    "RESOURCE_EXHAUSTED": 429,
    "CANCELLED": 499,
    "INTERNAL": 500,
    "UNKNOWN": 500,
    "DATA_LOSS": 500,
    "UNIMPLEMENTED": 501,
    "UNAVAILABLE": 503,
    "DEADLINE_EXCEEDED": 504,
}


class HttpError(Exception):
    """A refusal with a gRPC status name, answered as HTTP_STATUS[status] and the same message."""

    def __init__(self, status: str, message: str, http_status: int | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.http_status = http_status or HTTP_STATUS.get(status, 500)


def error_response(status: str, message: str, http_status: int | None = None) -> JSONResponse:
    code = http_status or HTTP_STATUS.get(status, 500)
    headers = {"WWW-Authenticate": "Bearer"} if code == 401 else None
    return JSONResponse({"error": {"code": code, "status": status, "message": message}}, code, headers=headers)


def lane_for(app: Any, verifiers: Any) -> str:
    """``host`` when none of ``verifiers`` may wait for a sandbox (verifiers/service/fair.py), else ``sandbox``."""
    needs = getattr(app.state.service, "needs_sandbox", None)
    if needs is None:
        return "sandbox"
    return "sandbox" if any(needs(name) for name in set(verifiers)) else "host"


async def run_in_lane(request: Request, lane: str, fn: Any) -> Any:
    """Run ``fn()`` on the threads of one lane (``host`` or ``sandbox``): sandbox work never holds the host's."""
    return await request.app.state.lanes[lane].run(fn)


async def run_blocking(request: Request, fn: Any, *args: Any) -> Any:
    """Run ``fn(*args)`` on the app's worker threads (grading blocks), as the request's caller
    (``callers.CALLER``: it scopes the verdict cache and takes turns for the sandbox). OpenRLHF's
    /get_reward with a verifier that needs no sandbox runs in the host lane, everything else (/run_code)
    in the sandbox lane."""
    caller = http_caller(request.client, request.headers)
    lane = "sandbox"
    if request.url.path == "/get_reward":
        lane = lane_for(request.app, [request.query_params.get("verifier") or request.app.state.reward_verifier])

    def as_caller() -> Any:
        token = CALLER.set(caller)
        try:
            return fn(*args)
        finally:
            CALLER.reset(token)

    return await run_in_lane(request, lane, as_caller)


# -- OpenAPI from the proto descriptors ----------------------------------------------------------------
_SCALARS = {
    FieldDescriptor.TYPE_DOUBLE: {"type": "number"},
    FieldDescriptor.TYPE_FLOAT: {"type": "number"},
    FieldDescriptor.TYPE_INT32: {"type": "integer"},
    FieldDescriptor.TYPE_SINT32: {"type": "integer"},
    FieldDescriptor.TYPE_UINT32: {"type": "integer"},
    FieldDescriptor.TYPE_INT64: {"type": "string", "format": "int64"},  # canonical JSON: 64-bit ints as strings
    FieldDescriptor.TYPE_UINT64: {"type": "string", "format": "uint64"},
    FieldDescriptor.TYPE_BOOL: {"type": "boolean"},
    FieldDescriptor.TYPE_STRING: {"type": "string"},
    FieldDescriptor.TYPE_BYTES: {"type": "string", "format": "byte"},
}


def _field_schema(f: FieldDescriptor) -> dict:
    if f.message_type is not None and f.message_type.GetOptions().map_entry:
        return {"type": "object", "additionalProperties": _field_schema(f.message_type.fields_by_name["value"])}
    if f.message_type is not None:
        one = message_schema(f.message_type)
    elif f.enum_type is not None:
        one = {"type": "string", "enum": [v.name for v in f.enum_type.values]}
    else:
        one = dict(_SCALARS.get(f.type, {}))
    repeated = getattr(f, "is_repeated", None)
    repeated = repeated if repeated is not None else f.label == FieldDescriptor.LABEL_REPEATED
    return {"type": "array", "items": one} if repeated else one


def message_schema(d: Descriptor) -> dict:
    """JSON schema of a message in protobuf's canonical JSON mapping (lowerCamelCase names)."""
    props = {f.json_name: _field_schema(f) for f in d.fields}
    return {"type": "object", "title": d.name, "properties": props}


def body_doc(request_cls: Any | None, response_cls: Any) -> dict:
    """``openapi_extra`` for a route whose bodies are proto messages in JSON."""
    doc: dict = {
        "responses": {
            "200": {
                "description": response_cls.DESCRIPTOR.full_name,
                "content": {"application/json": {"schema": message_schema(response_cls.DESCRIPTOR)}},
            },
            "4XX": {"description": 'refused: {"error": {"code", "status", "message"}}, the gRPC status and message'},
        }
    }
    if request_cls is not None:
        doc["requestBody"] = {
            "required": True,
            "description": f"{request_cls.DESCRIPTOR.full_name} in protobuf's JSON mapping",
            "content": {"application/json": {"schema": message_schema(request_cls.DESCRIPTOR)}},
        }
    return doc
