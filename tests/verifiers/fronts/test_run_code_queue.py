"""Waiting for a sandbox is bounded by the server's queue limit, never by the program's own time limit.

verl's own high-load test of its SandboxFusion path (tests/utils/reward_score/.../test_sandbox_fusion_on_cpu.py,
``test_integration_concurrency_high_load``), in its exact shape: 100 programs through ``/run_code`` as
100 concurrent requests, ``run_timeout`` 15 s, 4 of them sleeping 20 s (time-outs), 3 with a wrong
expected output, here against a real server with a pool of **2** sandboxes. The sleepers hold both
sandboxes for 15 s at a time, so most programs queue longer than their own ``run_timeout``: the 93
correct programs must still come back Success with the right output (verl: True, reward 1), not
SandboxError because their wait was charged to their run time.

And the bound itself: with ``--max-queue-s 1`` and one sandbox held by a sleeper, a queued request is
answered SandboxError (verl: -1, not the program's fault) naming the wait, instead of waiting on."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.http_helpers import http_base
from tests.sandboxfusion_helpers import verl_result
from verifiers.launch import LocalServer

pytestmark = pytest.mark.docker

N, RUN_TIMEOUT = 100, 15
WRONG, SLEEPERS = {10, 25, 50}, {5, 30, 60, 90}
MIXED = """
import sys
import time
data = sys.stdin.read()
if data.startswith('input_timeout_'):
    time.sleep(20)
    print(f"output_{data.split('_')[-1]}\\n", end='')
elif data.startswith('input_'):
    print(f"output_{data.split('_')[-1]}\\n", end='')
else:
    print("unknown_input\\n", end='')
"""


def server(tmp_path_factory, name: str, pool_size: int, *args: str) -> LocalServer:
    tmp = tmp_path_factory.mktemp(name)
    return LocalServer(
        pool_size=pool_size,
        registry=str(tmp / "registry.sqlite"),
        log_path=str(tmp / "server.log"),
        extra_args=["--http-port", "0", *args],
    )


def post(http: httpx.Client, stdin: str, code: str = MIXED, run_timeout: float = RUN_TIMEOUT) -> dict:
    """verl's call_sandbox_api: compile_timeout = run_timeout = the case timeout; its HTTP timeout is
    compile + run + 10 s."""
    payload = {"compile_timeout": run_timeout, "run_timeout": run_timeout, "code": code, "stdin": stdin,
               "language": "python", "files": {}, "fetch_files": []}  # fmt: skip
    r = http.post("/run_code", json=payload, timeout=2 * run_timeout + 10)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.slow
def test_verls_high_load_shape_on_a_pool_of_two(tmp_path_factory):
    inputs = [f"input_timeout_{i}" if i in SLEEPERS else f"input_{i}" for i in range(N)]
    expected = [f"wrong_output_{i}\n" if i in WRONG else f"output_{i}\n" for i in range(N)]
    with server(tmp_path_factory, "queue_high_load", 2) as srv, httpx.Client(base_url=http_base(srv)) as http:
        with ThreadPoolExecutor(N) as ex:
            bodies = list(ex.map(lambda s: post(http, s), inputs))
    results = [verl_result(b, e) for b, e in zip(bodies, expected, strict=True)]
    correct = [i for i in range(N) if i not in WRONG | SLEEPERS]
    bad = {i: (results[i], bodies[i]["message"][:200]) for i in correct if results[i] is not True}
    assert not bad, f"{len(bad)} of the {len(correct)} correct programs were not graded correct: {bad}"
    assert len(correct) == 93 and all(bodies[i]["status"] == "Success" for i in correct)
    assert [results[i] for i in sorted(WRONG)] == [False] * 3
    assert [results[i] for i in sorted(SLEEPERS)] == [-3] * 4  # their own time limit, 15 s, not the queue's


@pytest.mark.slow
def test_the_wait_is_bounded_by_the_servers_queue_limit(tmp_path_factory):
    sleeper = "import time\ntime.sleep(20)\n"
    with server(tmp_path_factory, "queue_limit", 1, "--max-queue-s", "1") as srv:
        with httpx.Client(base_url=http_base(srv)) as http, ThreadPoolExecutor(2) as ex:
            held = ex.submit(post, http, "", sleeper, 8)
            while True:  # once the sleeper holds the only sandbox, a second program cannot get one
                queued = post(http, "input_1")
                if queued["status"] == "SandboxError" or held.done():
                    break
            assert queued["status"] == "SandboxError", queued
            assert "no sandbox became free within 1.0 s" in queued["message"]
            assert verl_result(queued, "output_1\n") == -1  # verl: not the program's fault
            assert held.result()["run_result"]["status"] == "TimeLimitExceeded"
            assert verl_result(post(http, "input_1"), "output_1\n") is True  # served again once it is free


@pytest.mark.slow
def test_a_run_cut_short_by_shutdown_is_still_answered_in_json(tmp_path_factory):
    """The soak's one /run_code answer that was not JSON (bench/results/soak.txt): the server stopped
    (SIGTERM, --grace-s 1) while a program ran; uvicorn cancelled the request past the grace and answered
    a plain-text 500. SandboxFusion's shape is the answer on every path: SandboxError, not the program's fault."""
    with server(tmp_path_factory, "queue_shutdown", 1, "--grace-s", "1") as srv:
        http = httpx.Client(base_url=http_base(srv))
        with http, ThreadPoolExecutor(1) as ex:
            payload = {"code": "import time\ntime.sleep(60)\n", "language": "python", "run_timeout": 90}
            reply = ex.submit(http.post, "/run_code", json=payload, timeout=120)
            while not reply.done() and "rlvr_sandbox_pool_busy 1.0" not in http.get("/metrics").text:
                pass  # until the program holds the sandbox
            srv.stop()
            r = reply.result()
    assert r.headers["content-type"] == "application/json", (r.status_code, r.text[:200])
    body = r.json()
    assert body["status"] == "SandboxError" and "shutting down" in body["message"], body
    assert verl_result(body, "") == -1
