"""Readiness probe for orchestrators without a gRPC probe (compose, Slurm scripts): exit 0 when the
service's gRPC health (grpc.health.v1, the overall status) is SERVING and, with --http-port, HTTP
/healthz answers 200; else exit 1 saying what failed.

    python3 -m deploy.probe [--host 127.0.0.1] [--port 50051] [--http-port 8080] [--timeout-s 3]
"""

from __future__ import annotations

import argparse
import sys
import urllib.request

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc


def grpc_serving(host: str, port: int, timeout_s: float) -> str:
    """ "" when SERVING, else why not."""
    try:
        with grpc.insecure_channel(f"{host}:{port}") as ch:
            status = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(service=""), timeout=timeout_s)
    except grpc.RpcError as e:
        return f"gRPC health: {e.code().name}"
    return "" if status.status == health_pb2.HealthCheckResponse.SERVING else f"gRPC health: {status.status}"


def http_ok(host: str, port: int, timeout_s: float) -> str:
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/healthz", timeout=timeout_s) as r:
            return "" if r.status == 200 else f"HTTP /healthz: {r.status}"
    except OSError as e:
        return f"HTTP /healthz: {e}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=50051)
    p.add_argument("--http-port", type=int, default=0)
    p.add_argument("--timeout-s", type=float, default=3.0)
    a = p.parse_args()
    why = grpc_serving(a.host, a.port, a.timeout_s) or (
        http_ok(a.host, a.http_port, a.timeout_s) if a.http_port else ""
    )
    if why:
        print(f"not ready: {why}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
