"""Starting a session's holder process (runs in the sandbox; stdlib only; session.py is the worker's side).

A session lane's worker starts its first session's holder before any open (``prepare``, called by worker.py
when the lane preloads in_sandbox.session): the holder is forked, sheds everything of the worker's (only its
own socket stays), takes its standing and its Landlock domain, and waits for the open's kind and limits,
which it applies to itself before it runs anything. ``holder`` hands it to the first open, or forks one.
"""

import json
import os
import socket

from in_sandbox import session_proc as proc
from in_sandbox.session_holder import Holder, set_limits, standing

ROOT = "/tmp/s"
_spare = None  # (pid, socket) of the first session's holder, started by ``prepare`` before any open


def prepare():
    """Start the holder of this sandbox's first session before any open (a session lane's worker does this
    at start, worker.py): the open then only places its files and sends the kind and limits."""
    global _spare
    os.makedirs(os.path.join(ROOT, "0"), mode=0o700, exist_ok=True)
    _spare = _fork_holder(os.path.join(ROOT, "0"), None, None)


def holder(wd, kind, limits, sid):
    """(pid, socket) of a new session's holder: the one ``prepare`` started where it is there, else a new one."""
    global _spare
    spare, _spare = _spare, None
    if spare is not None and sid == 0 and proc.alive(spare[0]):
        try:
            spare[1].send(json.dumps({"op": "open", "kind": kind, "limits": limits}).encode())
            return spare
        except OSError:
            pass
    if spare is not None:
        spare[1].close()
    return _fork_holder(wd, kind, limits)


def _fork_holder(wd, kind, limits):
    """A holder process for a session in ``wd``; with ``kind`` None it waits for its kind and limits."""
    a, b = listen(socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET))
    pid = os.fork()
    if pid == 0:
        try:
            a.close()
            b = socket.socket(fileno=_only_fd(b.detach()))  # nothing of the worker's: no frame channel
            standing()
            if limits is not None:
                set_limits(limits)
            os.chdir(wd)
            Holder(b, wd, kind, ROOT).loop()
        finally:
            os._exit(0)
    b.close()
    return pid, a


def listen(pair):
    """A socket pair whose first end (the worker's) is told who sent each message (SO_PASSCRED: the kernel
    attaches the sender's pid, which no process of the session can fake)."""
    pair[0].setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    return pair


def _only_fd(fd):
    """Keep only ``fd`` (as 3) and /dev/null on 0-2: a session's processes never hold the frame channel."""
    null = os.open("/dev/null", os.O_RDWR)
    for std in (0, 1, 2):
        os.dup2(null, std)
    if fd != 3:
        os.dup2(fd, 3)
    os.closerange(4, 65536)
    return 3
