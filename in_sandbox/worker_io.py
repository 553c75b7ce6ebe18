"""The worker's side of the frame channel, and the job's private memory (runs in the sandbox; stdlib only).

    frame   = 4-byte big-endian header length, header (UTF-8 JSON), then the blobs the header sizes
    host → worker   header {"id", "timeout", "mode": "fork"|"spawn", "limits": {...}, "sizes": [code, stdin]}
    worker → host   header {"ready": true, ...} once, then per job a result header with
                    "sizes": [stdout, stderr] followed by the (capped) stdout and stderr bytes

The channel is the worker's stdin/stdout, or (``connect``, the Docker backend) two FIFOs the host
unlinks once connected. The host side is sandbox/backends/framing.py.
"""

import ctypes
import json
import mmap
import os
import select
import struct

OUT_FD, IN_FD = 1, 0  # the frame channel: stdin/stdout, or the two FIFOs of RLVR_CHANNEL (see connect)
HOST_FD = None  # with FIFOs: stdin, whose end of file says the host is gone
MAX_FRAME = 256 * 1024 * 1024  # a job (code + stdin) larger than this is refused

try:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
except OSError:  # pragma: no cover - static interpreters
    libc = None


def _read_into(buf):
    """Fill the bytearray from stdin without creating intermediate bytes objects."""
    view, got = memoryview(buf), 0
    while got < len(buf):
        n = os.readv(IN_FD, [view[got:]])
        if n == 0:
            return False
        got += n
    return True


def connect(channel):
    """Use the FIFOs ``channel``/out and ``channel``/in (created by the host, which unlinks them once
    connected, before any job runs) instead of stdin/stdout: frames then go straight between the two
    processes, not through the docker CLI, dockerd and the shim. ``in`` is opened read-write so the
    open never blocks; the host's end of life is seen on stdin instead."""
    global OUT_FD, IN_FD, HOST_FD
    OUT_FD = os.open(os.path.join(channel, "out"), os.O_WRONLY | os.O_CLOEXEC)
    IN_FD = os.open(os.path.join(channel, "in"), os.O_RDWR | os.O_CLOEXEC)
    HOST_FD = 0


def _host_gone():
    """Wait for input; True when stdin (the host's lifeline) ended instead."""
    while True:
        ready, _, _ = select.select([IN_FD, HOST_FD], [], [])
        if IN_FD in ready:
            return False
        if not os.read(HOST_FD, 4096):
            return True


def read_frame():
    """(header, payload bytearray) or None at end of input."""
    if HOST_FD is not None and _host_gone():
        return None
    head = bytearray(4)
    if not _read_into(head):
        return None
    size = struct.unpack(">I", head)[0]
    if size > 1 << 20:
        raise ValueError(f"frame header of {size} bytes")
    raw = bytearray(size)
    if not _read_into(raw):
        return None
    header = json.loads(raw)
    total = sum(int(n) for n in header.get("sizes", ()))
    if total > MAX_FRAME:
        raise ValueError(f"job of {total} bytes exceeds {MAX_FRAME}")
    payload = bytearray(total)
    if not _read_into(payload):
        return None
    return header, payload


def write_frame(header, *blobs):
    header = dict(header, sizes=[len(b) for b in blobs])
    data = json.dumps(header).encode()
    parts = [memoryview(struct.pack(">I", len(data)) + data)] + [memoryview(b) for b in blobs]
    while parts:
        n = os.writev(OUT_FD, parts)
        while parts and n >= len(parts[0]):
            n -= len(parts[0])
            parts.pop(0)
        if parts and n:
            parts[0] = parts[0][n:]


def zero(buf, n=None):
    """Overwrite the first ``n`` bytes (default: all) of a bytearray or mmap with zeros."""
    n = len(buf) if n is None else n
    if n:
        ctypes.memset((ctypes.c_char * n).from_buffer(buf), 0, n)


# -- memory no later job can see ----------------------------------------------------------------
def private_buffer(size):
    """Zero-filled memory of this process alone: a private anonymous mapping that no fork inherits
    (MADV_DONTFORK), so no later job ever has it in its address space. Pages come from the kernel
    (already zero) only where written, so an unused buffer costs no memset and no copy-on-write."""
    buf = mmap.mmap(-1, max(size, 1), flags=mmap.MAP_PRIVATE)
    buf.madvise(mmap.MADV_DONTFORK)
    return buf


def unmap(buf):
    try:
        buf.close()
    except BufferError:  # a view is still alive (an exception is being handled): unmapped when it goes
        pass
