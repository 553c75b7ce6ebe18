"""What the session worker (session.py) reads of the sandbox's processes in /proc, and waits for (stdlib only).

Every figure a session reports as fact comes from here, outside the session's own processes: /proc is the
kernel's word, which no process of the session can fake.
"""

import os
import select
import signal
import time

TICK = os.sysconf("SC_CLK_TCK")


def pump(fd, buf, cap, totals):
    """Read what waits on ``fd`` into ``buf`` (up to ``cap``; ``totals`` counts all of it): True when it read
    something, False when nothing waits yet, None at end of file (the writers closed it)."""
    try:
        b = os.read(fd, 65536)
    except BlockingIOError:
        return False
    except OSError:
        return None
    if not b:
        return None
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


def kill_all(keep):
    """SIGKILL every process of the sandbox not in ``keep``, again until a scan finds none it has not signalled
    (a killed process runs no more code, so a child it forked before is found by the next scan); their pidfds."""
    killed, fds = set(), []
    for _ in range(1000):
        new = [p for p in pids() if p not in keep and p not in killed and state(p) not in ("Z", "")]
        if not new:
            break
        fds += kill(new)
        killed.update(new)
    return fds


def kill(pids):
    """SIGKILL each of ``pids``; the pidfds of those it reached (``await_exit`` waits on them: a pidfd names
    its process even after the pid is reaped and taken again)."""
    fds = []
    for p in pids:
        try:
            fds.append(os.pidfd_open(p))
        except OSError:
            pass  # gone already, or no descriptor left: killed all the same, not waited for
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return fds


def running(fds):
    """Of the pidfds ``fds``, those whose process has not exited yet; the others are closed."""
    if not fds:
        return []
    ready, _, _ = select.select(fds, [], [], 0)
    for fd in ready:
        os.close(fd)
    return [fd for fd in fds if fd not in ready]


def await_exit(fds, within_s=2.0):
    """Wait until every process of the pidfds ``fds`` has exited (a zombie counts), at most ``within_s``;
    close them. Returns [] (nothing is left to wait for)."""
    fds = list(fds)
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
    return []


def reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
