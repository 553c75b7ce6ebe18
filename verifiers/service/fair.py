"""Fairness between callers and between kinds of work.

* ``Lane``: a pool of worker threads for one class of HTTP work. The HTTP routes keep two: ``host``
  (verifiers that grade in this process: think_format, tag_count, …; listing) and ``sandbox`` (anything
  that may wait for a sandbox). Long /run_code jobs no longer hold every HTTP
  worker thread in front of a think_format call: they hold sandbox-lane threads only.
* ``FairGate``: the sandbox slots, handed out round-robin between callers (``verifiers/service/callers.py``)
  instead of first come, first served. A caller with forty jobs queued gets one slot in turn with
  every other caller that has one waiting, so a flood delays its own jobs, not everyone's.
* The burst sandbox: round-robin turns only come when a slot frees, so a caller that started
  long programs on every sandbox made another caller's short job wait for one of them to end. The server's pool keeps ``BURST_SANDBOXES`` (1) warm sandbox beyond ``--pool-size``
  (``SandboxPool(burst=)``), lent only to a caller that holds no slot, so that caller's job runs without
  waiting for anyone's program to end. Bounded: a caller holding a slot (burst or not) waits its turn,
  so the burst sandbox runs at most one job at a time. A lone caller keeps the whole ``--pool-size``;
  the cost is one more idle sandbox (its memory, not CPU). The pool's toolchain lane (non-Python code) has a
  gate of its own with its own burst sandbox; verifiers/service/wiring.py builds every gate with the pool.

* ``RpcShare``: gRPC runs each admitted RPC on its own thread, at most ``--max-concurrent-rpcs``
  of them. Calls that may wait for a sandbox hold at most ``sandbox_limit`` of those threads (the server
  keeps ``--host-rpc-share`` of them, a quarter by default, for the rest); one more is refused at once
  (``RESOURCE_EXHAUSTED``), so a flood of sandbox calls can never make a think_format call wait for a
  thread or be refused for want of one. The total bound is unchanged.

Both report their queue depth and each item's wait (``verifiers/service/metrics.py``: ``rlvr_queue_depth``,
``rlvr_queue_wait_seconds`` by class).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from sandbox.backend import SandboxError
from verifiers.shapes.base import ServiceError

MAX_WAIT_S = 7 * 24 * 3600.0
BURST_SANDBOXES = 1  # sandboxes the server's pool keeps beyond --pool-size, for callers holding none


class GateSaturated(SandboxError):
    """Too many jobs are already waiting for a sandbox."""


class Grant:
    """A slot a caller was given (truthy); hand it back to ``FairGate.release``."""

    __slots__ = ("caller", "burst")

    def __init__(self, caller: str, burst: bool) -> None:
        self.caller = caller
        self.burst = burst

    def __repr__(self) -> str:
        return f"Grant({self.caller!r}, burst={self.burst})"


class _Waiter:
    __slots__ = ("event", "grant")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.grant: Grant | None = None


class FairGate:
    """``slots`` permits, granted round-robin between the callers that wait for one, and ``burst`` more
    that only a caller holding no slot may take (the pool keeps that many sandboxes beyond ``slots``:
    ``SandboxPool(burst=)``). So no caller holds every sandbox while another waits: one that started
    long programs on every slot does not make another caller's short job wait for one of them to end.

    >>> g = FairGate(1)
    >>> a = g.acquire("a", 0.0); a, g.acquire("b", 0.0)  # one slot: the second caller would have to wait
    (Grant('a', burst=False), False)
    >>> g.release(a); g.depth()
    0
    >>> g = FairGate(1, burst=1)
    >>> g.acquire("a", 0.0), g.acquire("a", 0.0), g.acquire("b", 0.0)  # b holds none: the burst sandbox
    (Grant('a', burst=False), False, Grant('b', burst=True))
    """

    def __init__(
        self, slots: int, max_waiters: int = 4096, observe: Callable[[float], None] | None = None, burst: int = 0
    ):
        self.slots = slots
        self.burst = burst
        self.max_waiters = max_waiters
        self._free = slots
        self._burst_free = burst
        self._held: dict[str, int] = {}  # caller -> slots it holds (burst included)
        self._queues: OrderedDict[str, deque[_Waiter]] = OrderedDict()  # callers waiting, by arrival
        self._served: dict[str, int] = {}  # caller -> when it was last given a slot (a counter)
        self._turn = 0
        self._waiting = 0
        self._lock = threading.Lock()
        self._observe = observe

    def depth(self) -> int:
        return self._waiting

    def held(self, caller: str) -> int:
        """Slots ``caller`` holds now."""
        with self._lock:
            return self._held.get(caller, 0)

    def acquire(self, caller: str, timeout_s: float) -> Grant | bool:
        """Take a slot within ``timeout_s``: a ``Grant`` (truthy; ``release`` it), False on timeout.
        Raises GateSaturated when ``max_waiters`` jobs already wait."""
        t0 = time.monotonic()
        with self._lock:
            if self._free > 0 and not self._queues:
                self._free -= 1
                return self._give(caller, False, 0.0)
            if self._burst_free > 0 and not self._held.get(caller):
                self._burst_free -= 1
                return self._give(caller, True, 0.0)
            if self._waiting >= self.max_waiters:
                raise GateSaturated(f"{self._waiting} jobs already wait for {self.slots} sandboxes")
            w = _Waiter()
            self._queues.setdefault(caller, deque()).append(w)
            self._waiting += 1
        w.event.wait(min(max(0.0, timeout_s), MAX_WAIT_S))  # a never-ending deadline is inf: Event.wait overflows
        with self._lock:
            if w.grant is None:  # timed out: leave the queue
                self._leave(caller, w)
                return False
        self._seen(time.monotonic() - t0)
        return w.grant

    def release(self, grant: Grant | None = None) -> None:
        """Hand ``grant`` back: an ordinary slot goes to the waiting caller served least recently (its
        oldest job), a burst one to the least recently served waiting caller that holds none; else it is
        free again. (Without ``grant``: an ordinary slot of no known caller.)"""
        with self._lock:
            if grant is not None:
                left = self._held.get(grant.caller, 0) - 1
                if left > 0:
                    self._held[grant.caller] = left
                else:
                    self._held.pop(grant.caller, None)
            if grant is not None and grant.burst:
                self._burst_free += 1
            else:
                self._free += 1
            self._dispatch()

    def _dispatch(self) -> None:  # holds _lock
        while self._free > 0 and self._queues:
            self._free -= 1
            self._wake(min(self._queues, key=lambda c: self._served.get(c, -1)), False)  # ties: the earliest
        while self._burst_free > 0:
            idle = [c for c in self._queues if not self._held.get(c)]
            if not idle:
                return
            self._burst_free -= 1
            self._wake(min(idle, key=lambda c: self._served.get(c, -1)), True)

    def _wake(self, caller: str, burst: bool) -> None:  # holds _lock
        q = self._queues[caller]
        w = q.popleft()
        if not q:
            del self._queues[caller]
        self._waiting -= 1
        w.grant = self._give(caller, burst, None)
        w.event.set()

    def _leave(self, caller: str, w: _Waiter) -> None:  # holds _lock
        q = self._queues.get(caller)
        if q is not None:
            q.remove(w)
            if not q:
                del self._queues[caller]
        self._waiting -= 1

    def _give(self, caller: str, burst: bool, waited_s: float | None) -> Grant:  # holds _lock
        self._held[caller] = self._held.get(caller, 0) + 1
        self._turn += 1
        self._served[caller] = self._turn
        if len(self._served) > 4 * len(self._queues) + 1024:  # forget callers with nothing waiting or held
            self._served = {c: t for c, t in self._served.items() if c in self._queues or c in self._held}
        if waited_s is not None:
            self._seen(waited_s)
        return Grant(caller, burst)

    def _seen(self, waited_s: float) -> None:
        if self._observe is not None:
            self._observe(waited_s)


class RpcsExhausted(ServiceError):
    """Every RPC slot that sandbox calls may hold is held; this call is refused at once."""

    status = "RESOURCE_EXHAUSTED"


class RpcShare:
    """At most ``sandbox_limit`` RPCs in progress that may wait for a sandbox; the others are not counted.

    >>> share = RpcShare(1)
    >>> with share.hold(True), share.hold(False):  # the host call is not counted
    ...     share.sandbox_calls()
    1
    >>> with share.hold(True), share.hold(True):  # doctest: +ELLIPSIS
    ...     pass
    Traceback (most recent call last):
    ...
    verifiers.service.fair.RpcsExhausted: 1 calls that may wait for a sandbox are in progress...
    """

    def __init__(self, sandbox_limit: int):
        self.sandbox_limit = sandbox_limit
        self._n = 0
        self._lock = threading.Lock()

    def sandbox_calls(self) -> int:
        return self._n

    @contextmanager
    def hold(self, sandbox: bool):
        if not sandbox:
            yield
            return
        with self._lock:
            if self._n >= self.sandbox_limit:
                raise RpcsExhausted(
                    f"{self._n} calls that may wait for a sandbox are in progress, the most this server takes at "
                    "once (--max-concurrent-rpcs less its --host-rpc-share kept for calls graded without one): "
                    "retry later, or raise --max-concurrent-rpcs"
                )
            self._n += 1
        try:
            yield
        finally:
            with self._lock:
                self._n -= 1


class Lane:
    """Worker threads for one class of blocking HTTP work, with its queue depth and wait measured."""

    def __init__(self, name: str, workers: int, observe: Callable[[str, float], None] | None = None):
        self.name = name
        self.executor = ThreadPoolExecutor(workers, thread_name_prefix=f"http-{name}")
        self._pending = 0
        self._lock = threading.Lock()
        self._observe = observe

    def depth(self) -> int:
        """Requests given to this lane that no thread has started yet."""
        return self._pending

    async def run(self, fn: Callable[[], Any]) -> Any:
        t0 = time.monotonic()
        with self._lock:
            self._pending += 1

        def started() -> Any:
            with self._lock:
                self._pending -= 1
            if self._observe is not None:
                self._observe(self.name, time.monotonic() - t0)
            return fn()

        return await asyncio.get_running_loop().run_in_executor(self.executor, started)

    def shutdown(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)
