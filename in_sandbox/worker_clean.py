"""Cleaning a sandbox after each job (runs in the sandbox as PID 1; stdlib only): kill every process,
wipe every writable place without recursion, remove System V IPC objects."""

import os
import signal
import stat
import time

from in_sandbox.worker_io import libc

WRITABLE_DIRS = ("/tmp", "/dev/shm", "/dev/mqueue")
WIPE_BUDGET_S = 3.0


def kill_all_and_reap():
    """As PID 1: SIGKILL every other process of the sandbox until no child is left."""
    while True:
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            pid, _ = os.waitpid(-1, 0)
        except ChildProcessError:
            return
        except InterruptedError:
            continue


def _remove(path, deadline):
    """Remove a file or a directory tree without recursion: subdirectories of a non-empty directory
    are renamed up into its parent's level, so even a 10 000-deep tree costs no stack."""
    top = os.path.dirname(path)
    pending = [path]
    n = 0
    while pending and time.monotonic() < deadline:
        p = pending.pop()
        try:
            st = os.lstat(p)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode):
            try:
                os.unlink(p)
            except OSError:
                pass
            continue
        try:
            os.rmdir(p)
            continue
        except OSError:
            pass
        try:
            os.chmod(p, 0o700)
            names = os.listdir(p)
        except OSError:
            continue
        pending.append(p)  # again, once emptied
        for name in names:
            child = os.path.join(p, name)
            try:
                if stat.S_ISDIR(os.lstat(child).st_mode):
                    os.chmod(child, 0o700)  # moving a directory to a new parent needs write on it
                    n += 1
                    flat = os.path.join(top, f".wipe-{os.getpid()}-{n}")
                    os.rename(child, flat)
                    pending.append(flat)
                else:
                    os.unlink(child)
            except OSError:
                pass


def _remove_sysv_ipc():
    """Remove the System V shared memory segments, semaphores and message queues jobs left."""
    if libc is None:
        return
    for kind, rm in (("shm", libc.shmctl), ("sem", None), ("msg", libc.msgctl)):
        try:
            with open(f"/proc/sysvipc/{kind}") as f:
                lines = f.read().split("\n")[1:]
        except OSError:
            continue
        for line in filter(None, lines):
            ident = int(line.split()[1])
            if rm is None:
                libc.semctl(ident, 0, 0)  # IPC_RMID
            else:
                rm(ident, 0, None)  # IPC_RMID


def wipe_writable():
    deadline = time.monotonic() + WIPE_BUDGET_S
    for top in WRITABLE_DIRS:
        try:
            names = os.listdir(top)
        except OSError:
            continue
        for name in names:
            _remove(os.path.join(top, name), deadline)
    _remove_sysv_ipc()
    for top in WRITABLE_DIRS:  # anything left (the budget ran out): the sandbox is no longer clean
        try:
            if os.listdir(top):
                raise RuntimeError(f"could not wipe {top}")
        except OSError:
            pass
