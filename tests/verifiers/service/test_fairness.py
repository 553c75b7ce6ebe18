"""Fairness on a shared server (issue 30), a real server process over loopback with one sandbox.

One caller floods /run_code with 40 programs that sleep (more than the HTTP worker threads there used to
be: 32). Meanwhile a second caller's think_format verify (no sandbox needed) must answer before any of
the flood's programs finishes (it waited 21.7 s behind them), and its own sandboxed program must get the
sandbox in turn, before the flood's second program ends (it waited behind all forty). Order, not time
thresholds: the tests record who finished in which order, and check every flood request they started
(none failed, the rest still queued), so the order cannot hold for want of a flood; bench/service/fairness.py
measures the latencies."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.http_helpers import http_service
from verifiers.service.fair import FairGate, GateSaturated

FLOOD, SLEEP_S = 40, 6


def _run_code(http: httpx.Client, code: str, who: str, run_timeout: float = 20) -> dict:
    body = {"code": code, "language": "python", "run_timeout": run_timeout, "compile_timeout": run_timeout}
    r = http.post("/run_code", json=body, headers={"x-client-id": who}, timeout=FLOOD * SLEEP_S + 60)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.slow
@pytest.mark.docker
def test_a_flood_of_slow_sandbox_jobs_delays_only_its_sender(tmp_path):
    with http_service(tmp_path, pool_size=1) as (srv, http):
        finished: list[str] = []  # who finished, in the order they did: no clock is read
        lock = threading.Lock()

        def flood_one(i: int) -> dict:
            out = _run_code(http, f"import time\ntime.sleep({SLEEP_S})\nprint('slow')", "flood")
            with lock:
                finished.append(f"flood{i}")
            return out

        ex = ThreadPoolExecutor(FLOOD)
        try:
            futures = [ex.submit(flood_one, i) for i in range(FLOOD)]
            _wait_for_the_flood(http, futures)
            r = http.post(
                "/v1/verify",
                json={"verifier": "think_format", "completion": "<think>a</think>b"},
                headers={"x-client-id": "other"},
                timeout=FLOOD * SLEEP_S,
            )
            with lock:
                finished.append("cheap")
            assert r.json()["outcome"] == "OUTCOME_CORRECT"
            mine = _run_code(http, "print('mine')", "other")
            with lock:
                finished.append("mine")
            assert mine["status"] == "Success" and mine["run_result"]["stdout"] == "mine\n"
            _check_the_flood(
                futures, lambda out: out["status"] == "Success" and out["run_result"]["stdout"] == "slow\n"
            )
            assert finished[0] == "cheap", f"the think_format call waited for sandbox jobs: {finished}"
            assert finished.index("mine") <= 2, f"the other caller's program waited behind the flood: {finished}"
            metrics = http.get("/metrics").text
            for cls in ("http_host", "http_sandbox", "sandbox_job"):
                assert f'rlvr_queue_wait_seconds_count{{class="{cls}"}}' in metrics, cls
        finally:
            ex.shutdown(wait=False, cancel_futures=True)
            srv.stop()  # the rest of the flood goes with the server


def _wait_for_the_flood(http: httpx.Client, futures: list) -> None:
    """Until every flood request but the running one waits for the sandbox (or 60 s: where fewer can
    wait, the order asserts show what that costs); a flood request that failed fails the test at once."""
    until = time.monotonic() + 60
    while _sandbox_waiting(http.get("/metrics").text) < FLOOD - 1 and time.monotonic() < until:
        assert not [f.exception() for f in futures if f.done() and f.exception()], "a flood request failed"
        time.sleep(0.1)


def _check_the_flood(futures: list, good) -> None:
    """Every flood request is real: those done succeeded, and all but two are still queued (so the order
    the test asserts was decided against a standing flood, not an empty queue)."""
    done = [f for f in futures if f.done()]
    failed = [repr(f.exception()) for f in done if f.exception()]
    assert not failed, f"{len(failed)} flood requests failed: {failed[:3]}"
    assert all(good(f.result()) for f in done), [f.result() for f in done if not good(f.result())][:3]
    assert len(futures) - len(done) >= FLOOD - 2, f"only {len(futures) - len(done)} flood requests still queued"


def _sandbox_waiting(metrics: str) -> float:
    """Jobs waiting for a sandbox: in the fair queue, and in the pool's own (where they waited before)."""
    waiting = ('rlvr_queue_depth{class="sandbox_job"}', "rlvr_sandbox_pool_waiters")
    return sum(float(line.split()[-1]) for line in metrics.splitlines() if line.startswith(waiting))


def _grants(gate: FairGate, arrivals: list[str]) -> list[str]:
    """Queue one job per entry of ``arrivals`` (in that order) behind a held slot; the order they get it."""
    order: list[str] = []
    threads = []
    for i, who in enumerate(arrivals):
        t = threading.Thread(target=lambda w=who: gate.acquire(w, 60) and order.append(w))
        t.start()
        threads.append(t)
        while gate.depth() < i + 1:
            time.sleep(0.001)
    for n in range(len(arrivals)):
        gate.release()
        while len(order) < n + 1:
            time.sleep(0.001)
    for t in threads:
        t.join()
    return order


def test_the_sandbox_turns_go_round_robin_between_callers():
    gate = FairGate(1)
    assert gate.acquire("flood", 0)  # the flood holds the only slot
    got = _grants(gate, ["flood", "flood", "flood", "other", "flood", "third", "other"])
    # each caller in turn, least recently served first; a caller's own jobs in their order
    assert got == ["other", "third", "flood", "other", "flood", "flood", "flood"]


def test_a_wait_past_its_time_leaves_the_queue_and_too_many_are_refused():
    gate = FairGate(1, max_waiters=1)
    assert gate.acquire("a", 0)
    assert gate.acquire("b", 0.05) is False and gate.depth() == 0
    t = threading.Thread(target=gate.acquire, args=("c", 5))
    t.start()
    while gate.depth() < 1:
        time.sleep(0.001)
    with pytest.raises(GateSaturated):
        gate.acquire("d", 1)
    gate.release()
    t.join()


ADD_TESTS = "def check(candidate):\n    assert candidate(1, 2) == 3\n"


def _slow_add(i: int) -> str:
    return f"```python\nimport time\n\ndef add(a, b):  # {i}\n    time.sleep({SLEEP_S})\n    return a + b\n```"


@pytest.mark.slow
@pytest.mark.docker
def test_over_grpc_too(tmp_path):
    import grpc

    from proto.verifier.v1 import verifier_pb2 as pb
    from proto.verifier.v1 import verifier_pb2_grpc as pb_grpc

    with http_service(tmp_path, pool_size=1) as (srv, http), grpc.insecure_channel(srv.target) as ch:
        stub, finished = pb_grpc.VerifierServiceStub(ch), []
        flood, other = (("x-client-id", "flood"),), (("x-client-id", "other"),)
        ok = "```python\ndef add(a, b):\n    return a + b\n```"
        # a call without a gRPC deadline (time_remaining() ~ 2**63 ns) once became an infinite job deadline
        # that overflowed the sandbox's socket timeout: SANDBOX_ERROR 'timestamp out of range'
        bare = stub.Verify(
            pb.VerifyRequest(
                verifier="code", completion=ok + "\n# bare", reference=ADD_TESTS, options={"entry_point": "add"}
            )
        )
        assert bare.reward == 1.0, bare.detail
        calls = []
        for i in range(FLOOD):
            req = pb.VerifyRequest(
                verifier="code",
                completion=_slow_add(i),
                reference=ADD_TESTS,
                options={"entry_point": "add"},
                timeout_s=60,
            )
            calls.append(stub.Verify.future(req, metadata=flood))
            calls[-1].add_done_callback(lambda _, i=i: finished.append(f"flood{i}"))
        try:
            _wait_for_the_flood(http, calls)
            cheap = stub.Verify(
                pb.VerifyRequest(verifier="think_format", completion="<think>a</think>b"),
                metadata=other,
                timeout=FLOOD * SLEEP_S,
            )
            finished.append("cheap")
            mine = stub.Verify(
                pb.VerifyRequest(verifier="code", completion=ok, reference=ADD_TESTS, options={"entry_point": "add"}),
                metadata=other,
                timeout=120,
            )
            finished.append("mine")
            assert cheap.reward == 1.0 and mine.reward == 1.0, (cheap, mine)
            _check_the_flood(calls, lambda v: v.reward == 1.0)
            order = list(finished)
            assert order[0] == "cheap", f"the think_format call waited for a thread: {order}"
            assert order.index("mine") <= 2, f"the other caller's program waited behind the flood: {order}"
        finally:
            for c in calls:
                c.cancel()
            srv.stop()
