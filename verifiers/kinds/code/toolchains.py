"""The toolchain pool: a second sandbox pool, on the ``rlvr-sandbox-langs`` image, for non-Python code.

Started lazily by the first non-Python request of a process (a few seconds: containers start in
parallel), so a service that only grades Python never starts it, and the Python pool keeps its small
image. Its sandboxes are the Python pool's hardening (sandbox/pool.py: no network, read-only root,
every capability dropped, unprivileged uid, pids/memory/CPU cgroup limits) with three differences:
/tmp allows exec (compiled binaries run from the job's scratch directory), larger memory and /tmp for
compilers, and no Python preloads.

Its limits come only from the service's ``ServiceLimits`` (``configure(limits)``, called by the server
with the ones it validated at start-up): the output cap (``--output-cap-bytes``: every language, not only
Python), CPUs and the queue limit (``--max-queue-s``) as the Python pool's; its own size
(``--langs-pool-size``; 0: the service's ``--pool-size``, else the CPU count, at least 2), memory
(``--langs-memory-mb``; 0: ``--memory-mb``, at least 2048 MiB, since compilers need more than a Python
job) and image (``--langs-image``; empty: the tag the sources describe, which ``make image LANGS=all``
builds). Processes: at least 256. A missing image is a ``SANDBOX_ERROR`` whose detail says so. The
compile cache holds at most ``--compile-cache-mb`` (0: off).

In a server the pool is shared by turns between callers (issue 40): the service core hands it a gate
(``share``: the service's ``FairGate``, round robin and one burst sandbox lent to a caller holding none),
so one caller's long programs on every toolchain sandbox do not make another's short job wait for them.

Every non-Python submission is one job running ``driver.py`` (``driver_job`` builds it; its
answer lines are read back with ``driver_lines``): the code verifier's stdio mode and SandboxFusion's
``/run_code`` share it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from sandbox.backend import OUTPUT_CAP, Job, Limits, Result, SandboxConfig, SandboxError
from sandbox.pool import SandboxPool
from verifiers.kinds.code import compile_cache, languages
from verifiers.shapes.limits import ServiceLimits

DRIVER_JOB = "from in_sandbox.code import driver\ndriver.main()\n"  # in_sandbox/code/driver.py, in the image
DRIVER_MARGIN_S = 3.0  # the driver's own start-up and reporting, beyond compile + cases
CASE_START_S = 0.5  # per case: spawning the program

_lock = threading.Lock()
_pool: SandboxPool | None = None
_limits = ServiceLimits()
_make_gate: Callable[[int], Any] | None = None  # slots -> a FairGate (verifiers/service/fair.py), or None
_caller: Callable[[], str] = str
_gate: Any = None  # the running pool's: acquire(caller, wait_s) -> grant | False, release(grant), depth(), burst


def configure(limits: ServiceLimits) -> None:
    """Use the service's limits for the toolchain pool (a running pool is restarted on its next use)."""
    global _limits
    with _lock:
        _limits = limits
        CACHE.resize(limits.compile_cache_mb << 20)  # --compile-cache-mb; 0: off
    if _pool is not None and _pool.cfg != config():
        close()


def share(make_gate: Callable[[int], object], caller: Callable[[], str]) -> None:
    """Hand the toolchain pool out in turns between callers, as the service's Python pool is: each job
    takes a grant from ``make_gate(size)`` (the service's ``FairGate``: round robin, and ``burst`` more
    sandboxes lent only to a caller holding none) for ``caller()`` before it takes a sandbox, and the pool
    keeps ``gate.burst`` sandboxes beyond its size. The gate is handed in because this kind may not import
    the service layer (tests/project/test_layering.py). A running pool is restarted on its next use."""
    global _make_gate, _caller
    with _lock:
        _make_gate, _caller = make_gate, caller
    close()


def queue_depth() -> int:
    """Jobs waiting at the toolchain pool's gate for their turn (0 without one)."""
    gate = _gate
    return gate.depth() if gate is not None else 0


def config() -> SandboxConfig:
    """The toolchain pool's configuration, from the configured ``ServiceLimits`` alone."""
    from sandbox import image_langs

    lim = _limits
    return SandboxConfig(
        size=lim.langs_pool_size or lim.pool_size or max(2, os.cpu_count() or 2),
        image=lim.langs_image or image_langs.image_tag(),
        memory_mb=lim.langs_memory_mb or max(2048, lim.memory_mb),
        cpus=lim.cpus,
        pids=max(256, lim.pids),
        tmpfs_mb=256,
        preload=(),
        tmpfs_exec=True,
        output_bytes=lim.output_cap_bytes,
        max_wait_s=lim.max_queue_s,
    )


def get() -> SandboxPool:
    """The process's toolchain pool, started on first use (with its gate, where ``share`` gave one)."""
    return _started()[0]


def _started() -> tuple[SandboxPool, Any]:
    """(the pool, its gate or None), read together: a pool restarted meanwhile comes with its own gate."""
    global _pool, _gate
    with _lock:
        if _pool is None:
            cfg = config()
            if subprocess.run(["docker", "image", "inspect", cfg.image], capture_output=True).returncode != 0:
                raise SandboxError(
                    f"toolchain image {cfg.image} is missing: run `make image LANGS=all` (python -m sandbox.image_langs)"
                )
            gate = _make_gate(cfg.size) if _make_gate is not None else None
            pool = SandboxPool(cfg, burst=gate.burst if gate is not None else 0)
            pool.start()
            _pool, _gate = pool, gate
        return _pool, _gate


def output_cap() -> int:
    """The output cap a toolchain job runs under (the service's, once configured)."""
    return _pool.cfg.output_bytes if _pool is not None else (_limits.output_cap_bytes or OUTPUT_CAP)


class _Flight:
    __slots__ = ("done", "result", "nonce")

    def __init__(self, nonce: str) -> None:
        self.done = threading.Event()
        self.result: Result | compile_cache.Entry | None = None
        self.nonce = nonce


_flights: dict[str, _Flight] = {}  # identical driver jobs in flight (the whole query but the nonce)
_compiling: dict[str, _Flight] = {}  # compiles in flight, by compile-cache key
# "compiles": compile steps run in a sandbox; "shared": jobs that joined an identical job in flight;
# "cached": compiles answered by the artifact cache; "joined_compile": jobs that waited for a compile in
# flight and ran on its artifact; "uncached": compiles whose artifact could not be taken (compile_cache.py)
STATS: Counter[str] = Counter()
CACHE = compile_cache.ArtifactCache()


def pool_run(job: Job) -> Result:
    """One job in the toolchain pool as it is: no joining, no cache (bench/compile_cache.py times it); in
    the caller's turn where the pool is shared (``share``). Its wait for a turn and for a sandbox spends
    from ``job.deadline``, else from the queue limit (``--max-queue-s``), never from the program's time."""
    try:
        pool, gate = _started()
        if gate is None:
            return pool.run(job)
        t0 = time.monotonic()
        wait_s = job.deadline.reserve(pool.cfg.grace_s).remaining() if job.deadline else pool.cfg.max_wait_s
        grant = gate.acquire(_caller(), wait_s)
        if not grant:
            return Result(sandbox_error=f"no toolchain sandbox became free within {wait_s:.1f} s (pool size "
                          f"{pool.size}, {gate.depth()} jobs waiting): retry later, wait longer (the server's "
                          "--max-queue-s) or raise --langs-pool-size", id=job.id)  # fmt: skip
        try:
            if job.deadline is not None:
                return pool.run(job)
            return pool.run(job, wait_s=max(0.0, wait_s - (time.monotonic() - t0)))
        finally:
            gate.release(grant)
    except SandboxError as e:  # the gate's GateSaturated (too many jobs wait) among them
        return Result(sandbox_error=str(e), id=job.id)


def _wait_s(job: Job) -> float:
    return max(0.0, job.deadline.remaining() if job.deadline is not None else job.timeout_s + DRIVER_MARGIN_S)


def run_job(job: Job) -> Result:
    """Run a job in the toolchain pool; infrastructure failures become ``Result.sandbox_error``. With
    ``job.deadline`` (a request's) the wait for a sandbox spends from it; without one the wait is bounded
    by the queue limit, never by the job's own time.

    Compile once per source: a driver job identical to one already running (same language, source,
    compiler flags, inputs and limits; only the nonce differs), as a batch of G completions holding the
    same program makes, joins it instead of compiling and running again: it gets that job's result with
    its own nonce written in (the program never sees either nonce). Beyond that, a compile step is
    answered from the artifact cache (verifiers/kinds/code/compile_cache.py) where a job with the same
    compile key ran before or is compiling now. ``STATS`` counts each."""
    q = _query(job)
    if q is None or not q.get("compile"):
        return pool_run(job)
    nonce = q.pop("nonce")
    same = json.dumps([q, job.limits.memory_mb, job.limits.nproc], sort_keys=True)  # each keeps its own deadline
    k = hashlib.sha256(same.encode()).hexdigest()
    with _lock:
        flight = _flights.get(k)
        leader = flight is None
        if leader:
            flight = _flights[k] = _Flight(nonce)
    q["nonce"] = nonce
    if not leader:
        if flight.done.wait(_wait_s(job)) and isinstance(flight.result, Result):
            with _lock:
                STATS["shared"] += 1
            r = flight.result
            return replace(r, stdout=r.stdout.replace(flight.nonce, nonce), id=job.id)
        return _compiled(job, q)  # the first one did not answer in this job's time: on its own
    try:
        flight.result = _compiled(job, q)
        return flight.result
    finally:
        with _lock:
            _flights.pop(k, None)
        flight.done.set()


def _query(job: Job) -> dict | None:
    """The driver query a job carries (None: not a driver job)."""
    if job.code != DRIVER_JOB:
        return None
    try:
        q = json.loads(job.stdin)
    except ValueError:
        return None
    return q if isinstance(q, dict) and isinstance(q.get("nonce"), str) else None


def _compiled(job: Job, q: dict) -> Result:
    """A driver job with a compile step, through the artifact cache (with the cache off: as it is)."""
    if CACHE.max_bytes <= 0:
        _count("compiles")
        return pool_run(job)
    ck = compile_cache.key(q, job, _image())
    entry = CACHE.get(ck, q["compile_timeout"])
    if entry is not None:
        _count("cached")
        return _from_entry(job, q, entry)
    with _lock:
        flight = _compiling.get(ck)
        leader = flight is None
        if leader:
            flight = _compiling[ck] = _Flight(q["nonce"])
    if leader:
        try:
            res, flight.result = _build(job, q, ck)
        finally:
            with _lock:
                _compiling.pop(ck, None)
            flight.done.set()
        return res
    flight.done.wait(_wait_s(job))
    entry = flight.result if isinstance(flight.result, compile_cache.Entry) else CACHE.get(ck, q["compile_timeout"])
    if entry is None or entry.compile["elapsed"] > q["compile_timeout"]:
        _count("compiles")
        return pool_run(job)  # the compile in flight was not cached, or took longer than this job may
    _count("joined_compile")
    return _from_entry(job, q, entry)


def _count(what: str) -> None:
    with _lock:
        STATS[what] += 1


def _image() -> str:
    return _pool.cfg.image if _pool is not None else config().image


def _build(job: Job, q: dict, ck: str) -> tuple[Result, compile_cache.Entry | None]:
    """The job as the driver runs it, in a build job that also sends back what its compile wrote:
    (its result, the entry cached from it or None). A compile error the same source always gets is
    cached as that result."""
    _count("compiles")
    nonce = q["nonce"]
    res = pool_run(replace(job, code=compile_cache.BUILD_JOB, stdin=json.dumps(dict(q, output_cap=output_cap()))))
    lines = driver_lines(res.stdout, nonce)
    comp = next((d["compile"] for d in lines if "compile" in d), None)
    blob = next((d["artifact"] for d in lines if "artifact" in d), None)
    ended = any("artifact" in d or "uncached" in d for d in lines)
    cut = res.sandbox_error or res.timed_out or res.output_limit_exceeded
    entry = None
    if comp is not None and comp["ok"] and isinstance(blob, str) and not cut:
        try:
            entry = compile_cache.Entry(comp, base64.b64decode(blob), None)
            CACHE.put(ck, entry)
        except ValueError:  # binascii.Error and a path that would leave the scratch directory
            entry = None
    elif comp is not None and compile_cache.cacheable_failure(comp, res):
        CACHE.put(ck, compile_cache.Entry(comp, None, replace(res, id=""), nonce))
    if comp is not None and comp["ok"] and not ended and not cut:  # our part of the job died: as it was
        _count("compiles")
        return pool_run(job), None
    if entry is None and ended:
        _count("uncached")
    return replace(res, stdout=compile_cache.rewrite(res.stdout, nonce, compile_cache.as_driver())), entry


def _from_entry(job: Job, q: dict, entry: compile_cache.Entry) -> Result:
    """A job's result from another job's compile (its compile line says ``cached``): that compile error
    as it was, or a run job on its artifact."""
    nonce = q["nonce"]
    if entry.failed is not None:
        r = entry.failed
        return replace(r, stdout=r.stdout.replace(entry.nonce, nonce), id=job.id)
    cases_s = len(q["inputs"]) * (q["case_timeout"] + CASE_START_S) + DRIVER_MARGIN_S
    run_q = json.dumps(dict(q, artifact=base64.b64encode(entry.artifact or b"").decode()))
    res = pool_run(replace(job, code=compile_cache.RUN_JOB, stdin=run_q, timeout_s=min(job.timeout_s, cases_s)))
    if not (res.sandbox_error or res.timed_out or driver_lines(res.stdout, nonce)):  # it could not unpack
        _count("compiles")
        return pool_run(job)
    comp = dict(entry.compile, cached=True)
    return replace(
        res, stdout=compile_cache.rewrite(res.stdout, nonce, lambda d: dict(d, compile=comp) if "compile" in d else d)
    )


def driver_job(lang: languages.Language, code: str, inputs: list[str], *, case_timeout_s: float,
               compile_timeout_s: float, stop_on_error: bool = True, run_as_mb: int | None = None,
               blobs: dict[str, str] | None = None, job_id: str = "") -> tuple[Job, str]:  # fmt: skip
    """(the job, its nonce) that compiles ``code`` once and runs it on each input (driver.py).
    ``blobs``: relative path → base64, written into the job's directory first. Without a deadline: the
    caller may set ``job.deadline`` (the job's ``timeout_s`` is what the driver needs)."""
    cap = output_cap()
    compile_s = compile_timeout_s if lang.compile else 0.0
    nonce = secrets.token_hex(16)
    q = {
        "nonce": nonce,
        "files": {lang.source: languages.source_text(lang, code)},
        "blobs": blobs or {},
        "compile": lang.compile,
        "compile_timeout": compile_s,
        "compile_as_mb": languages.COMPILE_AS_MB,
        "compile_nproc": languages.COMPILE_NPROC,
        "run": lang.run,
        "env": lang.env,
        "inputs": inputs,
        "case_timeout": case_timeout_s,
        "run_as_mb": run_as_mb or lang.run_as_mb,
        "run_nproc": languages.RUN_NPROC,
        # the program's share of the cap: the driver's lines carry its stdout as base64 (4/3 larger)
        "output_budget": max(0, (cap - 8192 - 2600 * len(inputs)) * 3 // 4),
        "stop_on_error": stop_on_error,
    }
    need = compile_s + len(inputs) * (case_timeout_s + CASE_START_S) + DRIVER_MARGIN_S
    limits = Limits(memory_mb=languages.COMPILE_AS_MB, nproc=languages.COMPILE_NPROC, fsize_mb=64)
    return Job(code=DRIVER_JOB, stdin=json.dumps(q), timeout_s=need, limits=limits, id=job_id), nonce


def driver_lines(stdout: str, nonce: str) -> list[dict]:
    """The JSON lines of a job's stdout that carry ``nonce``: the trusted side's answers (the toolchain
    driver's, the assert harness's), which the program cannot forge."""
    found = []
    for line in stdout.splitlines():
        if nonce not in line:
            continue
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if isinstance(d, dict) and d.get("nonce") == nonce:
            found.append(d)
    return found


def close() -> None:
    global _pool, _gate
    with _lock:
        if _pool is not None:
            _pool.close()
            _pool, _gate = None, None
