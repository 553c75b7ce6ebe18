"""The server as a process: health, reflection, error statuses, clean shutdown, crash cleanup."""

import os
import signal
import subprocess
import time

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from proto.verifier.v1 import verifier_pb2 as pb
from verifiers.client import VerifierClient, VerifierError
from verifiers.kinds.table import sandbox_count
from verifiers.launch import LocalServer
from verifiers.service.fair import BURST_SANDBOXES

pytestmark = pytest.mark.docker


def _containers_of(pid: int) -> list[str]:
    out = subprocess.run(
        ["docker", "ps", "-a", "--filter", "label=rlvr.sandbox", "--format", '{{.Names}} {{.Label "rlvr.owner"}}'],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [line.split()[0] for line in out.splitlines() if line.endswith(f":{pid}")]


def test_health_serving_and_reflection_lists_the_service(verifier_server):
    with grpc.insecure_channel(verifier_server.target) as ch:
        health = health_pb2_grpc.HealthStub(ch)
        for name in ("", "verifier.v1.VerifierService"):
            resp = health.Check(health_pb2.HealthCheckRequest(service=name), timeout=10)
            assert resp.status == health_pb2.HealthCheckResponse.SERVING
        refl = reflection_pb2_grpc.ServerReflectionStub(ch)
        replies = refl.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]))
        names = {s.name for r in replies for s in r.list_services_response.service}
        assert "verifier.v1.VerifierService" in names
        assert "grpc.health.v1.Health" in names


@pytest.mark.parametrize(
    "kwargs,code",
    [
        (dict(verifier="no_such_verifier", completion="x"), grpc.StatusCode.NOT_FOUND),
        (dict(verifier="", completion="x"), grpc.StatusCode.INVALID_ARGUMENT),
        (dict(verifier="think_format", completion="x", timeout_s=-1), grpc.StatusCode.INVALID_ARGUMENT),
        (dict(verifier="think_format", completion="x" * (65 * 1024 * 1024)), grpc.StatusCode.RESOURCE_EXHAUSTED),
    ],
    ids=["unknown-verifier", "empty-verifier", "negative-timeout", "oversized"],
)
def test_bad_requests_get_the_right_status(client, kwargs, code):
    with pytest.raises(VerifierError) as e:
        client.verify(**kwargs)
    assert e.value.code == code
    assert e.value.message  # says what was wrong
    # and the service keeps serving
    assert client.verify("think_format", "<think>a</think>b").reward == 1.0


@pytest.mark.slow
def test_sigterm_exits_zero_and_removes_its_containers(tmp_path):
    srv = LocalServer(pool_size=1, log_path=str(tmp_path / "log")).start()
    pid = srv.proc.pid
    assert len(_containers_of(pid)) == sandbox_count(1, BURST_SANDBOXES)  # the pool, its burst sandbox, the lanes'
    assert srv.stop(signal.SIGTERM) == 0
    assert _containers_of(pid) == []


SHOUTS = "def verify(completion, reference, options):\n    return float('LOUD' in completion)\n"


@pytest.mark.slow
def test_sigkill_then_restart_leaves_no_container_and_the_registry_intact(tmp_path):
    registry = str(tmp_path / "registry.sqlite")
    srv = LocalServer(pool_size=1, registry=registry, log_path=str(tmp_path / "log")).start()
    pid = srv.proc.pid
    assert _containers_of(pid)
    with VerifierClient(srv.target) as c:
        c.register(pb.RegisterVerifierRequest(name="shouts", python=pb.PythonVerifier(source=SHOUTS)))
        comps = [pb.Component(verifier="shouts", weight=0.5), pb.Component(verifier="think_format", weight=0.5)]
        c.register(pb.RegisterVerifierRequest(name="loud_r1", composite=pb.CompositeVerifier(components=comps)))
    srv.stop(signal.SIGKILL)  # no shutdown of any kind: straight after the acknowledged registrations
    with LocalServer(pool_size=1, registry=registry, log_path=str(tmp_path / "log2")) as srv2:
        # the new server's start removes whatever the killed one left behind
        deadline = time.monotonic() + 30
        while _containers_of(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _containers_of(pid) == []
        assert len(_containers_of(srv2.proc.pid)) == sandbox_count(1, BURST_SANDBOXES)
        with VerifierClient(srv2.target) as c:
            listed = {v.name: v for v in c.list_verifiers()}
            assert listed["shouts"].python.source == SHOUTS and listed["loud_r1"].kind == "composite"
            assert c.verify("shouts", "LOUD").outcome == "CORRECT" and c.verify("shouts", "quiet").reward == 0.0
            assert c.verify("loud_r1", "<think>a</think>LOUD").reward == 1.0
    assert _containers_of(srv2.proc.pid) == []


def test_client_retries_while_the_server_is_starting(tmp_path):
    # reserve a port, start the client call first, then the server: UNAVAILABLE is retried
    import socket
    import threading

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    srv = LocalServer(pool_size=1, port=port, log_path=str(tmp_path / "log"))
    threading.Timer(1.0, srv.start).start()
    try:
        with VerifierClient(f"127.0.0.1:{port}", timeout_s=90, retries=30) as c:
            r = c.verify("think_format", "<think>a</think>b")
        assert r.outcome == "CORRECT"
    finally:
        deadline = time.monotonic() + 60
        while srv.proc is None and time.monotonic() < deadline:
            time.sleep(0.1)
        srv.stop()


def test_interrupted_start_leaves_no_server_process(tmp_path):
    # Ctrl-C while LocalServer.start() waits for "SERVING": the child must not outlive the caller's start().
    # The interrupt comes once the server has logged that it is listening (it is then starting its pool).
    log = tmp_path / "log"
    srv = LocalServer(pool_size=1, log_path=str(log))
    seen: dict[str, object] = {}

    def interrupt(*_):
        if "listening on" in log.read_text(errors="replace"):
            signal.setitimer(signal.ITIMER_REAL, 0)
            seen["alive"] = srv.proc.poll() is None
            raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.05, 0.05)
    try:
        with pytest.raises(KeyboardInterrupt):
            srv.start()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        pid_was_running = srv.proc is not None and srv.proc.poll() is None
        srv.stop(signal.SIGKILL)  # only does something when start() left the child behind
    assert seen.get("alive"), "the server had already exited when the interrupt came: the test proved nothing"
    assert not pid_was_running, "LocalServer.start() left the server running after an interrupt"
    with pytest.raises(ProcessLookupError):
        os.kill(srv.proc.pid, 0)
    assert _containers_of(srv.proc.pid) == []  # it was stopped with SIGTERM: it removed its container
