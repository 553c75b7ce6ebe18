"""The service as one deployable image (deploy/service_image.py) and deploy/compose.yaml with the real engine.

The image: built offline (`make service-image`), the server as uid 10001, gRPC and HTTP health for an
orchestrator's readiness probe, grading through its sandboxes. The compose file: two replicas on one
PostgreSQL registry (the session's throwaway cluster stands in for the bundled postgres service, which
needs a registry pull): register through one, grade through the other, stop one, keep grading through
the client's failover. Skipped, saying why, without docker-compose (`make service-image` installs it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

from proto.verifier.v1 import verifier_pb2 as pb
from tests.parts import require
from tests.security.conftest import ensure_image
from verifiers.client import VerifierClient
from verifiers.launch import ROOT

pytestmark = pytest.mark.docker
COMPOSE = ROOT / "deploy" / "compose.yaml"
COUNTDOWN = (ROOT / "examples" / "countdown.py").read_text()
REF = json.dumps({"numbers": [2, 3, 7], "target": 13})
SERVICE_UID = 10001


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def service_image() -> str:
    ensure_image()
    r = subprocess.run([sys.executable, "-m", "deploy.service_image"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, f"make service-image failed: {r.stderr[-2000:]}"
    return subprocess.run(
        [sys.executable, "-m", "deploy.service_image", "--tag"], capture_output=True, text=True, cwd=ROOT, check=True
    ).stdout.strip()


@pytest.fixture
def chan_dir():
    """The sandboxes' FIFO directory: the same path in the service container and on the host."""
    d = tempfile.mkdtemp(prefix="rlvr-chan-host-")
    os.chown(d, SERVICE_UID, SERVICE_UID) if os.geteuid() == 0 else os.chmod(d, 0o777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def until_ready(container: str, port: int, timeout_s: float = 90) -> None:
    deadline, why = time.monotonic() + timeout_s, ""
    while time.monotonic() < deadline:
        r = subprocess.run(
            ["docker", "exec", container, "python3", "-m", "deploy.probe", "--port", str(port)],
            capture_output=True,
            text=True,
        )
        if r.returncode == 0:
            return
        why = r.stderr.strip()
        time.sleep(1)
    logs = subprocess.run(["docker", "logs", "--tail", "30", container], capture_output=True, text=True)
    pytest.fail(f"{container} not ready in {timeout_s} s ({why}): {logs.stdout}{logs.stderr}")


@pytest.mark.slow
def test_the_service_image_serves_as_non_root_with_grpc_and_http_health(service_image, chan_dir):
    port, http = free_port(), free_port()
    name = f"rlvr-svc-test-{os.getpid()}"
    sock_gid = os.stat("/var/run/docker.sock").st_gid
    cmd = ["docker", "run", "-d", "--rm", "--name", name, "--network", "host", "--group-add", str(sock_gid),
           "-e", f"TMPDIR={chan_dir}", "-e", f"RLVR_SANDBOX_OWNER={name}", "-v", "/var/run/docker.sock:/var/run/docker.sock", "-v", f"{chan_dir}:{chan_dir}",
           service_image, "--host", "127.0.0.1", "--port", str(port), "--http-port", str(http),
           "--registry", "/var/lib/rlvr/registry.sqlite", "--pool-size", "1", "--backend", "docker"]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True)
    try:
        until_ready(name, port)
        r = subprocess.run(
            ["docker", "exec", name, "python3", "-m", "deploy.probe", "--port", str(port), "--http-port", str(http)],
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0, r.stderr
        status = subprocess.run(["docker", "exec", name, "cat", "/proc/1/status"], capture_output=True, text=True)
        uids = next(line for line in status.stdout.splitlines() if line.startswith("Uid:")).split()[1:]
        assert uids == [str(SERVICE_UID)] * 4, "the server must run as the image's unprivileged user"
        with VerifierClient(f"127.0.0.1:{port}", retries=0) as c:
            c.register(pb.RegisterVerifierRequest(name="countdown", python=pb.PythonVerifier(source=COUNTDOWN)))
            got = c.verify("countdown", "<answer>2 * 3 + 7</answer>", REF)  # runs in a sandbox container
        assert (got.reward, got.outcome) == (1.0, "CORRECT")
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)


@pytest.mark.slow
def test_the_service_image_grades_with_the_bwrap_backend_inside_its_container(service_image, tmp_path):
    """As in a Kubernetes pod: no container engine, read-only root, every capability dropped; the pod's
    seccomp/AppArmor unconfined and /proc unmasked so bwrap can build each sandbox (deploy/README.md)."""
    port = free_port()
    name = f"rlvr-svc-bwrap-{os.getpid()}"
    os.chown(tmp_path, SERVICE_UID, SERVICE_UID) if os.geteuid() == 0 else os.chmod(tmp_path, 0o777)
    cmd = ["docker", "run", "-d", "--rm", "--name", name, "--network", "host", "--read-only", "--tmpfs", "/tmp",
           "--cap-drop", "ALL", "--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined",
           "--security-opt", "systempaths=unconfined", "-v", f"{tmp_path}:/var/lib/rlvr", service_image,
           "--host", "127.0.0.1", "--port", str(port), "--registry", "/var/lib/rlvr/registry.sqlite",
           "--pool-size", "1", "--backend", "bwrap"]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True)
    try:
        until_ready(name, port)
        with VerifierClient(f"127.0.0.1:{port}", retries=0) as c:
            c.register(pb.RegisterVerifierRequest(name="countdown", python=pb.PythonVerifier(source=COUNTDOWN)))
            got = c.verify("countdown", "<answer>2 * 3 + 7</answer>", REF)
        assert (got.reward, got.outcome) == (1.0, "CORRECT")
        logs = subprocess.run(["docker", "logs", name], capture_output=True, text=True)
        assert "seccomp filter on" in logs.stderr + logs.stdout
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)


@pytest.mark.slow
def test_compose_two_replicas_share_the_registry_and_survive_one_stopping(service_image, chan_dir, postgres_url):
    require("docker-compose")  # a required part: missing, the test fails naming it (never a skip)
    ports = {k: free_port() for k in ("RLVR_PORT_A", "RLVR_HTTP_A", "RLVR_PORT_B", "RLVR_HTTP_B")}
    env = (
        os.environ
        | {k: str(v) for k, v in ports.items()}
        | {
            "RLVR_SERVICE_IMAGE": service_image,
            "RLVR_REGISTRY_URL": postgres_url,
            "RLVR_CHAN_DIR": chan_dir,
            "RLVR_POOL": "1",
            "RLVR_DOCKER_GID": str(os.stat("/var/run/docker.sock").st_gid),
        }
    )
    compose = ["docker-compose", "-f", str(COMPOSE), "-p", f"rlvrtest{os.getpid()}"]
    up = subprocess.run(
        [*compose, "up", "-d", "--no-deps", "replica-a", "replica-b"], env=env, capture_output=True, text=True
    )
    try:
        assert up.returncode == 0, up.stderr[-2000:]
        names = subprocess.run([*compose, "ps", "-q"], env=env, capture_output=True, text=True).stdout.split()
        assert len(names) == 2
        until_ready(names[0], ports["RLVR_PORT_A"] if "replica-a" in _name(names[0]) else ports["RLVR_PORT_B"])
        until_ready(names[1], ports["RLVR_PORT_A"] if "replica-a" in _name(names[1]) else ports["RLVR_PORT_B"])
        a, b = f"127.0.0.1:{ports['RLVR_PORT_A']}", f"127.0.0.1:{ports['RLVR_PORT_B']}"
        with VerifierClient(a, retries=0) as ca, VerifierClient(b, retries=0) as cb:
            ca.register(pb.RegisterVerifierRequest(name="countdown", python=pb.PythonVerifier(source=COUNTDOWN)))
            got = cb.verify("countdown", "<answer>2 * 3 + 7</answer>", REF)  # registered on A, graded by B
            assert (got.reward, got.outcome) == (1.0, "CORRECT")
        subprocess.run([*compose, "stop", "replica-a"], env=env, check=True, capture_output=True)
        with VerifierClient(f"{a},{b}") as both:  # the client's failover: A is gone, B answers
            for completion, reward in [("<answer>2 * 3 + 7</answer>", 1.0), ("<answer>2 + 3 + 7</answer>", 0.0)] * 3:
                assert both.verify("countdown", completion, REF).reward == reward
    finally:
        subprocess.run([*compose, "down", "-t", "5"], env=env, capture_output=True)


def _name(cid: str) -> str:
    return subprocess.run(["docker", "inspect", "-f", "{{.Name}}", cid], capture_output=True, text=True).stdout
