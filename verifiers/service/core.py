"""The service as plain Python: validation, timing, caching and batch fan-out around the registry, and
registration (with the checks that need the sandbox or the network). The gRPC layer (server.py) only
converts proto ↔ these objects."""

from __future__ import annotations

import contextvars
import logging
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from in_sandbox import jobs
from sandbox.backend import Job, PoolSaturated, Result, SandboxError
from sandbox.deadline import Deadline
from sandbox.pool import SandboxPool
from verifiers.kinds import table as kinds
from verifiers.kinds.code.toolchains import LANE as TOOLCHAIN_LANE
from verifiers.kinds.code.toolchains import Toolchains
from verifiers.kinds.composite import Composite
from verifiers.kinds.table import NAME_RE, check_name, check_options
from verifiers.service import wiring
from verifiers.service.bounds import ServiceBounds
from verifiers.service.cache import VerdictCache
from verifiers.service.callers import CALLER
from verifiers.service.fair import GateSaturated
from verifiers.service.metrics import ServiceMetrics
from verifiers.service.registry import Registry, build
from verifiers.service.sessions import SessionPolicy, Sessions
from verifiers.shapes.base import BadRequest, Context, ServiceError, Verdict, Verifier
from verifiers.shapes.limits import ServiceLimits
from verifiers.shapes.outcome import Outcome
from verifiers.shapes.request import Request
from verifiers.shapes.signals import parse_enforced

log = logging.getLogger(__name__)

MAX_TIMEOUT_S = ServiceLimits().max_timeout_s  # defaults; a server's own are in VerifierService.limits
MAX_BATCH = ServiceLimits().max_batch
REGISTER_BUDGET_S = 30.0  # registration's checks (dry run, reachability) without a caller's deadline
# the verifiers the running request is (part of): a sandbox job marks them all as needing the sandbox
VIA: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("via", default=())


class VerifierService:
    def __init__(
        self,
        registry: Registry,
        pool: SandboxPool | None,
        *,
        cache_items: int = 50_000,
        limits: ServiceLimits | None = None,
        bounds: ServiceBounds | None = None,
    ):
        self.limits = limits or ServiceLimits()
        self.bounds = bounds or ServiceBounds()
        self.registry = registry
        self.pool = pool
        self.cache = VerdictCache(cache_items, self.bounds.cache_bytes())
        self.metrics = ServiceMetrics()  # counted here, in the core, so every transport is covered
        self.metrics.watch(pool, self.cache)
        self.instance_id = uuid.uuid4().hex  # lets a remote registration notice it points back here
        self.parallelism = pool.size if pool else 1  # Context.parallelism: sandbox jobs that can run at once
        # Math grading jobs are short and the pool's own queue (max_waiters) applies backpressure, so the
        # fan-out is wide: enough callers waiting that every slot's next job coalesces many items.
        width = max(64, 16 * self.parallelism)
        self._fanout = ThreadPoolExecutor(width, thread_name_prefix="verify")
        # sandbox slots handed out round-robin between callers (verifiers/service/fair.py), not first come first
        # served: one gate per group of the pool's slots, built where the pool is (verifiers/service/wiring.py)
        self.gates = (
            {} if pool is None else wiring.build_gates(pool, pool.cfg.max_waiters, self.metrics.observe_queue_wait)
        )
        for group, gate in self.gates.items():
            self.metrics.watch_queue(wiring.QUEUE_CLASS.get(group, group), gate.depth)
        # the toolchain lane's compile-once layer, in front of the door (verifiers/kinds/code/toolchains.py), keyed
        # by the image that lane runs (a pool without the lane refuses toolchain jobs: no image to key by)
        image = pool.lane_config(TOOLCHAIN_LANE).image if TOOLCHAIN_LANE in self.gates else ""
        self.toolchains = Toolchains(image, self.limits.compile_cache_mb << 20, self.limits.output_cap_bytes)
        # sessions: sandboxes of the same pool held between calls, their cells in turns at the pool's own gate
        self.sessions = Sessions(pool, self.gates.get(""), SessionPolicy.from_limits(self.limits))
        self._sandboxed: set[str] = set()  # verifiers seen running sandbox jobs (e.g. through a sub-request)

    def close(self) -> None:
        self._fanout.shutdown(wait=False, cancel_futures=True)
        self.sessions.close_all()

    # -- sandbox access for verifiers ---------------------------------------------------------------
    def run_job(self, job: Job) -> Result:
        """Run ``job`` in the sandbox, as the current caller (``callers.CALLER``: whose turn it waits for): the one
        door every sandbox job of the service goes through, whatever front it came in by and whatever lane it names
        (a toolchain job first meets its compile-once layer, which sends its jobs through the same door)."""
        t0 = time.monotonic()
        self._sandboxed.update(VIA.get())
        shape = jobs.shape_of(job.code)
        if shape is not None and job.lane != TOOLCHAIN_LANE:  # the toolchain layer reads its own (DRIVER)
            shape.loads(job.stdin)  # PayloadError naming the field, before a sandbox is used
        if job.lane == TOOLCHAIN_LANE:
            result = self.toolchains.run(job, self.door)
        else:
            result = self.door(job)
        self.metrics.observe_job(result, time.monotonic() - t0)
        return result

    def needs_sandbox(self, name: str) -> bool:
        """Whether grading with ``name`` may wait for a sandbox (the HTTP routes run it in their sandbox lane).
        Built-ins that declare no sandbox entry grade in this process, until seen running a job (a sub-request)."""
        if name in self._sandboxed:
            return True
        v = self.registry.peek(name)  # no store round trip: this runs on the HTTP event loop
        if v is None:
            return True  # not loaded yet (registered through another replica a moment ago?): the slow lane
        if isinstance(v, Composite):
            return any(self.needs_sandbox(p.verifier) for p in v.parts)
        return getattr(v, "sandbox_entry", None) != ""  # registered kinds (python, remote, model) count as slow

    def door(self, job: Job) -> Result:
        """The door itself: ``job``'s turn at its gate (the pool's own slots or its lane's), then a sandbox of its
        lane; infrastructure failures come back as ``Result.sandbox_error``. ``run_job`` is how verifiers enter."""
        if self.pool is None:
            return Result(sandbox_error="no sandbox pool configured", id=job.id)
        own = bool(job.lane) and job.lane in self.gates  # a lane with slots of its own (wiring.build_gates)
        if job.lane == TOOLCHAIN_LANE and not own:
            return Result(
                sandbox_error="this service's sandbox pool has no toolchain lane (verifiers/service/wiring.py "
                "builds it): non-Python code cannot run here",
                id=job.id,
            )
        gate = self.gates[job.lane if own else ""]
        cfg = self.pool.lane_config(job.lane)
        try:  # a lane starting on its first job (sandbox/lanes.py) holds no turn at the gate while it starts
            self.pool.start_lane(
                job.lane, None if job.deadline is None else job.deadline.reserve(cfg.grace_s).remaining()
            )
        except SandboxError as e:  # still starting at the job's deadline, or failing to start
            return Result(sandbox_error=str(e), id=job.id)
        if job.deadline is None:  # the pool's queue limit (--max-queue-s), as the pool itself would wait
            wait_s = cfg.max_wait_s
        else:
            wait_s = job.deadline.reserve(cfg.grace_s).remaining()
        t0 = time.monotonic()
        try:
            grant = gate.acquire(CALLER.get(), wait_s)  # a Grant, released below (fair.py)
            if not grant:
                what, flag = ("toolchain sandbox", "--langs-pool-size") if own else ("sandbox", "--pool-size")
                return Result(
                    sandbox_error=f"no {what} became free within {wait_s:.1f} s (pool size {cfg.size}, "
                    f"{gate.depth()} jobs waiting): the pool is saturated; retry later, or wait longer "
                    f"(the server's --max-queue-s) or raise {flag}",
                    id=job.id,
                )
        except GateSaturated as e:
            return Result(sandbox_error=f"sandbox pool saturated: {e}", id=job.id)
        try:
            if job.deadline is not None:
                return self.pool.run(job)  # waits for a sandbox at most until the job's (the request's) deadline
            return self.pool.run(job, wait_s=max(0.0, wait_s - (time.monotonic() - t0)))
        except PoolSaturated as e:
            return Result(sandbox_error=str(e), id=job.id)
        except SandboxError as e:
            return Result(sandbox_error=str(e), id=job.id)
        finally:
            gate.release(grant)

    def _start_lane(self, verifier: Verifier, deadline: Deadline | None) -> str:
        """Start the lane ``verifier``'s jobs run in, where it starts on its first request (the math kind's, the
        pool's own for a registered Python verifier), so that its start is not taken from the request's budget.
        A caller's deadline still counts it. Returns what stopped the wait (the lane still starting at the
        caller's deadline, or failing to start), else ""."""
        if isinstance(verifier, Composite):  # its parts grade from its deadline
            for part in verifier.parts:
                inner = self.registry.peek(part.verifier)
                not_up = "" if inner is None or inner is verifier else self._start_lane(inner, deadline)
                if not_up:
                    return not_up
            return ""
        lane = getattr(verifier, "lane", "")  # "": the pool's own sandboxes, which a registered Python verifier uses
        if self.pool is None or not (lane or verifier.kind == "python"):
            return ""
        try:
            self.pool.start_lane(lane, None if deadline is None else deadline.remaining())
        except SandboxError as e:
            return str(e)
        return ""

    # -- grading --------------------------------------------------------------------------------------
    def validate(self, req: Request) -> None:
        if not req.verifier:
            raise BadRequest("field 'verifier' is empty: name a verifier (ListVerifiers shows them)")
        if not NAME_RE.fullmatch(req.verifier):
            raise BadRequest(f"field 'verifier' = {req.verifier[:80]!r} is not a verifier name ([a-z0-9][a-z0-9_.-]*)")
        if req.timeout_s < 0 or req.timeout_s != req.timeout_s:
            raise BadRequest(f"field 'timeout_s' must be >= 0, got {req.timeout_s}")
        if req.timeout_s > self.limits.max_timeout_s:
            raise BadRequest(
                f"field 'timeout_s' must be <= {self.limits.max_timeout_s:g} (the server's "
                f"--max-timeout-s), got {req.timeout_s:g}"
            )
        if len(req.completion) > self.limits.max_completion_chars:
            raise BadRequest(
                f"field 'completion' is {len(req.completion)} characters, over the server's limit of "
                f"{self.limits.max_completion_chars} (--max-completion-chars)"
            )

    def verify(
        self, req: Request, deadline: Deadline | None = None, *, caller: str | None = None, part: bool = False
    ) -> Verdict:
        """Grade one request by ``deadline`` (the caller's, e.g. its gRPC deadline), else by its grading
        budget (``timeout_s``, else the verifier's default) from now: that one deadline is the request's
        from here down to the worker; the budget also bounds the time its programs get (a job's
        ``timeout_s``). ``caller`` (default: ``callers.CALLER``) scopes the cache; ``part``: a sub-request a verifier made
        (its option keys are not checked again). Raises ServiceError for bad requests."""
        caller = CALLER.get() if caller is None else caller
        token, via = CALLER.set(caller), VIA.set((*VIA.get(), req.verifier))
        try:
            verdict = self._verify(req, deadline, caller, part)
        except ServiceError as e:
            self.metrics.observe_error(e.status)
            raise
        finally:
            VIA.reset(via)
            CALLER.reset(token)
        self.metrics.observe_verdict(req.verifier, verdict.outcome.value, verdict.elapsed_s)
        return verdict

    def check_request(self, req: Request) -> Verifier:
        """A caller's request checked before grading (its fields, its option keys against what the verifier
        knows, ``enforce_signals``); returns the verifier. A composite's sub-requests are not re-checked:
        they carry the caller's options, which the composite checked against the union of its parts'."""
        self.validate(req)
        verifier = self.registry.get(req.verifier)
        check_options(verifier, req.options, self.registry.get)
        enforced_signals(req)
        return verifier

    def _verify(self, req: Request, deadline: Deadline | None, caller: str, part: bool) -> Verdict:
        if not part:  # the caller's own request, not a sub-request a verifier made (a composite's part)
            verifier = self.check_request(req)
        else:
            self.validate(req)
            verifier = self.registry.get(req.verifier)
        t0 = time.monotonic()
        version = self.registry.cache_version(verifier)
        key = None if version is None else self.cache.key(req, version, caller)
        hit = None if key is None else self.cache.get(key)
        if hit is not None:
            hit.elapsed_s = time.monotonic() - t0
            return hit
        not_up = self._start_lane(verifier, deadline)
        if not_up:  # ungraded, never cached: the next request finds the lane up
            verdict = Verdict.of(Outcome.SANDBOX_ERROR, not_up)
            verdict.elapsed_s = time.monotonic() - t0
            return verdict
        budget_s = req.timeout_s or verifier.default_timeout_s  # the program's time (verifiers put it in their jobs)
        cut = deadline is not None and deadline.remaining() < budget_s  # the caller's deadline ends it sooner
        deadline = deadline or Deadline.after(budget_s)  # no caller's deadline: the budget is the deadline
        ctx = Context(
            run_job=self.run_job,
            lookup=self.registry.get,
            deadline=deadline,
            verify=lambda sub: self.verify(sub, deadline, caller=caller, part=True),  # spends from the same deadline
            parallelism=self.parallelism,
            output_cap=self.limits.output_cap_bytes,
        )
        try:
            verdict = verifier.verify(req, ctx)
        except ServiceError:
            raise
        except Exception as e:  # a verifier bug is an infrastructure failure, not the model's
            log.exception("verifier %s failed", req.verifier)
            verdict = Verdict.of(Outcome.SANDBOX_ERROR, f"verifier {req.verifier} failed: {type(e).__name__}: {e}")
        verdict.reward = min(1.0, max(0.0, float(verdict.reward)))
        enforce(verdict, enforced_signals(req))
        cut_details(verdict, self.bounds.max_detail_chars)
        verdict.elapsed_s = time.monotonic() - t0
        # a TIMEOUT under a caller's deadline shorter than the budget says nothing about the next call's
        if key is not None and not (verdict.outcome is Outcome.TIMEOUT and cut):
            self.cache.put(key, verdict)
        return verdict

    def verify_batch(
        self, reqs: list[Request], deadline: Deadline | None = None, *, caller: str | None = None
    ) -> list[Verdict]:
        """Fan out across the pool (items that need no sandbox are graded on this thread); results in request
        order; one item's failure never fails the batch."""
        caller = CALLER.get() if caller is None else caller
        self.metrics.observe_batch(len(reqs))
        if len(reqs) > self.limits.max_batch:
            self.metrics.observe_error(BadRequest.status)
            raise BadRequest(
                f"batch of {len(reqs)} items is over the server's limit of {self.limits.max_batch} "
                "(--max-batch); split it"
            )
        for i, r in enumerate(reqs):  # a malformed item fails the call up front, naming the item
            try:
                self.check_request(r)
                check = getattr(self.registry.get(r.verifier), "check", None)  # a verifier's own request checks
                if check is not None:
                    check(r)
            except ServiceError as e:
                self.metrics.observe_error(e.status)
                raise type(e)(f"items[{i}]: {e}") from None

        def one(r: Request) -> Verdict:
            try:
                return self.verify(r, deadline, caller=caller)
            except ServiceError as e:  # e.g. unregistered between validation and grading
                return Verdict.of(Outcome.SANDBOX_ERROR, f"{e.status}: {e}")

        # items graded in this process (think_format, …) run here, while the fan-out's threads, which may all
        # be waiting for sandboxes, take only those that may need one: a host item never queues behind them
        sandboxed = {n: self.needs_sandbox(n) for n in {r.verifier for r in reqs}}
        futures = {i: self._fanout.submit(one, r) for i, r in enumerate(reqs) if sandboxed[r.verifier]}
        here = {i: one(r) for i, r in enumerate(reqs) if i not in futures}
        return [futures[i].result() if i in futures else here[i] for i in range(len(reqs))]

    # -- registration ---------------------------------------------------------------------------------
    def register(
        self,
        name: str,
        kind: str,
        description: str,
        spec: dict,
        *,
        replace: bool = False,
        deadline: Deadline | None = None,
    ) -> Verifier:
        """Check a new verifier (python: a dry run in the sandbox; remote: reachable; composite: its
        components exist, no cycle), then persist it, by the earlier of ``deadline`` (the caller's) and
        ``REGISTER_BUDGET_S``. Raises ServiceError saying what to fix."""
        deadline = Deadline.after(REGISTER_BUDGET_S).earlier(deadline)
        v = build(name, kind, description, spec)
        self.registry.check_writable(name, replace)  # fail fast, before the slow checks
        kinds.kind(kind).check(self, name, v, deadline)  # the sandbox dry run, reachability, the model loads …
        return self.registry.add(name, kind, description, spec, replace=replace)

    def get_verifier(self, name: str) -> Verifier:
        check_name(name)
        return self.registry.get(name)

    def unregister(self, name: str) -> None:
        self.registry.remove(name)


def enforced_signals(req: Request) -> set[str]:
    """The exploit signals the request's ``enforce_signals`` option names; BadRequest for an unknown name."""
    raw = req.options.get("enforce_signals", "")
    if not raw:
        return set()
    try:
        return parse_enforced(raw)
    except ValueError as e:
        raise BadRequest(f"{req.verifier}: options['enforce_signals']: {e} (or 'all')") from None


def enforce(v: Verdict, enforced: set[str]) -> None:
    """A paid verdict carrying an enforced signal becomes INCORRECT with reward 0, its detail naming the signal."""
    hit = sorted(enforced.intersection(v.signals))
    if hit and v.reward > 0:
        v.detail = (
            f"exploit signal {', '.join(hit)} enforced (option enforce_signals): reward {v.reward:g} "
            f"({v.outcome.value}) withheld; {v.detail}"
        )
        v.reward, v.outcome = 0.0, Outcome.INCORRECT


def cut(text: str, limit: int) -> str:
    """``text`` up to ``limit`` characters, saying how much was cut (--max-detail-chars)."""
    if len(text) <= limit:
        return text
    return text[:limit] + f" … [{len(text) - limit} more characters cut: the server's --max-detail-chars]"


def cut_details(v: Verdict, limit: int) -> None:
    """Bound what a verdict carries back and into the cache: its detail and each case's."""
    v.detail = cut(v.detail, limit)
    for c in v.cases:
        if len(c.detail) > limit:
            c.detail = cut(c.detail, limit)
