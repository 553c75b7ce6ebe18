"""Registered verifiers survive the server: a clean restart, and a SIGKILL in the middle of a stream
of registrations (the registry stays readable and consistent; whatever was acknowledged is there).
Both stores: a SQLite file and a throwaway PostgreSQL (the ``registry_url`` fixture)."""

from __future__ import annotations

import json
import signal
import threading
import time

import pytest

from proto.verifier.v1 import verifier_pb2 as pb
from verifiers.client import VerifierClient, VerifierError, VerifyItem
from verifiers.launch import ROOT, LocalServer
from verifiers.service.registry import open_store

pytestmark = pytest.mark.docker

COUNTDOWN = (ROOT / "examples" / "countdown.py").read_text()
REF = json.dumps({"numbers": [2, 3, 7], "target": 13})


@pytest.mark.slow
def test_registered_verifiers_survive_a_restart(tmp_path, registry_url):
    registry = registry_url
    with (
        LocalServer(pool_size=1, registry=registry, log_path=str(tmp_path / "a.log")) as a,
        VerifierClient(a.target) as c,
    ):
        c.register(pb.RegisterVerifierRequest(name="countdown", python=pb.PythonVerifier(source=COUNTDOWN)))
        comps = [pb.Component(verifier="countdown", weight=0.9), pb.Component(verifier="think_format", weight=0.1)]
        c.register(pb.RegisterVerifierRequest(name="r1_countdown", composite=pb.CompositeVerifier(components=comps)))
        before = c.verify_batch(
            [
                VerifyItem("r1_countdown", "<think>x</think><answer>2 * 3 + 7</answer>", REF),
                VerifyItem("countdown", "<answer>2 + 3 + 7</answer>", REF),
            ]
        )
    with (
        LocalServer(pool_size=1, registry=registry, log_path=str(tmp_path / "b.log")) as b,
        VerifierClient(b.target) as c,
    ):
        listed = {v.name: v for v in c.list_verifiers()}
        assert listed["countdown"].kind == "python" and listed["r1_countdown"].kind == "composite"
        after = c.verify_batch(
            [
                VerifyItem("r1_countdown", "<think>x</think><answer>2 * 3 + 7</answer>", REF),
                VerifyItem("countdown", "<answer>2 + 3 + 7</answer>", REF),
            ]
        )
        assert (
            [(r.reward, r.outcome, r.components) for r in after]
            == [(r.reward, r.outcome, r.components) for r in before]
            == [(1.0, "CORRECT", {"countdown": 1.0, "think_format": 1.0}), (0.0, "INCORRECT", {})]
        )
        info = c.register(
            pb.RegisterVerifierRequest(name="countdown", python=pb.PythonVerifier(source=COUNTDOWN), replace=True)
        )
        assert info.version == 2


@pytest.mark.slow
def test_sigkill_during_registration_leaves_a_consistent_registry(tmp_path, registry_url):
    registry = registry_url
    acked: list[str] = []
    srv = LocalServer(pool_size=1, registry=registry, log_path=str(tmp_path / "a.log")).start()
    stop = threading.Event()

    def register_forever(target: str) -> None:
        with VerifierClient(target, retries=0, timeout_s=30) as c:
            for i in range(10_000):
                if stop.is_set():
                    return
                src = f"def verify(c, r, o):\n    return {i % 2}.0  # verifier {i}\n" + "#" * 20_000
                try:
                    c.register(pb.RegisterVerifierRequest(name=f"v{i}", python=pb.PythonVerifier(source=src)))
                except VerifierError:
                    return  # the server died under us
                acked.append(f"v{i}")

    t = threading.Thread(target=register_forever, args=(srv.target,))
    t.start()
    deadline = time.monotonic() + 60
    while len(acked) < 8 and time.monotonic() < deadline:
        time.sleep(0.01)
    srv.stop(signal.SIGKILL)  # somewhere inside a registration: dry run, or the SQLite write
    stop.set()
    t.join(30)
    assert len(acked) >= 8

    store = open_store(registry)
    assert store.integrity() == "ok"
    store.close()
    with (
        LocalServer(pool_size=1, registry=registry, log_path=str(tmp_path / "b.log")) as b,
        VerifierClient(b.target) as c,
    ):
        names = [v.name for v in c.list_verifiers() if not v.builtin]
        assert set(acked) <= set(names), "an acknowledged registration was lost"
        assert len(names) <= len(acked) + 1  # at most the one in flight, and then whole
        got = c.verify_batch([VerifyItem(n, "x") for n in names])
        assert [r.reward for r in got] == [float(int(n[1:]) % 2) for n in names]
        assert all(r.outcome in ("CORRECT", "INCORRECT") for r in got)
