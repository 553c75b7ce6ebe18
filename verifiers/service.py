"""The service as plain Python: validation, timing, caching and batch fan-out around the registry.
The gRPC layer (server.py) only converts proto ↔ these objects."""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor

from sandbox.pool import Job, PoolSaturated, Result, SandboxError, SandboxPool
from verifiers.base import BadRequest, Context, Outcome, Request, ServiceError, Verdict
from verifiers.cache import VerdictCache
from verifiers.registry import Registry

log = logging.getLogger(__name__)

MAX_TIMEOUT_S = 120.0
MAX_BATCH = 8192


class VerifierService:
    def __init__(self, registry: Registry, pool: SandboxPool | None, *, cache_items: int = 50_000):
        self.registry = registry
        self.pool = pool
        self.cache = VerdictCache(cache_items)
        width = 4 * (pool.size if pool else 2)
        self._fanout = ThreadPoolExecutor(width, thread_name_prefix="verify")

    def close(self) -> None:
        self._fanout.shutdown(wait=False, cancel_futures=True)

    # -- sandbox access for verifiers ---------------------------------------------------------------
    def run_job(self, job: Job) -> Result:
        if self.pool is None:
            return Result(sandbox_error="no sandbox pool configured", id=job.id)
        try:
            return self.pool.run(job, wait_s=max(job.timeout_s, 30.0))
        except PoolSaturated as e:
            return Result(sandbox_error=str(e), id=job.id)
        except SandboxError as e:
            return Result(sandbox_error=str(e), id=job.id)

    # -- grading --------------------------------------------------------------------------------------
    @staticmethod
    def validate(req: Request) -> None:
        if not req.verifier:
            raise BadRequest("field 'verifier' is empty: name a verifier (ListVerifiers shows them)")
        if req.timeout_s < 0 or req.timeout_s != req.timeout_s:
            raise BadRequest(f"field 'timeout_s' must be >= 0, got {req.timeout_s}")
        if req.timeout_s > MAX_TIMEOUT_S:
            raise BadRequest(f"field 'timeout_s' must be <= {MAX_TIMEOUT_S:g}, got {req.timeout_s:g}")

    def verify(self, req: Request, deadline: float | None = None) -> Verdict:
        """Grade one request. Raises ServiceError for bad requests (unknown verifier, bad fields)."""
        self.validate(req)
        verifier = self.registry.get(req.verifier)
        t0 = time.monotonic()
        key = self.cache.key(req, getattr(verifier, "version", 1))
        hit = self.cache.get(key)
        if hit is not None:
            hit.elapsed_s = time.monotonic() - t0
            return hit
        budget = req.timeout_s or verifier.default_timeout_s
        ctx = Context(
            run_job=self.run_job,
            lookup=self.registry.get,
            deadline=min(deadline or float("inf"), t0 + budget + 5.0),
            verify=lambda sub: self.verify(sub, deadline),
        )
        try:
            verdict = verifier.verify(req, ctx)
        except ServiceError:
            raise
        except Exception as e:  # a verifier bug is an infrastructure failure, not the model's
            log.exception("verifier %s failed", req.verifier)
            verdict = Verdict.of(Outcome.SANDBOX_ERROR, f"verifier {req.verifier} failed: {type(e).__name__}: {e}")
        verdict.reward = min(1.0, max(0.0, float(verdict.reward)))
        verdict.elapsed_s = time.monotonic() - t0
        self.cache.put(key, verdict)
        return verdict

    def verify_batch(self, reqs: list[Request], deadline: float | None = None) -> list[Verdict]:
        """Fan out across the pool; results in request order; one item's failure never fails the batch."""
        if len(reqs) > MAX_BATCH:
            raise BadRequest(f"batch of {len(reqs)} items is over the limit of {MAX_BATCH}; split it")
        for i, r in enumerate(reqs):  # a malformed item fails the call up front, naming the item
            try:
                self.validate(r)
                self.registry.get(r.verifier)
            except ServiceError as e:
                raise type(e)(f"items[{i}]: {e}") from None

        def one(r: Request) -> Verdict:
            try:
                return self.verify(r, deadline)
            except ServiceError as e:  # e.g. unregistered between validation and grading
                return Verdict.of(Outcome.SANDBOX_ERROR, f"{e.status}: {e}")

        return list(self._fanout.map(one, reqs))
