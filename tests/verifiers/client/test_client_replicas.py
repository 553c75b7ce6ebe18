"""Replicated verifier services: the client spreads a batch over several servers with gRPC's round_robin
policy and fails over when one dies mid-batch, giving every result exactly once, in request order.

The target forms (``host:port,host:port``, host names, DNS) and the retry budgets are checked without
Docker; the failover test runs two real servers on loopback and SIGKILLs one while it grades."""

from __future__ import annotations

import logging
import signal
import socket
import subprocess
import threading
import time

import pytest

from sandbox.backends.docker import list_containers
from verifiers.client import TargetError, VerifierClient, VerifierError, VerifyItem, resolve_target
from verifiers.launch import LocalServer


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    "target,grpc_target,n",
    [
        ("127.0.0.1:5001", "127.0.0.1:5001", 1),
        ("127.0.0.1:5001,127.0.0.2:5002", "ipv4:127.0.0.1:5001,127.0.0.2:5002", 2),
        (" 127.0.0.1:5001 , ", "127.0.0.1:5001", 1),  # one entry once blanks are dropped
        ("127.0.0.1:5001,127.0.0.1:5001", "ipv4:127.0.0.1:5001", 1),  # the same replica twice is one
        ("[::1]:5001,[::1]:5002", "ipv6:[::1]:5001,[::1]:5002", 2),
        ("localhost:5001,127.0.0.1:5002", "ipv4:127.0.0.1:5001,127.0.0.1:5002", 2),  # names resolved once
        ("dns:///127.0.0.1:5001", "dns:///127.0.0.1:5001", 1),
        ("unix:/tmp/verifier.sock", "unix:/tmp/verifier.sock", 1),
        ("ipv4:10.0.0.1:1,10.0.0.2:1,10.0.0.3:1", "ipv4:10.0.0.1:1,10.0.0.2:1,10.0.0.3:1", 3),
    ],
)
def test_target_forms(target, grpc_target, n):
    assert resolve_target(target) == (grpc_target, n)


@pytest.mark.parametrize(
    "target,match",
    [
        ("", "empty"),
        (" , ", "empty"),
        ("127.0.0.1:5001,nohost", "host:port"),
        ("127.0.0.1:1,127.0.0.1:0", "host:port"),
        ("127.0.0.1:1,no-such-host.invalid:1", "does not resolve"),
        ("127.0.0.1:1,[::1]:2", "mix IPv4 and IPv6"),
    ],
)
def test_bad_targets_say_what_is_wrong(target, match):
    with pytest.raises(TargetError, match=match):
        VerifierClient(target)


def test_nothing_listening_fails_after_the_wait_budget_with_a_clear_message(caplog):
    port = free_port()
    with VerifierClient(f"127.0.0.1:{port}", timeout_s=1, wait_s=3) as c:
        with pytest.raises(VerifierError, match=f"127.0.0.1:{port} unavailable") as err:
            c.verify("think_format", "x")
    assert err.value.code.name == "UNAVAILABLE"
    assert f"verifier service at 127.0.0.1:{port} unavailable" in caplog.text and "retrying for up to" in caplog.text


@pytest.mark.timeout(60)  # a hang guard, not a timing: ignoring the deadline would wait wait_s (300 s)
def test_a_deadline_given_to_the_call_is_never_passed_waiting():
    with VerifierClient(f"127.0.0.1:{free_port()}", wait_s=300) as c:
        with pytest.raises(VerifierError, match="UNAVAILABLE"):
            c.verify("think_format", "x", deadline_s=1.0)


def test_retries_zero_fails_at_once(caplog):
    with VerifierClient(f"127.0.0.1:{free_port()}", retries=0) as c:
        with pytest.raises(VerifierError, match="UNAVAILABLE"):
            c.verify_batch([VerifyItem("think_format", "x"), VerifyItem("think_format", "y")])
    assert "retrying" not in caplog.text  # failed on the first try: no wait, no retry


# -- two real servers, one SIGKILLed mid-batch ----------------------------------------------------------
ADD_TESTS = "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(-1, 1) == 0\n"


def slow_item(i: int) -> tuple[VerifyItem, str]:
    """A code item that takes ~0.3 s to run; every third one is wrong. Each is distinct (no cache hits)."""
    body = "a - b" if i % 3 == 0 else "a + b"
    code = f"import time\ntime.sleep(0.3)  # item {i}\n\ndef add(a, b):\n    return {body}\n"
    item = VerifyItem("code", f"```python\n{code}```", ADD_TESTS, options={"entry_point": "add"}, id=f"item-{i}")
    return item, "INCORRECT" if i % 3 == 0 else "CORRECT"


def _remove_containers_of(proc: subprocess.Popen) -> None:
    """A SIGKILLed server cannot remove its sandbox containers: remove the ones it started."""
    ids = [cid for cid, owner, _ in list_containers() if owner == f"{socket.gethostname()}:{proc.pid}"]
    if ids:
        subprocess.run(["docker", "rm", "-f", *ids], capture_output=True, timeout=60)


@pytest.mark.slow
@pytest.mark.docker
def test_one_replica_sigkilled_mid_batch_every_result_exactly_once(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="verifiers.client")
    a = LocalServer(pool_size=1, log_path=str(tmp_path / "a.log")).start()
    try:
        with LocalServer(pool_size=1, log_path=str(tmp_path / "b.log")) as b:
            with VerifierClient(f"{a.target},{b.target}", timeout_s=120) as c:
                assert c.replicas == 2 and c.grpc_target.startswith("ipv4:")
                for _ in range(2):  # round_robin sends only to connected replicas: give the second one time to connect
                    warm = c.verify_batch(
                        [VerifyItem("think_format", "<think>a</think>b", id=str(i)) for i in range(4)]
                    )
                    assert [r.outcome for r in warm] == ["CORRECT"] * 4
                    time.sleep(0.5)
                cases = [slow_item(i) for i in range(24)]  # 12 per replica: ~4 s of work on each
                out: dict[str, object] = {}

                def run() -> None:
                    try:
                        out["results"] = c.verify_batch([item for item, _ in cases])
                    except Exception as e:  # reported by the assertions below
                        out["error"] = e

                t = threading.Thread(target=run)
                t.start()
                time.sleep(1.5)  # both replicas are inside their half of the batch
                assert t.is_alive(), "the batch finished before a replica could be killed: make the items slower"
                a.stop(signal.SIGKILL)
                t.join(120)
                assert not t.is_alive() and "error" not in out, out.get("error")
            results = out["results"]
            assert [r.id for r in results] == [item.id for item, _ in cases]  # each once, in request order
            assert [r.outcome for r in results] == [want for _, want in cases], [r.detail for r in results]
            assert [r.reward for r in results] == [1.0 if want == "CORRECT" else 0.0 for _, want in cases]
            assert f"verifier service at {a.target},{b.target} unavailable" in caplog.text  # a retry happened
    finally:
        a.stop(signal.SIGKILL)
        _remove_containers_of(a.proc)
