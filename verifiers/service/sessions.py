"""Sessions as a service: open, exec, fork, close, list, each bound to the caller who opened it.

A session is a sandbox of the one pool held for one caller between calls (sandbox/session.py); this
module keeps the table of open sessions and its rules:

* **ids** are ``s`` and 24 random bytes (``secrets.token_urlsafe``), unguessable, and bound to the caller that
  opened them (verifiers/service/callers.py): another caller's id is refused (PERMISSION_DENIED), never
  answered as not found. A fork belongs to the caller of the session it was forked from.
* **counts**: at most ``max_sessions`` open in all and ``max_sessions_per_caller`` per caller (forks
  count); one more is RESOURCE_EXHAUSTED, saying how many are open.
* **time**: a session idle (no call) for its TTL, or alive for ``session_max_life_s``, is closed by the
  reaper thread; the next call on it says that it expired and why (FAILED_PRECONDITION), as it does for
  a session that ended on its own (memory) or was closed. The ids of ended sessions are remembered
  (the last ``TOMBSTONES``), so an ended session's id is never mistaken for another caller's or unknown.
* **fairness**: each open, exec and fork holds a slot of the service's ``FairGate`` for its duration,
  in turn with grading jobs (verifiers/service/fair.py): a caller with hundreds of sessions running
  cells gets its turn like any other, and grading gets its turns between them. The sandboxes sessions
  hold come from the pool's ``session`` lane and are bounded by ``max_sessions``.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field, fields

from sandbox.backend import SandboxError
from sandbox.deadline import Deadline
from sandbox.session import KINDS, Cell, SessionError, SessionLimits, SessionSandbox
from verifiers.service.fair import FairGate, GateSaturated
from verifiers.shapes.base import BadRequest, NotFound, PermissionDenied, ServiceError, Unavailable

log = logging.getLogger(__name__)

TOMBSTONES = 10_000  # ended sessions whose id and reason are remembered
MAX_FILES_BYTES = 16 << 20  # files placed at open, in all
MAX_TRANSCRIPT_CHARS = 4 << 20  # a session's cells kept for grading, in all (past it: not gradable, saying so)
REAP_EVERY_S = 0.5


class Exhausted(ServiceError):
    status = "RESOURCE_EXHAUSTED"


class Ended(ServiceError):
    """The session was closed, expired or ended on its own; the message says which."""

    status = "FAILED_PRECONDITION"


@dataclass
class SessionPolicy:
    """The service's rules for sessions (``ServiceLimits.session_policy()`` builds it from the flags)."""

    max_sessions: int = 64
    max_per_caller: int = 16
    idle_ttl_s: float = 600.0
    max_life_s: float = 3600.0
    max_fork: int = 64
    limits: SessionLimits = field(default_factory=SessionLimits)  # the most a session may ask for

    @classmethod
    def from_limits(cls, lim) -> SessionPolicy:
        """The rules from a server's ``ServiceLimits`` (its --max-sessions, --session-* flags)."""
        top = SessionLimits(
            cpu_s=lim.session_cpu_s,
            timeout_s=lim.session_timeout_s,
            memory_mb=lim.session_memory_mb,
            output_bytes=lim.output_cap_bytes,
        )
        return cls(
            max_sessions=lim.max_sessions,
            max_per_caller=lim.max_sessions_per_caller,
            idle_ttl_s=lim.session_idle_ttl_s,
            max_life_s=lim.session_max_life_s,
            limits=top,
        )


@dataclass
class SessionInfo:
    id: str
    kind: str
    created: float  # unix time
    last_used: float
    ttl_s: float
    parent: str = ""  # the session it was forked from
    isolation: str = ""  # "landlock": forks cannot reach one another (docs/sessions.md); "none"
    limits: SessionLimits = field(default_factory=SessionLimits)


@dataclass
class _Entry:
    info: SessionInfo
    caller: str
    box: SessionSandbox
    slot: int
    born: float  # monotonic
    used: float  # monotonic
    busy: int = 0
    # what grading replays (verifiers/service/session_grade.py): the code of each cell that ran to its end,
    # in order, and the files placed at open; None once past MAX_TRANSCRIPT_CHARS (the reason in ``why``)
    cells: list[str] | None = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)
    why: str = ""


class Sessions:
    """The table of open sessions (thread-safe). ``start`` runs the reaper; ``close_all`` ends them all."""

    def __init__(self, pool, gate: FairGate | None, policy: SessionPolicy | None = None):
        self.pool, self.gate = pool, gate
        self.policy = policy or SessionPolicy()
        self._open: dict[str, _Entry] = {}
        self._ended: OrderedDict[str, tuple[str, str]] = OrderedDict()  # id -> (caller, why)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._reaper: threading.Thread | None = None
        self.opened = self.reaped = 0

    def start(self) -> Sessions:
        if self._reaper is None:
            self._reaper = threading.Thread(target=self._reap_loop, daemon=True, name="session-reaper")
            self._reaper.start()
        return self

    # -- the calls -----------------------------------------------------------------------------------
    def open(
        self,
        caller: str,
        kind: str,
        limits: dict | None = None,
        files: dict[str, bytes] | None = None,
        ttl_s: float = 0.0,
        deadline: Deadline | None = None,
    ) -> SessionInfo:
        if self.pool is None:
            raise Unavailable("this service has no sandbox pool: sessions need one")
        if self.policy.max_sessions == 0:
            raise Unavailable("sessions are off on this server (--max-sessions 0)")
        if kind not in KINDS:
            raise BadRequest(f"unknown session kind {kind!r}: choose one of {', '.join(KINDS)}")
        lim = self._limits(limits or {})
        ttl = self._ttl(ttl_s)
        files = files or {}
        if sum(len(v) for v in files.values()) > MAX_FILES_BYTES:
            raise BadRequest(f"files: more than {MAX_FILES_BYTES} bytes in all")
        self._admit(caller, 1)
        self.start()
        with self._turn(caller, deadline):
            try:
                box = SessionSandbox(self.pool, kind, lim, files, wait_s=self._wait(deadline))
            except SessionError as e:
                raise BadRequest(str(e)) from None
            except SandboxError as e:
                raise Unavailable(f"no sandbox for a session: {e}") from None
        info = self._add(caller, box, 0, kind, lim, ttl, "", box.isolation)
        with self._lock:
            self._open[info.id].files = files
        return info

    def exec(
        self, caller: str, sid: str, code: str, timeout_s: float = 0.0, cpu_s: int = 0, deadline: Deadline | None = None
    ) -> Cell:
        e = self._take(caller, sid)
        try:
            if deadline is not None:
                left = deadline.remaining() - 1.0  # the worker's answer and the way back
                if left <= 0.01:
                    raise Exhausted("no time left in the call's deadline to run a cell")
                timeout_s = min(timeout_s or e.info.limits.timeout_s, left)
            with self._turn(caller, deadline):
                cell = e.box.exec(e.slot, code, timeout_s or None, cpu_s or None)
        except SessionError as err:
            self._end(sid, f"ended: its sandbox broke ({err})")
            raise Ended(f"session {sid} ended: its sandbox broke ({err})") from None
        finally:
            self._give_back(e)
        if cell.ended:
            self._end(sid, f"ended: {cell.ended}", close=False)
        elif cell.status == "ok":
            self._record(e, code)
        return cell

    def fork(self, caller: str, sid: str, n: int, deadline: Deadline | None = None) -> list[SessionInfo]:
        if not 1 <= n <= self.policy.max_fork:
            raise BadRequest(f"fork n={n}: choose 1 to {self.policy.max_fork}")
        e = self._take(caller, sid)
        try:
            self._admit(caller, n)
            with self._turn(caller, deadline):
                slots = e.box.fork(e.slot, n)
        except SessionError as err:
            raise BadRequest(f"could not fork session {sid}: {err}") from None
        finally:
            self._give_back(e)
        info = e.info
        made = [self._add(caller, e.box, s, info.kind, info.limits, info.ttl_s, sid, info.isolation) for s in slots]
        with self._lock:
            for m in made:
                child = self._open.get(m.id)
                if child is not None:  # a fork starts from its parent's transcript
                    child.cells, child.files, child.why = _copy(e.cells), e.files, e.why
        return made

    def transcript(self, caller: str, sid: str) -> tuple[str, list[str], dict[str, bytes]]:
        """(kind, the cells that ran to their end, the files placed at open) of the caller's open session:
        what grading replays. Another caller's id: PermissionDenied; ended: Ended; too long: Ended."""
        with self._lock:
            e = self._get(caller, sid)
            e.used = time.monotonic()
            e.info.last_used = time.time()
            if e.cells is None:
                raise Ended(f"session {sid} cannot be graded: {e.why}")
            return e.info.kind, list(e.cells), dict(e.files)

    def close(self, caller: str, sid: str) -> None:
        with self._lock:
            e = self._get(caller, sid)
            self._open.pop(sid)
            self._remember(sid, caller, "closed by its caller")
        e.box.close_slot(e.slot)

    def list(self, caller: str) -> list[SessionInfo]:
        with self._lock:
            return [e.info for e in self._open.values() if e.caller == caller]

    def count(self) -> int:
        with self._lock:
            return len(self._open)

    def close_all(self) -> None:
        self._stop.set()
        with self._lock:
            entries = list(self._open.items())
            self._open.clear()
        for sid, e in entries:
            self._remember(sid, e.caller, "the service stopped")
            e.box.close_slot(e.slot)

    # -- the table ------------------------------------------------------------------------------------
    def _add(self, caller, box, slot, kind, lim, ttl, parent, isolation) -> SessionInfo:
        now, mono = time.time(), time.monotonic()
        sid = "s" + secrets.token_urlsafe(24)  # never a leading '-', which a command line reads as an option
        info = SessionInfo(sid, kind, now, now, ttl, parent, isolation, lim)
        with self._lock:
            self._open[sid] = _Entry(info, caller, box, slot, mono, mono)
            self.opened += 1
        return info

    def _admit(self, caller: str, n: int) -> None:
        with self._lock:
            mine = sum(e.caller == caller for e in self._open.values())
            if len(self._open) + n > self.policy.max_sessions:
                raise Exhausted(
                    f"{len(self._open)} sessions are open (the service's most: "
                    f"{self.policy.max_sessions}); close some, or raise --max-sessions"
                )
            if mine + n > self.policy.max_per_caller:
                raise Exhausted(
                    f"you have {mine} sessions open (the most per caller: {self.policy.max_per_caller});"
                    " close some, or raise --max-sessions-per-caller"
                )

    def _get(self, caller: str, sid: str) -> _Entry:  # holds _lock
        e = self._open.get(sid)
        if e is None:
            gone = self._ended.get(sid)
            if gone is None:
                raise NotFound(f"no session {sid!r}: never opened here (or ended long ago)")
            if gone[0] != caller:
                raise PermissionDenied(f"session {sid!r} belongs to another caller")
            raise Ended(f"session {sid} is gone: {gone[1]}")
        if e.caller != caller:
            raise PermissionDenied(f"session {sid!r} belongs to another caller")
        return e

    def _take(self, caller: str, sid: str) -> _Entry:
        with self._lock:
            e = self._get(caller, sid)
            e.busy += 1
            e.used = time.monotonic()
            e.info.last_used = time.time()
            return e

    def _give_back(self, e: _Entry) -> None:
        with self._lock:
            e.busy -= 1
            e.used = time.monotonic()

    def _end(self, sid: str, why: str, close: bool = True) -> None:
        with self._lock:
            e = self._open.pop(sid, None)
            if e is None:
                return
            self._remember(sid, e.caller, why)
        if close:
            e.box.close_slot(e.slot)
        else:
            e.box.forget(e.slot)

    def _record(self, e: _Entry, code: str) -> None:
        """Keep a cell that ran to its end in the session's transcript (in the order the cells returned)."""
        with self._lock:
            if e.cells is None:
                return
            if sum(map(len, e.cells)) + len(code) > MAX_TRANSCRIPT_CHARS:
                e.cells, e.why = None, f"its cells passed {MAX_TRANSCRIPT_CHARS} characters in all"
                return
            e.cells.append(code)

    def _remember(self, sid: str, caller: str, why: str) -> None:
        self._ended[sid] = (caller, why)
        while len(self._ended) > TOMBSTONES:
            self._ended.popitem(last=False)

    def _reap_loop(self) -> None:
        while not self._stop.wait(REAP_EVERY_S):
            try:
                self.reap()
            except Exception:  # noqa: BLE001 - the reaper must not die
                log.exception("session reaper")

    def reap(self) -> int:
        """Close sessions idle past their TTL or alive past the maximum lifetime; how many."""
        now, due = time.monotonic(), []
        with self._lock:
            for sid, e in self._open.items():
                if now - e.born > self.policy.max_life_s:
                    due.append((sid, f"expired: alive for its maximum of {self.policy.max_life_s:g} s"))
                elif not e.busy and now - e.used > e.info.ttl_s:
                    due.append((sid, f"expired: idle for more than its TTL of {e.info.ttl_s:g} s"))
        for sid, why in due:
            self._end(sid, why)
        self.reaped += len(due)
        return len(due)

    # -- helpers --------------------------------------------------------------------------------------
    def _limits(self, asked: dict) -> SessionLimits:
        top = self.policy.limits
        known = {f.name for f in fields(SessionLimits)}
        unknown = sorted(set(asked) - known)
        if unknown:
            raise BadRequest(f"unknown session limit(s) {', '.join(unknown)}: known are {', '.join(sorted(known))}")
        out = {}
        for name in known:
            most = getattr(top, name)
            v = asked.get(name) or most
            if not 0 < v <= most:
                raise BadRequest(f"session limit {name}={v}: choose more than 0 and at most {most}")
            out[name] = type(most)(v)
        return SessionLimits(**out)

    def _ttl(self, ttl_s: float) -> float:
        ttl = ttl_s or self.policy.idle_ttl_s
        if not 0 < ttl <= self.policy.idle_ttl_s:
            raise BadRequest(f"ttl_s={ttl_s}: choose more than 0 and at most {self.policy.idle_ttl_s:g} s")
        return ttl

    def _wait(self, deadline: Deadline | None) -> float:
        return 60.0 if deadline is None else max(deadline.remaining() - 1.0, 0.0)

    def _turn(self, caller: str, deadline: Deadline | None):
        return _Turn(self.gate, caller, self._wait(deadline))


class _Turn:
    """A slot of the fairness gate for the duration of one session call (nothing without a gate)."""

    def __init__(self, gate: FairGate | None, caller: str, wait_s: float):
        self.gate, self.caller, self.wait_s, self.grant = gate, caller, wait_s, None

    def __enter__(self):
        if self.gate is None:
            return self
        try:
            self.grant = self.gate.acquire(self.caller, self.wait_s)
        except GateSaturated as e:
            raise Exhausted(f"the sandboxes are saturated: {e}") from None
        if not self.grant:
            raise Exhausted(f"no sandbox turn within {self.wait_s:.1f} s: the service is saturated; retry later")
        return self

    def __exit__(self, *exc):
        if self.grant:
            self.gate.release(self.grant)


def _copy(cells: list[str] | None) -> list[str] | None:
    return None if cells is None else list(cells)
