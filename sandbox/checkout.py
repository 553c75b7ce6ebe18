"""Sandboxes a caller holds between calls (sessions, sandbox/session.py): taken out of the pool, never handed back.

``Checkout`` is a part of ``SandboxPool`` (sandbox/pool.py), kept apart because it is one thing: a held
sandbox leaves the pool's count at once (a fresh one is started in its place, so grading keeps its warm
sandboxes), is destroyed by ``discard`` (a sandbox that held a session's state is never reused) and by the
pool's ``close`` (it stays in ``_held`` until then, so a service that stops leaves none).
"""

from __future__ import annotations

import threading

from sandbox.backend import Backend, SandboxError


class Checkout:
    """The held sandboxes of a ``SandboxPool``: uses its lock, queues, lanes and replacement threads."""

    def checkout(self, lane: str = "", wait_s: float | None = None) -> Backend:
        """Take an idle sandbox of ``lane`` (the pool's own where it has no such lane) out of the pool for
        a caller to hold between calls (a session, sandbox/session.py); a fresh one takes its place at
        once. Give it back with ``discard``: it is destroyed, never handed out again. ``close`` destroys
        held sandboxes too."""
        lane = lane if lane in self._queues else ""
        self.start_lane(lane)
        c = self._acquire(self.cfg.max_wait_s if wait_s is None else wait_s, lane)
        with self._lock:
            self._all.discard(c)
            self._lane.pop(c, None)
            if self._closed:
                threading.Thread(target=c.destroy, daemon=True).start()
                raise SandboxError("the sandbox pool is shut down")
            self._held.add(c)
            t = threading.Thread(target=self._replacement, args=(None, lane), daemon=True, name=f"refill-{c.name}")
            self._helpers.add(t)
        t.start()
        return c

    def discard(self, c: Backend) -> None:
        """Destroy a sandbox ``checkout`` gave out (in the background; idempotent)."""
        with self._lock:
            self._held.discard(c)
        threading.Thread(target=c.destroy, daemon=True, name=f"discard-{c.name}").start()

    def held(self) -> int:
        with self._lock:
            return len(self._held)
