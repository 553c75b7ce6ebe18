"""The toolchain pool: a second sandbox pool, on the ``rlvr-sandbox-langs`` image, for non-Python code.

Started lazily by the first non-Python request of a process (a few seconds: containers start in
parallel), so a service that only grades Python never starts it, and the Python pool keeps its small
image. Its sandboxes are the Python pool's hardening (sandbox/pool.py: no network, read-only root,
every capability dropped, unprivileged uid, pids/memory/CPU cgroup limits) with three differences:
/tmp allows exec (compiled binaries run from the job's scratch directory), larger memory and /tmp for
compilers, and no Python preloads.

Knobs (environment, read when the pool starts): ``RLVR_LANGS_POOL_SIZE`` (default: CPU count, at least
2), ``RLVR_LANGS_MEMORY_MB`` (2048), ``RLVR_LANGS_IMAGE`` (default: the tag the sources describe;
``make image LANGS=all`` builds it). A missing image is a ``SANDBOX_ERROR`` whose detail says so.
"""

from __future__ import annotations

import os
import subprocess
import threading

from sandbox.pool import OUTPUT_CAP, Job, Result, SandboxConfig, SandboxError, SandboxPool

_lock = threading.Lock()
_pool: SandboxPool | None = None


def config() -> SandboxConfig:
    from sandbox import image_langs

    return SandboxConfig(
        size=int(os.environ.get("RLVR_LANGS_POOL_SIZE") or max(2, os.cpu_count() or 2)),
        image=os.environ.get("RLVR_LANGS_IMAGE") or image_langs.image_tag(),
        memory_mb=int(os.environ.get("RLVR_LANGS_MEMORY_MB") or 2048),
        pids=256,
        tmpfs_mb=256,
        preload=(),
        tmpfs_exec=True,
    )


def get() -> SandboxPool:
    """The process's toolchain pool, started on first use."""
    global _pool
    with _lock:
        if _pool is None:
            cfg = config()
            if subprocess.run(["docker", "image", "inspect", cfg.image], capture_output=True).returncode != 0:
                raise SandboxError(
                    f"toolchain image {cfg.image} is missing: run `make image LANGS=all` (python -m sandbox.image_langs)"
                )
            pool = SandboxPool(cfg)
            pool.start()
            _pool = pool
        return _pool


def output_cap() -> int:
    return _pool.cfg.output_bytes if _pool is not None else OUTPUT_CAP


def run_job(job: Job) -> Result:
    """Run a job in the toolchain pool; infrastructure failures become ``Result.sandbox_error``."""
    try:
        return get().run(job)  # with job.deadline (a request's), the wait for a sandbox spends from it too
    except SandboxError as e:
        return Result(sandbox_error=str(e), id=job.id)


def close() -> None:
    global _pool
    with _lock:
        if _pool is not None:
            _pool.close()
            _pool = None
