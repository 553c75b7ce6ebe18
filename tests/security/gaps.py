"""The protections a backend knowingly lacks on this host: each is a row of docs/sandbox.md's table.

A battery test whose protection is a known gap here still runs its attack, marked ``xfail(strict=True)``:
it must *succeed* (so the documented gap is measured, and the day it is closed the test says so); the
CPU row is not strict, since a loaded host can hold a job under its quota without one.
"""

from __future__ import annotations

import os

import pytest

from sandbox.pool import SandboxPool

CGROUP_V2 = "/sys/fs/cgroup/cgroup.controllers"


def _bwrap_cgroups(pool: SandboxPool, controller: str) -> bool:
    sandboxes = pool._all  # noqa: SLF001 - the battery inspects the sandboxes it attacks
    return all(controller in getattr(getattr(c, "cgroups", None), "controllers", ("memory", "pids"))
               and getattr(c, "cgroups", None) is not None and c.cgroups.active for c in sandboxes)  # fmt: skip


def known_gap(pool: SandboxPool, protection: str) -> str:
    """Why ``pool``'s backend does not provide ``protection`` here ("" when it does)."""
    backend = pool.cfg.backend
    if backend == "podman" and protection in ("memory", "cpu") and not os.path.exists(CGROUP_V2):
        return "rootless Podman on a cgroup v1 host: no memory or CPU quota per container"
    if backend == "bwrap" and protection in ("memory", "cpu") and not _bwrap_cgroups(pool, protection):
        return f"bwrap without a {protection} cgroup: only per-process rlimits"
    return ""


def expect_gap(request: pytest.FixtureRequest, pool: SandboxPool, protection: str) -> None:
    """Mark the calling test a strict xfail when ``protection`` is a known gap of this backend here."""
    why = known_gap(pool, protection)
    if why:  # cpu: a loaded host may give the sandbox under a core anyway, so the gap may not show
        strict = protection != "cpu"
        request.applymarker(pytest.mark.xfail(reason=f"documented gap ({protection}): {why}", strict=strict))
