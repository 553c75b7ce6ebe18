"""Fairness through the one door (issue 52), on a real server process with a pool of 2: caller A holds both
sandboxes with /run_code Python programs (HTTP), caller B sends a short Python assert-mode ``Verify`` over
gRPC (its own client id in the metadata). B's verdict must come back while A's programs still run: every
job, whichever front it entered by, takes its turn at the same gate, whose burst sandbox is lent to a caller
holding none. Asserted by order and by A's programs' own clocks, never by a time threshold. The HTTP-only
variant is tests/verifiers/service/test_pool_share.py."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import grpc
import httpx
import pytest

from proto.verifier.v1 import verifier_pb2, verifier_pb2_grpc
from tests.http_helpers import hold_every_sandbox, http_service

pytestmark = pytest.mark.docker
SLEEP_S = 12
LONG = f"import time\nprint(time.time(), flush=True)\ntime.sleep({SLEEP_S})\nprint(time.time())\n"


def _long(http: httpx.Client) -> dict:
    body = {"code": LONG, "language": "python", "run_timeout": SLEEP_S + 30}
    r = http.post("/run_code", json=body, headers={"x-client-id": "a"}, timeout=4 * SLEEP_S + 60)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.slow
def test_a_grpc_verify_is_graded_while_another_caller_holds_every_sandbox_through_run_code(tmp_path):
    with http_service(tmp_path, pool_size=2) as (srv, http), ThreadPoolExecutor(3) as ex:
        held, queued = hold_every_sandbox(http, ex, lambda: _long(http))
        with grpc.insecure_channel(srv.target) as ch:
            stub = verifier_pb2_grpc.VerifierServiceStub(ch)
            req = verifier_pb2.VerifyRequest(
                verifier="code",
                completion="```python\ndef add(a, b):\n    return a + b\n```",
                reference="def check(candidate):\n    assert candidate(1, 2) == 3\n",
                options={"entry_point": "add"},
            )
            r = stub.Verify(req, timeout=4 * SLEEP_S + 60, metadata=(("x-client-id", "b"),))
        graded_at, a_done = time.time(), [f.done() for f in (*held, queued)]
        assert r.outcome == verifier_pb2.OUTCOME_CORRECT, r
        results = [f.result() for f in (*held, queued)]
    stamps = [[float(x) for x in body["run_result"]["stdout"].split()] for body in results]
    assert a_done == [False, False, False], "one of A's programs had finished before B's verdict came"
    assert all(end > graded_at for _, end in stamps[:2]), (graded_at, stamps)
