"""The ``ToolRunner`` of real runs: each rollout's calls run in its own sandbox session of the verifier service
(the sessions service), through the client only (never in this process).

``start`` opens one Python session per problem, runs the ``setup`` cell there once and forks it G times (one
fork per rollout of the group; the parent is closed at ``close``; with G = 1 and no setup the session itself is
the rollout's); ``run`` is one cell (``exec``) with the call's
time limit; ``close`` closes every session it opened. How a cell ended becomes the ``ToolResult``'s status:
``ok``, ``error`` (the cell raised, hit its output cap, or ended its own session: the policy's doing),
``timeout`` (wall clock or CPU), ``infra`` (the session is gone without the policy ending it, or the service did
not answer: the rollout is masked out of the loss, not paid 0). A session the policy's own cell ended (memory,
exit) stays the policy's doing: later calls to it are errors, so ending one's session is no way out of a grade.

Needs the sessions service (``VerifierClient.open_session``, ``exec``, ``fork_session``, ``close_session``).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from trainer.rollout.tools import ToolResult

_TIMEOUT = {"timeout", "cpu"}
_POLICY_ENDED = {"exited", "memory", "output_limit"}  # the cell's own doing: an error the policy sees


class SessionToolRunner:
    """Tool calls in sandbox sessions of the service at ``client`` (a ``VerifierClient`` of one replica)."""

    def __init__(self, client: Any, *, memory_mb: int = 0, workers: int = 16):
        self.client, self.memory_mb, self.workers = client, memory_mb, workers
        self._parents: list[str] = []
        self._ended: dict[str, str] = {}  # session -> why the policy's own cell ended it
        self._lock = threading.Lock()

    def start(self, groups: int, group_size: int, setup: str = "") -> list[str | None]:
        """groups * group_size session ids (None where the group's session could not be set up: those calls fail
        as infrastructure)."""

        def one(_: int) -> list[str | None]:
            try:
                parent = self.client.open_session("python", memory_mb=self.memory_mb).id
            except Exception:  # noqa: BLE001 - the group's rollouts get an infrastructure outcome
                return [None] * group_size
            if group_size == 1 and not setup:  # nothing to share: the session is the rollout's own (no fork)
                return [parent]
            with self._lock:
                self._parents.append(parent)
            try:
                if setup:
                    res = self.client.exec(parent, setup)
                    if res.status != "ok" or res.HasField("error"):
                        raise RuntimeError(f"setup cell failed: {res.status}")
                return [s.id for s in self.client.fork_session(parent, group_size)]
            except Exception:  # noqa: BLE001
                return [None] * group_size

        with ThreadPoolExecutor(max_workers=max(1, min(self.workers, groups))) as pool:
            return [h for hs in pool.map(one, range(groups)) for h in hs]

    def run(self, handle: str | None, code: str, timeout_s: float) -> ToolResult:
        if handle is None:
            return ToolResult("tool session unavailable", "infra")
        try:
            r = self.client.exec(handle, code, timeout_s=timeout_s)
        except Exception as e:  # noqa: BLE001 - the service lost the session, or did not answer
            why = self._ended.get(handle)
            if why:  # the policy's own cell ended this session: its later calls fail as its errors, never masked
                return ToolResult(f"the session ended earlier ({why})", "error")
            return ToolResult(f"tool session failed: {type(e).__name__}", "infra")
        status = r.status
        if status == "gone":
            why = self._ended.get(handle)
            return (
                ToolResult(f"the session ended earlier ({why})", "error")
                if why
                else ToolResult("session lost", "infra")
            )
        if r.ended:
            self._ended[handle] = r.ended
        text = _text(r)
        if status in _TIMEOUT:
            return ToolResult(text + f"\nTimeoutError: the cell ran past its limit ({status})", "timeout", r.wall_s)
        if status in _POLICY_ENDED or (status == "ok" and r.HasField("error")):
            return ToolResult(text, "error", r.wall_s)
        if status != "ok":
            return ToolResult(f"session failed: {status}", "infra", r.wall_s)
        return ToolResult(text, "ok", r.wall_s)

    def close(self, handles: Sequence[str | None]) -> None:
        with self._lock:
            ids = [h for h in handles if h is not None] + self._parents
            self._parents = []
        for sid in ids:
            self._ended.pop(sid, None)
            try:
                self.client.close_session(sid)
            except Exception:  # noqa: BLE001,S112 - already gone: the service's reaper has it
                continue


def _text(r: Any) -> str:
    """What the policy sees of a cell: stdout, the last expression's value, then the error (or stderr)."""
    parts = [r.stdout]
    if r.HasField("value"):
        parts.append(r.value)
    parts.append(r.error if r.HasField("error") else r.stderr)
    return "\n".join(p.rstrip("\n") for p in parts if p)
