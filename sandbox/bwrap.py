"""The second backend, for machines without Docker: the same worker as PID 1 of a bubblewrap sandbox.

Chosen explicitly: ``SandboxPool(SandboxConfig(backend="bwrap"))``. Weaker than the Docker backend;
docs/sandbox.md lists what it does not stop.

Each sandbox is ``bwrap --unshare-{user,pid,net,ipc,uts} --disable-userns --as-pid-1 ... python3 -s worker.py`` with

* new user, PID, network (loopback only), IPC, UTS and cgroup namespaces; ``--die-with-parent``;
  ``--new-session``; every capability dropped; no-new-privileges (bwrap always sets it); no further
  user namespaces inside;
* a read-only view of the host's ``/usr`` (and the ``/bin``, ``/lib*`` links into it), the dynamic
  linker cache, the worker and an optional read-only package directory (``/opt/pylibs``); nothing
  else of the host: no ``/home``, ``/root``, ``/etc`` (beyond ld.so.cache), ``/run``, ``/var`` or the
  Docker socket; the root and ``/dev`` are remounted read-only;
* fresh tmpfs for ``/tmp`` and ``/dev/shm`` (bounded size); a private ``/proc`` and minimal ``/dev``;
* an empty environment apart from PATH/LANG and the preload list;
* run as root on the host: each sandbox gets its own unprivileged uid (via ``setpriv``), and, where
  the host lets us create them, its own memory (swap equal to it) and pids cgroup;
* the worker's per-job rlimits, kill-all and wipe, exactly as in a container. RLIMIT_NPROC is counted
  inside the sandbox's user namespace, so it bounds a fork bomb per sandbox even without cgroups.

Not here, unlike Docker: a seccomp filter (the job can make every system call the kernel offers
unprivileged users), a CPU quota, and, without cgroups (not root, or cgroups not writable), any cap
on the sum of memory of the job's processes (each is still limited by RLIMIT_AS).
"""

from __future__ import annotations

import logging
import os
import queue
import select
import shutil
import subprocess
import sys
import sysconfig
import threading
from pathlib import Path

from sandbox.backend import (
    SandboxConfig,
    SandboxError,
    WorkerSandbox,
    pid_alive,
)
from sandbox.framing import FrameChannel

log = logging.getLogger(__name__)

WORKER_DIR = Path(__file__).resolve().parent
WORKER_FILES = ("worker.py", "worker_io.py", "worker_clean.py")  # shown read-only in /opt/sandbox
CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_PARENT = "rlvr-sandbox"
NAMESPACES = ["--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
              "--unshare-cgroup-try", "--disable-userns"]  # fmt: skip


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


def bwrap_usable() -> tuple[bool, str]:
    """Can bwrap create the namespaces we need here? (ok, reason when not)."""
    exe = bwrap_path()
    if not exe:
        return False, "bubblewrap is not installed: run `sh sandbox/install_bwrap.sh` (apt-get install bubblewrap)"
    cmd = [exe, *NAMESPACES, "--as-pid-1", "--die-with-parent", *_fs_args(), "true"]
    cmd = _as_user(cmd, 65534) if os.geteuid() == 0 else cmd
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=20, env=_env())
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, f"bwrap did not run: {e}"
    if r.returncode != 0:
        return False, (
            f"bwrap cannot create namespaces here ({r.stderr.strip()[:300]}): unprivileged user namespaces"
            " are disabled (sysctl kernel.unprivileged_userns_clone / user.max_user_namespaces, or an"
            " AppArmor restriction) or this is a container without them"
        )
    return True, ""


def _env() -> dict[str, str]:
    return {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}


def _as_user(cmd: list[str], uid: int) -> list[str]:
    return ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all", *cmd]


def _fs_args() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        p = Path("/") / top
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), f"/{top}"]
        elif p.is_dir():
            args += ["--ro-bind", str(p), f"/{top}"]
    args += ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    args += ["--proc", "/proc", "--dev", "/dev"]
    return args


def default_pylibs(python: str) -> str:
    """This interpreter's site-packages, when ``python`` has the same version (so sympy & co. load)."""
    try:
        r = subprocess.run([python, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True, text=True)
    except OSError:
        return ""
    if r.stdout.strip() != str(tuple(sys.version_info[:2])):
        return ""
    return sysconfig.get_paths()["purelib"]


class _Cgroups:
    """Per-sandbox memory and pids cgroups (v1 or v2) when we may create them; else inactive."""

    def __init__(self, name: str, memory_mb: int, pids: int):
        self.dirs: list[Path] = []
        if os.geteuid() != 0:
            return
        try:
            if (CGROUP_ROOT / "cgroup.controllers").exists():  # v2
                parent = CGROUP_ROOT / CGROUP_PARENT
                parent.mkdir(exist_ok=True)
                (parent / "cgroup.subtree_control").write_text("+memory +pids")
                d = parent / name
                d.mkdir()
                self.dirs.append(d)
                (d / "memory.max").write_text(str(memory_mb << 20))
                (d / "memory.swap.max").write_text("0")
                (d / "pids.max").write_text(str(pids))
            else:  # v1
                for ctl in ("memory", "pids"):
                    d = CGROUP_ROOT / ctl / CGROUP_PARENT / name
                    d.mkdir(parents=True)
                    self.dirs.append(d)
                mem, pid = self.dirs
                (mem / "memory.limit_in_bytes").write_text(str(memory_mb << 20))
                try:
                    (mem / "memory.memsw.limit_in_bytes").write_text(str(memory_mb << 20))
                except OSError:
                    pass  # swap accounting off: there is no swap to limit
                (pid / "pids.max").write_text(str(pids))
        except OSError as e:
            log.warning("bwrap sandbox without cgroups (%s): memory is bounded per process only", e)
            self.remove()

    @property
    def active(self) -> bool:
        return bool(self.dirs)

    def enter_script(self) -> str:
        return "".join(f'echo $$ > "{d}/cgroup.procs" && ' for d in self.dirs)

    def remove(self) -> None:
        for d in self.dirs:
            try:
                d.rmdir()
            except OSError:
                pass
        self.dirs = []


class BwrapSandbox(WorkerSandbox):
    """The worker behind a pipe pair: its stdin/stdout are the frame channel (no proxy in between)."""

    backend = "bwrap"

    def __init__(self, cfg: SandboxConfig):
        self._identify(cfg)
        self._destroy_lock, self._destroyed = threading.Lock(), False
        self.cgroups = _Cgroups(self.name, cfg.memory_mb, cfg.pids)
        try:
            kw = dict(stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
            self.proc = _spawner.popen(self.command(), env=_env(), **kw)
        except BaseException:
            self.cgroups.remove()
            raise
        try:
            stdout, stdin = self.proc.stdout.fileno(), self.proc.stdin.fileno()
            self.chan = FrameChannel(self.name, stdout, stdin, exit_reason=self._exit_reason)
            self._await_ready()
        except BaseException:
            self.destroy()
            raise

    @classmethod
    def preflight(cls, cfg: SandboxConfig) -> None:
        ok, why = bwrap_usable()
        if not ok:
            raise SandboxError(why)
        if os.geteuid() == 0 and not shutil.which("setpriv"):
            raise SandboxError("running as root, the bwrap backend needs setpriv (util-linux) to drop to a user")
        if not cfg.pylibs:
            cfg.pylibs = default_pylibs(cfg.python)
        cls.remove_stale()

    @classmethod
    def remove_stale(cls, mine: bool = False) -> int:
        """Sandbox processes die with their owner (--die-with-parent); only empty cgroups can stay."""
        return _remove_stale_cgroups()

    def command(self) -> list[str]:
        cfg = self.cfg
        cmd = [bwrap_path() or "bwrap", *NAMESPACES, "--die-with-parent", "--new-session",
               "--as-pid-1", "--cap-drop", "ALL", "--hostname", "sandbox", *_fs_args(),
               "--size", str(cfg.tmpfs_mb << 20), "--tmpfs", "/tmp",
               "--size", str(16 << 20), "--tmpfs", "/dev/shm",
               ]  # fmt: skip
        for name in WORKER_FILES:
            cmd += ["--ro-bind", str(WORKER_DIR / name), f"/opt/sandbox/{name}"]
        if cfg.pylibs:
            cmd += ["--ro-bind", cfg.pylibs, "/opt/pylibs"]
        cmd += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", "/tmp", "--clearenv"]
        env = dict(_env(), PYTHONPATH="/opt/pylibs", PYTHONDONTWRITEBYTECODE="1", HOME="/tmp") | self.worker_env()
        for k, v in env.items():
            cmd += ["--setenv", k, v]
        cmd += [cfg.python, "-s", "/opt/sandbox/worker.py"]
        if os.geteuid() != 0:
            return cmd
        # root: enter the cgroups, then drop to this sandbox's own unprivileged uid, then bwrap
        cmd = _as_user(cmd, self.uid)
        return ["sh", "-c", self.cgroups.enter_script() + 'exec "$@"', "sh", *cmd]

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _exit_reason(self) -> str:
        try:
            code = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            return "output closed"
        ready, _, _ = select.select([self.proc.stderr], [], [], 0)
        err = os.read(self.proc.stderr.fileno(), 4000).decode(errors="replace").strip() if ready else ""
        return f"status {code}" + (f": {err[-1500:]}" if err else "")

    def destroy(self) -> None:
        with self._destroy_lock:
            if self._destroyed:
                return
            self._destroyed = True
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()  # bwrap --die-with-parent: the worker and its jobs die with it
            self.proc.wait()
        for f in (self.proc.stdout, self.proc.stderr):
            f.close()
        self.cgroups.remove()


class _Spawner:
    """Starts processes from one long-lived thread. bwrap's --die-with-parent is PR_SET_PDEATHSIG,
    which fires when the *thread* that forked it exits: a sandbox started from a short-lived pool
    thread would be killed as soon as that thread ended."""

    def __init__(self) -> None:
        self._jobs: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def popen(self, cmd: list[str], **kw) -> subprocess.Popen:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, daemon=True, name="bwrap-spawner")
                self._thread.start()
        done: queue.Queue = queue.Queue()
        self._jobs.put((cmd, kw, done))
        ok, value = done.get()
        if not ok:
            raise value
        return value

    def _loop(self) -> None:
        while True:
            cmd, kw, done = self._jobs.get()
            try:
                done.put((True, subprocess.Popen(cmd, **kw)))
            except Exception as e:  # noqa: BLE001 - handed to the caller
                done.put((False, e))


_spawner = _Spawner()


def _remove_stale_cgroups() -> int:
    """Empty per-sandbox cgroups a crashed run left behind (a live one is not empty: rmdir fails)."""
    removed = 0
    for parent in (
        CGROUP_ROOT / CGROUP_PARENT,
        CGROUP_ROOT / "memory" / CGROUP_PARENT,
        CGROUP_ROOT / "pids" / CGROUP_PARENT,
    ):
        if parent.is_dir():
            for d in parent.iterdir():
                if d.is_dir() and d.name.startswith("rlvr-sbx-"):
                    pid = d.name.split("-")[2]
                    if not pid.isdigit() or not pid_alive(int(pid)):
                        try:
                            d.rmdir()
                            removed += 1
                        except OSError:
                            pass
    return removed
