"""One deadline per request: an absolute ``time.monotonic()`` instant, set once where the request enters
and passed down; each layer spends from what is left instead of adding its own slack.

Where it is set: the gRPC handler (verifiers/fronts/server.py) takes the client's deadline, keeping back a
little to send the reply; without one, the service (verifiers/service/core.py) sets it at the request's
grading budget (``timeout_s``, else the verifier's default) from now. The budget also bounds what each
program may run (a job's ``timeout_s``). A job given straight to the pool, with no deadline, enters
there: its own timeout plus the pool's grace (sandbox/pool.py).

How a layer spends: ``within(s)`` is a tighter bound of its own (a per-case limit); ``reserve(s)`` is
the deadline an inner layer must meet so this one keeps time to finish (the pool keeps time for the
worker to answer after killing the program; the server, for the reply). What a layer keeps is capped
by a share of what is left, so a short budget still leaves most of it to the program.

The worker (in_sandbox/worker.py) is another process, in another namespace: it receives the seconds left
when the job's frame is sent and counts them from the moment it reads the frame.

    >>> d = Deadline.after(10.0)
    >>> inner = d.reserve(5.0)          # keeps min(5, max(0.25, 20 % of 10), 50 % of 10) = 2 s
    >>> 7.9 < inner.remaining() <= 8.0
    True
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

KEEP_SHARE = 0.2  # reserve(): a layer keeps at most this share of what is left ...
KEEP_MIN_S = 0.25  # ... but at least this much (when it asks for that much) ...
KEEP_MAX_SHARE = 0.5  # ... and never more than half, so the inner layer always gets the larger part


@dataclass(frozen=True)
class Deadline:
    """An absolute ``time.monotonic()`` instant by which an answer is due (``inf``: none)."""

    at: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(time.monotonic() + max(0.0, seconds))

    @classmethod
    def never(cls) -> Deadline:
        return cls(math.inf)

    def remaining(self) -> float:
        """Seconds left (0 once passed)."""
        return max(0.0, self.at - time.monotonic())

    def expired(self) -> bool:
        return time.monotonic() >= self.at

    def earlier(self, other: Deadline | None) -> Deadline:
        """The earlier of this deadline and ``other`` (None: this one)."""
        return self if other is None or self.at <= other.at else other

    def within(self, seconds: float) -> Deadline:
        """This deadline, or ``seconds`` from now if that comes first (a layer's own tighter limit)."""
        return self.earlier(Deadline.after(seconds))

    def reserve(self, seconds: float) -> Deadline:
        """The deadline for an inner layer, so that this layer keeps up to ``seconds`` of what is left to
        finish after it (at most ``KEEP_SHARE`` of the time left, at least ``KEEP_MIN_S``, never more
        than half)."""
        left = self.at - time.monotonic()
        if left <= 0 or math.isinf(left):
            return self
        keep = min(seconds, max(KEEP_MIN_S, KEEP_SHARE * left), KEEP_MAX_SHARE * left)
        return Deadline(self.at - max(0.0, keep))

    @staticmethod
    def of(value: Deadline | float | None) -> Deadline:
        """A Deadline from a Deadline, a monotonic instant, or None (no deadline)."""
        if isinstance(value, Deadline):
            return value
        return Deadline.never() if value is None else Deadline(float(value))
