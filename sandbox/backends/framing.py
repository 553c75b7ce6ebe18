"""The frame channel between the host and one worker (frame format: in_sandbox/worker.py).

``FrameChannel`` reads frames from one file descriptor and writes them to another, watching a third
("death": readable at end of file once the sandbox process ended) so a dead sandbox is noticed at
once instead of at the job's deadline. ``FifoPair`` is the Docker backend's transport: two FIFOs in a
host directory mounted read-only into the container, so frames go process to process instead of
through dockerd and containerd-shim; the bwrap backend uses the worker's own stdin/stdout.
"""

from __future__ import annotations

import json
import os
import select
import struct
import tempfile
import threading
import time
from collections.abc import Callable

from sandbox.backend import NoAnswer, SandboxError

MAX_HEADER = 1 << 20
MAX_REPLY = 64 * 1024 * 1024  # a worker reply larger than this means the worker is broken


class FrameChannel:
    """``read_fd``: frames from the worker; ``write_fd``: frames to it (blocking); ``death``: an fd or
    socket that turns readable at end of file when the sandbox ended, drained by ``drain`` (returns
    True at end of file); ``exit_reason``: what to say when the sandbox is found gone."""

    def __init__(
        self,
        name: str,
        read_fd: int,
        write_fd: int | None = None,
        death=None,
        drain: Callable[[], bool] | None = None,
        exit_reason: Callable[[], str] = lambda: "output closed",
    ):
        self.name, self.read_fd, self.write_fd = name, read_fd, write_fd
        self.death, self.drain, self.exit_reason = death, drain, exit_reason

    def read_exact(self, n: int, deadline: float) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise NoAnswer(f"sandbox {self.name} did not answer in time")
            fds = [self.read_fd] + ([self.death] if self.death is not None else [])
            ready, _, _ = select.select(fds, [], [], left)
            if self.read_fd in ready:
                try:
                    chunk = os.read(self.read_fd, min(n - len(buf), 1 << 20))
                except BlockingIOError:
                    continue
                if not chunk:
                    raise SandboxError(f"sandbox {self.name} exited ({self.exit_reason()})")
                buf += chunk
            elif ready and self.drain is not None and self.drain():
                raise SandboxError(f"sandbox {self.name} exited ({self.exit_reason()})")
        return bytes(buf)

    def read_frame(self, deadline: float) -> tuple[dict, list[bytes]]:
        (n,) = struct.unpack(">I", self.read_exact(4, deadline))
        if n > MAX_HEADER:
            raise SandboxError(f"sandbox {self.name} sent a {n}-byte header: protocol broken")
        header = json.loads(self.read_exact(n, deadline))
        sizes = [int(s) for s in header.get("sizes", ())]
        if sum(sizes) > MAX_REPLY:
            raise SandboxError(f"sandbox {self.name} sent a {sum(sizes)}-byte reply: protocol broken")
        return header, [self.read_exact(s, deadline) if s else b"" for s in sizes]

    def send(self, data: bytes) -> None:
        if self.write_fd is None:
            raise SandboxError(f"sandbox {self.name} is not connected")
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self.write_fd, view) :]
        except OSError as e:  # BrokenPipeError included
            raise SandboxError(f"sandbox {self.name} is gone ({e}): it is being replaced") from None

    def call(self, frame: bytes, deadline: float) -> tuple[dict, list[bytes]]:
        """Send one frame and read the answer, which must come by ``deadline`` (time.monotonic())."""
        self.send(frame)
        return self.read_frame(deadline)


class FifoPair:
    """Two FIFOs (``in``: host → worker, ``out``: worker → host) in a private host directory. The worker
    opens them before it reports ready; ``connect`` then opens ours and unlinks both, before any job
    runs, so no job can reach them (and /proc/1/fd is closed to jobs: the worker is non-dumpable)."""

    def __init__(self, uid: int):
        self.dir = tempfile.mkdtemp(prefix="rlvr-chan-")
        self.in_fd: int | None = None
        self._lock = threading.Lock()
        for name in ("in", "out"):
            path = os.path.join(self.dir, name)
            os.mkfifo(path, 0o600)
            if os.geteuid() == 0:
                os.chown(path, uid, uid)
            else:
                os.chmod(path, 0o666)  # docker maps no uid here; the directory stays private to this run
        os.chmod(self.dir, 0o711)
        self.out_fd: int | None = os.open(os.path.join(self.dir, "out"), os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)

    def connect(self) -> int:
        fd = os.open(os.path.join(self.dir, "in"), os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        os.set_blocking(fd, True)
        self.in_fd = fd
        self._unlink()
        return fd

    def _unlink(self) -> None:
        if os.path.isdir(self.dir):
            for name in ("in", "out"):
                try:
                    os.unlink(os.path.join(self.dir, name))
                except FileNotFoundError:
                    pass
            os.rmdir(self.dir)

    def close(self) -> None:
        with self._lock:  # close() may run twice (destroy from two threads): never close an fd twice
            fds, self.in_fd, self.out_fd = [self.in_fd, self.out_fd], None, None
        for fd in fds:
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        try:
            self._unlink()
        except OSError:
            pass
