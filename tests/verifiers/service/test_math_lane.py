"""The math kind's lane (verifiers/kinds/table.py ``sandbox_lanes``): its workers alone run the math warm-up, and
they start on the service's first math request, before that request's own budget starts; the pool's own
sandboxes start on their first job (verifiers/service/wiring.py).

A real service over the one pool as the server builds it (verifiers/service/wiring.py), real Docker, no mocks.
"""

from __future__ import annotations

import contextlib
import time

import pytest

from sandbox.backend import Job
from sandbox.deadline import Deadline
from verifiers.kinds.table import sandbox_count
from verifiers.shapes.request import Request

pytestmark = pytest.mark.docker

WARM = "import sys\nprint('in_sandbox.math.warm' in sys.modules, 'sympy' in sys.modules)"


def live(pool, expected: int, lanes: tuple[str, ...] | None = None) -> bool:
    """Whether the pool holds ``expected`` sandboxes (of ``lanes`` only, where named), waiting up to 30 s for a
    replacement in flight (a job may retire its sandbox; a new one is started in the background)."""

    def count() -> int:
        return len(pool.container_names()) if lanes is None else sum(n in lanes for n in list(pool._lane.values()))

    deadline = time.monotonic() + 30
    while count() != expected and time.monotonic() < deadline:
        time.sleep(0.2)
    return count() == expected


@contextlib.contextmanager
def fresh_service(tmp_path_factory, burst: int, registry: str = ""):
    """(service, its pool): a real service over the one pool as the server builds it, one sandbox per lane."""
    from tests.security.conftest import ensure_image, require
    from verifiers.service import wiring
    from verifiers.service.core import VerifierService
    from verifiers.service.registry import Registry
    from verifiers.shapes.limits import ServiceLimits

    require("docker")
    ensure_image()
    limits = ServiceLimits(pool_size=1)
    pool = wiring.build_pool(limits, burst=burst).start()
    reg = Registry(registry or str(tmp_path_factory.mktemp("reg") / "registry.sqlite"))
    svc = VerifierService(reg, pool, limits=limits)
    try:
        yield svc, pool
    finally:
        svc.close()
        pool.close()
        reg.close()


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    with fresh_service(tmp_path_factory, burst=1) as both:
        yield both


def test_a_service_that_grades_code_never_warms_math(service):
    svc, pool = service
    code = Request(verifier="code", completion="```python\ndef f():\n    return 1\n```", reference="assert f() == 1")
    assert svc.verify(code).outcome == "CORRECT"
    assert live(pool, sandbox_count(1, 1))  # the code lane's alone, one burst sandbox with it
    assert pool.run(Job(code=WARM)).stdout == "False True\n"  # the pool's own, started: sympy, no parser tables
    assert live(pool, sandbox_count(1, 1, started=("",)))


def test_the_first_math_request_gets_its_whole_budget(service):
    """The lane starts (a container and 1.6 s of warm-up per sandbox) before the request's 1 s budget starts:
    started inside the job instead, it took that budget and the answer timed out."""
    svc, pool = service
    first = Request(verifier="math", completion="\\boxed{\\frac{1}{2}}", reference="0.5", timeout_s=1.0)
    v = svc.verify(first)
    assert (v.outcome, v.reward) == ("CORRECT", 1.0), v.detail
    assert live(pool, sandbox_count(1, 1, started=("math",)), lanes=("code", "math"))  # and the pool's own, if up
    assert pool.run(Job(code=WARM, lane="math")).stdout == "True True\n"  # forked from a warmed worker
    wrong = Request(verifier="math", completion="\\boxed{(x+1)^2}", reference="x^2+2x+2", timeout_s=1.0)
    assert svc.verify(wrong).outcome == "INCORRECT"


def test_a_callers_deadline_shorter_than_the_lanes_start_is_answered_in_time_ungraded(tmp_path_factory):
    """Waiting for the lane to come up stops at the caller's deadline (a gRPC deadline: the call must be
    answered before it): an ungraded verdict that says the lane is starting, never the model's fault; the lane
    goes on starting, and the next request is graded."""
    with fresh_service(tmp_path_factory, burst=0) as (svc, pool):
        ask = Request(verifier="math", completion="\\boxed{\\frac{1}{2}}", reference="0.5")
        v = svc.verify(ask, Deadline.after(0.2))  # a container start and the warm-up take far longer
        assert (v.outcome, v.reward) == ("SANDBOX_ERROR", 0.0)
        assert "'math' is still starting" in v.detail, v.detail
        again = svc.verify(Request(verifier="math", completion="\\boxed{2}", reference="2.0"))
        assert again.outcome == "CORRECT", again.detail
        assert live(pool, sandbox_count(1, 0, started=("math",)))


def test_a_registered_python_verifiers_first_request_gets_its_whole_budget(tmp_path_factory):
    """A service that loads a Python verifier from its registry starts the pool's own sandboxes on that verifier's
    first request, before its 0.5 s budget starts (registering it started them with its dry run)."""
    registry = str(tmp_path_factory.mktemp("reg") / "registry.sqlite")
    src = "def verify(completion, reference, options):\n    return float(completion == reference)\n"
    with fresh_service(tmp_path_factory, burst=0, registry=registry) as (svc, pool):
        svc.register("same", "python", "", {"source": src, "entrypoint": "verify"})
        assert live(pool, sandbox_count(1, 0, started=("",)))  # the dry run started them
    with fresh_service(tmp_path_factory, burst=0, registry=registry) as (svc, pool):
        assert live(pool, sandbox_count(1, 0))
        v = svc.verify(Request(verifier="same", completion="7", reference="7", timeout_s=0.5))
        assert (v.outcome, v.reward) == ("CORRECT", 1.0), v.detail
