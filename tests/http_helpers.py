"""A real verifier service process with its HTTP port on (``--http-port 0``), for tests/test_http_*.py."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import httpx

from verifiers.launch import LocalServer

HTTP_LINE = "HTTP SERVING on "


def http_base(srv: LocalServer) -> str:
    """The ``http://host:port`` the server printed before its gRPC SERVING line."""
    lines = [line for line in srv.output if line.startswith(HTTP_LINE)]
    assert lines, f"no {HTTP_LINE!r} line in the server's output: {srv.output}"
    return "http://" + lines[-1].split()[-1]


@contextmanager
def http_service(tmp: Path, *, token: str = "", extra_args: tuple[str, ...] = (), pool_size: int = 2):
    """(LocalServer, httpx.Client on its HTTP port); both gRPC and HTTP from the one process."""
    env = {"VERIFIER_ADMIN_TOKEN": token} if token else {}
    with LocalServer(pool_size=pool_size, registry=str(tmp / "registry.sqlite"), log_path=str(tmp / "server.log"),
                     extra_args=["--http-port", "0", *extra_args], env=env) as srv:  # fmt: skip
        with httpx.Client(base_url=http_base(srv), timeout=120) as http:
            yield srv, http
