"""The toolchain lane's door: non-Python code runs in the one sandbox pool's toolchain lane (``LANE``: the
``rlvr-sandbox-langs`` image, built in verifiers/service/wiring.py), through ``VerifierService.run_job`` like
every other job, and this layer in front of it compiles each program once.

Every non-Python submission is one job running ``driver.py`` (``driver_job`` builds it; its answer lines are
read back with ``driver_lines``): the code verifier's stdio and assert modes and SandboxFusion's ``/run_code``
share it. ``Toolchains.run`` is what the service's door calls for a job in ``LANE``: a driver job identical
to one in flight joins it, and a compile step is answered from the artifact cache where it can be
(verifiers/kinds/code/compile_cache.py); every job it sends on goes through the door's ``run`` (the gate, the
pool) like any other. A missing toolchain image is a ``SANDBOX_ERROR`` whose detail says what to build.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

from in_sandbox.jobs import DRIVER
from languages.record import Language
from sandbox.backend import OUTPUT_CAP, Job, Limits, Result
from verifiers.kinds.code import compile_cache, csharp_assert, languages

LANE = "langs"  # the pool's lane for non-Python code (verifiers/service/wiring.py builds it)
DRIVER_JOB = DRIVER.entry  # in_sandbox/code/driver.py, in the image
DRIVER_MARGIN_S = 3.0  # the driver's own start-up and reporting, beyond compile + cases
CASE_START_S = 0.5  # per case: spawning the program


class _Flight:
    __slots__ = ("done", "result", "nonce")

    def __init__(self, nonce: str) -> None:
        self.done = threading.Event()
        self.result: Result | compile_cache.Entry | None = None
        self.nonce = nonce


Run = Callable[[Job], Result]  # the door: VerifierService's gate and pool (verifiers/service/core.py)


class Toolchains:
    """The compile-once layer of one service's toolchain lane: jobs in flight, the artifact cache, counters.

    ``STATS``-like counters in ``stats``: "compiles" (compile steps run in a sandbox), "shared" (jobs that
    joined an identical job in flight), "cached" (compiles answered by the artifact cache), "joined_compile"
    (jobs that waited for a compile in flight and ran on its artifact), "uncached" (compiles whose artifact
    could not be taken)."""

    def __init__(self, image: str, cache_bytes: int = compile_cache.DEFAULT_BYTES, output_cap: int = OUTPUT_CAP):
        self.image = image  # part of every compile key
        self.output_cap = output_cap  # the lane's (the service's --output-cap-bytes): a build job packs within it
        self.cache = compile_cache.ArtifactCache(cache_bytes)
        self.stats: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._flights: dict[str, _Flight] = {}  # identical driver jobs in flight (the whole query but the nonce)
        self._compiling: dict[str, _Flight] = {}  # compiles in flight, by compile-cache key

    def run(self, job: Job, run: Run) -> Result:
        """Run a toolchain job through ``run`` (the door), compiling once per source: a driver job identical to
        one already running (same language, source, compiler flags, inputs and limits; only the nonce
        differs), as a batch of G completions holding the same program makes, joins it instead of compiling
        and running again: it gets that job's result with its own nonce written in (the program never sees
        either nonce). Beyond that, a compile step is answered from the artifact cache where a job with the
        same compile key ran before or is compiling now."""
        q = _query(job)
        if q is None or not q.get("compile"):
            return run(job)
        nonce = q.pop("nonce")
        same = json.dumps([q, job.limits.memory_mb, job.limits.nproc], sort_keys=True)  # each keeps its deadline
        k = hashlib.sha256(same.encode()).hexdigest()
        with self._lock:
            flight = self._flights.get(k)
            leader = flight is None
            if leader:
                flight = self._flights[k] = _Flight(nonce)
        q["nonce"] = nonce
        if not leader:
            if flight.done.wait(_wait_s(job)) and isinstance(flight.result, Result):
                self._count("shared")
                r = flight.result
                return replace(r, stdout=r.stdout.replace(flight.nonce, nonce), id=job.id)
            return self._compiled(job, q, run)  # the first one did not answer in this job's time: on its own
        try:
            flight.result = self._compiled(job, q, run)
            return flight.result
        finally:
            with self._lock:
                self._flights.pop(k, None)
            flight.done.set()

    def _count(self, what: str) -> None:
        with self._lock:
            self.stats[what] += 1

    def _compiled(self, job: Job, q: dict, run: Run) -> Result:
        """A driver job with a compile step, through the artifact cache (with the cache off: as it is)."""
        if self.cache.max_bytes <= 0:
            self._count("compiles")
            return run(job)
        ck = compile_cache.key(q, job, self.image)
        entry = self.cache.get(ck, q["compile_timeout"])
        if entry is not None:
            self._count("cached")
            return self._from_entry(job, q, entry, run)
        with self._lock:
            flight = self._compiling.get(ck)
            leader = flight is None
            if leader:
                flight = self._compiling[ck] = _Flight(q["nonce"])
        if leader:
            try:
                res, flight.result = self._build(job, q, ck, run)
            finally:
                with self._lock:
                    self._compiling.pop(ck, None)
                flight.done.set()
            return res
        flight.done.wait(_wait_s(job))
        entry = (
            flight.result
            if isinstance(flight.result, compile_cache.Entry)
            else self.cache.get(ck, q["compile_timeout"])
        )
        if entry is None or entry.compile["elapsed"] > q["compile_timeout"]:
            self._count("compiles")
            return run(job)  # the compile in flight was not cached, or took longer than this job may
        self._count("joined_compile")
        return self._from_entry(job, q, entry, run)

    def _build(self, job: Job, q: dict, ck: str, run: Run) -> tuple[Result, compile_cache.Entry | None]:
        """The job as the driver runs it, in a build job that also sends back what its compile wrote:
        (its result, the entry cached from it or None). A compile error the same source always gets is
        cached as that result."""
        self._count("compiles")
        nonce = q["nonce"]
        res = run(replace(job, code=compile_cache.BUILD_JOB, stdin=DRIVER.dumps(dict(q, output_cap=self.output_cap))))
        lines = driver_lines(res.stdout, nonce)
        comp = next((d["compile"] for d in lines if "compile" in d), None)
        blob = next((d["artifact"] for d in lines if "artifact" in d), None)
        ended = any("artifact" in d or "uncached" in d for d in lines)
        cut = res.sandbox_error or res.timed_out or res.output_limit_exceeded
        entry = None
        if comp is not None and comp["ok"] and isinstance(blob, str) and not cut:
            try:
                entry = compile_cache.Entry(comp, base64.b64decode(blob), None)
                self.cache.put(ck, entry)
            except ValueError:  # binascii.Error and a path that would leave the scratch directory
                entry = None
        elif comp is not None and compile_cache.cacheable_failure(comp, res):
            self.cache.put(ck, compile_cache.Entry(comp, None, replace(res, id=""), nonce))
        if comp is not None and comp["ok"] and not ended and not cut:  # our part of the job died: as it was
            self._count("compiles")
            return run(job), None
        if entry is None and ended:
            self._count("uncached")
        return replace(res, stdout=compile_cache.rewrite(res.stdout, nonce, compile_cache.as_driver())), entry

    def _from_entry(self, job: Job, q: dict, entry: compile_cache.Entry, run: Run) -> Result:
        """A job's result from another job's compile (its compile line says ``cached``): that compile error
        as it was, or a run job on its artifact."""
        nonce = q["nonce"]
        if entry.failed is not None:
            r = entry.failed
            return replace(r, stdout=r.stdout.replace(entry.nonce, nonce), id=job.id)
        cases_s = len(q["inputs"]) * (q["case_timeout"] + CASE_START_S) + DRIVER_MARGIN_S
        run_q = DRIVER.dumps(dict(q, artifact=base64.b64encode(entry.artifact or b"").decode()))
        res = run(replace(job, code=compile_cache.RUN_JOB, stdin=run_q, timeout_s=min(job.timeout_s, cases_s)))
        if not (res.sandbox_error or res.timed_out or driver_lines(res.stdout, nonce)):  # it could not unpack
            self._count("compiles")
            return run(job)
        comp = dict(entry.compile, cached=True)
        return replace(
            res,
            stdout=compile_cache.rewrite(res.stdout, nonce, lambda d: dict(d, compile=comp) if "compile" in d else d),
        )


def _wait_s(job: Job) -> float:
    return max(0.0, job.deadline.remaining() if job.deadline is not None else job.timeout_s + DRIVER_MARGIN_S)


def _query(job: Job) -> dict | None:
    """The driver query a job carries (None: not a driver job); a driver job whose payload does not match its shape
    (in_sandbox/jobs.py ``DRIVER``) raises PayloadError here, before a sandbox is used."""
    return DRIVER.loads(job.stdin) if job.code == DRIVER_JOB else None


def driver_job(
    lang: Language,
    code: str,
    inputs: list[str],
    *,
    case_timeout_s: float,
    compile_timeout_s: float,
    stop_on_error: bool = True,
    run_as_mb: int | None = None,
    blobs: dict[str, str] | None = None,
    job_id: str = "",
    output_cap: int = OUTPUT_CAP,
) -> tuple[Job, str]:
    """(the job in the toolchain lane, its nonce) that compiles ``code`` once and runs it on each input
    (driver.py). ``blobs``: relative path → base64, written into the job's directory first. ``output_cap``: the
    cap the lane runs it under (``Context.output_cap``). Without a deadline: the caller may set ``job.deadline``
    (the job's ``timeout_s`` is what the driver needs)."""
    compile_s = compile_timeout_s if lang.compile else 0.0
    nonce = secrets.token_hex(16)
    q = {
        "nonce": nonce,
        "files": {lang.source: languages.source_text(lang, code)},
        "blobs": {**csharp_assert.files(lang.name), **(blobs or {})},
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
        "output_budget": max(0, (output_cap - 8192 - 2600 * len(inputs)) * 3 // 4),
        "stop_on_error": stop_on_error,
    }
    need = compile_s + len(inputs) * (case_timeout_s + CASE_START_S) + DRIVER_MARGIN_S
    limits = Limits(memory_mb=languages.COMPILE_AS_MB, nproc=languages.COMPILE_NPROC, fsize_mb=64)
    return Job(code=DRIVER_JOB, stdin=DRIVER.dumps(q), timeout_s=need, limits=limits, id=job_id, lane=LANE), nonce


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
