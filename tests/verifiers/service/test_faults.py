"""Faults the service survives by itself, each with the real Docker engine and a real server process.

* a sandbox container killed in the middle of a job: that job is SANDBOX_ERROR (masked by the
  trainer), the pool is back to full size within seconds, later jobs are graded correctly;
* the Docker engine restarted under the service: health says NOT_SERVING while the engine is gone,
  SERVING again once the pool has replaced its sandboxes, nobody restarting the service, and grading
  is correct afterwards.

The engine that gets restarted is a second ``dockerd`` of this test's own (its own socket, data root,
exec root, containerd and bridge; no iptables), never the engine other tests and sessions share:
restarting that one would kill every sandbox on the machine. The sandbox image is copied into it once
(``docker save | docker load``; its data root is kept between runs). The server SIGKILL fault is in
tests/verifiers/fronts/test_server_lifecycle.py.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from sandbox.image.python import image_tag
from tests.security.conftest import ensure_image
from verifiers.client import VerifierClient
from verifiers.kinds.table import sandbox_count
from verifiers.launch import LocalServer
from verifiers.service.fair import BURST_SANDBOXES

pytestmark = pytest.mark.docker

ADD_TESTS = "def check(candidate):\n    assert candidate(1, 2) == 3\n"
ADD_OK = "```python\ndef add(a, b):\n    return a + b\n```"
ENGINE_DIR = Path("/tmp/rlvr-fault-engine")
ENGINE_DATA = Path("/var/lib/rlvr-fault-engine")
# The engine's own bridge. With `--bridge none` dockerd deletes the host's docker0 as it starts (moby's
# removeDefaultBridgeInterface); with the default it would take docker0 over. Its sandboxes use no network.
ENGINE_BRIDGE = "rlvr-fault0"
ENGINE_BRIDGE_ADDR = "198.51.100.1/24"  # TEST-NET-2 (RFC 5737): routed nowhere
SERVING = health_pb2.HealthCheckResponse.SERVING


def _link_exists(name: str) -> bool:
    return subprocess.run(["ip", "link", "show", name], capture_output=True).returncode == 0


HOST_BRIDGE = _link_exists("docker0")  # read when the tests are collected, before any engine of ours ran


def _wait_for(cond, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.2)
    return False


def _containers(owner_pid: int, env: dict | None = None) -> list[str]:
    out = subprocess.run(
        ["docker", "ps", "-a", "--filter", "label=rlvr.sandbox", "--format", '{{.Names}} {{.Label "rlvr.owner"}}'],
        capture_output=True,
        text=True,
        env=env,
    )
    return [line.split()[0] for line in out.stdout.splitlines() if line.endswith(f":{owner_pid}")]


def _grades_correctly(c: VerifierClient) -> bool:
    r = c.verify("code", ADD_OK, ADD_TESTS, options={"entry_point": "add"}, timeout_s=10)
    return r.outcome == "CORRECT"


# -- (i) a sandbox killed mid-job --------------------------------------------------------------------
def test_a_container_killed_mid_job_is_sandbox_error_and_the_pool_heals(tmp_path):
    with (
        LocalServer(pool_size=2, log_path=str(tmp_path / "log")) as srv,
        VerifierClient(srv.target, timeout_s=60) as c,
    ):
        names = _containers(srv.proc.pid)
        assert len(names) == sandbox_count(2, BURST_SANDBOXES)  # the pool, its burst sandbox, the lanes'
        slow = "```python\nimport time\ntime.sleep(30)\ndef add(a, b):\n    return a + b\n```"
        box: dict = {}
        import threading

        t = threading.Thread(
            target=lambda: box.update(r=c.verify("code", slow, ADD_TESTS, options={"entry_point": "add"}, timeout_s=40))
        )
        t.start()
        busy: list[str] = []
        assert _wait_for(lambda: bool(busy.extend(n for n in names if _runs_a_job(n)) or busy), 30)
        subprocess.run(["docker", "kill", busy[0]], capture_output=True, check=True)
        t.join(60)
        assert box["r"].outcome == "SANDBOX_ERROR" and box["r"].reward == 0.0, box["r"]
        healed = _wait_for(lambda: len(now := _containers(srv.proc.pid)) == len(names) and busy[0] not in now, 60)
        assert healed, _containers(srv.proc.pid)
        assert all(_grades_correctly(c) for _ in range(4))
        assert c.verify("math", r"\boxed{\frac{1}{2}}", "0.5").outcome == "CORRECT"


def _runs_a_job(name: str) -> bool:
    """The container has a process besides its worker (a job's fork)."""
    out = subprocess.run(["docker", "top", name, "-o", "pid"], capture_output=True, text=True).stdout
    return len(out.split()) > 2  # header + the worker + a job


# -- (ii) the engine restarted under the service -----------------------------------------------------
class Engine:
    """A private dockerd: started, stopped and restarted by this test only."""

    def __init__(self) -> None:
        ENGINE_DIR.mkdir(parents=True, exist_ok=True)
        ENGINE_DATA.mkdir(parents=True, exist_ok=True)
        self.host = f"unix://{ENGINE_DIR}/docker.sock"
        self.env = {**os.environ, "DOCKER_HOST": self.host}
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        if not _link_exists(ENGINE_BRIDGE):
            subprocess.run(["ip", "link", "add", ENGINE_BRIDGE, "type", "bridge"], check=True)
            subprocess.run(["ip", "addr", "add", ENGINE_BRIDGE_ADDR, "dev", ENGINE_BRIDGE], check=True)
        subprocess.run(["ip", "link", "set", ENGINE_BRIDGE, "up"], check=True)
        cmd = ["dockerd", "--host", self.host, "--data-root", str(ENGINE_DATA), "--exec-root", str(ENGINE_DIR / "exec"),
               "--pidfile", str(ENGINE_DIR / "dockerd.pid"), "--bridge", ENGINE_BRIDGE, "--iptables=false",
               "--ip6tables=false", "--ip-masq=false", "--cgroup-parent", "rlvr-fault-engine",
               "--shutdown-timeout", "2"]  # fmt: skip
        log = open(ENGINE_DIR / "dockerd.log", "ab")  # noqa: SIM115 - the child keeps its copy
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        if not _wait_for(self.answers, 60):
            raise RuntimeError(f"the test's dockerd did not answer; see {ENGINE_DIR / 'dockerd.log'}")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def answers(self) -> bool:
        r = subprocess.run(["docker", "version", "--format", "{{.Server.Version}}"], capture_output=True, env=self.env)
        return r.returncode == 0

    def load_image(self, tag: str) -> None:
        if subprocess.run(["docker", "image", "inspect", tag], capture_output=True, env=self.env).returncode == 0:
            return
        save = subprocess.Popen(["docker", "save", tag], stdout=subprocess.PIPE)
        subprocess.run(["docker", "load", "-q"], stdin=save.stdout, capture_output=True, env=self.env, check=True)
        assert save.wait() == 0


@pytest.fixture
def engine():
    if not (shutil.which("dockerd") and shutil.which("ip")) or os.geteuid() != 0:
        pytest.skip("restarting an engine needs dockerd, iproute2 and root (as `make setup` runs it here)")
    ensure_image()

    with open("/tmp/dockerd.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one engine-restarting test at a time on this machine
        e = Engine()
        e.start()
        try:
            e.load_image(image_tag())
            yield e
        finally:
            e.stop()
            subprocess.run(["ip", "link", "delete", ENGINE_BRIDGE], capture_output=True)


def _health(target: str) -> int | None:
    try:
        with grpc.insecure_channel(target) as ch:
            return health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(service=""), timeout=5).status
    except grpc.RpcError:
        return None


def test_the_private_engine_leaves_the_hosts_bridge_alone(engine):
    """A dockerd started with ``--bridge none`` deletes the host's docker0 as it starts, and with it the default
    network of the engine everyone else uses ("could not find bridge docker0" for every container on it)."""
    if not HOST_BRIDGE:
        pytest.skip("this host had no docker0 bridge to keep")
    engine.stop()
    engine.start()
    assert _link_exists("docker0")
    r = subprocess.run(
        ["docker", "run", "--rm", "--network", "bridge", "--entrypoint", "true", image_tag()],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr


@pytest.mark.slow
def test_the_engine_restarted_under_the_service(engine, tmp_path):
    log = tmp_path / "server.log"
    with (
        LocalServer(pool_size=1, env={"DOCKER_HOST": engine.host}, log_path=str(log)) as srv,
        VerifierClient(srv.target, timeout_s=60) as c,
    ):
        assert _health(srv.target) == SERVING and _grades_correctly(c)
        engine.stop()
        down = _wait_for(lambda: _health(srv.target) == health_pb2.HealthCheckResponse.NOT_SERVING, 60)
        assert down, "health still SERVING with the engine stopped"
        assert srv.proc.poll() is None  # the service itself stays up
        engine.start()
        assert _wait_for(lambda: _health(srv.target) == SERVING, 120), log.read_text()[-3000:]
        assert _grades_correctly(c)
        assert c.verify("math", r"\boxed{\frac{1}{2}}", "0.5").outcome == "CORRECT"
        pid = srv.proc.pid
    assert _wait_for(lambda: _containers(pid, engine.env) == [], 30)  # SIGTERM removed what it had started
    text = log.read_text()
    assert "NOT_SERVING" in text and "recovered" in text  # the server said what happened
