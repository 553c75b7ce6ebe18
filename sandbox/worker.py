"""The in-container worker: a fork server that runs one untrusted job at a time. Standard library only.

It runs as PID 1 of its sandbox (a Docker container, or a bubblewrap PID namespace), as an
unprivileged user, and talks to the host over its own stdin/stdout, or over two FIFOs the host
unlinks once connected (``RLVR_CHANNEL``, the Docker backend: no proxy in the path), with frames:

    frame   = 4-byte big-endian header length, header (UTF-8 JSON), then the blobs the header sizes
    host → worker   header {"id", "timeout", "mode": "fork"|"spawn", "limits": {...}, "sizes": [code, stdin]}
    worker → host   header {"ready": true, ...} once, then per job a result header with
                    "sizes": [stdout, stderr] followed by the (capped) stdout and stderr bytes

Heavy imports (``RLVR_PRELOAD``, e.g. sympy and math_verify) are imported once here, frozen out
of the garbage collector and moved onto transparent huge pages where the kernel allows, so a forked
job finds them warm, copies few pages and costs the kernel few page-table entries. Each job runs in a
fresh child process:

* ``setsid``, its own scratch directory (/tmp/job, also HOME and TMPDIR), stdin from a private
  memfd, stdout/stderr on pipes; the **output cap** (``limits["output_bytes"]``) bounds the bytes
  written to both together: the moment the sum passes it, the job is killed and its result says
  ``output_limit_exceeded`` (this is the one place the cap is enforced, whatever the job runs);
* rlimits: CPU time, address space, file size, process count, open files, no core files, no POSIX
  message queues; oom_score_adj 1000 so the kernel picks the job, not the worker, when the
  sandbox's memory runs out; nice 19 so a CPU-spinning fork loop cannot starve the worker;
* wall-clock timeout: on expiry, and in every case once the job ends, ``kill(-1, SIGKILL)`` until
  no child is left. As PID 1 this reaches every other process of the sandbox (daemonised
  grandchildren included) and never the worker itself: the kernel does not deliver a signal to a
  namespace's init from inside it unless init installed a handler, and this worker installs none
  (it waits on a pidfd, not on SIGCHLD; SIGINT's default Python handler is removed), so
  ``kill -1``, ``kill -9 1`` or ``kill -INT 1`` from a job cannot take the worker down;
* afterwards every writable place (/tmp, /dev/shm, /dev/mqueue) is wiped without recursion (a
  10 000-deep directory tree is flattened, not recursed into), and System V IPC objects are removed,
  so nothing persists into the next job;
* the worker never turns a job's code, stdin or output into a Python object: they live in
  bytearrays that are zeroed after the job, so a later job (a fork of this process) cannot find an
  earlier job's data in the memory it inherits.

The worker marks itself non-dumpable, so a job (same uid) cannot ptrace it or open /proc/1/fd.
"""

import builtins
import ctypes
import gc
import io
import json
import mmap
import os
import resource
import select
import signal
import stat
import struct
import sys
import time
import traceback  # imported here, once: a job's child must not pay for importing it

OUT_FD, IN_FD = 1, 0  # the frame channel: stdin/stdout, or the two FIFOs of RLVR_CHANNEL (see _connect)
HOST_FD = None  # with FIFOs: stdin, whose end of file says the host is gone
WRITABLE_DIRS = ("/tmp", "/dev/shm", "/dev/mqueue")
SCRATCH = "/tmp/job"
DEFAULT_LIMITS = {
    "cpu_s": 0,  # 0: derived from the timeout
    "memory_mb": 1024,  # address space of the job
    "fsize_mb": 16,
    "nproc": 64,
    "nofile": 256,
    "output_bytes": 1 << 20,  # the output cap: stdout + stderr together; past it the job is killed
}
MAX_FRAME = 256 * 1024 * 1024  # a job (code + stdin) larger than this is refused
JOB_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "PYTHONPATH": "/opt/pylibs",
    "HOME": SCRATCH,
    "TMPDIR": SCRATCH,
}
PR_SET_DUMPABLE = 4
WIPE_BUDGET_S = 3.0
MADV_COLLAPSE = 25  # Linux 6.1+
HUGE_PAGE = 2 * 1024 * 1024

try:
    _libc = ctypes.CDLL(None, use_errno=True)
    _libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
except OSError:  # pragma: no cover - static interpreters
    _libc = None


def _prctl_dumpable(flag):
    try:
        _libc.prctl(PR_SET_DUMPABLE, flag, 0, 0, 0)
    except Exception:
        pass


# -- framing -----------------------------------------------------------------------------------
def _read_into(buf):
    """Fill the bytearray from stdin without creating intermediate bytes objects."""
    view, got = memoryview(buf), 0
    while got < len(buf):
        n = os.readv(IN_FD, [view[got:]])
        if n == 0:
            return False
        got += n
    return True


def _connect(channel):
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


def _zero(buf, n=None):
    """Overwrite the first ``n`` bytes (default: all) of a bytearray or mmap with zeros."""
    n = len(buf) if n is None else n
    if n:
        ctypes.memset((ctypes.c_char * n).from_buffer(buf), 0, n)


# -- the child ---------------------------------------------------------------------------------
def _set_limits(limits, timeout):
    cpu = int(limits["cpu_s"] or (timeout + 1))
    mem = int(limits["memory_mb"]) * 1024 * 1024
    fsize = int(limits["fsize_mb"]) * 1024 * 1024
    for res, val in (
        (resource.RLIMIT_CPU, cpu),
        (resource.RLIMIT_AS, mem),
        (resource.RLIMIT_FSIZE, fsize),
        (resource.RLIMIT_NPROC, int(limits["nproc"])),
        (resource.RLIMIT_NOFILE, int(limits["nofile"])),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_MSGQUEUE, 0),
    ):
        resource.setrlimit(res, (val, val))


def _child(job, payload, stdin_fd, out_w, err_w, status_w):
    """Runs in the forked child; never returns."""
    try:
        os.setsid()
        _prctl_dumpable(1)
        try:
            fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
            os.write(fd, b"1000")
            os.close(fd)
        except OSError:
            pass
        # Lowest priority: the worker (nice 0) stays responsive against a loop of spinning processes, and
        # the job competes only inside its sandbox's CPU group, so this costs a lone job nothing.
        os.nice(19)
        # What a fresh interpreter would have: SIGPIPE/SIGXFSZ ignored (errors instead), SIGINT raises.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        os.dup2(stdin_fd, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        keep = 3
        if status_w != keep:
            os.dup2(status_w, keep)
        os.closerange(keep + 1, 65536)
        os.chdir(SCRATCH)  # the environment (JOB_ENV) is the worker's own, set once in main()
        ncode = int(job["sizes"][0])
        code = payload[:ncode].decode("utf-8", errors="replace")
        _zero(payload)
        gc.enable()
        _set_limits(job["limits"], job["timeout"])
        if job.get("mode") == "spawn":
            os.close(keep)
            os.execve("/usr/bin/python3", ["python3", "-I", "-c", code], dict(JOB_ENV, PYTHONPATH=""))
        _run_in_process(code, keep)
    except BaseException:
        pass
    os._exit(126)


def _run_in_process(code, status_fd):
    """exec the job's code as __main__ in this (forked, warm) interpreter; never returns."""
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8", errors="replace")
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="replace")
    sys.stderr = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace", line_buffering=True
    )
    sys.argv = ["main.py"]
    sys.path[:] = ["."] + [p for p in sys.path if p and p != "."]
    status = 0
    try:
        exec(compile(code, "main.py", "exec"), {"__name__": "__main__", "__builtins__": builtins})
        _flush()
        os.write(status_fd, b"F")  # reached the end of the program
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if not isinstance(e.code, (int, type(None))):
            print(e.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
        status = 1
    _flush()
    os._exit(status & 0xFF)


def _flush():
    for s in (sys.stdout, sys.stderr):
        try:
            s.flush()
        except BaseException:
            pass


# -- cleaning up after a job -------------------------------------------------------------------
def _kill_all_and_reap():
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
    if _libc is None:
        return
    for kind, rm in (("shm", _libc.shmctl), ("sem", None), ("msg", _libc.msgctl)):
        try:
            with open(f"/proc/sysvipc/{kind}") as f:
                lines = f.read().split("\n")[1:]
        except OSError:
            continue
        for line in filter(None, lines):
            ident = int(line.split()[1])
            if rm is None:
                _libc.semctl(ident, 0, 0)  # IPC_RMID
            else:
                rm(ident, 0, None)  # IPC_RMID


def _wipe_writable():
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


# -- running a job -----------------------------------------------------------------------------
def _private_buffer(size):
    """Zero-filled memory of this process alone: a private anonymous mapping that no fork inherits
    (MADV_DONTFORK), so no later job ever has it in its address space. Pages come from the kernel
    (already zero) only where written, so an unused buffer costs no memset and no copy-on-write."""
    buf = mmap.mmap(-1, max(size, 1), flags=mmap.MAP_PRIVATE)
    buf.madvise(mmap.MADV_DONTFORK)
    return buf


def _unmap(buf):
    try:
        buf.close()
    except BufferError:  # a view is still alive (an exception is being handled): unmapped when it goes
        pass


class _Stream:
    """Reads one pipe into a buffer of ``cap`` bytes; the rest is counted and dropped into ``sink``
    (only what a killed job's pipe still held: the job is killed once both streams pass the cap)."""

    def __init__(self, fd, cap, sink):
        self.fd, self.buf, self.cap, self.len, self.total, self.open = fd, _private_buffer(cap), cap, 0, 0, True
        self.view, self.sink = memoryview(self.buf)[:cap], memoryview(sink)

    def pump(self):
        target = self.view[self.len :] if self.len < self.cap else self.sink
        try:
            n = os.readv(self.fd, [target])
        except BlockingIOError:
            return
        if n == 0:
            self.open = False
            os.close(self.fd)
            return
        self.total += n
        if self.len < self.cap:
            self.len += n

    def data(self):
        return self.view[: self.len]

    def wipe(self):
        """Zero what was written, then unmap."""
        self.view.release()
        self.sink.release()
        _zero(self.buf, self.len)
        _unmap(self.buf)


def _waiter(pid):
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):  # old kernel: poll with a short select timeout instead
        return None


def run_job(job, payload):
    limits = dict(DEFAULT_LIMITS, **(job.get("limits") or {}))
    job = dict(job, limits=limits, timeout=float(job.get("timeout") or 10.0))
    ncode, nstdin = (int(n) for n in job.get("sizes", (0, 0)))
    os.makedirs(SCRATCH, mode=0o700, exist_ok=True)
    stdin_fd = os.memfd_create("stdin", 0)
    view = memoryview(payload)[ncode : ncode + nstdin]
    while view:
        view = view[os.write(stdin_fd, view) :]
    view.release()
    os.lseek(stdin_fd, 0, os.SEEK_SET)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    status_r, status_w = os.pipe()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.close(out_r), os.close(err_r), os.close(status_r)
        _child(job, payload, stdin_fd, out_w, err_w, status_w)
    for fd in (stdin_fd, out_w, err_w, status_w):
        os.close(fd)
    pidfd = _waiter(pid)
    for fd in (out_r, err_r, status_r):
        os.set_blocking(fd, False)
    cap = int(limits["output_bytes"])
    sink = _private_buffer(65536)  # output past the cap, discarded
    out, err = _Stream(out_r, cap, sink), _Stream(err_r, cap, sink)
    finished, status, timed_out, status_open = False, None, False, True
    deadline = start + job["timeout"]
    while status is None:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        fds = [s.fd for s in (out, err) if s.open] + ([status_r] if status_open else [])
        fds += [pidfd] if pidfd is not None else []
        ready, _, _ = select.select(fds, [], [], left if pidfd is not None else min(left, 0.01))
        for s in (out, err):
            if s.open and s.fd in ready:
                s.pump()
        if status_open and status_r in ready:
            try:
                byte = os.read(status_r, 1)
                finished = finished or byte == b"F"
                status_open = bool(byte)
            except BlockingIOError:
                pass
        if out.total + err.total > cap:  # the output cap: end the job now, whatever it does next
            break
        if pidfd is None or pidfd in ready:
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status = st
    wall = time.monotonic() - start
    if status is None:
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _, status = os.waitpid(pid, 0)
    _kill_all_and_reap()
    if pidfd is not None:
        os.close(pidfd)
    for s in (out, err):  # every writer is dead: whatever is left in the pipes is bounded
        os.set_blocking(s.fd, True) if s.open else None
        while s.open:
            s.pump()
    try:
        finished = finished or os.read(status_r, 1) == b"F"
    except (BlockingIOError, OSError):
        pass
    os.close(status_r)
    _zero(payload)
    result = {
        "id": job.get("id", ""),
        "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "stdout_truncated": out.total > out.len,
        "stderr_truncated": err.total > err.len,
        "output_limit_exceeded": out.total + err.total > cap,
        "output_cap": cap,
        "wall_s": wall,
        "timed_out": timed_out,
        "finished": finished,
    }
    try:
        _wipe_writable()
    except Exception as e:  # the job's own result stands; this sandbox is retired and replaced
        result["retire"] = f"cleanup failed: {type(e).__name__}: {e}"
    try:
        write_frame(result, out.data(), err.data())
    finally:
        out.wipe(), err.wipe()
        _zero(sink, len(sink) if out.total + err.total > cap else 0)
        _unmap(sink)
    return result.get("retire")


def _huge_pages():
    """Back the preloaded heap with transparent huge pages where the kernel lets us (MADV_COLLAPSE).

    Most of a job's cost is the memory management of forking this ~50 MiB heap: the fork copies one
    page-table entry per 4 KiB page and the child's exit tears them all down again. Where the heap
    is in 2 MiB pages, both handle one entry per 2 MiB instead of 512; a page a job writes is still
    copied 4 KiB at a time. Best effort: where the kernel lacks MADV_COLLAPSE or THP is switched off,
    the calls fail and nothing changes."""
    if _libc is None:
        return
    try:
        with open("/proc/self/maps") as f:
            maps = f.read().split("\n")
    except OSError:
        return
    for line in maps:
        parts = line.split()
        # private anonymous read-write memory: the malloc heap and the interpreter's object arenas
        if len(parts) < 5 or parts[1] != "rw-p" or (len(parts) > 5 and parts[5] != "[heap]"):
            continue
        start, end = (int(x, 16) for x in parts[0].split("-"))
        start = -(-start // HUGE_PAGE) * HUGE_PAGE
        for addr in range(start, end - HUGE_PAGE + 1, HUGE_PAGE):
            _libc.madvise(addr, HUGE_PAGE, MADV_COLLAPSE)  # fails harmlessly where unsupported


def main():
    _prctl_dumpable(0)
    os.umask(0o077)
    # No Python-level handler may stay installed: the kernel would deliver that signal to PID 1 when
    # a job sends it (Python installs one for SIGINT). SIGCHLD stays SIG_DFL (SIG_IGN would auto-reap).
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_IGN if sig in (signal.SIGPIPE, signal.SIGXFSZ) else signal.SIG_DFL)
    preloaded = []
    for name in filter(None, os.environ.get("RLVR_PRELOAD", "").split(",")):
        try:
            __import__(name)
            preloaded.append(name)
        except Exception as e:  # a missing package must not stop the worker
            sys.stderr.write(f"preload {name} failed: {e}\n")
    warmup = os.environ.pop("RLVR_WARMUP", "")
    if warmup:  # e.g. one parse + compare, so lazily built parser state is inherited warm by every job
        try:
            exec(compile(warmup, "<warmup>", "exec"), {"__name__": "__warmup__"})
        except Exception as e:
            sys.stderr.write(f"warmup failed: {e}\n")
    # Every job inherits this environment (and only this: nothing of the host's or of docker's).
    channel = os.environ.get("RLVR_CHANNEL")
    os.environ.clear()
    os.environ.update(JOB_ENV)
    # Everything loaded so far is shared with every forked job: keep the collector off it so a
    # job's collections do not touch (and copy) those pages.
    gc.collect()
    gc.freeze()
    gc.disable()
    _huge_pages()
    _wipe_writable()
    if channel:
        _connect(channel)
    write_frame({"ready": True, "pid": os.getpid(), "uid": os.getuid(), "preloaded": preloaded})
    while True:
        frame = read_frame()
        if frame is None:
            return
        job, payload = frame
        try:
            retire = run_job(job, payload)
        except Exception as e:  # report, then exit: the host replaces this sandbox
            _kill_all_and_reap()
            write_frame({"id": job.get("id", ""), "error": f"worker: {type(e).__name__}: {e}"})
            return
        finally:
            _zero(payload)
        if retire:
            return


if __name__ == "__main__":
    main()
