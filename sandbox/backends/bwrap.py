"""The backend for machines without a container engine: the same worker as PID 1 of a bubblewrap sandbox.

Chosen explicitly: ``SandboxPool(SandboxConfig(backend="bwrap"))`` (``--backend bwrap``); docs/sandbox.md
compares it with the container backends, protection by protection, from the security battery.

Each sandbox is ``bwrap --unshare-{user,pid,net,ipc,uts} --disable-userns --as-pid-1 --seccomp FD ...
python3 -s worker.py`` with

* new user, PID, network (loopback only), IPC, UTS and cgroup namespaces; ``--die-with-parent``;
  ``--new-session``; every capability dropped; no-new-privileges (bwrap always sets it); no further
  user namespaces inside;
* a seccomp filter generated at start with libseccomp (sandbox/backends/seccomp.py): Docker's default profile's
  refusals for a container without capabilities (namespaces, mounts, keyrings, BPF, perf, io_uring,
  ptrace, modules, clocks, ...); said at start-up when libseccomp is missing;
* a read-only view of the sandbox image's own root file system (``var/cache/rootfs-*`` and its packages
  ``var/cache/pylibs-*``, left there by ``make image``): its ``/usr`` (and the ``/bin``, ``/lib*`` links)
  and the dynamic linker cache, the worker, the packages as ``/opt/pylibs``; where that is not there,
  the host's ``/usr`` and this venv's packages instead (said at start-up); nothing else of the host:
  no ``/home``, ``/root``, ``/etc``, ``/run``, ``/var`` or the Docker socket; the root and ``/dev`` are
  remounted read-only;
* fresh tmpfs for ``/tmp`` and ``/dev/shm`` (bounded size); a private ``/proc`` and minimal ``/dev``;
* an empty environment apart from PATH/LANG and the preload list;
* run as root on the host: each sandbox gets its own unprivileged uid (via ``setpriv``);
* memory (swap equal to it), pids and CPU quota cgroups per sandbox where they can be made
  (sandbox/backends/cgroups.py: v2 as root or delegated, v1 as root), rlimits only otherwise (said at start-up);
* the worker's per-job rlimits, kill-all and wipe, exactly as in a container. RLIMIT_NPROC is counted
  inside the sandbox's user namespace, so it bounds a fork bomb per sandbox even without cgroups.
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
)
from sandbox.backends import cgroups, seccomp
from sandbox.backends.cgroups import SandboxCgroups
from sandbox.backends.framing import FrameChannel
from sandbox.image.python import IN_SANDBOX, WORKER_CMD

log = logging.getLogger(__name__)

_seccomp_on = False  # set by preflight: libseccomp generated the filter here
NAMESPACES = ["--unshare-user", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
              "--unshare-cgroup-try", "--disable-userns"]  # fmt: skip


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


def bwrap_usable() -> tuple[bool, str]:
    """Can bwrap create the namespaces we need here? (ok, reason when not)."""
    exe = bwrap_path()
    if not exe:
        return False, "bubblewrap is not installed: run `sh sandbox/host/install_bwrap.sh` (apt-get install bubblewrap)"
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


def _fs_args(root: str = "/") -> list[str]:
    """``root``'s /usr (and the /bin, /lib* links into it) and its dynamic linker cache, read-only."""
    base = Path(root)
    args = ["--ro-bind", str(base / "usr"), "/usr"]
    for top in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        p = base / top
        if p.is_symlink():
            args += ["--symlink", os.readlink(p), f"/{top}"]
        elif p.is_dir():
            args += ["--ro-bind", str(p), f"/{top}"]
    args += ["--ro-bind-try", str(base / "etc/ld.so.cache"), "/etc/ld.so.cache"]
    args += ["--proc", "/proc", "--dev", "/dev"]
    return args


def image_rootfs() -> tuple[str, str]:
    """(root file system, package directory) of the sandbox image, as `make image` left them under
    var/cache; ("", "") when they are not there (another host built the image, or it came from a registry)."""
    from sandbox.image.python import pylibs_cache, rootfs_cache

    root, pylibs = rootfs_cache(), pylibs_cache()
    if (root / ".complete").exists() and (pylibs / ".complete").exists() and (root / "usr/bin/python3").exists():
        return str(root), str(pylibs)
    return "", ""


def resolve_root(cfg: SandboxConfig) -> str:
    """Fill in ``cfg.rootfs``, ``python`` and ``pylibs``; return how the root was chosen (logged at start)."""
    if not cfg.rootfs:
        cfg.rootfs, pylibs = image_rootfs()
        if cfg.rootfs:
            cfg.python, cfg.pylibs = "/usr/bin/python3", cfg.pylibs or pylibs
            return f"the sandbox image's root file system ({cfg.rootfs})"
        cfg.rootfs = "/"
        why = "the sandbox image's root file system is not under var/cache (`make image` builds it)"
        if not cfg.pylibs:  # the service image names its packages' directory
            cfg.pylibs = os.environ.get("RLVR_SANDBOX_PYLIBS") or default_pylibs(cfg.python)
        return f"the host's /usr ({why})"
    if not cfg.pylibs and cfg.rootfs == "/":
        cfg.pylibs = default_pylibs(cfg.python)
    return f"{cfg.rootfs}'s /usr"


def default_pylibs(python: str) -> str:
    """This interpreter's site-packages, when ``python`` has the same version (so sympy & co. load)."""
    try:
        r = subprocess.run([python, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True, text=True)
    except OSError:
        return ""
    if r.stdout.strip() != str(tuple(sys.version_info[:2])):
        return ""
    return sysconfig.get_paths()["purelib"]


class BwrapSandbox(WorkerSandbox):
    """The worker behind a pipe pair: its stdin/stdout are the frame channel (no proxy in between)."""

    backend = "bwrap"

    def __init__(self, cfg: SandboxConfig):
        self._identify(cfg)
        self._destroy_lock, self._destroyed = threading.Lock(), False
        self.cgroups = SandboxCgroups(self.name, cfg.memory_mb, cfg.pids, cfg.cpus)
        fd = seccomp.filter_fd() if _seccomp_on else -1
        try:
            kw = dict(stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
            self.proc = _spawner.popen(self.command(fd), env=_env(), pass_fds=[fd] if fd >= 0 else [], **kw)
        except BaseException:
            self.cgroups.remove()
            raise
        finally:
            if fd >= 0:
                os.close(fd)
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
        root = resolve_root(cfg)
        global _seccomp_on
        try:
            seccomp.filter_bytes()
            _seccomp_on, filt = (
                True,
                f"seccomp filter on ({len(seccomp.DENIED)} calls refused, clone without namespaces)",
            )
        except (seccomp.SeccompUnavailable, OSError) as e:
            _seccomp_on, filt = False, f"NO seccomp filter ({e})"
        log.warning("bwrap backend: root: %s; %s; limits: %s", root, filt, cgroups.describe())
        cls.remove_stale()

    @classmethod
    def remove_stale(cls, mine: bool = False) -> int:
        """Sandbox processes die with their owner (--die-with-parent); only empty cgroups can stay."""
        return cgroups.remove_stale()

    def command(self, seccomp_fd: int = -1) -> list[str]:
        cfg = self.cfg
        cmd = [bwrap_path() or "bwrap", *NAMESPACES, "--die-with-parent", "--new-session",
               "--as-pid-1", "--cap-drop", "ALL", "--hostname", "sandbox", *_fs_args(cfg.rootfs or "/"),
               "--size", str(cfg.tmpfs_mb << 20), "--tmpfs", "/tmp",
               "--size", str(16 << 20), "--tmpfs", "/dev/shm",
               ]  # fmt: skip
        cmd += ["--ro-bind", str(IN_SANDBOX), "/opt/sandbox/in_sandbox"]  # the in-sandbox room, read-only
        if cfg.pylibs:
            cmd += ["--ro-bind", cfg.pylibs, "/opt/pylibs"]
        cmd += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", "/tmp", "--clearenv"]
        env = dict(_env(), PYTHONPATH="/opt/pylibs", PYTHONDONTWRITEBYTECODE="1", HOME="/tmp") | self.worker_env()
        for k, v in env.items():
            cmd += ["--setenv", k, v]
        cmd += ["--seccomp", str(seccomp_fd)] if seccomp_fd >= 0 else []
        cmd += [cfg.python, *WORKER_CMD[1:]]
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
