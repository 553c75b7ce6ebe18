"""The in-container worker: a fork server that runs one untrusted job at a time. Standard library only.

It runs as PID 1 of its sandbox (a Docker container, or a bubblewrap PID namespace), as an
unprivileged user, and talks to the host over frames (format and channel: worker_io.py, next to this
file; the cleaning after each job: worker_clean.py; both stdlib only, copied into the image with it).

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
* afterwards (worker_clean.py) every writable place (/tmp, /dev/shm, /dev/mqueue) is wiped without
  recursion (a 10 000-deep directory tree is flattened, not recursed into), and System V IPC
  objects are removed, so nothing persists into the next job;
* the worker never turns a job's code, stdin or output into a Python object: they live in
  bytearrays that are zeroed after the job, so a later job (a fork of this process) cannot find an
  earlier job's data in the memory it inherits.

The worker marks itself non-dumpable, so a job (same uid) cannot ptrace it or open /proc/1/fd.
"""

import sys

if __name__ == "__main__":  # run as a script, its own folder is first on the path, where math/ and code/
    sys.path[0] = sys.path[0].rsplit("/", 1)[0]  # would shadow the stdlib's: the folder above instead

import builtins  # noqa: E402 (the path above first)
import gc  # noqa: E402
import io  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import select  # noqa: E402
import signal  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402 (imported here, once: a job's child must not pay for importing it)

from in_sandbox import worker_io  # noqa: E402
from in_sandbox.worker_clean import kill_all_and_reap, wipe_writable  # noqa: E402
from in_sandbox.worker_io import libc, private_buffer, read_frame, unmap, write_frame, zero  # noqa: E402

SCRATCH = "/tmp/job"
JOB_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "PYTHONPATH": "/opt/pylibs",
    "HOME": SCRATCH,
    "TMPDIR": SCRATCH,
}
PR_SET_DUMPABLE = 4
MADV_COLLAPSE = 25  # Linux 6.1+
HUGE_PAGE = 2 * 1024 * 1024


def _prctl_dumpable(flag):
    try:
        libc.prctl(PR_SET_DUMPABLE, flag, 0, 0, 0)
    except Exception:
        pass


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
        zero(payload)
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


class _Stream:
    """Reads one pipe into a buffer of ``cap`` bytes; the rest is counted and dropped into ``sink``
    (only what a killed job's pipe still held: the job is killed once both streams pass the cap)."""

    def __init__(self, fd, cap, sink):
        self.fd, self.buf, self.cap, self.len, self.total, self.open = fd, private_buffer(cap), cap, 0, 0, True
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
        zero(self.buf, self.len)
        unmap(self.buf)


def _waiter(pid):
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):  # old kernel: poll with a short select timeout instead
        return None


def _start(job, payload):
    """Fork the job's child (stdin from a memfd, stdout/stderr/status on pipes); (pid, pidfd, the
    three read ends, start time)."""
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
    return pid, pidfd, (out_r, err_r, status_r), start


def _watch(pid, pidfd, out, err, status_r, cap, deadline):
    """Pump the job's output until it exits, times out or passes the output cap (stdout + stderr
    together: the one place the cap is enforced); (wait status or None, timed_out, finished)."""
    finished, status, timed_out, status_open = False, None, False, True
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
    return status, timed_out, finished


def _end(pid, pidfd, status, out, err, status_r, finished):
    """Kill whatever of the job is left, drain its pipes; (wait status, finished)."""
    if status is None:
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _, status = os.waitpid(pid, 0)
    kill_all_and_reap()
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
    return status, finished


def run_job(job, payload):
    """Run one job under the limits the host sent (every key of sandbox/backend.py ``Limits``, the
    output cap filled in by the pool) and answer it; returns why this sandbox must be retired, or None."""
    limits = job["limits"]
    job = dict(job, timeout=float(job.get("timeout") or 10.0))
    pid, pidfd, (out_r, err_r, status_r), start = _start(job, payload)
    cap = int(limits["output_bytes"])
    sink = private_buffer(65536)  # output past the cap, discarded
    out, err = _Stream(out_r, cap, sink), _Stream(err_r, cap, sink)
    status, timed_out, finished = _watch(pid, pidfd, out, err, status_r, cap, start + job["timeout"])
    wall = time.monotonic() - start
    status, finished = _end(pid, pidfd, status, out, err, status_r, finished)
    zero(payload)
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
        wipe_writable()
    except Exception as e:  # the job's own result stands; this sandbox is retired and replaced
        result["retire"] = f"cleanup failed: {type(e).__name__}: {e}"
    try:
        write_frame(result, out.data(), err.data())
    finally:
        out.wipe(), err.wipe()
        zero(sink, len(sink) if out.total + err.total > cap else 0)
        unmap(sink)
    return result.get("retire")


def _huge_pages():
    """Back the preloaded heap with transparent huge pages where the kernel lets us (MADV_COLLAPSE).

    Most of a job's cost is the memory management of forking this ~50 MiB heap: the fork copies one
    page-table entry per 4 KiB page and the child's exit tears them all down again. Where the heap
    is in 2 MiB pages, both handle one entry per 2 MiB instead of 512; a page a job writes is still
    copied 4 KiB at a time. Best effort: where the kernel lacks MADV_COLLAPSE or THP is switched off,
    the calls fail and nothing changes."""
    if libc is None:
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
            libc.madvise(addr, HUGE_PAGE, MADV_COLLAPSE)  # fails harmlessly where unsupported


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
    wipe_writable()
    if channel:
        worker_io.connect(channel)
    if "in_sandbox.session" in preloaded:  # a session lane's (sandbox/session.py): its first holder waits ready
        sys.modules["in_sandbox.session_spawn"].prepare()
    write_frame({"ready": True, "pid": os.getpid(), "uid": os.getuid(), "preloaded": preloaded})
    while True:
        frame = read_frame()
        if frame is None:
            return
        job, payload = frame
        if job.get("mode") == "session":  # this sandbox holds a session until it ends (session.py)
            from in_sandbox import session

            session.serve(job, payload)
            return
        try:
            retire = run_job(job, payload)
        except Exception as e:  # report, then exit: the host replaces this sandbox
            kill_all_and_reap()
            write_frame({"id": job.get("id", ""), "error": f"worker: {type(e).__name__}: {e}"})
            return
        finally:
            zero(payload)
        if retire:
            return


if __name__ == "__main__":
    main()
