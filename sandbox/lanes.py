"""The lanes of a ``SandboxPool`` (sandbox/pool.py): sandboxes whose workers hold other warm state, or sandboxes of
another kind, for the jobs naming them (``Job.lane``), some started on their first job.

``Lanes`` is a part of ``SandboxPool``, kept apart because it is one thing: which lanes there are, how many
sandboxes each keeps, with what configuration, and starting a lazy one (its own sandboxes too, with
``SandboxPool(lazy=True)``) once, in the background, while the jobs that need it wait, each at most until its
own deadline.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from sandbox.backend import PoolSaturated, SandboxConfig, SandboxError


@dataclass(frozen=True)
class Lane:
    """What a lane's workers hold warm, instead of the pool's ``SandboxConfig.preload`` and ``warmup``; or, with
    ``config``, sandboxes of their own kind (another image, size, limits or backend: the toolchains), which
    have slots of their own (``own_slots``) and, with ``lazy``, start on the lane's first job."""

    preload: tuple[str, ...] = ()
    warmup: str = ""
    config: SandboxConfig | None = None  # the lane's whole configuration (preload and warmup then unused)
    lazy: bool = False  # start on the first job naming the lane (a service that never needs it never pays for it)
    missing: str = ""  # what to do when the lane's image is missing (its preflight's error is prefixed with it)


class Lanes:
    """The lanes of a ``SandboxPool``: uses its lock, configurations, started set and helper threads."""

    def _lazy(self, lane: str) -> bool:
        """Whether ``lane``'s sandboxes start on its first job ("": the pool's own)."""
        return self._lanes[lane].lazy if lane else self.lazy

    def _preflight(self, lane: str) -> None:
        try:
            self._classes[lane].preflight(self._cfgs[lane])
        except SandboxError as e:
            hint = self._lanes[lane].missing if lane else ""
            raise SandboxError(f"{hint}: {e}" if hint else str(e)) from None

    def slots(self, lane: str) -> int:
        """How many sandboxes ``lane`` keeps: its size and the pool's burst."""
        return self._cfgs[lane].size + self.burst

    def own_slots(self, lane: str) -> bool:
        """Whether ``lane``'s sandboxes are counted apart from the pool's own (a lane with its own config)."""
        return bool(lane) and lane in self._lanes and self._lanes[lane].config is not None

    def lane_config(self, lane: str) -> SandboxConfig:
        """The configuration ``lane``'s sandboxes run with ("" or an unknown lane: the pool's)."""
        return self._cfgs.get(lane, self.cfg)

    def start_lane(self, lane: str, wait_s: float | None = None) -> None:
        """Start a lazy lane on its first job (its preflight first: a missing image says what to build) and wait
        until it is up, at most ``wait_s`` (None: as long as it takes): past it, PoolSaturated, and the lane goes
        on starting, so a caller's short deadline is answered in time. A start that failed is tried again. A lane
        the pool does not have is its own, as for ``run``."""
        lane = lane if lane in self._cfgs else ""
        if lane in self._started or not self._lazy(lane):
            return
        with self._lane_lock:
            if lane in self._started or self._closed:
                return
            start = self._starting.get(lane)
            if start is None or start[0].is_set():  # the first job, or the one after a failed start
                start = self._starting[lane] = (threading.Event(), [])
                t = threading.Thread(target=self._start_lane, args=(lane, *start), daemon=True, name=f"lane-{lane}")
                with self._lock:
                    self._helpers.add(t)
                t.start()
        done, errors = start
        if not done.wait(wait_s):
            raise PoolSaturated(f"the sandbox lane {lane!r} is still starting (its first job starts it): retry soon")
        if errors:
            raise SandboxError(f"could not start the sandbox lane {lane!r}: {errors[0]}")

    def _start_lane(self, lane: str, done: threading.Event, errors: list) -> None:
        try:
            self._preflight(lane)
            errors.extend(self._fill([lane]))
        except Exception as e:  # noqa: BLE001 - reported to every job waiting for the lane
            errors.append(e)
        finally:
            done.set()
            with self._lock:
                self._helpers.discard(threading.current_thread())

    def lanes(self) -> list[str]:
        """The names of the pool's lanes ("" first: its own sandboxes)."""
        return list(self._queues)
