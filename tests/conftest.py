"""Shared fixtures. Docker-marked tests need the engine and the sandbox image (`make setup`)."""

from __future__ import annotations

import subprocess

import pytest

from verifiers.client import VerifierClient
from verifiers.launch import LocalServer


def docker_ready() -> bool:
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.fixture(scope="session")
def verifier_server(tmp_path_factory):
    """One real verifier service (2 sandbox containers) on a free loopback port for the session."""
    if not docker_ready():
        pytest.fail("Docker engine not reachable: run `make setup` (tests marked docker need it)")
    log = tmp_path_factory.mktemp("server") / "server.log"
    with LocalServer(pool_size=2, log_path=str(log)) as srv:
        yield srv


@pytest.fixture(scope="session")
def client(verifier_server):
    with VerifierClient(verifier_server.target, timeout_s=120) as c:
        yield c
