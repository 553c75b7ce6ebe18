"""Sessions through a real server (gRPC and HTTP on loopback, real Docker): the calls, caller binding,
every limit and its error, the reaper, fairness with grading, and no leaks after ``kill -9``.
"""

from __future__ import annotations

import signal
import time

import grpc
import pytest

from sandbox.backends.docker import list_containers
from tests.http_helpers import http_service
from verifiers.client import VerifierClient, VerifierError

pytestmark = pytest.mark.docker

SERVER_ARGS = ("--max-sessions", "12", "--max-sessions-per-caller", "10", "--session-idle-ttl-s", "30",
               "--session-timeout-s", "20", "--session-memory-mb", "512")  # fmt: skip


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    with http_service(tmp_path_factory.mktemp("sessions"), extra_args=SERVER_ARGS, pool_size=1) as (srv, http):
        yield srv, http


@pytest.fixture
def alice(served):
    with VerifierClient(served[0].target, timeout_s=60, client_id="alice") as c:
        yield c
        for s in c.list_sessions():
            c.close_session(s.id)


@pytest.fixture
def bob(served):
    with VerifierClient(served[0].target, timeout_s=60, client_id="bob") as c:
        yield c
        for s in c.list_sessions():
            c.close_session(s.id)


def code_of(call) -> grpc.StatusCode:
    with pytest.raises(VerifierError) as e:
        call()
    return e.value.code


def test_notebook_semantics_over_grpc(alice):
    s = alice.open_session("python", files={"in.txt": "hello"})
    assert len(s.id) >= 32 and s.id[0] != "-" and s.kind == "python"  # a command line reads "-…" as an option
    r = alice.exec(s.id, "import os\nx = 41\nprint('out')\nx + 1")
    assert (r.status, r.stdout, r.value, r.HasField("error")) == ("ok", "out\n", "42", False)
    r = alice.exec(s.id, "open('in.txt').read() + str(x)")
    assert r.value == "'hello41'"
    r = alice.exec(s.id, "1/0")
    assert r.status == "ok" and not r.HasField("value") and "ZeroDivisionError" in r.error
    assert alice.exec(s.id, "x").value == "41"
    assert [i.id for i in alice.list_sessions()] == [s.id]
    alice.close_session(s.id)
    assert alice.list_sessions() == []
    assert code_of(lambda: alice.exec(s.id, "x")) == grpc.StatusCode.FAILED_PRECONDITION


def test_bash_session(alice):
    s = alice.open_session("bash")
    assert alice.exec(s.id, "mkdir d && cd d && export V=1").exit_code == 0
    assert alice.exec(s.id, "basename $PWD; echo $V").stdout == "d\n1\n"
    assert alice.exec(s.id, "exit 4").exit_code == 4


def test_fork_independence(alice):
    s = alice.open_session("python")
    alice.exec(s.id, "x = 1\nopen('f', 'w').write('p')")
    forks = alice.fork_session(s.id, 3)
    assert len({f.id for f in forks} | {s.id}) == 4 and all(f.parent == s.id for f in forks)
    alice.exec(forks[0].id, "x = 9\nopen('f', 'w').write('c')")
    for other in (forks[1].id, forks[2].id, s.id):
        assert alice.exec(other, "x, open('f').read()").value == "(1, 'p')"
    assert alice.exec(forks[0].id, "x, open('f').read()").value == "(9, 'c')"
    alice.close_session(forks[0].id)
    assert alice.exec(forks[1].id, "x").value == "1"  # the family's sandbox stays while one of it is open


def test_another_callers_id_is_refused_not_found(alice, bob):
    s = alice.open_session("python")
    for call in (lambda: bob.exec(s.id, "1"), lambda: bob.fork_session(s.id, 1), lambda: bob.close_session(s.id)):
        assert code_of(call) == grpc.StatusCode.PERMISSION_DENIED
    assert bob.list_sessions() == []
    assert alice.exec(s.id, "2").value == "2"
    alice.close_session(s.id)
    assert code_of(lambda: bob.exec(s.id, "1")) == grpc.StatusCode.PERMISSION_DENIED  # closed: still alice's
    assert code_of(lambda: bob.exec("x" * 32, "1")) == grpc.StatusCode.NOT_FOUND


def test_limits_and_their_errors(alice):
    s = alice.open_session("python", timeout_s=1, output_bytes=1000)
    assert alice.exec(s.id, "while True: pass").status in ("timeout", "cpu")
    r = alice.exec(s.id, "print('x' * 5000)")
    assert r.status == "output_limit" and r.stdout_truncated
    r = alice.exec(s.id, "b = bytearray(600 * 1024 * 1024)")
    assert r.status == "memory" and "memory" in r.ended
    with pytest.raises(VerifierError) as e:
        alice.exec(s.id, "1")
    assert e.value.code == grpc.StatusCode.FAILED_PRECONDITION and "memory" in str(e.value)
    for bad in ({"memory_mb": 4096}, {"timeout_s": 999}):
        assert code_of(lambda b=bad: alice.open_session("python", **b)) == grpc.StatusCode.INVALID_ARGUMENT
    assert code_of(lambda: alice.open_session("cobol")) == grpc.StatusCode.INVALID_ARGUMENT
    assert code_of(lambda: alice.open_session("python", files={"../x": "1"})) == grpc.StatusCode.INVALID_ARGUMENT


def test_max_sessions_per_caller(alice):
    opened = [alice.open_session("python") for _ in range(10)]
    err = code_of(lambda: alice.open_session("python"))
    assert err == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert code_of(lambda: alice.fork_session(opened[0].id, 1)) == grpc.StatusCode.RESOURCE_EXHAUSTED


def test_idle_ttl_is_enforced_by_the_reaper(alice):
    s = alice.open_session("python", ttl_s=1)
    assert alice.exec(s.id, "1").value == "1"
    end = time.monotonic() + 30
    while alice.list_sessions() and time.monotonic() < end:
        time.sleep(0.2)
    with pytest.raises(VerifierError) as e:
        alice.exec(s.id, "1")
    assert e.value.code == grpc.StatusCode.FAILED_PRECONDITION and "idle" in str(e.value)


def test_grading_goes_on_while_sessions_run_cells(served, alice):
    srv, _ = served
    s = alice.open_session("python")
    import threading

    stop = threading.Event()

    def busy():
        while not stop.is_set():
            alice.exec(s.id, "import time\nt = time.time()\nwhile time.time() - t < 0.3: pass")

    t = threading.Thread(target=busy)
    t.start()
    try:
        with VerifierClient(srv.target, timeout_s=60, client_id="grader") as g:
            for _ in range(3):
                assert g.verify("math", "\\boxed{2}", "2").reward == 1.0
    finally:
        stop.set()
        t.join()


def test_http_routes(served):
    _, http = served
    h = {"x-client-id": "carol"}
    s = http.post("/v1/sessions", json={"kind": "python"}, headers=h).json()
    r = http.post(f"/v1/sessions/{s['id']}/exec", json={"code": "a = 2\na * 21"}, headers=h).json()
    assert r["status"] == "ok" and r["value"] == "42"
    f = http.post(f"/v1/sessions/{s['id']}/fork", json={"n": 2}, headers=h).json()
    assert len(f["sessions"]) == 2
    assert {x["id"] for x in http.get("/v1/sessions", headers=h).json()["sessions"]} == {s["id"]} | {
        x["id"] for x in f["sessions"]
    }
    denied = http.post(f"/v1/sessions/{s['id']}/exec", json={"code": "1"}, headers={"x-client-id": "mallory"})
    assert denied.status_code == 403
    assert http.post(f"/v1/sessions/{s['id']}/exec", json={"code": "1", "bogus": 1}, headers=h).status_code == 400
    for x in [s, *f["sessions"]]:
        assert http.delete(f"/v1/sessions/{x['id']}", headers=h).status_code == 200
    assert http.post(f"/v1/sessions/{s['id']}/exec", json={"code": "1"}, headers=h).status_code == 412  # closed


@pytest.mark.slow
def test_kill_9_leaves_nothing_after_the_next_start(tmp_path):
    from verifiers.launch import LocalServer

    args = ["--max-sessions", "8"]
    srv = LocalServer(
        pool_size=1, registry=str(tmp_path / "r.sqlite"), log_path=str(tmp_path / "a.log"), extra_args=args
    ).start()
    with VerifierClient(srv.target, timeout_s=60) as c:
        s = c.open_session("python")
        c.fork_session(s.id, 2)
        c.exec(s.id, "import subprocess\nx = 1")
    owner = f":{srv.proc.pid}"
    assert any(o.endswith(owner) for _, o, _ in list_containers())
    srv.proc.send_signal(signal.SIGKILL)
    srv.proc.wait()
    with LocalServer(
        pool_size=1, registry=str(tmp_path / "r.sqlite"), log_path=str(tmp_path / "b.log"), extra_args=args
    ):
        assert not [c for c in list_containers() if c[1].endswith(owner)]
