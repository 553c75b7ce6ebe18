"""The gRPC server: thin servicer methods that convert proto ↔ Python and call VerifierService.

    python -m verifiers.fronts.server --host 127.0.0.1 --port 50051 --registry var/registry.sqlite

Health (grpc.health.v1) answers NOT_SERVING until the sandbox pool is ready, then SERVING. Server
reflection is on, so any gRPC client (grpcurl, grpcui, Postman) can list and call the service.
SIGTERM/SIGINT: health goes NOT_SERVING, new RPCs are refused, in-flight ones get a grace period,
every container of the pool is removed, exit 0.

Registration: RegisterVerifier / UnregisterVerifier change the registry (persisted in the SQLite file
given by ``--registry``, or in PostgreSQL with ``--registry postgresql://…``, which replicas share: a
verifier registered through one is served by all, see docs/scale.md). With an admin token
(``--admin-token-file``; ``--admin-token`` or ``VERIFIER_ADMIN_TOKEN`` make the server re-exec without it:
verifiers/service/admin_token.py) they need ``authorization: Bearer <token>`` metadata (UNAUTHENTICATED otherwise);
verifying and listing stay open, a verifier's definition (its spec) and ``cached`` flags are the admin's
(docs/security.md). The token is compared in constant time and goes nowhere else.

HTTP/JSON (``--http-port H``, 0 picks a free port, printed as ``HTTP SERVING on host:port`` before the
gRPC line): the same servicer behind /v1/..., OpenRLHF's /get_reward (``--reward-verifier``),
SandboxFusion's /run_code, /healthz and Prometheus /metrics, from this process (verifiers/fronts/http/api.py).
"""

from __future__ import annotations

import argparse
import contextlib
import hmac
import logging
import os
import signal
import sys
import threading
from concurrent import futures

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from proto.verifier.v1 import verifier_pb2 as pb
from proto.verifier.v1 import verifier_pb2_grpc as pb_grpc
from sandbox.deadline import Deadline
from verifiers.fronts import sessions
from verifiers.fronts.verdicts import verdict_to_proto
from verifiers.kinds import table as kinds
from verifiers.kinds.remote import INSTANCE_HEADER
from verifiers.service import admin_token as token_source
from verifiers.service import bounds as service_bounds
from verifiers.service import digest, wiring
from verifiers.service.callers import grpc_caller
from verifiers.service.core import VerifierService
from verifiers.service.fair import RpcShare
from verifiers.service.registry import Registry
from verifiers.shapes import limits as service_limits
from verifiers.shapes.base import BadRequest, ServiceError, Unauthenticated
from verifiers.shapes.errors import ListenError
from verifiers.shapes.request import Request

log = logging.getLogger("verifiers.fronts.server")
SERVICE_NAME = pb.DESCRIPTOR.services_by_name["VerifierService"].full_name
MAX_MESSAGE_BYTES = 64 * 1024 * 1024


def info_to_proto(v, builtin: bool, with_spec: bool = True, lookup=None) -> pb.VerifierInfo:
    """The verifier's name, kind, description, version, digests (verifiers/service/digest.py; ``lookup``: the
    registry's, for a composite's parts) and (``with_spec``: for the admin) its definition."""
    info = pb.VerifierInfo(
        name=v.name,
        kind=v.kind,
        description=v.description,
        builtin=builtin,
        version=getattr(v, "version", 1),
        grader_version=digest.grader_version(),
        digest=digest.definition_digest(v, lookup) if lookup else "",
    )
    if not builtin and with_spec:  # the spec oneof field has the kind's name (verifiers/kinds/table.py)
        getattr(info, v.kind).CopyFrom(kinds.kind(v.kind).to_proto(v.spec()))
    return info


def spec_from_proto(r: pb.RegisterVerifierRequest) -> tuple[str, dict]:
    """(kind, spec) of a registration request; the spec is what the store keeps."""
    which = r.WhichOneof("spec")
    if which in kinds.KINDS:
        return which, kinds.KINDS[which].from_proto(getattr(r, which))
    raise BadRequest(f"no spec given: set one of {', '.join(kinds.KINDS)}")


class AdminToken:
    """Checks ``authorization: Bearer <token>`` on mutating RPCs; no token configured → open."""

    def __init__(self, token: str):
        self._token = token.encode()

    def check(self, context: grpc.ServicerContext, what: str = "registering a verifier") -> None:
        if not self._token:
            return
        got = dict(context.invocation_metadata()).get("authorization", "")
        scheme, _, value = got.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), self._token):
            raise Unauthenticated(
                f"this server requires an admin token for {what}: send 'authorization: Bearer <token>' "
                "(the CLI's --token or VERIFIER_ADMIN_TOKEN)"
                if not got
                else "the admin token is wrong"
            )

    def allows(self, context: grpc.ServicerContext) -> bool:
        """Whether this call may see what only the admin sees (definitions, cache hits); open without a token."""
        try:
            self.check(context)
        except Unauthenticated:
            return False
        return True


REPLY_RESERVE_S = 0.1  # of the client's deadline, kept back to send the reply
NO_DEADLINE_S = 365 * 24 * 3600.0  # a time_remaining() past this: the client set no deadline


def call_deadline(context: grpc.ServicerContext) -> Deadline | None:
    """Where a request's deadline is set: the client's gRPC deadline (None without one: the service then
    uses the request's grading budget), less the time to send the reply."""
    left = context.time_remaining()  # grpcio: about 2**63 ns for a call without a deadline (or inf), not None
    if left is None or not left < NO_DEADLINE_S:
        return None
    return Deadline.after(left).reserve(REPLY_RESERVE_S)


def _abort(context: grpc.ServicerContext, e: ServiceError):
    context.abort(getattr(grpc.StatusCode, e.status), str(e))


class Servicer(pb_grpc.VerifierServiceServicer):
    """``share``: gRPC's bound on the calls in progress that may wait for a sandbox (fair.py RpcShare); the
    HTTP routes run this servicer without one (their sandbox lane is their bound)."""

    def __init__(self, service: VerifierService, admin: AdminToken | None = None, share: RpcShare | None = None):
        self.service = service
        self.admin = admin or AdminToken("")
        self.share = share

    def _hold(self, *verifiers: str, sandbox: bool = False):
        """A slot of the share when ``sandbox`` or one of ``verifiers`` may wait for a sandbox (nothing
        without a share)."""
        if self.share is None:
            return contextlib.nullcontext()
        return self.share.hold(sandbox or any(self.service.needs_sandbox(n) for n in set(verifiers)))

    def Verify(self, request, context):
        try:
            with self._hold(request.verifier):
                v = self.service.verify(
                    Request.from_proto(request), call_deadline(context), caller=grpc_caller(context)
                )
        except ServiceError as e:
            _abort(context, e)
        v.cached = v.cached and self.admin.allows(context)  # a cache hit is the admin's to see (docs/security.md)
        return verdict_to_proto(v, request.id)

    def VerifyBatch(self, request, context):
        reqs = [Request.from_proto(r) for r in request.items]
        try:
            with self._hold(*(r.verifier for r in reqs)):
                verdicts = self.service.verify_batch(reqs, call_deadline(context), caller=grpc_caller(context))
        except ServiceError as e:
            _abort(context, e)
        if not self.admin.allows(context):
            for v in verdicts:
                v.cached = False
        return pb.VerifyBatchResponse(results=[verdict_to_proto(v, r.id) for v, r in zip(verdicts, reqs, strict=True)])

    def ListVerifiers(self, request, context):
        reg, spec = self.service.registry, self.admin.allows(context)  # definitions: the admin's only
        return pb.ListVerifiersResponse(
            verifiers=[info_to_proto(v, reg.is_builtin(v.name), spec, reg.get) for v in reg.all()]
        )

    def GetVerifier(self, request, context):
        # tells a server registering this one as a remote that it would be talking to itself
        context.send_initial_metadata(((INSTANCE_HEADER, self.service.instance_id),))
        try:
            v = self.service.get_verifier(request.name)
        except ServiceError as e:
            _abort(context, e)
        reg = self.service.registry
        return info_to_proto(v, reg.is_builtin(v.name), self.admin.allows(context), reg.get)

    def RegisterVerifier(self, request, context):
        try:
            self.admin.check(context)
            kind, spec = spec_from_proto(request)
            with self._hold(sandbox=True):  # a python verifier's dry run waits for a sandbox
                v = self.service.register(
                    request.name,
                    kind,
                    request.description,
                    spec,
                    replace=request.replace,
                    deadline=call_deadline(context),
                )
        except ServiceError as e:
            _abort(context, e)
        return info_to_proto(v, False, lookup=self.service.registry.get)

    def UnregisterVerifier(self, request, context):
        try:
            self.admin.check(context, f"unregistering a verifier ({request.name})")
            self.service.unregister(request.name)
        except ServiceError as e:
            _abort(context, e)
        return pb.UnregisterVerifierResponse()


def build_server(
    service: VerifierService,
    host: str,
    port: int,
    workers: int = 32,
    admin_token: str = "",
    max_message_bytes: int = MAX_MESSAGE_BYTES,
    max_concurrent_rpcs: int | None = None,
    sandbox_rpcs: int | None = None,
):
    """``sandbox_rpcs``: the most RPCs in progress that may wait for a sandbox (None: no bound of its own)."""
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="grpc"),
        maximum_concurrent_rpcs=max_concurrent_rpcs,
        options=[
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.max_send_message_length", max_message_bytes),
            ("grpc.so_reuseport", 0),
        ],
    )
    share = RpcShare(sandbox_rpcs) if sandbox_rpcs else None
    pb_grpc.add_VerifierServiceServicer_to_server(Servicer(service, AdminToken(admin_token), share), server)
    sessions.register(server, service, call_deadline)  # SessionService (verifiers/fronts/sessions.py)
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    names = (
        SERVICE_NAME,
        sessions.SERVICE_NAME,
        health_pb2.DESCRIPTOR.services_by_name["Health"].full_name,
        reflection.SERVICE_NAME,
    )
    reflection.enable_server_reflection(names, server)
    try:
        bound = server.add_insecure_port(f"{host}:{port}")
    except RuntimeError:  # grpcio 1.85 (pinned here) raises where older versions returned 0
        bound = 0
    if bound == 0:
        raise ListenError(f"could not listen on {host}:{port} (in use?): choose another --port")
    return server, health_servicer, bound


def _set_health(h: health.HealthServicer, serving: bool) -> None:
    status = health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
    for name in ("", SERVICE_NAME):
        h.set(name, status)


def _watch_health(h: health.HealthServicer, pool, stop: threading.Event, every_s: float = 0.5) -> None:
    """Health follows the pool: NOT_SERVING while no sandbox is up (e.g. the Docker engine restarts),
    SERVING again once the pool has replaced them, with nobody restarting the service."""
    serving = True
    while not stop.wait(every_s):
        now = pool.healthy
        if now != serving:
            log.warning(
                "sandbox pool %s: health %s",
                "recovered" if now else "has no live sandbox",
                "SERVING" if now else "NOT_SERVING",
            )
            _set_health(h, now)
            serving = now


def _start_http(args: argparse.Namespace, service: VerifierService, max_body_bytes: int):
    """The HTTP/JSON API (verifiers/fronts/http/api.py) on ``--http-port``, beside gRPC; None without the flag."""
    if args.http_port is None:
        return None
    from verifiers.fronts.http.api import HttpServer, create_app

    servicer = Servicer(service, AdminToken(args.admin_token))  # the same servicer code the gRPC routes run
    bounds = getattr(args, "bounds", None)
    app = create_app(
        service,
        servicer,
        reward_verifier=args.reward_verifier,
        max_body_bytes=max_body_bytes,
        bounds=bounds,
        workers=args.limits.max_concurrent_rpcs,
    )
    http = HttpServer(app, args.host, args.http_port, grace_s=args.grace_s, bounds=bounds).start()
    log.info("HTTP listening on %s:%d (/v1, /get_reward, /run_code, /metrics, /docs)", args.host, http.port)
    return http


def serve(args: argparse.Namespace) -> int:
    os.environ.pop("VERIFIER_ADMIN_TOKEN", None)  # read by main(); no child process inherits it
    try:
        registry = Registry(args.registry)
    except ServiceError as e:
        log.error("%s", e)
        return 2
    limits = args.limits
    log.info("limits: %s", ", ".join(f"{k}={v}" for k, v in limits.model_dump().items()))
    pool = wiring.build_pool(limits)  # the one door: every lane, the toolchains' included (verifiers/service/wiring.py)
    service = VerifierService(registry, pool, limits=limits, bounds=args.bounds)
    server, health_servicer, port = build_server(
        service,
        args.host,
        args.port,
        admin_token=args.admin_token,
        workers=limits.max_concurrent_rpcs,  # a thread per admitted RPC
        max_message_bytes=limits.max_message_mb << 20,
        max_concurrent_rpcs=limits.max_concurrent_rpcs,
        sandbox_rpcs=args.bounds.sandbox_rpcs(limits.max_concurrent_rpcs),
    )
    _set_health(health_servicer, False)
    try:
        http = _start_http(args, service, max_body_bytes=limits.max_message_mb << 20)
    except OSError as e:
        log.error("%s", e)
        service.close()
        registry.close()
        return 2
    server.start()
    log.info("listening on %s:%d (health NOT_SERVING until the sandbox pool is ready)", args.host, port)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        pool.start()
        log.info("sandbox pool ready: %d containers in %.1f s", pool.size, pool.startup_s)
        _set_health(health_servicer, True)
        if http is not None:
            http.set_serving(True)
            print(f"HTTP SERVING on {args.host}:{http.port}", flush=True)  # before gRPC's line: launchers stop there
        threading.Thread(target=_watch_health, args=(health_servicer, pool, stop), daemon=True).start()
        print(f"SERVING on {args.host}:{port}", flush=True)
        stop.wait()
    except Exception as e:  # noqa: BLE001 - reported and turned into an exit status
        log.error("%s", e)
        return_code = 1
    else:
        return_code = 0
    log.info("shutting down: refusing new requests, finishing in-flight ones")
    _set_health(health_servicer, False)
    grpc_stopped = server.stop(grace=args.grace_s)
    if http is not None:
        http.stop()
    grpc_stopped.wait()
    service.close()
    pool.close()
    registry.close()
    log.info("stopped; sandbox containers removed")
    return return_code


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m verifiers.fronts.server", description="reward-verifier gRPC service")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=50051, help="0 picks a free port (printed on start)")
    p.add_argument(
        "--registry",
        default="var/registry.sqlite",
        help="where registered verifiers are kept: a SQLite file, or postgresql://user[:pass]@host[:port]/db "
        "shared by replicas (docs/scale.md)",
    )
    p.add_argument("--grace-s", type=float, default=10.0, help="how long in-flight RPCs may finish on shutdown")
    token_source.add_arguments(p)
    p.add_argument(
        "--http-port",
        type=int,
        default=None,
        help="also serve HTTP/JSON on this port (/v1, /get_reward, /run_code, /metrics); 0 picks a free one",
    )
    p.add_argument(
        "--reward-verifier",
        default="",
        help="verifier for OpenRLHF's /get_reward when the URL names none (?verifier=NAME)",
    )
    p.add_argument("--log-level", default="INFO")
    service_limits.add_arguments(p)
    service_bounds.add_arguments(p)
    args = p.parse_args(argv)
    try:
        args.limits = service_limits.from_args(args)  # validated here, before anything starts
        args.bounds = service_bounds.from_args(args)
        args.admin_token = token_source.resolve(args, may_reexec=argv is None)  # re-execs to drop an env token
    except (service_limits.LimitsError, token_source.TokenError) as e:
        p.error(str(e))
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        sys.exit(serve(args))
    except ListenError as e:
        print(e, file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
