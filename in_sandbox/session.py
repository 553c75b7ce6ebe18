"""Sessions: a sandbox that keeps its state between calls (runs in the sandbox as the worker; stdlib only).

The worker (worker.py, PID 1) enters ``serve`` when a frame says ``"mode": "session"`` and stays in it
until every session it holds is closed or the host goes; the sandbox is then retired (never handed to
grading again). One sandbox holds one session and the forks made from it (a family), one cell at a
time. Each session's state lives in its own holder process (session_holder.py); the worker never runs
a session's code and reports only what it measures itself: wall time, CPU time (from /proc), whether
the cell ended, was killed for time, CPU or output, or took the session down.

    host → worker   {"op": "open", "kind", "limits", "names"} + file contents
                    {"op": "exec", "slot", "timeout", "cpu_s"} + code
                    {"op": "fork", "slot", "n"}      {"op": "close", "slot"}
    worker → host   one reply frame each (exec: blobs stdout, stderr, value, error)

After each reply, before it reads the next call, the worker learns which process each python holder forked
for its next command (``tidy``: its parent is the holder, and it said so itself) and kills every other process
that is not a holder (``sweep``): the caller never waits for either, and the next call's sweep waits for every
killed process to have exited before a cell runs. Every message of a holder comes with its
sender's pid from the kernel (SO_PASSCRED): a process of the session speaks only for itself.

Limits per session: ``cpu_s`` per cell (RLIMIT_CPU in the cell's process, and the worker's own count of
the cell's processes), ``memory_mb`` (RLIMIT_AS of every process of the session: a cell that runs out
ends the session with ``ended: "memory"``), ``output_bytes`` per cell (stdout and stderr together: the
cell is killed at the cap), ``nproc``, ``nofile``, ``fsize_mb`` as for jobs.
"""

import json
import os
import select
import shutil
import signal
import socket
import struct
import time

from in_sandbox import session_proc as proc
from in_sandbox.session_spawn import ROOT, holder, listen
from in_sandbox.worker_io import read_frame, write_frame

KINDS = ("python", "bash")
ANSWER_S = 10.0  # how long a holder may take to answer before the session is declared broken (host: 15 s)
RESULT_CAP = 1 << 20
CRED = struct.Struct("3i")  # SCM_CREDENTIALS: pid, uid, gid of the sending process


class Gone(Exception):
    """The session's helper broke its protocol or died: the session ends with this reason."""


class Slot:
    def __init__(self, sid, kind, limits, wd, pid, sock, isolation):
        self.sid, self.kind, self.limits, self.wd = sid, kind, limits, wd
        self.pid, self.sock, self.isolation = pid, sock, isolation
        self.ended = ""
        self.forked = False  # a fork (cannot be forked again: its Landlock domain is its own directory)
        self.next = None  # python: the process its holder forked to run the next command (``tidy`` learns it)

    def recv(self, deadline):
        """The next message, checked against its sender (the kernel's word, SO_PASSCRED: ``listen``): a process
        speaks only for itself (``holder``, ``next``); anything else said as ``_from``."""
        left = deadline - time.monotonic()
        ready, _, _ = select.select([self.sock], [], [], max(left, 0))
        if not ready:
            raise Gone("the session's helper stopped answering")
        data, anc, _, _ = self.sock.recvmsg(65536, socket.CMSG_SPACE(CRED.size))
        if not data:
            raise Gone("the session's helper died")
        sender = next(
            (
                CRED.unpack(d[: CRED.size])[0]
                for lvl, typ, d in anc
                if lvl == socket.SOL_SOCKET and typ == socket.SCM_CREDENTIALS
            ),
            None,
        )
        try:
            msg = json.loads(data)
        except ValueError:
            raise Gone("the session's helper sent garbage") from None
        if not isinstance(msg, dict) or any(k in msg and msg[k] != sender for k in ("holder", "next")):
            raise Gone("the session's helper spoke for a process that is not itself")
        msg["_from"] = sender
        return msg


class Family:
    """The sessions of this sandbox (a session and its forks)."""

    def __init__(self):
        self.slots = {}
        self.next = 0
        self.gone = {}  # sid -> why, of sessions that ended between calls (``tidy``)
        self.dying = []  # pidfds of processes killed after a reply, not yet seen exit (``sweep``)

    # -- open / close ----------------------------------------------------------------------------------
    def open(self, head, payload):
        kind, limits = head.get("kind"), head.get("limits") or {}
        if kind not in KINDS:
            return {"failed": f"unknown session kind {kind!r}: choose one of {', '.join(KINDS)}"}
        os.makedirs(ROOT, mode=0o700, exist_ok=True)
        sid = self._take()
        wd = self._dir(sid)
        names, sizes, at = head.get("names", []), head.get("sizes", []), 0
        for name, size in zip(names, sizes, strict=False):
            path = os.path.normpath(os.path.join(wd, name))
            if not path.startswith(wd + "/"):
                return {"failed": f"file name {name!r} leaves the session's directory"}
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(payload[at : at + int(size)])
            at += int(size)
        pid, a = holder(wd, kind, limits, sid)
        slot = Slot(sid, kind, limits, wd, pid, a, "")
        try:
            hello = slot.recv(time.monotonic() + ANSWER_S)
        except Gone as e:
            return {"failed": str(e)}
        slot.isolation = hello.get("isolation", "none")
        self.slots[slot.sid] = slot
        return {"slot": slot.sid, "isolation": slot.isolation, "dir": wd}

    def _dir(self, sid):
        wd = os.path.join(ROOT, str(sid))
        os.makedirs(wd, mode=0o700, exist_ok=sid == 0)  # 0: made by ``prepare`` with its holder
        return wd

    def _take(self):
        self.next += 1
        return self.next - 1

    def close(self, slot, why="closed"):
        if not slot.ended:
            slot.ended = why
        self.slots.pop(slot.sid, None)
        slot.sock.close()
        self.sweep()
        shutil.rmtree(slot.wd, ignore_errors=True)

    def end(self, slot, why):
        """The session is gone (memory, a broken helper): kill its processes, keep its reason."""
        slot.ended = why
        self.slots.pop(slot.sid, None)
        slot.sock.close()
        self.sweep()

    def holders(self):
        return {s.pid for s in self.slots.values()} | {s.next for s in self.slots.values() if s.next}

    def tidy(self):
        """After each reply, before the next call is read: learn the process each python holder forked for its
        next command (it forks while the reply travels), then kill what the call left running (``sweep``)."""
        for slot in list(self.slots.values()):
            if slot.kind == "python" and slot.next is None:
                try:
                    slot.next = self._next(slot)
                except Gone as e:
                    self.end(slot, str(e))
                    self.gone[slot.sid] = slot.ended
        self.sweep(wait=False)

    def retire(self, slot, pid):
        """``pid`` holds the session now (python: its cell or fork ended): the holder before it is killed at once
        (its exit overlaps the reply; the next sweep waits for it)."""
        old, slot.pid = slot.pid, pid
        if old != pid:
            self.dying += proc.kill([old])

    def _next(self, slot):
        while True:
            msg = slot.recv(time.monotonic() + ANSWER_S)
            pid = msg.get("next")
            if isinstance(pid, int) and proc.ppid(pid) == slot.pid and pid not in self.holders():
                return pid
            if not (isinstance(pid, int) and not proc.alive(pid)):  # else: a killed cell's, before it died
                raise Gone("the session's helper named a next process that is not its own")

    def sweep(self, spare=(), wait=True):
        """SIGKILL every process of the sandbox but the worker and the sessions' holders (and ``spare``)
        (``proc.kill_all``), then wait for each to have exited (pidfds: no polling). ``wait=False`` (after a
        reply): the exits are waited for by the next sweep, which comes before any cell runs."""
        self.dying += proc.kill_all(self.holders() | set(spare) | {1, os.getpid()})
        self.dying = proc.await_exit(self.dying) if wait else proc.running(self.dying)
        proc.reap()

    # -- exec --------------------------------------------------------------------------------------------
    def exec(self, slot, head, code):
        timeout = float(head.get("timeout") or 10.0)
        cpu = int(head.get("cpu_s") or slot.limits.get("cpu_s") or timeout + 1)
        cap = int(slot.limits.get("output_bytes") or (1 << 20))
        self.sweep()  # reaps what the last sweep killed (and kills anything that appeared since)
        code_fd = os.memfd_create("cell", 0)
        proc.write(code_fd, code)
        os.lseek(code_fd, 0, os.SEEK_SET)
        (out_r, out_w), (err_r, err_w), (res_r, res_w) = os.pipe(), os.pipe(), os.pipe()
        start = time.monotonic()
        old = slot.pid
        before = proc.cpu(old, children=True)
        cell, slot.next = slot.next, None  # python: the process forked for it ahead runs the cell
        socket.send_fds(slot.sock, [json.dumps({"op": "cell", "cpu_s": cpu}).encode()], [code_fd, out_w, err_w, res_w])
        for fd in (code_fd, out_w, err_w, res_w):
            os.close(fd)
        streams = {out_r: bytearray(), err_r: bytearray(), res_r: bytearray()}
        try:
            early = None
            if slot.kind == "python" and cell is None:
                raise Gone("the session's helper has no process ready for the cell")
            if slot.kind == "bash":
                first = slot.recv(start + ANSWER_S)  # the cell runs at once: its report may come before its pid
                early = None if "pid" in first else first
                said = first if early is None else slot.recv(start + ANSWER_S)
                cell = said.get("pid") if said["_from"] == slot.pid else None
                if not isinstance(cell, int) or proc.ppid(cell) not in (slot.pid, -1):  # -1: it ended and was reaped
                    raise Gone("the session's helper named a cell process that is not its own")
            r = self._watch(slot, cell, streams, cap, cpu, start + timeout, early)
        except Gone as e:
            for fd in streams:
                os.close(fd)
            self.end(slot, str(e))
            return {"status": "gone", "ended": slot.ended, "wall_s": time.monotonic() - start}, ()
        r["wall_s"] = time.monotonic() - start
        delta = proc.cpu(old, children=True) - before if slot.pid == old else 0.0  # bash: the holder reaped the cell
        r["cpu_s"] = max(r.pop("cell_cpu", 0.0), delta)
        out, err, res = (bytes(streams[fd]) for fd in (out_r, err_r, res_r))
        for fd in streams:
            os.close(fd)
        r.update(_verdict(res, slot.kind, r))
        value, error = r.pop("value", None), r.pop("error", None)
        if r.pop("memory", False):
            r["status"] = "memory"
        if r["status"] == "memory":
            self.end(slot, "memory: the cell exceeded the session's memory limit")
            r["ended"] = slot.ended
        r["stdout_truncated"] = r["out_total"] > len(out)
        r["stderr_truncated"] = r["err_total"] > len(err)
        blobs = (out, err, (value or "").encode("utf-8", "replace"), (error or "").encode("utf-8", "replace"))
        return r, blobs

    def _watch(self, slot, cell, streams, cap, cpu, deadline, early=None):
        """Pump the cell's output until its holder reports back; kill it on time, CPU or output."""
        out_r, err_r, res_r = streams
        totals = {out_r: 0, err_r: 0, res_r: 0}
        caps = {out_r: cap, err_r: cap, res_r: RESULT_CAP}
        status, cell_cpu, killed = "ok", 0.0, False
        live = set(streams)  # a stream at end of file leaves the select: it would wake it at once, again and again
        for fd in streams:
            os.set_blocking(fd, False)
        while True:
            now = time.monotonic()
            if not killed:
                cell_cpu = max(cell_cpu, proc.cpu(cell, children=True))
                why = (
                    "timeout"
                    if now >= deadline
                    else "cpu"
                    if cell_cpu > cpu
                    else "output_limit"
                    if totals[out_r] + totals[err_r] > cap
                    else ""
                )
                if why:
                    status, killed = why, True
                    self.sweep()  # the cell and everything it started; the holders stay
                    deadline = now + ANSWER_S
            if now >= deadline:
                raise Gone("the session's helper stopped answering")
            ready, _, _ = select.select([slot.sock, *live], [], [], min(0.02, max(deadline - now, 0)))
            for fd in ready:
                if fd in live and proc.pump(fd, streams[fd], caps[fd], totals) is None:
                    live.discard(fd)
            if early is not None or slot.sock in ready:
                msg, early = early or slot.recv(time.monotonic() + ANSWER_S), None
                holder, sig = msg.get("holder"), msg.get("signal")
                if killed and (holder == cell or "next" in msg):
                    continue  # it reported (and forked its next) as it was being killed: the holder before it answers
                if holder not in (slot.pid, cell):
                    raise Gone("the session's helper named a holder that is not its own")
                break
        drained = time.monotonic() + ANSWER_S  # a process the cell left may go on writing: bounded
        for fd in streams:  # what the cell wrote before it reported: the cap counts all of it
            while proc.pump(fd, streams[fd], caps[fd], totals) and time.monotonic() < drained:
                pass
        if holder == cell and totals[out_r] + totals[err_r] > cap:  # ended past the cap: as if killed at it
            status = "output_limit"
            self.sweep()  # the cell (not the holder yet) goes; the holder before it answers for the state
            msg = slot.recv(time.monotonic() + ANSWER_S)
            while "next" in msg:  # what the killed cell said before it died
                msg = slot.recv(time.monotonic() + ANSWER_S)
            if msg.get("holder") != slot.pid:
                raise Gone("the session's helper named a holder that is not its own")
            holder = slot.pid
        if holder == cell:
            self.retire(slot, cell)
            cell_cpu = max(cell_cpu, proc.cpu(cell, children=True))
        elif status == "ok" and slot.kind == "python":  # the cell's process ended before the cell did
            status = "cpu" if sig == signal.SIGXCPU or cell_cpu + 0.1 >= cpu else "exited"
        # what the cell left running (and the holder before it) is killed right after the reply is written
        # (``serve``), before this worker reads the next call: the caller does not wait for it
        return {"status": status, "cell_cpu": cell_cpu, "out_total": totals[out_r], "err_total": totals[err_r]}

    # -- fork --------------------------------------------------------------------------------------------
    def fork(self, slot, n):
        if slot.forked and slot.isolation == "landlock":
            return {"failed": "a fork cannot be forked again (fork the session that was opened)"}
        dirs, sids = [], [self._take() for _ in range(n)]
        try:
            for sid in sids:
                wd = self._dir(sid)
                shutil.copytree(slot.wd, wd, symlinks=True, dirs_exist_ok=True)
                dirs.append(wd)
        except OSError as e:
            for wd in dirs:
                shutil.rmtree(wd, ignore_errors=True)
            return {"failed": f"could not copy the session's files for {n} forks: {e}"}
        pairs = [listen(socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)) for _ in dirs]
        actor, slot.next = (slot.next, None) if slot.kind == "python" else (slot.pid, slot.next)
        socket.send_fds(slot.sock, [json.dumps({"op": "fork", "dirs": dirs}).encode()], [b.fileno() for _, b in pairs])
        for _, b in pairs:
            b.close()
        made = []
        try:
            for (a, _), wd, sid in zip(pairs, dirs, sids, strict=True):
                child = Slot(sid, slot.kind, dict(slot.limits), wd, 0, a, slot.isolation)
                child.forked = True
                hello = child.recv(time.monotonic() + ANSWER_S)
                pid = hello.get("holder")
                if not isinstance(pid, int) or pid in self.holders() or not proc.alive(pid):
                    raise Gone("a fork's helper named a process that is not its own")
                child.pid, child.isolation = pid, hello.get("isolation", "none")
                self.slots[child.sid] = child
                made.append(child.sid)
            done = slot.recv(time.monotonic() + ANSWER_S)
            if done.get("forked") != n or done["_from"] != actor or not actor:
                raise Gone("the session's helper did not confirm the fork")
            self.retire(slot, actor)  # python: the process that made the forks holds the session now
        except Gone as e:
            for sid in made:
                self.close(self.slots[sid])
            self.end(slot, str(e))
            return {"failed": str(e), "ended": slot.ended}
        return {"slots": made, "isolation": [self.slots[s].isolation for s in made]}

    def handle(self, head, payload):
        op, sid = head.get("op"), head.get("slot")
        if op == "open":
            return self.open(head, payload), ()
        slot = self.slots.get(sid)
        if slot is None and sid in self.gone:  # said once: the host forgets it
            why = self.gone.pop(sid)
            return ({"closed": True} if op == "close" else {"failed": why, "status": "gone", "ended": why}), ()
        if slot is None:
            return {"failed": f"no session {sid!r} in this sandbox", "status": "gone"}, ()
        if op == "exec":
            return self.exec(slot, head, bytes(payload))
        if op == "fork":
            return self.fork(slot, int(head.get("n", 1))), ()
        if op == "close":
            self.close(slot)
            return {"closed": True}, ()
        return {"failed": f"unknown session op {op!r}"}, ()


def serve(head, payload):
    """The session loop (see the module docstring); returns why the sandbox is retired."""
    family = Family()
    write_frame(family.open(head, payload))
    family.tidy()
    while family.slots or family.gone:
        frame = read_frame()
        if frame is None:
            break
        head, payload = frame
        try:
            reply, blobs = family.handle(head, payload)
        except Exception as e:  # noqa: BLE001 - the host ends the family: the sandbox is retired
            reply, blobs = {"failed": f"session worker: {type(e).__name__}: {e}", "broken": True}, ()
        write_frame(reply, *blobs)
        if reply.get("broken"):
            break
        family.tidy()  # after the reply: what the call left running goes before the next call is read
    for slot in list(family.slots.values()):
        family.end(slot, "closed")
    family.sweep()
    return "a session sandbox is never reused"


def _verdict(res, kind, r):
    """The cell's own words (value, traceback, exit code), read from its result pipe."""
    if r["status"] != "ok" or not res:
        return {}
    try:
        d = json.loads(res)
    except ValueError:
        return {"error": "the session's helper sent an unreadable result"}
    if not isinstance(d, dict):
        return {}
    if kind == "bash":
        code = d.get("exit_code")
        return {"exit_code": code if isinstance(code, int) else None}
    v, e = d.get("value"), d.get("error")
    return {"value": v if isinstance(v, str) else None, "error": e if isinstance(e, str) else None,
            "memory": d.get("memory") is True}  # fmt: skip
