"""No caller holds the whole pool (issue 40), on a real server process with a pool of 2.

Caller A starts long programs on every sandbox (and one more, queued); caller B then sends a short
assert job through the code verifier. B's verdict must come back while A's programs still run: the
server lends B its burst sandbox (verifiers/service/fair.py) instead of making it wait for one of A's
programs to end (23 s in the probe). Asserted by order and by the programs' own clocks (each of A's
programs prints when it started and when it ended), never by a time threshold; bench/service/fairness.py
measures the latencies. A's third program, queued behind its own two, must wait its own turn: the
burst sandbox is for a caller that holds none, so A cannot take it too."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.http_helpers import hold_every_sandbox, http_service, metric
from verifiers.kinds.table import sandbox_count
from verifiers.service.fair import BURST_SANDBOXES

pytestmark = pytest.mark.docker
SLEEP_S = 12
LONG = f"import time\nprint(time.time(), flush=True)\ntime.sleep({SLEEP_S})\nprint(time.time())\n"
SHORT = {
    "verifier": "code",
    "completion": "```python\ndef add(a, b):\n    return a + b\n```",
    "reference": "def check(candidate):\n    assert candidate(1, 2) == 3\n",
    "options": {"entry_point": "add"},
}


def _long(http: httpx.Client) -> dict:
    body = {"code": LONG, "language": "python", "run_timeout": SLEEP_S + 30}
    r = http.post("/run_code", json=body, headers={"x-client-id": "a"}, timeout=4 * SLEEP_S + 60)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.slow
def test_a_short_job_is_graded_while_another_caller_holds_every_sandbox(tmp_path):
    with http_service(tmp_path, pool_size=2) as (srv, http), ThreadPoolExecutor(3) as ex:
        assert metric(http, "rlvr_sandbox_pool_live") == sandbox_count(2, BURST_SANDBOXES)  # all warm
        held, queued = hold_every_sandbox(http, ex, lambda: _long(http))  # A's third waits its turn
        assert metric(http, "rlvr_sandbox_pool_busy") == 2, "A's two programs are not both running"
        r = http.post("/v1/verify", json=SHORT, headers={"x-client-id": "b"}, timeout=4 * SLEEP_S + 60)
        graded_at, a_done = time.time(), [f.done() for f in (*held, queued)]
        assert r.status_code == 200 and r.json()["outcome"] == "OUTCOME_CORRECT", r.text
        results = [f.result() for f in (*held, queued)]  # every future checked
    for body in results:
        assert body["status"] == "Success", body
    stamps = [[float(x) for x in body["run_result"]["stdout"].split()] for body in results]
    assert all(len(s) == 2 for s in stamps), stamps
    assert a_done == [False, False, False], "one of A's programs had finished before B's verdict came"
    assert all(end > graded_at for _, end in stamps[:2]), (graded_at, stamps)  # A's own clocks say so too
    assert stamps[2][0] >= min(end for _, end in stamps[:2]), "A's third program took the burst sandbox"
