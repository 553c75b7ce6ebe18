"""One deadline per request (sandbox/deadline.py): set where the request enters, spent by each layer.

- ``Deadline`` itself: ``within`` and ``earlier`` only ever move it closer, ``reserve`` keeps a bounded
  share for the outer layer and never goes past the deadline it came from.
- Layer by layer, real parts (a Docker pool, the service, the code verifier, the worker): the gRPC
  entry's deadline, the service's, the job's and the program's time each leave less than the one above,
  and a program that sleeps forever is stopped within the entry's deadline with TIMEOUT.
- End to end over a real gRPC server: a call with a short deadline and a program that never ends
  comes back before that deadline with TIMEOUT (reward 0), not DEADLINE_EXCEEDED, and the service
  goes on serving.
"""

from __future__ import annotations

import time

import pytest

from sandbox.backend import SandboxConfig
from sandbox.deadline import KEEP_MAX_SHARE, KEEP_MIN_S, KEEP_SHARE, Deadline
from sandbox.pool import SandboxPool
from tests.security.conftest import ensure_image
from verifiers.fronts.server import REPLY_RESERVE_S, call_deadline
from verifiers.service.core import VerifierService
from verifiers.service.registry import Registry
from verifiers.shapes.outcome import Outcome
from verifiers.shapes.request import Request


def sleeper(tag: str) -> str:
    """A program that never ends (distinct per test: verdicts are cached by completion)."""
    return f"```python\nimport time  # {tag}\nwhile True:\n    time.sleep(1)\n```"


TESTS = "assert True"


# -- the type -----------------------------------------------------------------------------------------
def test_within_and_earlier_only_bring_it_closer():
    d = Deadline.after(10.0)
    assert d.within(3.0).remaining() <= 3.0 < d.remaining()
    assert d.within(30.0) == d
    assert d.earlier(None) == d and d.earlier(Deadline.after(1.0)).remaining() <= 1.0
    assert Deadline.never().within(2.0).remaining() <= 2.0
    assert Deadline.of(None) == Deadline.never() and Deadline.of(d) is d and Deadline.of(d.at) == d


@pytest.mark.parametrize("left, asked", [(60.0, 5.0), (10.0, 5.0), (2.0, 5.0), (0.3, 5.0), (10.0, 0.1)])
def test_reserve_keeps_a_bounded_share_and_never_passes_the_deadline(left, asked):
    d = Deadline.after(left)
    inner = d.reserve(asked)
    kept = d.at - inner.at
    assert 0 < kept <= asked + 1e-9
    assert kept <= max(KEEP_MIN_S, KEEP_SHARE * left) + 1e-3 and kept <= KEEP_MAX_SHARE * left + 1e-3
    assert inner.at < d.at and inner.reserve(asked).at < inner.at  # every layer down has less


def test_an_expired_or_absent_deadline_stays_as_it_is():
    past = Deadline(time.monotonic() - 1)
    assert past.expired() and past.remaining() == 0.0 and past.reserve(5.0) == past
    assert Deadline.never().reserve(5.0) == Deadline.never()


# -- layer by layer, real parts ------------------------------------------------------------------------
class _GrpcEntry:
    """What the servicer reads from a grpc.ServicerContext to set the deadline: the client's time left."""

    def __init__(self, seconds: float):
        self.seconds = seconds

    def time_remaining(self) -> float:
        return self.seconds


class _Recording(VerifierService):
    """The real service; it notes, for each sandbox job, the job's deadline and what the pool granted."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.seen: list[tuple[float, float, object]] = []

    def run_job(self, job):
        left = job.deadline.remaining()
        res = super().run_job(job)
        self.seen.append((left, job.timeout_s, res))
        return res


@pytest.fixture(scope="module")
def recording_service():
    ensure_image()
    pool = SandboxPool(SandboxConfig(size=1)).start()
    svc = _Recording(Registry(None), pool)
    try:
        yield svc
    finally:
        svc.close()
        pool.close()


@pytest.mark.docker
def test_each_layer_spends_from_the_entry_deadline(recording_service):
    svc = recording_service
    entry = 3.0
    d_server = call_deadline(_GrpcEntry(entry))
    server_left = d_server.remaining()
    v = svc.verify(
        Request("code", sleeper("layers"), TESTS), d_server
    )  # no timeout_s: the code default (10 s) is later
    job_left, job_timeout, res = svc.seen[-1]
    # entry > server (the reply's share) > the job's deadline when it reached the sandbox > the program's time
    assert entry - REPLY_RESERVE_S - 0.05 <= server_left < entry
    assert job_left <= server_left and job_timeout == 10.0  # the code default budget, cut by the deadline below
    assert 0 < res.time_limit_s < job_left  # the pool kept the worker's share
    assert res.timed_out and res.time_limit_s - 0.05 <= res.wall_s <= res.time_limit_s + 0.5  # the worker spent it
    assert v.outcome is Outcome.TIMEOUT and v.reward == 0.0  # the chain of budgets above, not the clock, says in time


@pytest.mark.docker
def test_the_request_budget_bounds_the_deadline_without_a_callers_deadline(recording_service):
    svc = recording_service
    v = svc.verify(Request("code", sleeper("budget"), TESTS, timeout_s=1.5))
    job_left, _, res = svc.seen[-1]
    assert job_left <= 1.5 and res.time_limit_s < job_left
    assert v.outcome is Outcome.TIMEOUT  # no layer added seconds of its own: time_limit_s < job_left <= 1.5


FILE_BOMB = """```python
import time  # files
try:
    for i in range(100000):
        open(f"/tmp/f{i}", "w").close()
except OSError:
    pass
time.sleep(100)
```"""


@pytest.mark.docker
def test_a_program_that_leaves_the_cleanup_slow_is_still_timeout_not_ungraded(recording_service):
    """The worker wipes /tmp before it answers; thousands of files make that outlast a short budget's
    share for the answer. That must not buy an ungraded (masked) SANDBOX_ERROR: it is TIMEOUT, reward 0."""
    svc = recording_service
    v = svc.verify(Request("code", FILE_BOMB, TESTS, timeout_s=0.8))
    assert v.outcome is Outcome.TIMEOUT and v.reward == 0.0, v
    job_left, _, res = svc.seen[-1]
    assert job_left <= 0.8 and res.time_limit_s < job_left  # the program got less than the request's budget
    ok = Request("code", "```python\ndef one():\n    return 1\n```", "assert one() == 1", timeout_s=30)
    assert svc.verify(ok).reward == 1.0


# -- end to end over gRPC ------------------------------------------------------------------------------
@pytest.mark.docker
@pytest.mark.parametrize("deadline_s", [1.5, 3.0])
def test_a_short_grpc_deadline_returns_timeout_in_time_and_the_service_keeps_serving(client, deadline_s):
    r = client.verify("code", sleeper(f"grpc {deadline_s}"), TESTS, deadline_s=deadline_s)
    # an answer at all came before the call's gRPC deadline (past it, the call fails DEADLINE_EXCEEDED)
    assert r.outcome == "TIMEOUT" and r.reward == 0.0, r
    ok = client.verify("code", "```python\ndef one():\n    return 1\n```", "assert one() == 1", deadline_s=30)
    assert ok.outcome == "CORRECT" and ok.reward == 1.0


@pytest.mark.docker
def test_hostile_math_under_a_short_deadline_is_timeout_in_time(client):
    # the math lane up first (a service's first math request starts it; before it is up, a short deadline is
    # answered SANDBOX_ERROR in time: tests/verifiers/service/test_math_lane.py)
    assert client.verify("math", "$\\boxed{2}$", "2").outcome == "CORRECT"
    r = client.verify("math", "$\\boxed{9^{9^{9^{9}}}}$", "1", deadline_s=2.0)  # answered: within the deadline
    assert r.outcome in ("TIMEOUT", "INCORRECT") and r.reward == 0.0, r
