"""HTTP/JSON beside gRPC, in the same process (FastAPI on uvicorn): a thin layer, no grading of its own.

    POST   /v1/verify               VerifyRequest        → VerifyResponse
    POST   /v1/verify_batch         VerifyBatchRequest   → VerifyBatchResponse
    GET    /v1/verifiers                                 → ListVerifiersResponse
    POST   /v1/verifiers            RegisterVerifierRequest → VerifierInfo      (admin token)
    GET    /v1/verifiers/{name}                          → VerifierInfo
    DELETE /v1/verifiers/{name}                          → UnregisterVerifierResponse (admin token)
    POST   /get_reward              OpenRLHF's remote reward shape (openrlhf.py)
    POST   /run_code                SandboxFusion's shape (sandboxfusion.py)
    GET    /healthz                 200 SERVING once the sandbox pool is ready, 503 NOT_SERVING before/after
    GET    /metrics                 Prometheus text format (verifiers/service/metrics.py)
    GET    /openapi.json, /docs     the OpenAPI document and its browser

The /v1 bodies are the proto messages in protobuf's canonical JSON mapping (``json_format``: lowerCamelCase
names, proto names accepted too; every field printed, int64 as a string, except a verifier's ``version``: a
JSON number, as the CLI prints it). /v1/verify and /v1/verify_batch
take a plain body straight to ``VerifierService`` and its verdicts straight to JSON (``v1.py``: the
servicer's answer without the proto round trip). Every other /v1 route, and those
two for any other form of body, parses the JSON into the proto request and calls the *same* gRPC servicer
method the gRPC server calls, through ``HttpContext`` (the few ``ServicerContext`` calls the servicer
makes), so statuses, messages, the admin token check (``Authorization: Bearer <token>``) and the
conversions are the gRPC ones. A gRPC status
becomes an HTTP status by ``HTTP_STATUS`` and the body ``{"error": {"code", "status", "message"}}``; so
does a body FastAPI cannot validate (400 INVALID_ARGUMENT, never its ``detail``/422). Every route reads its
body as JSON whatever the Content-Type says (``limits.InputLimits``: curl's ``-d`` sends a form type).
"""

from __future__ import annotations

import functools
import json
import socket
import threading
import time
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from google.protobuf import json_format

from proto.verifier.v1 import verifier_pb2 as pb
from verifiers.fronts import sessions
from verifiers.fronts.http import protojson, v1
from verifiers.fronts.http.common import HttpError, body_doc, error_response, lane_for, run_in_lane
from verifiers.fronts.http.limits import InputLimits, uvicorn_http_options
from verifiers.fronts.http.openrlhf import openrlhf_router
from verifiers.fronts.http.sandboxfusion import sandboxfusion_router
from verifiers.service.bounds import ServiceBounds
from verifiers.service.callers import CLIENT_ID_KEY, http_caller
from verifiers.service.fair import Lane
from verifiers.shapes.errors import ListenError

HOST_WORKERS = 16  # threads of the host lane (grading in this process: CPU-bound, the GIL's anyway)


class HttpContext:
    """What the servicer asks of a ``grpc.ServicerContext``, answered from an HTTP request."""

    def __init__(self, headers: Any, client: Any = None):
        self._metadata = tuple((k, headers[k]) for k in ("authorization", CLIENT_ID_KEY) if headers.get(k))
        self._peer = f"ipv4:{client[0]}:{client[1]}" if client else ""

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._metadata

    def peer(self) -> str:
        return self._peer

    def time_remaining(self) -> float | None:
        return None  # no deadline, as for a gRPC call without one

    def send_initial_metadata(self, metadata: Any) -> None:
        pass

    def abort(self, code: Any, details: str) -> None:
        raise HttpError(code.name, details)


def _to_json(message: Any) -> Response:
    d = protojson.to_dict(message)
    if isinstance(message, pb.VerifierInfo | pb.ListVerifiersResponse):  # a version is a count: an int, as
        for info in d.get("verifiers", [d]):  # the CLI prints it (int64 is a string in the mapping otherwise)
            info["version"] = int(info["version"])
    return Response(json.dumps(d, ensure_ascii=False), media_type="application/json")


def _servicer_lane(app: FastAPI, method: str, message: Any) -> str:
    if method == "Verify":
        return lane_for(app, [message.verifier])
    if method == "VerifyBatch":
        return lane_for(app, [item.verifier for item in message.items])
    return "host" if method in ("ListVerifiers", "GetVerifier") else "sandbox"  # registration: dry runs


async def _call_servicer(request: Request, method: str, message: Any) -> Response:
    """Run servicer.<method>(message, HttpContext) on the worker threads of its lane (it blocks on grading)."""
    app = request.app
    fn = functools.partial(getattr(app.state.servicer, method), message, HttpContext(request.headers, request.client))
    try:
        reply = await run_in_lane(request, _servicer_lane(app, method, message), fn)
    except HttpError as e:
        return error_response(e.status, e.message, e.http_status)
    return _to_json(reply)


async def _parse(request: Request, cls: type) -> Any:
    body = await request.body()
    name = cls.DESCRIPTOR.full_name
    try:
        obj = json.loads(body or b"{}")
    except ValueError:
        obj = {}  # not JSON: json_format's message says where
    if type(obj) is not dict:  # json_format's message for an array names a field it never saw
        fields = ", ".join(f'"{f.json_name}"' for f in cls.DESCRIPTOR.fields[:3])
        raise HttpError(
            "INVALID_ARGUMENT",
            f"the body must be a JSON object (a {name}: {{{fields}, ...}}), got a JSON {v1.json_type(obj)}",
        )
    try:
        return protojson.parse(body or b"{}", cls)
    except (json_format.ParseError, UnicodeDecodeError) as e:
        raise HttpError("INVALID_ARGUMENT", f"body is not a {name} in protobuf's JSON mapping: {e}") from None


_FAST = {"Verify": (v1.parse_one, v1.verify_one), "VerifyBatch": (v1.parse_batch, v1.verify_batch)}


async def _fast_or_servicer(request: Request, method: str, cls: type) -> Response:
    """Verify/VerifyBatch: a plain body straight to the service (v1.py), any other form the servicer's way."""
    body = await request.body()
    parse, run = _FAST[method]
    try:
        try:
            reqs = parse(body)
        except v1.Slow:
            if method == "VerifyBatch":
                v1.check_items(body)
            message = await _parse(request, cls)
            v1.check_completions(body, method)
            return await _call_servicer(request, method, message)
    except HttpError as e:
        return error_response(e.status, e.message, e.http_status)
    app = request.app
    caller = http_caller(request.client, request.headers)
    show_cached = app.state.servicer.admin.allows(HttpContext(request.headers))  # as the servicer decides
    work = functools.partial(run, app.state.service, reqs, caller=caller, show_cached=show_cached)
    try:
        names = [r.verifier for r in reqs] if isinstance(reqs, list) else [reqs.verifier]
        out = await run_in_lane(request, lane_for(app, names), work)
    except HttpError as e:
        return error_response(e.status, e.message, e.http_status)
    return Response(out, media_type="application/json")


def _v1_routes(app: FastAPI) -> None:
    @app.post("/v1/verify", tags=["v1"], openapi_extra=body_doc(pb.VerifyRequest, pb.VerifyResponse))
    async def verify(request: Request) -> Response:
        """Grade one completion (gRPC Verify)."""
        return await _fast_or_servicer(request, "Verify", pb.VerifyRequest)

    @app.post("/v1/verify_batch", tags=["v1"], openapi_extra=body_doc(pb.VerifyBatchRequest, pb.VerifyBatchResponse))
    async def verify_batch(request: Request) -> Response:
        """Grade many completions; results in request order (gRPC VerifyBatch)."""
        return await _fast_or_servicer(request, "VerifyBatch", pb.VerifyBatchRequest)

    @app.get("/v1/verifiers", tags=["v1"], openapi_extra=body_doc(None, pb.ListVerifiersResponse))
    async def list_verifiers(request: Request) -> Response:
        """Every verifier: built-ins and registered ones with their specs (gRPC ListVerifiers)."""
        return await _call_servicer(request, "ListVerifiers", pb.ListVerifiersRequest())

    @app.post("/v1/verifiers", tags=["v1"], openapi_extra=body_doc(pb.RegisterVerifierRequest, pb.VerifierInfo))
    async def register(request: Request) -> Response:
        """Register a named verifier (admin token when the server has one: Authorization: Bearer …)."""
        return await _call_servicer(request, "RegisterVerifier", await _parse(request, pb.RegisterVerifierRequest))

    @app.get("/v1/verifiers/{name}", tags=["v1"], openapi_extra=body_doc(None, pb.VerifierInfo))
    async def get_verifier(name: str, request: Request) -> Response:
        """One verifier's description and spec (gRPC GetVerifier)."""
        return await _call_servicer(request, "GetVerifier", pb.GetVerifierRequest(name=name))

    @app.delete("/v1/verifiers/{name}", tags=["v1"], openapi_extra=body_doc(None, pb.UnregisterVerifierResponse))
    async def unregister(name: str, request: Request) -> Response:
        """Remove a registered verifier (admin token when the server has one)."""
        return await _call_servicer(request, "UnregisterVerifier", pb.UnregisterVerifierRequest(name=name))


def _ops_routes(app: FastAPI) -> None:
    @app.get("/healthz", tags=["operations"])
    async def healthz(request: Request) -> JSONResponse:
        """200 {"status": "SERVING"} once the sandbox pool is ready; 503 NOT_SERVING before and on shutdown."""
        state = request.app.state
        # the pool's own health where it reports one (no live sandbox: NOT_SERVING, as gRPC health says)
        serving = state.serving.is_set() and getattr(state.service.pool, "healthy", True) is not False
        return JSONResponse({"status": "SERVING" if serving else "NOT_SERVING"}, 200 if serving else 503)

    @app.get("/metrics", tags=["operations"])
    async def metrics(request: Request) -> Response:
        """Prometheus text exposition of the verifier core's counters (gRPC and HTTP traffic alike)."""
        body, content_type = request.app.state.service.metrics.exposition()
        return Response(body, media_type=content_type)


def create_app(
    service: Any,
    servicer: Any,
    *,
    reward_verifier: str = "",
    max_body_bytes: int = 64 << 20,
    workers: int = 32,
    bounds: ServiceBounds | None = None,
) -> FastAPI:
    """The ASGI app. ``servicer`` is a ``verifiers.fronts.server.Servicer`` over ``service``."""
    app = FastAPI(
        title="rlvr verifier service",
        version="1",
        description="Reward verification over HTTP/JSON; the same core as the gRPC service.",
    )
    app.state.service = service
    app.state.servicer = servicer
    app.state.reward_verifier = reward_verifier
    # two lanes of worker threads: verifiers that grade in this process never wait behind sandbox jobs
    metrics = getattr(service, "metrics", None)
    observe = metrics.observe_queue_wait if metrics is not None else None
    app.state.lanes = {
        "host": Lane("http_host", HOST_WORKERS, observe),
        "sandbox": Lane("http_sandbox", workers, observe),
    }
    for lane in app.state.lanes.values():
        if metrics is not None:
            metrics.watch_queue(lane.name, lane.depth)
    app.state.executor = app.state.lanes["sandbox"].executor  # the blocking pool other routes knew
    app.state.serving = threading.Event()

    @app.exception_handler(HttpError)
    async def _http_error(request: Request, e: HttpError) -> JSONResponse:
        return error_response(e.status, e.message, e.http_status)

    @app.exception_handler(RequestValidationError)
    async def _invalid_body(request: Request, e: RequestValidationError) -> JSONResponse:
        return error_response("INVALID_ARGUMENT", validation_message(e.errors(), _body_shape(request)))

    _v1_routes(app)
    _ops_routes(app)
    app.include_router(openrlhf_router)
    app.include_router(sandboxfusion_router)
    sessions.add_routes(app, HttpContext)  # /v1/sessions (verifiers/fronts/sessions.py)
    app.add_middleware(InputLimits, max_bytes=max_body_bytes, max_depth=(bounds or ServiceBounds()).max_json_depth)
    return app


NOT_AN_OBJECT = {"json_invalid", "model_attributes_type", "model_type", "dict_type"}


def _body_shape(request: Request) -> str:
    """What the route's typed body is, in words: "a JSON object with `code` and `language` (RunCodeRequest)"."""
    field = getattr(request.scope.get("route"), "body_field", None)
    model = getattr(getattr(field, "field_info", None), "annotation", None)
    required = [n for n, f in getattr(model, "model_fields", {}).items() if f.is_required()]
    if not required:
        return "a JSON object"
    return f"a JSON object with {' and '.join(f'`{n}`' for n in required)} ({model.__name__})"


def validation_message(errors: Any, shape: str = "a JSON object") -> str:
    """FastAPI's validation errors (a typed body: /run_code, /get_reward) as one sentence for the documented
    ``{"error": {...}}`` body, e.g. ``body.code: Field required; body.run_timeout: Input should be a valid number``.
    A body that is not JSON, or not an object, says what it must be (``shape``, from the route's model)."""
    errors = list(errors)
    whole = [e for e in errors if e.get("type") in NOT_AN_OBJECT and tuple(e.get("loc", ()))[:1] == ("body",)]
    if whole:
        why = whole[0].get("msg", "invalid")
        cause = (whole[0].get("ctx") or {}).get("error")
        return f"the body must be {shape}: {why}" + (f" ({cause})" if cause and str(cause) not in why else "")
    parts = []
    for err in list(errors)[:5]:
        where = ".".join(str(x) for x in err.get("loc", ()) if x != "body") or "body"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    more = len(list(errors)) - 5
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


class HttpServer:
    """uvicorn on its own thread, on a socket bound up front (so ``port`` is known before it starts)."""

    def __init__(self, app: FastAPI, host: str, port: int, grace_s: float = 10.0, bounds: ServiceBounds | None = None):
        self.app = app
        self.host = host
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # IPPROTO_TCP spelled out: asyncio sets TCP_NODELAY on accepted connections only when the socket's
        # proto says TCP; with proto 0 every response waits on Nagle + delayed ACK (headers, body)
        self.sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.sock.bind((host, port))
        except OSError as e:
            self.sock.close()
            msg = f"could not listen for HTTP on {host}:{port} ({e.strerror}): choose another --http-port"
            raise ListenError(msg) from None
        self.sock.listen(1024)
        self.port = self.sock.getsockname()[1]
        bounds = bounds or ServiceBounds()
        head = uvicorn_http_options(bounds.max_header_bytes, bounds.max_headers)  # 431 before a long head is kept
        config = uvicorn.Config(
            app, log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=grace_s, **head
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self.sock]}, daemon=True, name="http"
        )

    def start(self, timeout_s: float = 30.0) -> HttpServer:
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise ListenError(f"the HTTP server on {self.host}:{self.port} did not start")
            time.sleep(0.01)
        return self

    def set_serving(self, serving: bool) -> None:
        (self.app.state.serving.set if serving else self.app.state.serving.clear)()

    def stop(self) -> None:
        """Stop accepting, let in-flight requests finish (up to grace_s), then close the socket."""
        self.set_serving(False)
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join()
        for lane in self.app.state.lanes.values():
            lane.shutdown()
        self.sock.close()
