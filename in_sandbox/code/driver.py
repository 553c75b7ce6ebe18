"""The sandbox half of a non-Python submission: compile once, run every case. Standard library only.

Runs as one job in the toolchain sandbox (never in the service process). Reads on stdin the payload
in_sandbox/jobs.py declares (``DRIVER``: the files, ``blobs`` as relative path → base64 written first, the
compile and run argv, budgets, inputs, the nonce) and writes lines on stdout:
``{"nonce", "compile": {"ok", "message", "elapsed", "status", "exit", "signal"}}`` then, per case as it ends, ``{"nonce",
"case", "status", "exit", "signal", "elapsed", "stdout" (base64), "stderr" (tail)}``. Statuses: ``ok`` (ran and exited 0: judged on the host),
``timeout``, ``runtime`` (non-zero exit or killed by a signal), ``output`` (stdout + stderr of the case
passed what is left of the output budget), ``skipped``.

What the program can and cannot reach:

* it runs as a child in a new session with lowered rlimits (address space, CPU, processes, file size,
  open files, no core); it gets its case's input on a private memfd, never from a file, and its
  stdout/stderr on pipes to this driver. Expected outputs are never sent to the sandbox;
* this driver makes itself non-dumpable first, so the program (same uid) cannot ptrace it or open its
  /proc entries (its stdin, its channel to the worker, the nonce);
* after every case ``kill(-1, SIGKILL)`` ends every process but this driver and PID 1 (the worker),
  so a daemonised leftover cannot outlive its case or write into a later one.
"""

import base64
import ctypes
import json
import os
import resource
import select
import signal
import time

from in_sandbox.jobs import DRIVER

STDERR_TAIL = 2000
COMPILER_TAIL = 4000


def _limits(as_mb, cpu_s, nproc, fsize_mb):
    def apply():
        for res, val in (
            (resource.RLIMIT_AS, as_mb * 1024 * 1024),
            (resource.RLIMIT_CPU, cpu_s),
            (resource.RLIMIT_NPROC, nproc),
            (resource.RLIMIT_CORE, 0),
            (resource.RLIMIT_FSIZE, fsize_mb * 1024 * 1024),
        ):
            soft, hard = resource.getrlimit(res)
            val = val if hard == resource.RLIM_INFINITY else min(val, hard)
            resource.setrlimit(res, (val, val))

    return apply


def _spawn(argv, env, stdin_fd, limits):
    """fork + exec with its own session, stdin, two pipes; returns (pid, out_r, err_r)."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            os.dup2(stdin_fd, 0)
            os.dup2(out_w, 1)
            os.dup2(err_w, 2)
            os.closerange(3, 65536)
            for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, signal.SIG_DFL)
            limits()
            os.execvpe(argv[0], argv, env)
        except BaseException:
            os.write(2, f"cannot run {argv[0]}\n".encode())
        os._exit(127)
    os.close(out_w), os.close(err_w)
    return pid, out_r, err_r


def _kill_others():
    """SIGKILL every process this uid may signal but this one and PID 1, then reap the children."""
    try:
        os.kill(-1, signal.SIGKILL)
    except ProcessLookupError:
        pass
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                time.sleep(0.001)
                os.kill(-1, signal.SIGKILL)
        except (ChildProcessError, ProcessLookupError):
            return


def run(argv, env, stdin_bytes, timeout, as_mb, nproc, budget, fsize_mb=16):
    """Run one program; returns (status, exit, signal, elapsed, stdout bytes, stderr bytes)."""
    fd = os.memfd_create("input", 0)
    os.write(fd, stdin_bytes)
    os.lseek(fd, 0, os.SEEK_SET)
    start = time.monotonic()
    pid, out_r, err_r = _spawn(argv, env, fd, _limits(as_mb, int(timeout) + 1, nproc, fsize_mb))
    os.close(fd)
    bufs, total, status, over = {out_r: bytearray(), err_r: bytearray()}, 0, None, False
    open_fds, deadline = [out_r, err_r], start + timeout
    while open_fds:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        ready, _, _ = select.select(open_fds, [], [], left)
        for r in ready:
            chunk = os.read(r, 65536)
            if not chunk:
                open_fds.remove(r)
                continue
            total += len(chunk)
            bufs[r] += chunk
            if r == err_r and len(bufs[r]) > 2 * STDERR_TAIL:
                del bufs[r][:-STDERR_TAIL]
        if total > budget:
            over = True
            break
    timed_out = not over and bool(open_fds)
    if not over:  # the pipes closed: wait for the exit until the deadline
        while status is None and time.monotonic() < deadline:
            done, st = os.waitpid(pid, os.WNOHANG)
            status = st if done else None
            if status is None:
                time.sleep(0.0005)
        timed_out = status is None
    elapsed = time.monotonic() - start
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if status is None:
        status = os.waitpid(pid, 0)[1]
    _kill_others()
    for r in (out_r, err_r):
        os.close(r)
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    kind = "output" if over else "timeout" if timed_out else "ok" if code == 0 else "runtime"
    return kind, code, sig, elapsed, bytes(bufs[out_r]), bytes(bufs[err_r][-STDERR_TAIL:])


def write_files(q):
    """The job's files into the scratch directory: ``blobs`` (base64, may sit in sub-folders), then ``files`` (text)."""
    for name, data in (q.get("blobs") or {}).items():
        if os.path.dirname(name):
            os.makedirs(os.path.dirname(name), exist_ok=True)
        with open(name, "wb") as f:
            f.write(base64.b64decode(data))
    for name, text in q["files"].items():
        with open(name, "w", encoding="utf-8") as f:
            f.write(text)


def compile_step(q, env):
    """Run the job's compile command: the fields of its ``compile`` line (ok, the compiler's last words, ...)."""
    kind, code, sig, elapsed, out, err = run(
        q["compile"], env, b"", q["compile_timeout"], q["compile_as_mb"], q["compile_nproc"], 1 << 20, 64
    )
    message = (out + err).decode("utf-8", "replace")[-COMPILER_TAIL:]
    if kind == "timeout":
        message = f"compilation did not finish in {q['compile_timeout']:g} s\n" + message
    return {"ok": kind == "ok", "message": message, "elapsed": elapsed, "status": kind, "exit": code, "signal": sig}


def main():
    try:
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: the program cannot look into this process
    except Exception:
        pass
    import sys

    q = DRIVER.loads(sys.stdin.buffer.read())
    null = os.open("/dev/null", os.O_RDWR)
    os.dup2(null, 0)
    mark = os.dup(1)
    os.dup2(2, 1)
    nonce = q.pop("nonce")

    def say(**d):
        os.write(mark, ("\n" + json.dumps(dict(d, nonce=nonce)) + "\n").encode())

    env = dict(os.environ, **q["env"])
    write_files(q)
    ok = True
    if q["compile"]:
        report = compile_step(q, env)
        ok = report["ok"]
        say(compile=report)
    else:
        say(compile={"ok": True, "message": "", "elapsed": 0.0, "status": "none", "exit": None, "signal": None})
    budget, failed = int(q["output_budget"]), False
    for i, text in enumerate(q["inputs"] if ok else []):
        if failed and q["stop_on_error"]:
            say(case=i, status="skipped")
            continue
        kind, code, sig, elapsed, out, err = run(
            q["run"], env, text.encode(), q["case_timeout"], q["run_as_mb"], q["run_nproc"], budget
        )
        budget -= len(out) + len(err)
        failed = failed or kind != "ok"
        say(
            case=i,
            status=kind,
            exit=code,
            signal=sig,
            elapsed=elapsed,
            stdout=base64.b64encode(out).decode(),
            stderr=err.decode("utf-8", "replace"),
        )
