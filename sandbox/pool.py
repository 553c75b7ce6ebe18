"""A warm pool of hardened sandboxes, each running ``worker.py`` (one job at a time).

The pool is backend-agnostic: it starts ``SandboxConfig.size`` sandboxes of the backend named by
``SandboxConfig.backend`` (a key of ``BACKENDS``, the backend table: sandbox/backends/table.py), hands each job to an idle one, replaces a sandbox that
died (a watchdog finds idle ones; a busy one's job returns ``sandbox_error``), and applies backpressure.

``"docker"`` (the default, and the one to use for training): sandbox/backends/docker.py, a hardened container
per sandbox. ``"bwrap"`` (machines without Docker; weaker, see sandbox/backends/bwrap.py and docs/sandbox.md):
the same worker as PID 1 of a bubblewrap sandbox. The contract both implement is sandbox/backend.py;
the frame channel they talk over is sandbox/backends/framing.py.

**Lanes**: sandboxes whose workers hold different warm state. A worker forks every job from itself, and a
fork (and the child's exit) costs in proportion to the worker's memory (docs/sandbox.md has the figures), so
a worker holding sympy forks its jobs slower than a bare one. So a pool may keep, beside its
own sandboxes, lanes of sandboxes warmed with less (``Lane``: other preloads, another warm-up); a job
naming a lane (``Job.lane``) runs on one of that lane's sandboxes where the pool has the lane, else on
the pool's own. Each lane has the pool's size and burst; the watchdog, replacement and close treat
every sandbox alike. A lane may also be sandboxes of another kind (``Lane.config``: the toolchain image,
its size and limits, started on its first job with ``lazy``): the pool is then the only door into every
sandbox the service runs, and the lane's slots are counted apart (``own_slots``).

What is not covered by either: kernel exploits (sandboxes share the host kernel; use gVisor's runsc
as the Docker runtime, ``SandboxConfig.runtime``, where that matters), side channels between
sandboxes, and a job reading its own program (grading that hides tests from the candidate must not
put them in the same process).

The types (``Job``, ``Limits``, ``Result``, ``SandboxConfig``, the errors) live in sandbox/backend.py;
callers import them from there. The lanes: sandbox/lanes.py. Sandboxes a caller holds between calls (sessions):
sandbox/checkout.py.
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
import time
import weakref
from dataclasses import replace

from sandbox.backend import (
    MAX_OUTPUT_CAP,
    Backend,
    Job,
    NoAnswer,
    PoolSaturated,
    Result,
    SandboxConfig,
    SandboxError,
)
from sandbox.backends.table import backend_entry
from sandbox.checkout import Checkout
from sandbox.deadline import Deadline
from sandbox.lanes import Lane, Lanes

log = logging.getLogger(__name__)

WATCH_S = 0.5  # how often the watchdog looks for sandboxes that died while idle
MIN_RUN_S = 0.01  # a job granted less than this after waiting for a sandbox is refused (PoolSaturated)
MAX_BACKOFF_S = 5.0  # longest wait between attempts to start a replacement (the engine may be restarting)


# -- the pool -----------------------------------------------------------------------------------
_live_pools: weakref.WeakSet[SandboxPool] = weakref.WeakSet()


@atexit.register
def _close_live_pools() -> None:  # an interpreter exit without close() still removes the sandboxes
    for pool in list(_live_pools):
        pool.close()


class SandboxPool(Lanes, Checkout):
    """Thread-safe: ``run`` may be called from many threads; each sandbox runs one job at a time."""

    def __init__(
        self,
        config: SandboxConfig | None = None,
        burst: int = 0,
        lanes: dict[str, Lane] | None = None,
        lazy: bool = False,
    ):
        """``burst``: sandboxes kept warm beyond ``config.size``, for a gate that lends them only to a
        caller holding none while others hold every ordinary one (verifiers/service/fair.py, ``FairGate``);
        the pool itself hands any idle sandbox to any job, so without such a gate it is that much larger.
        ``lanes``: name → ``Lane``, sandboxes warmed otherwise for the jobs naming that lane (module docstring).
        ``lazy``: the pool's own sandboxes, like a lazy lane's, start on their first job."""
        self.cfg = config or SandboxConfig()
        if burst < 0:
            raise SandboxError(f"burst sandboxes: {burst}; choose 0 or more")
        self.burst = burst
        self.lazy = lazy
        entry = backend_entry(self.cfg.backend)
        self._cls = entry.load()
        if not 0 < self.cfg.output_bytes <= MAX_OUTPUT_CAP:
            raise SandboxError(f"output cap {self.cfg.output_bytes} bytes: choose 1 to {MAX_OUTPUT_CAP} bytes")
        if not self.cfg.image and entry.image:
            from sandbox.image.python import image_tag

            self.cfg.image = image_tag()
        self._idle: queue.Queue[Backend] = queue.Queue()  # the pool's own sandboxes (lane "")
        self._cfgs = {"": self.cfg}
        self._classes = {"": self._cls}
        self._queues = {"": self._idle}
        self._lanes = dict(lanes or {})
        self._started: set[str] = set()  # lanes whose sandboxes were started (a lazy one: on its first job)
        self._lane_lock = threading.Lock()  # one lazy lane starts once
        self._starting: dict[str, tuple[threading.Event, list]] = {}  # lazy lanes starting: (done, errors)
        for name, lane in self._lanes.items():
            if not name or not isinstance(lane, Lane):
                raise SandboxError(f"lane {name!r}: name it (not '') and describe it with sandbox.lanes.Lane")
            self._cfgs[name] = lane.config or replace(self.cfg, preload=tuple(lane.preload), warmup=lane.warmup)
            self._classes[name] = backend_entry(self._cfgs[name].backend).load() if lane.config else self._cls
            self._queues[name] = queue.Queue()
        self._lane: dict[Backend, str] = {}  # every live sandbox's lane
        self._all: set[Backend] = set()
        self._held: set[Backend] = set()  # checked out (sessions: sandbox/session.py), destroyed at close
        self._lock = threading.Lock()
        self._helpers: set[threading.Thread] = set()
        self._waiters = 0
        self._closed = False
        self._closing = threading.Event()  # wakes replacement threads that are backing off
        self.startup_s = 0.0
        self.replaced = 0
        self._watchdog: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------------------
    def start(self) -> SandboxPool:
        t0 = time.monotonic()
        self._cls.preflight(self.cfg)
        eager = [n for n in self._cfgs if not self._lazy(n)]
        for n in eager:
            if n and self._lanes[n].config is not None:
                self._preflight(n)
        errors = self._fill(eager)
        if errors:
            self.close()
            raise SandboxError(f"could not start the sandbox pool: {errors[0]}")
        _live_pools.add(self)
        self.startup_s = time.monotonic() - t0
        self._watchdog = threading.Thread(target=self._watch, daemon=True, name="sandbox-watchdog")
        self._watchdog.start()
        return self

    def _fill(self, lanes: list[str]) -> list[Exception]:
        """Start every sandbox of ``lanes`` side by side; the errors of those that failed."""
        errors: list[Exception] = []
        threads = [threading.Thread(target=self._add, args=(n, errors)) for n in lanes for _ in range(self.slots(n))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        with self._lock:
            self._started.update(lanes)
        return errors

    def _watch(self) -> None:
        """Replace idle sandboxes that died (killed, OOM, the engine restarted) without waiting for a job
        to find them, so the pool heals, and ``healthy`` tells the truth, while no request comes."""
        while not self._closing.wait(WATCH_S):
            with self._lock:
                sandboxes = list(self._all)
            for c in sandboxes:
                if c.alive():
                    continue
                idle = self._queues[self._lane.get(c, "")]
                with idle.mutex:  # only an idle one: a busy one's job sees the death and replaces it
                    try:
                        idle.queue.remove(c)
                    except ValueError:
                        continue
                self._replace(c, "found dead while idle")

    def _add(self, lane: str = "", errors: list[Exception] | None = None) -> bool:
        try:
            c = self._classes[lane](self._cfgs[lane])
        except Exception as e:  # noqa: BLE001 - reported to the caller
            log.error("sandbox failed to start: %s", e)
            if errors is not None:
                errors.append(e)
            return False
        with self._lock:
            if self._closed:
                closed = True
            else:
                closed = False
                self._all.add(c)
                self._lane[c] = lane
        if closed:
            c.destroy()
            return True
        self._queues[lane].put(c)
        return True

    def close(self) -> None:
        """Remove every sandbox (idle or busy: a busy job returns ``sandbox_error``). Idempotent."""
        with self._lock:
            self._closed = True
            self._closing.set()
            sandboxes = list(self._all | self._held)
            self._all.clear()
            self._held.clear()
            self._lane.clear()
            helpers = list(self._helpers)
        _live_pools.discard(self)
        stoppers = [threading.Thread(target=c.destroy) for c in sandboxes]  # one engine call each: overlap them
        for t in stoppers:
            t.start()
        for t in stoppers:
            t.join()
        for t in helpers:
            t.join(timeout=30)
        if self.startup_s and not _live_pools:  # another pool of this process may own leftovers
            for cls in {self._classes[n] for n in self._started} or {self._cls}:
                cls.remove_stale(mine=True)

    def __enter__(self) -> SandboxPool:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def size(self) -> int:
        return self.cfg.size

    @property
    def ready(self) -> bool:
        with self._lock:
            return not self._closed and len(self._all) == sum(self.slots(n) for n in self._started)

    @property
    def healthy(self) -> bool:
        """At least one sandbox is up: jobs can run (False while, e.g., the Docker engine is down)."""
        with self._lock:
            return not self._closed and any(c.alive() for c in self._all)

    def container_names(self) -> list[str]:
        with self._lock:
            return [c.name for c in self._all]

    def stats(self) -> dict:
        with self._lock:
            return {"size": self.cfg.size, "burst": self.burst, "live": len(self._all),
                    "idle": sum(q.qsize() for q in self._queues.values()), "waiters": self._waiters,
                    "replaced": self.replaced}  # fmt: skip

    # -- running ------------------------------------------------------------------------------------
    def run(self, job: Job, wait_s: float | None = None) -> Result:
        """Run one job. Raises PoolSaturated when no sandbox became free in time. Infrastructure failures
        during the job come back as ``Result.sandbox_error`` (and the sandbox is replaced), never as the
        program's fault.

        With ``job.deadline`` (a request's, sandbox/deadline.py) the wait for a sandbox, the program's
        time and the worker's answer all come out of it: the program gets what is left less the worker's
        time to answer (``reserve(grace_s)``), at most ``job.timeout_s``; ``wait_s`` may only shorten the
        wait. Without one the job enters here: it waits up to ``wait_s`` for a
        sandbox (default: the pool's queue limit, ``max_wait_s``; never the program's own time limit, so a
        queue does not eat into it), then runs for ``timeout_s`` and its worker has ``grace_s`` more to answer."""
        lane = job.lane if job.lane in self._queues else ""
        cfg = self._cfgs[lane]
        self.start_lane(lane, None if job.deadline is None else job.deadline.reserve(cfg.grace_s).remaining())
        if job.deadline is None:
            c = self._acquire(cfg.max_wait_s if wait_s is None else wait_s, lane)
            deadline = Deadline.after(job.timeout_s + cfg.grace_s)
        else:
            deadline = job.deadline
            run_by = deadline.reserve(cfg.grace_s)
            c = self._acquire(run_by.remaining() if wait_s is None else min(wait_s, run_by.remaining()), lane)
        time_limit = min(job.timeout_s, deadline.reserve(cfg.grace_s).remaining())
        if time_limit < MIN_RUN_S:  # the wait took what was left: the program never started
            self._queues[lane].put(c)
            raise PoolSaturated(f"no time left to run the job after waiting for a sandbox ({time_limit:.3f} s)")
        request, job = job.deadline is not None, replace(job, timeout_s=time_limit, deadline=deadline)
        try:
            result = c.run(job)
        except NoAnswer as e:
            self._replace(c, str(e))
            if not request:
                return Result(sandbox_error=str(e), id=job.id)
            # A request's deadline came with the program's time over: its worker kept the answer past the
            # request's share (killing, or wiping what the program left: a /tmp full of files takes a
            # moment). Graded as the program not finishing in its time, never as the sandbox's fault, so a
            # program cannot buy an ungraded (masked) verdict by leaving work for the cleanup.
            why = f"no answer by the request's deadline ({e}); the program's {time_limit:.3g} s were over"
            return Result(timed_out=True, stderr=why, time_limit_s=time_limit, id=job.id)
        except (SandboxError, OSError, ValueError) as e:
            self._replace(c, str(e))
            return Result(sandbox_error=str(e), id=job.id)
        except BaseException:  # e.g. KeyboardInterrupt mid-job: the worker's state is unknown
            self._replace(c, "interrupted while running a job")
            raise
        if c.retire:
            self._replace(c, c.retire)
        else:
            self._queues[lane].put(c)
        result.time_limit_s = time_limit
        return result

    def _acquire(self, wait_s: float, lane: str = "") -> Backend:
        with self._lock:
            if self._closed:
                raise SandboxError("the sandbox pool is shut down")
            if self._waiters >= self.cfg.max_waiters:
                raise PoolSaturated(
                    f"sandbox pool saturated: {self._waiters} callers already waiting for {self.size} sandboxes"
                    f" (max_waiters={self.cfg.max_waiters}); send fewer concurrent jobs or raise"
                    " SandboxConfig.size / max_waiters"
                )
            self._waiters += 1
        size = self._cfgs[lane].size
        deadline = time.monotonic() + max(wait_s, 0.0)
        try:
            while True:
                try:
                    c = self._queues[lane].get(timeout=max(deadline - time.monotonic(), 0.001))
                except queue.Empty:
                    live = sum(self._lane.get(x) == lane for x in list(self._all))
                    hint = (
                        "the pool is saturated; retry later, or wait longer (wait_s, SandboxConfig.max_wait_s; a"
                        " server's --max-queue-s) or raise SandboxConfig.size (--pool-size)"
                        if live >= size
                        else f"only {live} of {size} sandboxes are up (replacements failing? see the log)"
                    )
                    raise PoolSaturated(
                        f"no sandbox became free within {wait_s:.1f} s (pool size {size},"
                        f" {self._waiters} callers waiting): {hint}"
                    ) from None
                if c.alive():
                    return c
                self._replace(c, "found dead while idle")  # its job never started: try the next one
                if self._closed:
                    raise SandboxError("the sandbox pool is shut down")
        finally:
            with self._lock:
                self._waiters -= 1

    def _replace(self, c: Backend, why: str) -> None:
        """Destroy ``c`` and start a new sandbox in the background, retrying until it comes up."""
        log.warning("replacing sandbox %s: %s", c.name, why)
        with self._lock:
            self._all.discard(c)
            lane = self._lane.pop(c, "")
            self.replaced += 1
            if self._closed:
                threading.Thread(target=c.destroy, daemon=True).start()
                return
            t = threading.Thread(target=self._replacement, args=(c, lane), daemon=True, name=f"replace-{c.name}")
            self._helpers.add(t)
        t.start()

    def _replacement(self, old: Backend | None, lane: str) -> None:
        try:
            if old is not None:
                old.destroy()
            delay = 0.5
            while not self._closed and not self._add(lane):
                self._closing.wait(delay)
                delay = min(delay * 2, MAX_BACKOFF_S)
        finally:
            with self._lock:
                self._helpers.discard(threading.current_thread())
