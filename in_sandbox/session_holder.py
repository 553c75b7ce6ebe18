"""The process that holds one session's state (runs in the sandbox; stdlib only). See session.py.

A holder waits for commands from the worker on its own unix socket (``{"op": "cell"}`` with the cell's
code and its output pipes passed as file descriptors, or ``{"op": "fork"}``) and never answers for
more than itself: everything the session reports as fact (time, CPU, limits, whether the cell ended)
is measured by the worker, outside the session's processes.

Python: each cell runs in a fork of the holder (the cell process), forked *before* the cell comes
(``ready``: between calls, while the last reply travels, so a cell costs no fork) and announced to the
worker (``{"next": pid}``); it reads the next command itself. A cell that ends (with or without an
exception) makes its process the session's new holder, and the worker kills the old one; a cell that
is killed (time, CPU, output cap) or exits leaves the old holder, so the session goes on from the state
before that cell. The state a cell starts from is the holder's when the cell before it ended: threads a
cell started live at most until the next cell ends, and what they change after their cell ended is not
seen by the next one. The processes a cell started are killed by the worker when it ends.

Bash: the holder never runs the session's code; each cell is a ``bash`` child that sources the code
and, on exit, writes its working directory and environment back, which the holder keeps.
"""

import ast
import builtins
import io
import json
import linecache
import os
import resource
import signal
import socket
import sys
import time
import traceback

from in_sandbox import landlock
from in_sandbox.session_proc import reap

VALUE_CAP = 64 * 1024  # a cell's value (repr) and traceback are cut to this many characters
RO_PATHS = ("/usr", "/bin", "/lib", "/lib64", "/etc", "/opt", "/proc", "/sys", "/dev")
RW_FILES = ("/dev/null",)
BASH_TRAILER = "trap '__rlvr_rc=$?; { pwd; printf \"\\0\"; env -0; } >&4 2>/dev/null; exit $__rlvr_rc' EXIT\n"


class Holder:
    """One session's state in this process: its socket, directory, kind and (python) namespace."""

    def __init__(self, sock, wd, kind, rw_root):
        self.sock, self.wd, self.kind = sock, wd, kind
        self.ns = {"__name__": "__main__", "__builtins__": builtins}
        self.env = dict(os.environ, HOME=wd, TMPDIR=wd, PWD=wd)
        self.cells = 0
        self.rw_root = rw_root
        self.isolation = _isolate(rw_root)

    def send(self, msg):
        try:
            self.sock.send(json.dumps(msg).encode())
        except OSError:  # the worker closed the session
            os._exit(0)

    def loop(self):
        """Serve commands until the worker closes the socket; never returns. A holder started before its
        session was opened (``kind`` None: session.py's ``prepare``) first waits for its kind and limits."""
        if self.kind is None:
            try:
                cmd = json.loads(self.sock.recv(65536) or b"{}")
            except (OSError, ValueError):
                os._exit(0)
            if cmd.get("op") != "open":
                os._exit(0)
            set_limits(cmd.get("limits") or {})
            self.kind = cmd.get("kind")
        self.send({"holder": os.getpid(), "isolation": self.isolation})
        while True:
            reap()
            if self.kind == "python":
                self.ready()  # returns in the process that serves the next command
            try:
                data, fds, _, _ = socket.recv_fds(self.sock, 65536, 8)
            except OSError:
                os._exit(0)
            if not data:
                os._exit(0)
            cmd = json.loads(data)
            if cmd.get("op") == "cell":
                self.cell(cmd, fds)
            elif cmd.get("op") == "fork":
                self.fork(cmd, fds)
            else:
                for fd in fds:
                    os.close(fd)

    # -- cells ---------------------------------------------------------------------------------------
    def ready(self):
        """Python: fork the process that serves the next command (a cell, a fork) before it comes, and wait for
        it; return in that process. A cell that ends makes it the session's holder (the worker kills this one);
        killed or exited, this holder answers for the state again and forks another."""
        while True:
            pid = _fork()
            if pid == 0:
                self.send({"next": os.getpid()})  # from itself: the worker checks who speaks
                if self.kind == "python":
                    _warm()
                return
            status = _wait(pid)  # returns only when it was killed or exited: the state is ours again
            _drain(self.sock)  # a command it never read (it died first) is never run by the next one
            self.cells += 1
            sig = os.WTERMSIG(status) if status is not None and os.WIFSIGNALED(status) else None
            self.send({"holder": os.getpid(), "signal": sig})

    def cell(self, cmd, fds):
        code_fd, out_w, err_w, res_w = fds
        self.cells += 1
        if self.kind == "bash":
            return self.bash_cell(cmd, fds)
        self.python_cell(cmd, code_fd, out_w, err_w, res_w)  # this process (``ready``) is the holder if it ends

    def python_cell(self, cmd, code_fd, out_w, err_w, res_w):
        try:
            _limit_cpu(cmd)
            for s in {id(x): x for x in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__)}.values():
                try:  # what the holder's threads left in a buffer goes to /dev/null, not into this cell
                    s.flush()
                except BaseException:  # noqa: BLE001
                    pass
            os.dup2(out_w, 1)
            os.dup2(err_w, 2)
            os.close(out_w), os.close(err_w)
            try:
                code = _read_all(code_fd).decode("utf-8", "replace")
            finally:
                os.close(code_fd)  # else one descriptor more per cell, until the session's nofile limit
            sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="replace")
            sys.stderr = io.TextIOWrapper(
                io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace", line_buffering=True
            )
            value, error, memory = run_cell(code, self.ns, f"<cell {self.cells}>")
        except BaseException as e:  # noqa: BLE001 - the helper itself failed: say so as the cell's error
            value, error, memory = None, f"session helper: {type(e).__name__}: {e}", False
        for s in (sys.stdout, sys.stderr):
            try:
                s.flush()
            except BaseException:  # noqa: BLE001
                pass
        res = json.dumps({"value": value, "error": error, "memory": memory}).encode()
        try:
            _write_all(res_w, res)
        finally:
            os.close(res_w)
        null = os.open("/dev/null", os.O_RDWR)
        os.dup2(null, 1), os.dup2(null, 2), os.close(null)
        resource.setrlimit(resource.RLIMIT_CPU, resource.getrlimit(resource.RLIMIT_CPU))
        self.send({"holder": os.getpid()})

    def bash_cell(self, cmd, fds):
        code_fd, out_w, err_w, res_w = fds
        st_r, st_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                _limit_cpu(cmd)
                null = os.open("/dev/null", os.O_RDONLY)
                for src, dst in ((null, 0), (out_w, 1), (err_w, 2), (code_fd, 3), (st_w, 4)):
                    os.dup2(src, dst)
                os.closerange(5, 65536)
                script = BASH_TRAILER + ". /dev/fd/3\n"
                os.execve("/bin/bash", ["bash", "--noprofile", "--norc", "-c", script], self.env)
            finally:
                os._exit(127)
        for fd in (code_fd, out_w, err_w, st_w):
            os.close(fd)
        self.send({"pid": pid})
        status = _wait(pid)
        state = _read_all(st_r, 1 << 20, nonblocking=True)
        os.close(st_r)
        self.adopt(state)
        exit_code = os.WEXITSTATUS(status) if status is not None and os.WIFEXITED(status) else None
        try:
            _write_all(res_w, json.dumps({"exit_code": exit_code}).encode())
        finally:
            os.close(res_w)
        self.send({"holder": os.getpid()})

    def adopt(self, state):
        """Keep the working directory and environment a bash cell ended with."""
        cwd, _, env = state.partition(b"\0")
        cwd = cwd.strip().decode("utf-8", "replace")
        if cwd and os.path.isdir(cwd):
            try:
                os.chdir(cwd)
                self.env["PWD"] = cwd
            except OSError:
                pass
        if env:
            pairs = [kv.split(b"=", 1) for kv in env.split(b"\0") if b"=" in kv]
            new = {k.decode("utf-8", "replace"): v.decode("utf-8", "replace") for k, v in pairs}
            for k in ("_", "SHLVL", "__rlvr_rc"):
                new.pop(k, None)
            self.env = new

    # -- fork ----------------------------------------------------------------------------------------
    def fork(self, cmd, fds):
        """n children, each the holder of a new session that starts from this state: reparented to the
        worker (a double fork), in its own copy of the directory (made by the worker), in a Landlock
        domain of its own; this holder enters a new domain too, so none of them can signal another."""
        for fd, wd in zip(fds, cmd["dirs"], strict=False):
            pid = os.fork()
            if pid == 0:
                if os.fork():
                    os._exit(0)
                for other in fds:
                    if other != fd:
                        os.close(other)
                self.sock.close()
                self.sock = socket.socket(fileno=fd)
                rel = os.path.relpath(os.getcwd(), self.wd)
                self.wd = self.rw_root = wd
                cwd = os.path.normpath(os.path.join(wd, rel)) if not rel.startswith("..") else wd
                os.chdir(cwd if os.path.isdir(cwd) else wd)
                self.env.update(HOME=wd, TMPDIR=wd, PWD=os.getcwd())
                self.isolation = _isolate(wd)
                self.loop()
            _wait(pid)
        for fd in fds:
            os.close(fd)
        _isolate(self.rw_root)  # a domain of its own: the forks (siblings in the old one) cannot signal it
        self.send({"forked": len(fds), "holder": os.getpid()})


def standing():
    """What every holder is before it holds anything: its own session, no core, first in line for the OOM
    killer, the signals a cell expects."""
    os.setsid()
    os.umask(0o077)
    try:
        fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
        os.write(fd, b"1000")
        os.close(fd)
    except OSError:
        pass
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL if sig in (signal.SIGTERM, signal.SIGHUP) else signal.SIG_IGN)


def set_limits(limits):
    """The session's limits on this process (every later process of the session inherits them)."""
    mb = 1024 * 1024
    for res, val in (
        (resource.RLIMIT_AS, int(limits.get("memory_mb", 1024)) * mb),
        (resource.RLIMIT_FSIZE, int(limits.get("fsize_mb", 16)) * mb),
        (resource.RLIMIT_NPROC, int(limits.get("nproc", 64))),
        (resource.RLIMIT_NOFILE, int(limits.get("nofile", 256))),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_MSGQUEUE, 0),
    ):
        resource.setrlimit(res, (val, val))


def run_cell(code, ns, filename):
    """Run ``code`` in ``ns`` like a notebook cell: (repr of the last expression's value or None,
    the traceback or None, whether it was a MemoryError)."""
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    try:
        tree = ast.parse(code, filename, "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, filename, "exec"), ns)
        if last is None:
            return None, None, False
        value = eval(compile(last, filename, "eval"), ns)
        if value is None:
            return None, None, False
        ns["_"] = value
        return _cut(repr(value)), None, False
    except MemoryError:
        return None, "MemoryError: the session's memory limit", True
    except BaseException as e:  # noqa: BLE001 - the cell's exception is its result; the session goes on
        tb = traceback.format_exception(type(e), e, e.__traceback__.tb_next if e.__traceback__ else None)
        return None, _cut("".join(tb)), False


def _warm():
    """Walk a cell's own path once on a throwaway cell, while the command has not come yet: a fresh fork shares
    its pages with the holder, and each page a cell writes first is copied then (a trivial cell: about 0.4 ms
    of page copies instead of 20 us of work). Nothing of the session's state is touched."""
    try:
        run_cell("_ = 0\n_ + 1", {"__builtins__": builtins}, "<warm>")
        linecache.cache.pop("<warm>", None)
        io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="replace").detach()
        json.dumps({"value": "1", "error": None, "memory": False})
    except BaseException:  # noqa: BLE001 - the session's own code may have broken what it uses: the cell says so
        pass


def _isolate(rw_root):
    """A new Landlock domain (landlock.py) writable under ``rw_root``; the session's ``isolation`` word."""
    try:
        return "landlock" if landlock.restrict([rw_root, *RW_FILES], RO_PATHS) else "none"
    except OSError as e:
        sys.stderr.write(f"landlock: {e}\n")
        return "none"


def _limit_cpu(cmd):
    cpu = int(cmd.get("cpu_s") or 0)
    if cpu > 0:
        _, hard = resource.getrlimit(resource.RLIMIT_CPU)
        soft = cpu if hard == resource.RLIM_INFINITY else min(cpu, hard)
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
    signal.signal(signal.SIGXCPU, signal.SIG_DFL)


def _fork(tries=200):
    """``os.fork``, again while the session's process limit is still full of what the worker is killing (a fork
    bomb's processes count until they are reaped)."""
    for _ in range(tries):
        try:
            return os.fork()
        except BlockingIOError:
            time.sleep(0.02)
    return os.fork()


def _drain(sock):
    """Drop what waits on ``sock`` unread (and the descriptors it carries)."""
    sock.setblocking(False)  # (recv_fds ignores its flags in some Pythons)
    try:
        while True:
            data, fds, _, _ = socket.recv_fds(sock, 65536, 8)
            for fd in fds:
                os.close(fd)
            if not data:
                return
    except OSError:  # BlockingIOError: nothing (more) waits
        return
    finally:
        sock.setblocking(True)


def _wait(pid):
    while True:
        try:
            return os.waitpid(pid, 0)[1]
        except ChildProcessError:
            return None
        except InterruptedError:
            continue


def _read_all(fd, cap=256 << 20, nonblocking=False):
    if nonblocking:
        os.set_blocking(fd, False)
    chunks, n = [], 0
    while n < cap:
        try:
            b = os.read(fd, min(1 << 16, cap - n))
        except BlockingIOError:
            break
        if not b:
            break
        chunks.append(b)
        n += len(b)
    return b"".join(chunks)


def _write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _cut(text):
    return text if len(text) <= VALUE_CAP else text[:VALUE_CAP] + f"... [{len(text) - VALUE_CAP} characters cut]"
