"""The security battery's pools: one per backend (Docker, rootless Podman, bubblewrap), module-scoped, size 2.

The Docker pool needs the engine and the sandbox image (`make setup`; the image is built here if only
the tag is missing). Podman and bubblewrap are required parts (tests/parts.py: `make podman`, `make
bwrap`): where either is missing the battery fails naming it, never skips. Each pool is started with a
secret in this process's environment (removed after its module), so the battery can check that it
never reaches a job.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from sandbox.backend import SandboxConfig
from sandbox.backends.docker import docker_available
from sandbox.pool import SandboxPool
from tests.parts import require
from tests.security.jobs import assert_serving, close_and_check, containers

SECRET_NAME = "RLVR_BATTERY_SECRET"
SECRET_VALUE = "s3cr3t-" + os.urandom(8).hex()


def ensure_image() -> None:
    from sandbox.image.python import image_exists, image_tag

    if not docker_available():
        pytest.fail("Docker engine not reachable: run `make setup` (tests marked docker need it)")
    if not image_exists(image_tag()):
        r = subprocess.run([sys.executable, "-m", "sandbox.image"], capture_output=True, text=True)
        if r.returncode != 0:
            pytest.fail(f"could not build the sandbox image (`make image`): {r.stderr[-2000:]}")


def make_pool(backend: str, **kw) -> SandboxPool:
    """A pool of ``backend``. Every backend is a required part (tests/parts.py): one that is missing
    here fails the test, naming it, and one the project's own probe finds unusable fails with its reason;
    neither is a skip, so a broken backend cannot pass the battery by not running it."""
    require({"docker": "docker", "podman": "podman", "bwrap": "bwrap"}[backend])
    if backend in ("docker", "podman"):
        ensure_image()  # podman loads it from Docker's copy (offline) when it lacks it
    return SandboxPool(SandboxConfig(backend=backend, **kw))


BACKENDS = [pytest.param("docker", marks=pytest.mark.docker), pytest.param("podman", marks=pytest.mark.docker), "bwrap"]


@pytest.fixture(scope="module", params=BACKENDS)
def pool(request):
    """The module's attacked pool, started with a secret in this process's environment (removed after:
    no later test inherits it). Afterwards: it still serves, lost no sandbox, and closing it leaves no
    container and no process behind (a container this process held before the pool started is another
    pool's: the worker's session services, tests/conftest.py)."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv(SECRET_NAME, SECRET_VALUE)
        p = make_pool(request.param, size=2)
        others = containers(p)
        p.start()
        try:
            yield p
            assert_serving(p)
            assert p.replaced == 0, f"the attacks killed {p.replaced} sandbox(es) of the pool"
        finally:
            close_and_check(p, others)


# -- the outcome of each battery test per backend, for docs/sandbox.md's table (tests/security/table.py)
_outcomes: dict[str, str] = {}


def pytest_runtest_logreport(report):
    if "test_battery_" not in report.nodeid or "[" not in report.nodeid:
        return
    if report.when == "call" or (report.when in ("setup", "teardown") and report.outcome != "passed"):
        outcome = "xfailed" if hasattr(report, "wasxfail") and report.outcome == "skipped" else report.outcome
        if hasattr(report, "wasxfail") and report.outcome == "passed":
            outcome = "xpassed"
        _outcomes[report.nodeid] = outcome


def pytest_sessionfinish(session):
    if not _outcomes:
        return
    from tests.security.table import RESULTS

    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    old = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    RESULTS.write_text(json.dumps(old | _outcomes, indent=1, sort_keys=True))
