"""The toolchain pool is shared by turns too (issue 40), on a real server process with a toolchain pool of 2.

Caller A starts long C programs on every toolchain sandbox (and one more, queued) through /run_code;
caller B then sends a short C job through the code verifier (stdio). B's verdict must come back while
A's programs still run: the server's toolchain pool is behind a ``FairGate`` with a burst sandbox
(the toolchain lane's gate, verifiers/service/wiring.py), so B does not wait for one of A's programs to end.
Asserted by order and by the programs' own clocks (each of A's programs prints when it started and
when it ended), never by a time threshold; bench/service/fairness.py --toolchain measures the latencies. A's
third program, queued behind its own two, waits its own turn: the burst sandbox is for a caller that
holds none. Each of A's programs is a different source, so none joins another's job in flight or
compile (verifiers/kinds/code/compile_cache.py)."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.http_helpers import http_service, wait_metric
from tests.langs_helpers import ensure_langs_image

pytestmark = pytest.mark.docker
SLEEP_S = 15
LONG = """#include <stdio.h>
#include <time.h>
#include <unistd.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_REALTIME, &t); return t.tv_sec + t.tv_nsec / 1e9; }
int main(void) { printf("%.6f\\n", now()); fflush(stdout); sleep(SLEEP); printf("%.6f\\n", now()); return 0; }
"""
SHORT = {
    "verifier": "code",
    "completion": '```c\n#include <stdio.h>\nint main(void) { int a, b; scanf("%d %d", &a, &b); '
    'printf("%d\\n", a + b); return 0; }\n```',
    "reference": json.dumps([{"input": "1 2\n", "output": "3\n"}]),
    "options": {"mode": "stdio", "language": "c"},
    "timeout_s": 4 * SLEEP_S,
}


def _long(http: httpx.Client, i: int) -> dict:
    code = LONG.replace("SLEEP", str(SLEEP_S)) + f"/* program {i} */\n"  # each its own source: nothing joins
    body = {"code": code, "language": "c", "compile_timeout": 60, "run_timeout": SLEEP_S + 30}
    r = http.post("/run_code", json=body, headers={"x-client-id": "a"}, timeout=6 * SLEEP_S + 60)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.slow
def test_a_short_compiled_job_is_graded_while_another_caller_holds_every_toolchain_sandbox(tmp_path):
    ensure_langs_image()
    args = ("--langs-pool-size", "2")
    with http_service(tmp_path, pool_size=1, extra_args=args) as (srv, http), ThreadPoolExecutor(3) as ex:
        # a different source from a third caller starts the toolchain pool
        warm = dict(SHORT, completion=SHORT["completion"].replace("0; }", "0; } /* warm */"), timeout_s=120)
        assert http.post("/v1/verify", json=warm, timeout=180).json()["outcome"] == "OUTCOME_CORRECT"
        held = [ex.submit(_long, http, i) for i in range(2)]
        time.sleep(1)  # lets A's two take their turns first (which one ran when is read from the stamps)
        queued = ex.submit(_long, http, 2)  # A's third: A holds two already, so it waits its turn
        wait_metric(http, 'rlvr_queue_depth{class="toolchain_job"}', 1)
        r = http.post("/v1/verify", json=SHORT, headers={"x-client-id": "b"}, timeout=6 * SLEEP_S + 60)
        graded_at, a_done = time.time(), [f.done() for f in (*held, queued)]
        assert r.status_code == 200 and r.json()["outcome"] == "OUTCOME_CORRECT", r.text
        results = [f.result() for f in (*held, queued)]  # every future checked
    for body in results:
        assert body["status"] == "Success", body
    stamps = sorted([float(x) for x in body["run_result"]["stdout"].split()] for body in results)
    assert all(len(s) == 2 for s in stamps), stamps
    assert a_done == [False, False, False], "one of A's programs had finished before B's verdict came"
    first_two, third = stamps[:2], stamps[2]
    assert all(start < graded_at < end for start, end in first_two), (graded_at, stamps)  # A's clocks agree
    assert third[0] >= min(end for _, end in first_two), "A's third program took the burst sandbox"
