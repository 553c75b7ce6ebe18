"""Helpers of the security battery (tests/security/test_battery_*.py): run a hostile job, read its report."""

from __future__ import annotations

import json
import os
import time
from textwrap import dedent

from sandbox.backend import Job, Result, owner
from sandbox.backends.docker import list_containers
from sandbox.backends.podman import PodmanSandbox
from sandbox.pool import SandboxPool


def run(pool: SandboxPool, code: str, timeout_s: float = 5.0, **kw) -> Result:
    r = pool.run(Job(code=dedent(code), timeout_s=timeout_s, **kw), wait_s=60)
    assert r.sandbox_error is None, f"the attack broke the sandbox instead of failing: {r.sandbox_error}"
    return r


def on_each(pool: SandboxPool, code: str, **kw) -> list[Result]:
    """Run ``code`` once in every sandbox: the idle queue is FIFO, so ``size`` sequential runs visit each."""
    return [run(pool, code, **kw) for _ in range(pool.size)]


def report(r: Result) -> dict:
    """The job's JSON report: its last line of stdout."""
    lines = r.stdout.strip().splitlines()
    assert lines, f"the job printed no report (exit {r.exit_code}, signal {r.signal}): {r.stderr[-2000:]}"
    return json.loads(lines[-1])


def assert_serving(pool: SandboxPool) -> None:
    r = run(pool, "print(6 * 7)")
    assert r.ok and r.stdout == "42\n"


def _processes_mentioning(needles: list[str]) -> list[str]:
    hits = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if any(n in cmd for n in needles):
            hits.append(f"{pid}: {cmd[:120]}")
    return hits


def _processes_of_uids(uids: set[int]) -> list[str]:
    hits = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{pid}").st_uid in uids:
                hits.append(pid)
        except OSError:
            pass
    return hits


def containers(pool: SandboxPool) -> set[str]:
    """The sandbox containers this process owns on ``pool``'s engine now (short ids; none for bwrap)."""
    if pool.cfg.backend not in ("docker", "podman"):
        return set()
    return {c[0] for c in list_containers(owner(), engine=pool.cfg.backend)}


def close_and_check(pool: SandboxPool, others: set[str] = frozenset()) -> None:
    """Close ``pool`` and check it left no container (but ``others``, another pool's), no process naming
    its sandboxes and none running as their uids."""
    names = pool.container_names()
    uids = {int(n.rsplit("-", 1)[1]) for n in names}
    if pool.cfg.backend == "podman":  # a rootless container's uid is a subordinate uid on the host
        uids = {PodmanSandbox.host_uid(PodmanSandbox.container_uid(u)) for u in uids}
    pool.close()
    end = time.monotonic() + 10  # podman: the engine's monitor (conmon) exits just after the removal
    while _processes_mentioning(names) and time.monotonic() < end:
        time.sleep(0.1)
    assert _processes_mentioning(names) == []
    assert _processes_of_uids(uids) == []
    assert containers(pool) - set(others) == set()
