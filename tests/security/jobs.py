"""Helpers of the security battery (tests/security/test_battery_*.py): run a hostile job, read its report."""

from __future__ import annotations

import json
from textwrap import dedent

from sandbox.backend import Job, Result
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
