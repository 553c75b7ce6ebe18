"""The one door into the sandbox, built in one place: the pool with every lane the service runs jobs in, and
the fairness gates that hand its slots out.

Every sandbox job of the service, whichever front it came in by (gRPC, HTTP, /run_code) and whatever runs in
it (a Python grader, a compiled program, a session), goes ``VerifierService.run_job`` → a gate → this pool.
Nothing else builds a ``SandboxPool`` or a ``FairGate`` (tests/project/test_one_door.py holds that):

* the pool's own sandboxes (registered Python verifiers, /run_code's Python; started on their first job) and the
  kinds' lanes (``kinds.sandbox_lanes``: the code kind's lean workers; the math grader's warm ones, started on
  the first math request);
* the toolchain lane (``toolchains.LANE``): the ``rlvr-sandbox-langs`` image, its own size, memory and
  processes (``--langs-pool-size``, ``--langs-memory-mb``, ``--langs-image``), started on its first job;
* one gate per group of slots: the pool's own (its lanes share its size) and each lane with slots of its own,
  each round robin between callers with a burst sandbox for a caller holding none (verifiers/service/fair.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable

from sandbox.backend import SandboxConfig
from sandbox.lanes import Lane
from sandbox.pool import SandboxPool
from sandbox.session import SESSION_LANE, SESSION_PRELOAD
from verifiers.kinds import table as kinds
from verifiers.kinds.code import toolchains
from verifiers.service.fair import BURST_SANDBOXES, FairGate
from verifiers.shapes.limits import ServiceLimits

# the queue classes the metrics name (rlvr_queue_depth{class=...}): the pool's own slots, and each lane's own
QUEUE_CLASS = {"": "sandbox_job", toolchains.LANE: "toolchain_job"}


def toolchain_config(limits: ServiceLimits) -> SandboxConfig:
    """The toolchain lane's sandboxes, from the service's limits alone: the Python pool's hardening with /tmp
    allowing exec (binaries run from the job's directory), more memory and processes for compilers, no
    preloads; always Docker (the image holds the toolchains)."""
    from sandbox.image import langs as image_langs

    return SandboxConfig(
        size=limits.langs_pool_size or limits.pool_size or max(2, os.cpu_count() or 2),
        image=limits.langs_image or image_langs.image_tag(),
        memory_mb=limits.langs_memory_mb or max(2048, limits.memory_mb),
        cpus=limits.cpus,
        cgroup_parent=limits.cgroup_parent,
        pids=max(256, limits.pids),
        tmpfs_mb=256,
        preload=(),
        tmpfs_exec=True,
        output_bytes=limits.output_cap_bytes,
        max_wait_s=limits.max_queue_s,
    )


def lanes(limits: ServiceLimits) -> dict[str, Lane]:
    """Every lane of the service's pool: the kinds' lean lanes and the toolchain lane (started on first use)."""
    missing = (
        "the toolchain image is needed for this language: run `make image LANGS=all` (python -m sandbox.image.langs)"
    )
    return {**kinds.sandbox_lanes(), toolchains.LANE: Lane(config=toolchain_config(limits), lazy=True, missing=missing),
            **session_lane(limits)}  # fmt: skip


def session_lane(limits: ServiceLimits) -> dict[str, Lane]:
    """The sessions' lane (none where sessions are off): bare workers that import the session worker and start
    their first session's holder before any open (in_sandbox/session.py, ``prepare``), so an open is a checkout
    and one message; started on the first open."""
    if not limits.max_sessions:
        return {}
    return {SESSION_LANE: Lane(preload=(SESSION_PRELOAD,), lazy=True)}


def build_pool(limits: ServiceLimits, burst: int = BURST_SANDBOXES, **config) -> SandboxPool:
    """The service's one pool (not started): ``burst`` sandboxes more per lane for a caller holding none, every
    lane, and its own sandboxes (registered Python verifiers, /run_code's Python) started on their first job,
    with the warm-up of every built-in kind without a lane (``config``: other ``SandboxConfig`` settings)."""
    every = lanes(limits)
    warmup = kinds.sandbox_warmup(every)  # a kind with a lane of its own warms only there
    return SandboxPool(limits.sandbox_config(warmup=warmup, **config), burst=burst, lanes=every, lazy=True)


def build_gates(pool: SandboxPool, max_waiters: int, observe: Callable[[str, float], None]) -> dict[str, FairGate]:
    """One gate per group of slots of ``pool``: "" for its own sandboxes and the lanes sharing their count, and
    one for each lane with slots of its own. ``observe(queue class, seconds waited)``."""
    groups = [n for n in pool.lanes() if not n or pool.own_slots(n)]
    return {
        g: FairGate(
            pool.lane_config(g).size, max_waiters, lambda s, c=QUEUE_CLASS.get(g, g): observe(c, s), burst=pool.burst
        )
        for g in groups
    }
