"""The verifier service a pipeline run talks to: the one at ``target`` (or $VERIFIER_TARGET), else a local one on a
free loopback port, started for the run and stopped after it (``make train``, ``make r1``)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# a tool run holds a session per rollout (G per problem, plus the problem's own); the service started here allows them
SESSION_ARGS = ["--max-sessions", "512", "--max-sessions-per-caller", "512"]


@contextmanager
def verifier_service(target: str | None, log_path: Path, sessions: bool = False) -> Iterator[str]:
    """``target`` (or $VERIFIER_TARGET) if given; else a local service on a free loopback port, stopped after
    (``sessions``: with room for a tool run's sessions)."""
    target = target or os.environ.get("VERIFIER_TARGET")
    if target:
        yield target
        return
    from verifiers.launch import LocalServer

    print("starting the verifier service (Docker sandbox pool) on 127.0.0.1 ...", file=sys.stderr, flush=True)
    server = LocalServer(pool_size=2, log_path=str(log_path), extra_args=SESSION_ARGS if sessions else None).start()
    try:
        yield server.target
    finally:
        server.stop()
