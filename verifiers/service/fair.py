"""Fairness between callers and between kinds of work (issue 30).

* ``Lane``: a pool of worker threads for one class of HTTP work. The HTTP routes keep two: ``host``
  (verifiers that grade in this process: think_format, tag_count, …; listing) and ``sandbox`` (anything
  that may wait for a sandbox). Forty /run_code jobs sleeping 20 s used to hold every HTTP worker
  thread, and a think_format call waited behind them; now they hold sandbox-lane threads only.
* ``FairGate``: the sandbox slots, handed out round-robin between callers (``verifiers/service/callers.py``)
  instead of first come, first served. A caller with forty jobs queued gets one slot in turn with
  every other caller that has one waiting, so a flood delays its own jobs, not everyone's.

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
from typing import Any

MAX_WAIT_S = 7 * 24 * 3600.0


class GateSaturated(Exception):
    """Too many jobs are already waiting for a sandbox."""


class _Waiter:
    __slots__ = ("event", "granted")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.granted = False


class FairGate:
    """``slots`` permits, granted round-robin between the callers that wait for one.

    >>> g = FairGate(1)
    >>> g.acquire("a", 0.0), g.acquire("b", 0.0)  # one slot: the second caller would have to wait
    (True, False)
    >>> g.release(); g.depth()
    0
    """

    def __init__(self, slots: int, max_waiters: int = 4096, observe: Callable[[float], None] | None = None):
        self.slots = slots
        self.max_waiters = max_waiters
        self._free = slots
        self._queues: OrderedDict[str, deque[_Waiter]] = OrderedDict()  # callers waiting, by arrival
        self._served: dict[str, int] = {}  # caller -> when it was last given a slot (a counter)
        self._turn = 0
        self._waiting = 0
        self._lock = threading.Lock()
        self._observe = observe

    def depth(self) -> int:
        return self._waiting

    def acquire(self, caller: str, timeout_s: float) -> bool:
        """Take a slot within ``timeout_s``: True when granted (then ``release`` it), False on timeout.
        Raises GateSaturated when ``max_waiters`` jobs already wait."""
        t0 = time.monotonic()
        with self._lock:
            if self._free > 0 and not self._queues:
                self._free -= 1
                self._mark(caller)
                self._seen(0.0)
                return True
            if self._waiting >= self.max_waiters:
                raise GateSaturated(f"{self._waiting} jobs already wait for {self.slots} sandboxes")
            w = _Waiter()
            self._queues.setdefault(caller, deque()).append(w)
            self._waiting += 1
        w.event.wait(min(max(0.0, timeout_s), MAX_WAIT_S))  # a never-ending deadline is inf: Event.wait overflows
        with self._lock:
            if not w.granted:  # timed out: leave the queue
                q = self._queues.get(caller)
                if q is not None:
                    q.remove(w)
                    if not q:
                        del self._queues[caller]
                self._waiting -= 1
                return False
        self._seen(time.monotonic() - t0)
        return True

    def release(self) -> None:
        """Give the slot to the waiting caller served least recently (its oldest job), or back to the free ones."""
        with self._lock:
            if not self._queues:
                self._free += 1
                return
            caller = min(self._queues, key=lambda c: self._served.get(c, -1))  # ties: the earliest to arrive
            q = self._queues[caller]
            w = q.popleft()
            if not q:
                del self._queues[caller]
            self._waiting -= 1
            self._mark(caller)
            w.granted = True
            w.event.set()

    def _mark(self, caller: str) -> None:  # holds _lock
        self._turn += 1
        self._served[caller] = self._turn
        if len(self._served) > 4 * len(self._queues) + 1024:  # forget callers with nothing waiting
            self._served = {c: t for c, t in self._served.items() if c in self._queues}

    def _seen(self, waited_s: float) -> None:
        if self._observe is not None:
            self._observe(waited_s)


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
