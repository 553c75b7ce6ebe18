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
    with LocalServer(
        pool_size=pool_size,
        registry=str(tmp / "registry.sqlite"),
        log_path=str(tmp / "server.log"),
        extra_args=["--http-port", "0", *extra_args],
        env=env,
    ) as srv:
        with httpx.Client(base_url=http_base(srv), timeout=120) as http:
            yield srv, http


def metric(http: httpx.Client, name: str) -> float:
    """The sum of the server's /metrics samples whose line starts with ``name`` (labels included or not)."""
    lines = [ln for ln in http.get("/metrics").text.splitlines() if ln.startswith(name)]
    return sum(float(ln.split()[-1]) for ln in lines)


def wait_metric(http: httpx.Client, name: str, at_least: float, within_s: float = 60) -> float:
    """Poll ``metric`` until it reaches ``at_least`` or ``within_s`` passes (a hang guard, not a timing: the
    caller asserts on what it finds); returns the last value read."""
    import time

    until = time.monotonic() + within_s
    while (value := metric(http, name)) < at_least and time.monotonic() < until:
        time.sleep(0.05)
    return value


def hold_every_sandbox(http: httpx.Client, ex, long_job, held: int = 2) -> tuple:
    """Caller A's ``held`` long jobs (``long_job()``, submitted to ``ex``) on every sandbox of the Python pool,
    then one more queued behind them: (futures of the held, future of the queued). Waits until the pool says
    all are busy and the gate's queue holds the third; the caller asserts that they are."""
    running = [ex.submit(long_job) for _ in range(held)]
    wait_metric(http, "rlvr_sandbox_pool_busy", held)
    queued = ex.submit(long_job)
    wait_metric(http, 'rlvr_queue_depth{class="sandbox_job"}', 1)
    return running, queued
