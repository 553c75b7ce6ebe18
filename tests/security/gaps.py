"""The protections a backend knowingly lacks on this host: each is a row of docs/sandbox.md's table.

A battery test whose protection is a known gap here still runs its attack, marked ``xfail(strict=True)``:
it must *succeed* (so the documented gap is measured, and the day it is closed the test says so); the
CPU row is not strict, since a loaded host can hold a job under its quota without one.

Whether a gap is known is decided from the host's facts as the kernel reports them (the cgroup
hierarchies mounted in /proc/self/mountinfo, this process's cgroups in /proc/self/cgroup, who we are),
never from the sandbox's own cgroup object: a regression there must fail the attack, not turn it into
an expected failure.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def cgroup_mounts(mountinfo: str | None = None) -> dict[str, Path]:
    """{"v2": the unified mount} or {controller: its v1 mount} as /proc/self/mountinfo lists them."""
    text = Path("/proc/self/mountinfo").read_text() if mountinfo is None else mountinfo
    found: dict[str, Path] = {}
    for line in text.splitlines():
        left, _, right = line.partition(" - ")
        fstype, _, options = (right.split() + ["", "", ""])[:3]
        point = Path(left.split()[4])
        if fstype == "cgroup2":
            found.setdefault("v2", point)
        elif fstype == "cgroup":
            for opt in options.split(","):
                found.setdefault(opt, point)
    return found


def _own_v2_cgroup(mount: Path) -> Path | None:
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        if line.startswith("0::"):
            return mount / line[3:].strip().lstrip("/")
    return None


def host_cgroup(controller: str) -> str:
    """How a per-sandbox ``controller`` cgroup (memory, cpu, pids) can be made here, '' if it cannot.

    cgroup v2 with the controller available at its root (as root), or delegated to this user (its own
    cgroup's subtree_control writable and the controller listed there); cgroup v1 with the controller's
    hierarchy mounted writable, as root. The sandbox code (sandbox/backends/cgroups.py) is meant to use the
    first of these there is; this reads the same facts independently of it."""
    mounts = cgroup_mounts()
    root = os.geteuid() == 0
    v2 = mounts.get("v2")
    if v2 is not None and (v2 / "cgroup.controllers").exists():
        if root and v2 == Path("/sys/fs/cgroup") and controller in (v2 / "cgroup.controllers").read_text().split():
            return f"cgroup v2 at {v2}"
        own = _own_v2_cgroup(v2)
        if not root and own is not None and os.access(own / "cgroup.subtree_control", os.W_OK):
            if controller in (own / "cgroup.controllers").read_text().split():
                return f"cgroup v2 delegated at {own}"
    v1 = mounts.get(controller)
    if (
        root
        and v1 is not None
        and (Path("/sys/fs/cgroup") / controller).resolve() == v1.resolve()
        and os.access(v1, os.W_OK)
    ):
        return f"cgroup v1 at {v1}"
    return ""


def known_gap(backend: str, protection: str) -> str:
    """Why ``backend`` does not provide ``protection`` on this host ("" when it does)."""
    if protection not in ("memory", "cpu"):
        return ""
    if backend == "podman" and cgroup_mounts().get("v2") != Path("/sys/fs/cgroup"):
        return "rootless Podman on a cgroup v1 (or hybrid) host: no memory or CPU quota per container"
    if backend == "bwrap" and not host_cgroup(protection):
        return f"bwrap without a {protection} cgroup on this host: only per-process rlimits"
    return ""


def expect_gap(request: pytest.FixtureRequest, backend: str, protection: str) -> None:
    """Mark the calling test a strict xfail when ``protection`` is a known gap of ``backend`` here."""
    why = known_gap(backend, protection)
    if why:  # cpu: a loaded host may give the sandbox under a core anyway, so the gap may not show
        strict = protection != "cpu"
        request.applymarker(pytest.mark.xfail(reason=f"documented gap ({protection}): {why}", strict=strict))
