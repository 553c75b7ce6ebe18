"""The host side of sessions: one sandbox taken out of the pool and held for a session and its forks.

``SessionSandbox(pool)`` checks a sandbox out of the pool (``SandboxPool.checkout``; which lane:
``session_lane``), turns its worker into a session worker
(in_sandbox/session.py) and talks to it one call at a time. A sandbox that held a session is never
handed to grading again: ``close`` gives it back to the pool, which destroys it and starts a fresh one.

``open``/``exec``/``fork``/``close_slot`` address sessions in the sandbox by slot (0 is the one
opened; forks get the next numbers). What the worker measured comes back as a ``Cell``.
"""

from __future__ import annotations

import json
import struct
import threading
import time
from dataclasses import dataclass, field

from sandbox.backend import Backend, SandboxError

SESSION_LANE = "session"
SESSION_PRELOAD = "in_sandbox.session"  # a lane preloading it starts its first session's holder ahead (prepare)
KINDS = ("python", "bash")
ANSWER_S = 15.0  # the worker's own slack past a cell's time (kill, sweep, drain) and for every other call


@dataclass
class SessionLimits:
    """Limits of one session (and of each of its forks), sent to the worker at open."""

    cpu_s: int = 10  # per cell: CPU seconds of the cell's processes
    timeout_s: float = 30.0  # per cell: wall-clock seconds (an exec may ask for less)
    memory_mb: int = 1024  # address space of every process of the session; a cell over it ends the session
    output_bytes: int = 1 << 20  # per cell: stdout and stderr together; the cell is killed at the cap
    nproc: int = 64
    nofile: int = 256
    fsize_mb: int = 16


@dataclass
class Cell:
    """One exec's result: what the worker measured, and the cell's own value and traceback."""

    status: str = "ok"  # ok | timeout | cpu | output_limit | exited | memory | gone
    stdout: str = ""
    stderr: str = ""
    value: str | None = None  # repr of the last expression's value (python), like a notebook shows it
    error: str | None = None  # the traceback of the exception the cell raised (python); the session goes on
    exit_code: int | None = None  # bash: the cell's exit status
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    cpu_s: float = 0.0
    wall_s: float = 0.0
    ended: str = ""  # set when the session is gone after this cell (and why)
    extra: dict = field(default_factory=dict)


class SessionError(SandboxError):
    """The session sandbox refused a call (a bad name, a kind, a fork of a fork) or broke."""


def session_lane(pool) -> str:
    """The lane sessions take their sandboxes from: ``session`` where the pool has it, else the first lane
    of bare workers of the pool's own kind (a kind's lean lane, never the toolchain lane: a cell forks from 8 MB),
    else the pool's own sandboxes."""
    names = pool.lanes()
    return SESSION_LANE if SESSION_LANE in names else next((n for n in names if n and not pool.own_slots(n)), "")


class SessionSandbox:
    """One sandbox held for a session family. Thread-safe (one call at a time)."""

    def __init__(
        self, pool, kind: str, limits: SessionLimits, files: dict[str, bytes] | None = None, wait_s: float | None = None
    ):
        if kind not in KINDS:
            raise SessionError(f"unknown session kind {kind!r}: choose one of {', '.join(KINDS)}")
        self.pool, self.limits, self.kind = pool, limits, kind
        self.lock = threading.Lock()
        self.box: Backend | None = pool.checkout(session_lane(pool), wait_s)
        self.live: set[int] = set()
        self.ended: dict[int, str] = {}  # slot -> why it ended on its own (memory, a broken helper)
        files = files or {}
        head = {"mode": "session", "op": "open", "kind": kind, "limits": limits.__dict__, "names": list(files)}
        try:
            reply, _ = self._call(head, list(files.values()))
        except BaseException:
            self.destroy()
            raise
        if "failed" in reply:
            self.destroy()
            raise SessionError(reply["failed"])
        self.isolation = reply.get("isolation", "none")
        self.live.add(reply["slot"])

    @property
    def name(self) -> str:
        return self.box.name if self.box else ""

    def _call(self, head: dict, blobs: list[bytes], answer_s: float = ANSWER_S) -> tuple[dict, list[bytes]]:
        if self.box is None:
            raise SessionError("the session's sandbox is gone")
        data = json.dumps(dict(head, sizes=[len(b) for b in blobs])).encode()
        frame = struct.pack(">I", len(data)) + data + b"".join(blobs)
        try:
            reply, out = self.box.chan.call(frame, time.monotonic() + answer_s)
        except (SandboxError, OSError, ValueError) as e:
            self.destroy()
            raise SessionError(f"the session's sandbox broke: {e}") from None
        if reply.get("broken"):
            self.destroy()
            raise SessionError(reply.get("failed", "the session worker failed"))
        return reply, out

    def exec(self, slot: int, code: str, timeout_s: float | None = None, cpu_s: int | None = None) -> Cell:
        timeout = min(timeout_s or self.limits.timeout_s, self.limits.timeout_s)
        cpu = min(cpu_s or self.limits.cpu_s, self.limits.cpu_s)
        if slot in self.ended:
            return Cell(status="gone", ended=self.ended[slot])
        with self.lock:
            head = {"op": "exec", "slot": slot, "timeout": timeout, "cpu_s": cpu}
            reply, blobs = self._call(head, [code.encode("utf-8", "surrogatepass")], timeout + ANSWER_S)
            if reply.get("status") in ("gone", "memory") or reply.get("ended"):
                self.live.discard(slot)
                self.ended[slot] = reply.get("ended") or "the session is gone"
            last = not self.live
        if last:
            self.destroy()
        if "failed" in reply and "status" not in reply:
            raise SessionError(reply["failed"])
        out, err, value, error = (b.decode("utf-8", "replace") for b in (blobs + [b""] * 4)[:4])
        known = {
            k: reply[k]
            for k in ("stdout_truncated", "stderr_truncated", "cpu_s", "wall_s", "ended", "exit_code")
            if k in reply
        }
        return Cell(
            status=reply.get("status", "gone"),
            stdout=out,
            stderr=err,
            value=value if value else None,
            error=error or None,
            **known,
        )

    def fork(self, slot: int, n: int) -> list[int]:
        with self.lock:
            reply, _ = self._call({"op": "fork", "slot": slot, "n": n}, [], ANSWER_S + n)
            if "failed" in reply:
                if reply.get("ended"):
                    self.live.discard(slot)
                raise SessionError(reply["failed"])
            self.live.update(reply["slots"])
        return list(reply["slots"])

    def close_slot(self, slot: int) -> None:
        """Close one session of this sandbox; the sandbox goes back to the pool with its last one."""
        with self.lock:
            if self.box is not None and slot in self.live:
                try:
                    self._call({"op": "close", "slot": slot}, [])
                except SessionError:
                    pass
            self.live.discard(slot)
            last = not self.live
        if last:
            self.destroy()

    def forget(self, slot: int) -> None:
        """A session that ended on its own (memory, a broken helper): the sandbox goes with the last one."""
        with self.lock:
            self.live.discard(slot)
            last = not self.live
        if last:
            self.destroy()

    def destroy(self) -> None:
        box, self.box = self.box, None
        if box is not None:
            self.pool.discard(box)
