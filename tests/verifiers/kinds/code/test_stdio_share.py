"""The turns for the sandbox hold for stdio-mode Python too (issue 40): each case of a stdio submission is a
job of its own, run from a thread of the code verifier's; those jobs must wait their turn as the caller who
sent the submission, not as nobody. Caller A's stdio submissions hold both sandboxes of a pool of 2 (and one
more is queued); caller B's short stdio submission must be graded while A's programs still run, on the burst
sandox lent to a caller that holds none. When the cases ran as caller "" (the threads did not carry the
caller), B's case was one more job of the one caller that A's cases were too, queued behind A's third, and
its verdict came only after one of A's programs ended. Asserted by order and by A's programs' own clocks,
never by a time threshold."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.http_helpers import hold_every_sandbox, http_service, metric
from verifiers.kinds.table import sandbox_count
from verifiers.service.fair import BURST_SANDBOXES

pytestmark = pytest.mark.docker
SLEEP_S = 12
LONG = f"import time\nprint(time.time(), flush=True)\ntime.sleep({SLEEP_S})\nprint(time.time())\n"


def _stdio(program: str, output: str, case_s: float) -> dict:
    return {
        "verifier": "code",
        "completion": f"```python\n{program}```",
        "reference": json.dumps([{"input": "", "output": output}]),
        "options": {"mode": "stdio", "case_timeout_s": str(case_s), "judge": "exact"},
        "timeout_s": 4 * SLEEP_S + 60,
    }


def _long(http: httpx.Client) -> dict:
    body = _stdio(LONG, "never", SLEEP_S + 30)
    r = http.post("/v1/verify", json=body, headers={"x-client-id": "a"}, timeout=4 * SLEEP_S + 60)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.slow
def test_a_short_stdio_case_is_graded_while_another_callers_stdio_cases_hold_every_sandbox(tmp_path):
    with http_service(tmp_path, pool_size=2) as (srv, http), ThreadPoolExecutor(3) as ex:
        assert metric(http, "rlvr_sandbox_pool_live") == sandbox_count(2, BURST_SANDBOXES)  # all warm
        held, queued = hold_every_sandbox(http, ex, lambda: _long(http))  # A's third waits its turn
        assert metric(http, "rlvr_sandbox_pool_busy") == 2, "A's two programs are not both running"
        short = _stdio("print(input() if False else 'ok')\n", "ok", 10)
        r = http.post("/v1/verify", json=short, headers={"x-client-id": "b"}, timeout=4 * SLEEP_S + 60)
        a_done = [f.done() for f in (*held, queued)]
        assert r.status_code == 200 and r.json()["outcome"] == "OUTCOME_CORRECT", r.text
        results = [f.result() for f in (*held, queued)]  # every future checked
    for body in results:  # A's programs ran to their end (their output is not the expected one: INCORRECT)
        assert body["outcome"] == "OUTCOME_INCORRECT", body
    assert a_done == [False, False, False], "one of A's programs had finished before B's verdict came"
