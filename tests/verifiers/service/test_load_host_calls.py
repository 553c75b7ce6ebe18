"""Calls that need no sandbox are answered while sandbox work holds everything it may (issue 38), through a
real server process over loopback with one sandbox and ``--max-concurrent-rpcs 8``.

* gRPC runs each admitted RPC on its own thread, at most ``--max-concurrent-rpcs``. Calls that may wait
  for a sandbox hold at most 6 of 8 here (``--host-rpc-share`` 0.25 kept for the rest): with eight slow
  code calls sent, two are refused at once and a think_format call is answered while the six still run.
  Before, all eight were admitted and the think_format call was refused (RESOURCE_EXHAUSTED).
* VerifyBatch grades its items that need no sandbox on the call's own thread: a batch of think_format items
  is answered while a batch of 72 slow code items holds every thread of the fan-out (64), waiting for the
  one sandbox. Before, its items queued behind the code items until their deadline.

Order, not time thresholds: each check is that the cheap call returned while the slow calls were still in
progress (their futures not done); the waits below only bound how long the test may take."""

from __future__ import annotations

import re
import time

import grpc
import httpx
import pytest

from proto.verifier.v1 import verifier_pb2 as pb
from proto.verifier.v1 import verifier_pb2_grpc as pb_grpc
from tests.http_helpers import http_service

SLOW = "```python\nimport time\ntime.sleep(60)  # {}\ndef add(a, b):\n    return a + b\n```"  # unique: no cache hit
TESTS = "assert add(1, 2) == 3\n"
FORMAT_OK = "<think>a</think>b"
ARGS = ("--max-concurrent-rpcs", "8", "--grace-s", "1")
SLOW_DEADLINE_S = 20.0  # the slow calls' own gRPC deadline: they end by it, so the server stops soon after


def _slow(i: int, test: str) -> pb.VerifyRequest:
    return pb.VerifyRequest(verifier="code", completion=SLOW.format(f"{test} {i}"), reference=TESTS, timeout_s=10)


def _wait_until(what, bound_s: float = 15.0) -> bool:
    end = time.monotonic() + bound_s
    while not what():
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


def _gauge(http: httpx.Client, name: str) -> int:
    m = re.search(rf"^{re.escape(name)} (\S+)$", http.get("/metrics").text, re.M)
    return int(float(m.group(1))) if m else 0


def _queued_for_sandbox(http: httpx.Client) -> int:
    return _gauge(http, 'rlvr_queue_depth{class="sandbox_job"}')


def _drained(http: httpx.Client) -> bool:
    """Nothing left of a test's slow calls on the server (they end by their deadline)."""
    return _wait_until(
        lambda: _queued_for_sandbox(http) == 0 and _gauge(http, "rlvr_sandbox_pool_busy") == 0, SLOW_DEADLINE_S + 15
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with http_service(tmp_path_factory.mktemp("load"), extra_args=ARGS, pool_size=1) as (srv, http):
        with grpc.insecure_channel(srv.target) as channel:
            yield pb_grpc.VerifierServiceStub(channel), http


@pytest.mark.slow
@pytest.mark.docker
def test_a_format_call_is_answered_while_sandbox_calls_hold_their_share(server):
    stub, http = server
    slow = [stub.Verify.future(_slow(i, "calls"), timeout=SLOW_DEADLINE_S) for i in range(8)]
    try:
        assert _wait_until(lambda: sum(f.done() for f in slow) >= 2), "no sandbox call was refused: all 8 admitted"
        refused = [f for f in slow if f.done()]
        assert [f.code() for f in refused] == [grpc.StatusCode.RESOURCE_EXHAUSTED] * 2, [f.details() for f in refused]
        assert "--host-rpc-share" in refused[0].details()
        admitted = [f for f in slow if f not in refused]
        cheap = stub.Verify(pb.VerifyRequest(verifier="think_format", completion=FORMAT_OK), timeout=SLOW_DEADLINE_S)
        still_running = [not f.done() for f in admitted]
        assert cheap.outcome == pb.OUTCOME_CORRECT
        assert still_running == [True] * 6, "a sandbox call ended before the think_format call was answered"
        with pytest.raises(grpc.RpcError) as e:  # one more sandbox call: refused at once, not queued
            stub.Verify(_slow(9, "calls"), timeout=SLOW_DEADLINE_S)
        assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    finally:
        for f in slow:
            f.cancel()
    assert _drained(http)


@pytest.mark.slow
@pytest.mark.docker
def test_a_batch_of_format_items_does_not_queue_behind_a_batch_waiting_for_the_sandbox(server):
    stub, http = server
    items = [_slow(i, "batch") for i in range(72)]  # more than the fan-out's 64 threads
    slow = stub.VerifyBatch.future(pb.VerifyBatchRequest(items=items), timeout=SLOW_DEADLINE_S)
    try:
        # one item runs in the sandbox, 63 wait for it on fan-out threads (the rest in the fan-out's queue)
        assert _wait_until(lambda: _queued_for_sandbox(http) >= 63 or slow.done()), "the slow batch never queued"
        assert not slow.done(), slow.exception()
        cheap = stub.VerifyBatch(
            pb.VerifyBatchRequest(items=[pb.VerifyRequest(verifier="think_format", completion=FORMAT_OK)] * 4),
            timeout=SLOW_DEADLINE_S / 2,
        )
        slow_running = not slow.done()
        assert [r.outcome for r in cheap.results] == [pb.OUTCOME_CORRECT] * 4
        assert slow_running, "the slow batch ended before the think_format batch was answered"
    finally:
        slow.cancel()
    assert _drained(http)
