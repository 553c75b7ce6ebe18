"""The HTTP server in-process, without Docker (a service with no sandbox pool; think_format grades on the
host): health follows set_serving, connections get TCP_NODELAY, grading without a pool, bind errors."""

from __future__ import annotations

import socket
import sys

import httpx
import pytest

from verifiers.fronts.http.api import HttpServer, create_app
from verifiers.fronts.server import AdminToken, Servicer
from verifiers.service.core import VerifierService
from verifiers.service.registry import Registry
from verifiers.shapes.errors import ListenError


@pytest.fixture()
def server(tmp_path):
    registry = Registry(str(tmp_path / "r.sqlite"))
    service = VerifierService(registry, None)
    app = create_app(service, Servicer(service, AdminToken("")))
    srv = HttpServer(app, "127.0.0.1", 0).start()
    try:
        yield srv
    finally:
        srv.stop()
        service.close()
        registry.close()


def test_health_follows_serving_and_grading_works(server):
    with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=30) as http:
        assert http.get("/healthz").status_code == 503
        server.set_serving(True)
        assert http.get("/healthz").json() == {"status": "SERVING"}
        r = http.post("/v1/verify", json={"verifier": "think_format", "completion": "<think>a</think>b"})
        assert r.json()["outcome"] == "OUTCOME_CORRECT"
        # no pool: a sandboxed verifier answers SANDBOX_ERROR, not a crash
        r = http.post("/run_code", json={"code": "print(1)", "language": "python"})
        assert r.json()["status"] == "SandboxError" and r.json()["run_result"]["status"] == "Error"


def test_connections_get_tcp_nodelay(server):
    # asyncio sets TCP_NODELAY on accepted connections only when the listening socket's proto is TCP;
    # without it every response waited ~40 ms (Nagle + delayed ACK between the headers and the body)
    assert server.sock.proto == socket.IPPROTO_TCP


def test_port_in_use_is_a_clear_error(server):
    with pytest.raises(ListenError, match="choose another --http-port"):
        HttpServer(server.app, "127.0.0.1", server.port)


def test_launcher_sees_serving_when_both_lines_arrive_at_once(tmp_path):
    # the server prints "HTTP SERVING on …" then "SERVING on …"; when both reach the pipe together, a
    # buffered readline() returned the first and select() then waited for ever (here: the start timeout)
    from verifiers.launch import LocalServer

    srv = LocalServer(registry=str(tmp_path / "r.sqlite"), start_timeout_s=20)
    program = "import os, time; os.write(1, b'HTTP SERVING on 127.0.0.1:1\\nSERVING on 127.0.0.1:2\\n'); time.sleep(60)"
    srv._args = [sys.executable, "-c", program]
    with srv:
        assert srv.target == "127.0.0.1:2"
        assert srv.output[0] == "HTTP SERVING on 127.0.0.1:1\n"
