"""The in-container worker: a fork server that runs one untrusted job at a time. Standard library only.

It runs as PID 1 of its container, as an unprivileged user, and talks to the host over its own
stdin/stdout with length-prefixed JSON frames (4-byte big-endian length, then UTF-8 JSON):

    host → worker   {"id", "code", "stdin", "timeout", "mode": "fork"|"spawn", "limits": {...}}
    worker → host   {"ready": true, ...} once, then one result frame per job

Heavy imports (``RLVR_PRELOAD``, e.g. sympy and math_verify) are imported once here, so a forked job
finds them warm. Each job runs in a fresh child process:

* ``setsid`` + its own scratch directory under /tmp, stdin from a private file, stdout/stderr on pipes
  read with a cap (the rest is drained and discarded up to a ceiling, then the job is killed);
* rlimits: CPU time, address space, file size, process count, no core files; oom_score_adj 1000 so
  the kernel picks the job, not the worker, when the container's memory runs out;
* wall-clock timeout: on expiry, and in every case once the job ends, ``kill(-1, SIGKILL)``. As PID 1
  this reaches every other process in the container (daemonised grandchildren included) and never
  the worker itself: the kernel does not deliver signals to a namespace's init from inside unless it
  installed a handler, so ``kill -1`` or ``kill -9 1`` from a job cannot take the worker down;
* afterwards every writable place (/tmp, /dev/shm) is wiped, so nothing persists into the next job.

The worker marks itself non-dumpable, so a job (same uid) cannot ptrace it or open /proc/1/fd.
"""

import ctypes
import json
import os
import resource
import select
import shutil
import signal
import struct
import sys
import time

OUT_FD, IN_FD = 1, 0
WRITABLE_DIRS = ("/tmp", "/dev/shm")
DEFAULT_LIMITS = {
    "cpu_s": 0,  # 0: derived from the timeout
    "memory_mb": 1024,  # address space of the job
    "fsize_mb": 16,
    "nproc": 64,
    "nofile": 256,
    "output_bytes": 65536,
}
OUTPUT_CEILING = 8 * 1024 * 1024  # bytes read per stream before the job is killed as runaway
JOB_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONPATH": "/opt/pylibs"}
PR_SET_DUMPABLE = 4


def _prctl_dumpable(flag):
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, flag, 0, 0, 0)
    except Exception:
        pass


# -- framing -----------------------------------------------------------------------------------
def _read_exact(n):
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(IN_FD, n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def read_frame():
    head = _read_exact(4)
    if head is None:
        return None
    body = _read_exact(struct.unpack(">I", head)[0])
    return None if body is None else json.loads(body)


def write_frame(obj):
    data = json.dumps(obj).encode()
    data = struct.pack(">I", len(data)) + data
    while data:
        data = data[os.write(OUT_FD, data) :]


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
    ):
        resource.setrlimit(res, (val, val))


def _child(job, scratch, stdin_fd, out_w, err_w, status_w):
    """Runs in the forked child; never returns."""
    try:
        os.setsid()
        _prctl_dumpable(1)
        try:
            with open("/proc/self/oom_score_adj", "w") as f:
                f.write("1000")
        except OSError:
            pass
        for sig in (signal.SIGCHLD, signal.SIGPIPE, signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        os.dup2(stdin_fd, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        keep = 3
        if status_w != keep:
            os.dup2(status_w, keep)
        os.closerange(keep + 1, 4096)
        os.chdir(scratch)
        env = dict(JOB_ENV, HOME=scratch, TMPDIR=scratch)
        os.environ.clear()
        os.environ.update(env)
        _set_limits(job["limits"], job["timeout"])
        if job.get("mode") == "spawn":
            os.close(keep)
            os.execve("/usr/bin/python3", ["python3", "-I", "-c", job["code"]], dict(env, PYTHONPATH=""))
        _run_in_process(job["code"], keep)
    except BaseException:
        pass
    os._exit(126)


def _run_in_process(code, status_fd):
    """exec the job's code as __main__ in this (forked, warm) interpreter; never returns."""
    import builtins
    import io
    import traceback

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


# -- the parent --------------------------------------------------------------------------------
def _wipe_writable():
    def onerror(func, path, _exc):
        try:
            os.chmod(os.path.dirname(path), 0o700)
            os.chmod(path, 0o700)
            func(path)
        except OSError:
            pass

    for top in WRITABLE_DIRS:
        try:
            entries = os.listdir(top)
        except OSError:
            continue
        for name in entries:
            path = os.path.join(top, name)
            try:
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, onerror=onerror)
                else:
                    os.unlink(path)
            except OSError:
                pass


def _kill_all_and_reap():
    """As PID 1: SIGKILL every other process in the container, then reap every child."""
    try:
        os.kill(-1, signal.SIGKILL)
    except ProcessLookupError:
        pass
    while True:
        try:
            pid, _ = os.waitpid(-1, 0)
        except ChildProcessError:
            return
        except InterruptedError:
            continue
        if pid == 0:
            return


class _Stream:
    def __init__(self, fd, cap):
        self.fd, self.cap, self.buf, self.total, self.open = fd, cap, bytearray(), 0, True

    def pump(self):
        try:
            chunk = os.read(self.fd, 65536)
        except BlockingIOError:
            return
        if not chunk:
            self.open = False
            os.close(self.fd)
            return
        self.total += len(chunk)
        room = self.cap - len(self.buf)
        if room > 0:
            self.buf += chunk[:room]

    def text(self):
        return self.buf.decode("utf-8", errors="replace")


def run_job(job, wake_r):
    limits = dict(DEFAULT_LIMITS, **(job.get("limits") or {}))
    job = dict(job, limits=limits, timeout=float(job.get("timeout") or 10.0))
    scratch = "/tmp/job"
    os.makedirs(scratch, mode=0o700, exist_ok=True)
    stdin_path = "/tmp/.stdin"
    with open(stdin_path, "wb") as f:
        f.write((job.get("stdin") or "").encode())
    stdin_fd = os.open(stdin_path, os.O_RDONLY)
    os.unlink(stdin_path)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    status_r, status_w = os.pipe()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.close(out_r), os.close(err_r), os.close(status_r)
        _child(job, scratch, stdin_fd, out_w, err_w, status_w)
    for fd in (stdin_fd, out_w, err_w, status_w):
        os.close(fd)
    for fd in (out_r, err_r, status_r):
        os.set_blocking(fd, False)
    cap = int(limits["output_bytes"])
    out, err = _Stream(out_r, cap), _Stream(err_r, cap)
    finished, status, timed_out, runaway = False, None, False, False
    deadline = start + job["timeout"]
    while status is None:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        fds = [s.fd for s in (out, err) if s.open] + [status_r, wake_r]
        ready, _, _ = select.select(fds, [], [], left)
        for s in (out, err):
            if s.open and s.fd in ready:
                s.pump()
        if status_r in ready:
            try:
                finished = finished or os.read(status_r, 1) == b"F"
            except BlockingIOError:
                pass
        if wake_r in ready:
            try:
                os.read(wake_r, 512)
            except BlockingIOError:
                pass
        if max(out.total, err.total) > max(OUTPUT_CEILING, 4 * cap):
            runaway = True
            break
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = st
    wall = time.monotonic() - start
    _kill_all_and_reap() if status is not None else None
    if status is None:
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _, status = os.waitpid(pid, 0)
        _kill_all_and_reap()
    for s in (out, err):
        os.set_blocking(s.fd, True) if s.open else None
        while s.open:
            s.pump()
    try:
        finished = finished or os.read(status_r, 1) == b"F"
    except (BlockingIOError, OSError):
        pass
    os.close(status_r)
    _wipe_writable()
    return {
        "id": job.get("id", ""),
        "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "stdout": out.text(),
        "stderr": err.text(),
        "stdout_truncated": out.total > cap,
        "stderr_truncated": err.total > cap,
        "output_limit_exceeded": runaway,
        "wall_s": wall,
        "timed_out": timed_out,
        "finished": finished,
    }


def main():
    _prctl_dumpable(0)
    os.umask(0o077)
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
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    _wipe_writable()
    write_frame({"ready": True, "pid": os.getpid(), "uid": os.getuid(), "preloaded": preloaded})
    while True:
        job = read_frame()
        if job is None:
            return
        try:
            result = run_job(job, wake_r)
        except Exception as e:  # report, never die: the host replaces a dead worker anyway
            _kill_all_and_reap()
            _wipe_writable()
            result = {"id": job.get("id", ""), "error": f"worker: {type(e).__name__}: {e}"}
        write_frame(result)


if __name__ == "__main__":
    main()
