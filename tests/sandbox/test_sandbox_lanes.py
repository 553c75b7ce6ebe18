"""The pool's lanes (sandbox/pool.py, ``Lane``): sandboxes warmed with other preloads for the jobs that name
them, and the code kind's assert-mode jobs running in the lean lane of the real service.

Real Docker (and real bwrap where it can run), no mocks.
"""

from __future__ import annotations

import pytest

from sandbox.backend import Job, SandboxConfig, SandboxError
from sandbox.lanes import Lane
from sandbox.pool import SandboxPool
from tests.security.conftest import BACKENDS, make_pool
from verifiers.kinds import table as kinds
from verifiers.kinds.code.verifier import CODE_WARMUP

HAS_SYMPY = "import sys\nprint('sympy' in sys.modules, 'json' in sys.modules)"


@pytest.fixture(scope="module", params=BACKENDS)
def pool(request):
    cfg = make_pool(request.param, size=1).cfg  # the backend checked, the image there (not started)
    p = SandboxPool(cfg, lanes={"lean": Lane(warmup="import json")}).start()
    try:
        yield p
    finally:
        p.close()


def test_every_lane_is_started_and_counted(pool):
    assert pool.ready
    assert len(pool.container_names()) == 2  # the pool's own sandbox and the lane's


def test_a_job_naming_the_lane_forks_from_its_lean_worker(pool):
    assert pool.run(Job(code=HAS_SYMPY, lane="lean")).stdout == "False True\n"


@pytest.mark.parametrize("lane", ["", "no-such-lane"])
def test_other_jobs_run_on_the_pools_own_sandboxes(pool, lane):
    assert pool.run(Job(code=HAS_SYMPY, lane=lane)).stdout.startswith("True ")


def test_a_lanes_sandbox_that_died_is_replaced_within_its_lane(pool):
    victim = pool._queues["lean"].queue[0]
    victim.destroy()  # as if the engine had lost it while idle
    assert pool.run(Job(code=HAS_SYMPY, lane="lean")).stdout == "False True\n"  # its replacement, warmed alike
    assert victim.name not in pool.container_names()
    assert pool.run(Job(code=HAS_SYMPY)).stdout.startswith("True ")


@pytest.mark.parametrize("lanes", [{"": Lane()}, {"lean": ("json",)}])
def test_a_lane_must_be_named_and_described(lanes):
    with pytest.raises(SandboxError, match="lane"):
        SandboxPool(SandboxConfig(), lanes=lanes)


def test_the_code_kind_declares_a_lane_without_preloads():
    lanes = kinds.sandbox_lanes()
    assert lanes["code"] == Lane(preload=(), warmup=CODE_WARMUP)


@pytest.mark.docker
def test_the_services_assert_mode_jobs_run_in_the_code_lane(client):
    """Both halves of a job fork from the lane's worker, which never imported sympy (the pool's own do)."""
    completion = "```python\ndef f():\n    import sys\n    return 'sympy' in sys.modules\n```"
    tests = "import sys\nassert 'sympy' not in sys.modules\nassert f() is False\n"
    r = client.verify("code", completion, tests)
    assert r.outcome == "CORRECT", r.detail


@pytest.mark.docker
def test_the_services_stdio_python_jobs_run_in_the_code_lane(client):
    """A stdio-mode Python program forks from the lean worker too (the pool's own preload sympy)."""
    completion = "```python\nimport sys\nprint('sympy' in sys.modules)\n```"
    cases = '[{"input": "", "output": "False"}]'
    r = client.verify("code", completion, cases, options={"mode": "stdio"})
    assert r.outcome == "CORRECT", r.detail
