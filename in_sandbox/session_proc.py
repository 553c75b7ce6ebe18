"""What the session worker (session.py) reads of the sandbox's processes in /proc, and waits for (stdlib only).

Every figure a session reports as fact comes from here, outside the session's own processes: /proc is the
kernel's word, which no process of the session can fake.
"""

import os
import select
import time

TICK = os.sysconf("SC_CLK_TCK")


def pump(fd, buf, cap, totals):
    try:
        b = os.read(fd, 65536)
    except BlockingIOError:
        return False
    except OSError:
        return False
    if not b:
        return False
    totals[fd] += len(b)
    room = cap - len(buf)
    if room > 0:
        buf += b[:room]
    return True


def write(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def pids():
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def stat(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()
    except (OSError, IndexError):
        return []


def state(pid):
    s = stat(pid)
    return s[0] if s else ""


def ppid(pid):
    s = stat(pid)
    return int(s[1]) if s else -1


def alive(pid):
    return state(pid) not in ("", "Z", "X")


def cpu(pid, children=False):
    """CPU seconds of ``pid`` (and its reaped children), read from /proc: no process of the session can fake it."""
    s = stat(pid)
    if not s:
        return 0.0
    ticks = int(s[11]) + int(s[12]) + ((int(s[13]) + int(s[14])) if children else 0)
    return ticks / TICK


def await_exit(pids, within_s=2.0):
    """Wait until every process of ``pids`` has exited (a zombie counts), at most ``within_s``."""
    fds = []
    for p in pids:
        try:
            fds.append(os.pidfd_open(p))
        except OSError:
            pass  # gone already
    try:
        end = time.monotonic() + within_s
        while fds and time.monotonic() < end:
            ready, _, _ = select.select(fds, [], [], max(end - time.monotonic(), 0))
            for fd in ready:
                fds.remove(fd)
                os.close(fd)
    finally:
        for fd in fds:
            os.close(fd)


def reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
