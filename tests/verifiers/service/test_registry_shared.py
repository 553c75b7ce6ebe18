"""Two real servers sharing one registry (PostgreSQL, and a SQLite file on one host): a verifier
registered, replaced or removed through one replica is served (or refused) by the other, and a client
pointed at both replicas grades with it whichever replica takes the call."""

from __future__ import annotations

import json
import time

import pytest

from proto.verifier.v1 import verifier_pb2 as pb
from verifiers.client import VerifierClient, VerifierError, VerifyItem
from verifiers.launch import ROOT, LocalServer

pytestmark = pytest.mark.docker

COUNTDOWN = (ROOT / "examples" / "countdown.py").read_text()
REF = json.dumps({"numbers": [2, 3, 7], "target": 13})
ALWAYS = "def verify(c, r, o):\n    return {}\n"


def _until(check, timeout_s: float = 10.0):
    """``check()`` once it stops raising VerifierError/AssertionError (a replica catching up), or its error."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return check()
        except (VerifierError, AssertionError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@pytest.mark.slow
def test_a_verifier_registered_on_one_replica_is_served_by_all(tmp_path, registry_url):
    with (
        LocalServer(pool_size=1, registry=registry_url, log_path=str(tmp_path / "a.log")) as a,
        LocalServer(pool_size=1, registry=registry_url, log_path=str(tmp_path / "b.log")) as b,
        VerifierClient(a.target, retries=0) as ca,
        VerifierClient(b.target, retries=0) as cb,
        VerifierClient(f"{a.target},{b.target}") as both,
    ):
        ca.register(pb.RegisterVerifierRequest(name="countdown", python=pb.PythonVerifier(source=COUNTDOWN)))
        # a new name is found at once: B looks in the store when it does not know a name
        got = cb.verify("countdown", "<answer>2 * 3 + 7</answer>", REF)
        assert (got.reward, got.outcome) == (1.0, "CORRECT")
        assert cb.get_verifier("countdown").version == 1

        cb.register(pb.RegisterVerifierRequest(name="always", python=pb.PythonVerifier(source=ALWAYS.format(0))))
        ca.register(
            pb.RegisterVerifierRequest(name="always", python=pb.PythonVerifier(source=ALWAYS.format(1)), replace=True)
        )
        with pytest.raises(VerifierError, match="ALREADY_EXISTS"):  # the shared store decides, not B's memory
            cb.register(pb.RegisterVerifierRequest(name="always", python=pb.PythonVerifier(source=ALWAYS.format(0))))

        # a replacement through A is served by B within its refresh interval (1 s)
        def replaced_on_b() -> None:
            assert cb.get_verifier("always").version == 2

        _until(replaced_on_b)
        assert cb.verify("always", "x").reward == 1.0
        items = [VerifyItem("always", f"x{i}", id=str(i)) for i in range(8)] + [
            VerifyItem("countdown", "<answer>2 + 3 + 7</answer>", REF, id="8")
        ]
        results = both.verify_batch(items)  # split over A and B: both know both verifiers
        assert [r.id for r in results] == [str(i) for i in range(9)]
        assert [r.reward for r in results] == [1.0] * 8 + [0.0]

        cb.unregister("always")

        def gone_from_a() -> None:
            try:
                ca.verify("always", "x")
            except VerifierError as e:
                assert e.code.name == "NOT_FOUND", e
                return
            raise AssertionError("A still serves a verifier removed through B")

        _until(gone_from_a)
        names = {v.name for v in ca.list_verifiers() if not v.builtin}
        assert names == {"countdown"}
