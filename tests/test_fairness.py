"""Fairness on a shared server (issue 30), a real server process over loopback with one sandbox.

One caller floods /run_code with 40 programs that sleep (more than the HTTP worker threads there used to
be: 32). Meanwhile a second caller's think_format verify (no sandbox needed) must answer before any of
the flood's programs finishes (it waited 21.7 s behind them), and its own sandboxed program must get the
sandbox in turn, before the flood's second program ends (it waited behind all forty). Order, not time
thresholds: bench/fairness.py measures the latencies."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.http_helpers import http_service

pytestmark = pytest.mark.docker
FLOOD, SLEEP_S = 40, 6


def _run_code(http: httpx.Client, code: str, who: str, run_timeout: float = 20) -> dict:
    body = {"code": code, "language": "python", "run_timeout": run_timeout, "compile_timeout": run_timeout}
    r = http.post("/run_code", json=body, headers={"x-client-id": who}, timeout=FLOOD * SLEEP_S + 60)
    assert r.status_code == 200, r.text
    return r.json()


def test_a_flood_of_slow_sandbox_jobs_delays_only_its_sender(tmp_path):
    with http_service(tmp_path, pool_size=1) as (srv, http):
        done: list[tuple[float, str]] = []
        lock = threading.Lock()

        def flood_one(_: int) -> None:
            out = _run_code(http, f"import time\ntime.sleep({SLEEP_S})\nprint('slow')", "flood")
            with lock:
                done.append((time.monotonic(), out["status"]))

        ex = ThreadPoolExecutor(FLOOD)
        try:
            for i in range(FLOOD):
                ex.submit(flood_one, i)
            until = time.monotonic() + 60
            while _sandbox_waiting(http.get("/metrics").text) < FLOOD - 1 and time.monotonic() < until:
                time.sleep(0.1)  # every flood request has reached the sandbox queue (or as many as could)
            r = http.post("/v1/verify", json={"verifier": "think_format", "completion": "<think>a</think>b"},
                          headers={"x-client-id": "other"}, timeout=FLOOD * SLEEP_S)  # fmt: skip
            cheap_at = time.monotonic()
            assert r.json()["outcome"] == "OUTCOME_CORRECT"
            mine = _run_code(http, "print('mine')", "other")
            mine_at = time.monotonic()
            assert mine["status"] == "Success" and mine["run_result"]["stdout"] == "mine\n"
            with lock:
                before_cheap = [t for t, _ in done if t < cheap_at]
                before_mine = [t for t, _ in done if t < mine_at]
            assert not before_cheap, "the think_format call waited for a sandbox job"
            assert len(before_mine) <= 1, f"{len(before_mine)} of the flood's programs ran before the other caller's"
            metrics = http.get("/metrics").text
            for cls in ("http_host", "http_sandbox", "sandbox_job"):
                assert f'rlvr_queue_wait_seconds_count{{class="{cls}"}}' in metrics, cls
        finally:
            ex.shutdown(wait=False, cancel_futures=True)
            srv.stop()  # the rest of the flood goes with the server


def _sandbox_waiting(metrics: str) -> float:
    """Jobs waiting for a sandbox: in the fair queue, and in the pool's own (where they waited before)."""
    waiting = ('rlvr_queue_depth{class="sandbox_job"}', "rlvr_sandbox_pool_waiters")
    return sum(float(line.split()[-1]) for line in metrics.splitlines() if line.startswith(waiting))
