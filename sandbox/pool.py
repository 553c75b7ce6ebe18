"""A warm pool of hardened sandboxes, each running ``worker.py`` (one job at a time).

Two backends, chosen explicitly with ``SandboxConfig.backend``:

``"docker"`` (the default, and the one to use for training): each sandbox is a ``docker run -i --rm``
container. Covered per container: no network, read-only root filesystem, a small tmpfs for scratch
(size and inode count bounded), pids limit, memory limit with swap equal to it, CPU quota, every
capability dropped (the worker needs none), no-new-privileges, Docker's default seccomp profile, a
distinct unprivileged uid per container (so RLIMIT_NPROC, which the kernel counts per uid, is
effectively per container), a label naming the owner process. No host path and never the Docker
socket is mounted. Per job: see worker.py (fresh process, rlimits, kill of every process at the end,
wipe of every writable place and of System V IPC).

``"bwrap"`` (machines without Docker; weaker, see sandbox/bwrap.py and docs/sandbox.md): the same
worker as PID 1 of a bubblewrap sandbox (user, PID, network, IPC, UTS namespaces; read-only view of
/usr only; no seccomp filter; memory and pids cgroups only when the host lets us create them).

What is not covered by either: kernel exploits (sandboxes share the host kernel; use gVisor's runsc
as the Docker runtime, ``SandboxConfig.runtime``, where that matters), side channels between
sandboxes, and a job reading its own program (grading that hides tests from the candidate must not
put them in the same process).

The host talks to each worker through the sandbox's stdin/stdout (framed, see worker.py), so there is
no network and no ``docker exec`` per job. A sandbox that dies or stops answering is replaced and its
in-flight job returns a result with ``sandbox_error`` set.
"""

from __future__ import annotations

import atexit
import itertools
import json
import logging
import os
import queue
import random
import select
import socket
import struct
import subprocess
import tempfile
import threading
import time
import weakref
from dataclasses import asdict, dataclass, field

log = logging.getLogger(__name__)

LABEL = "rlvr.sandbox"
OWNER_LABEL = "rlvr.owner"  # "<hostname>:<pid>" of the process that owns the container
STARTED_LABEL = "rlvr.owner_started"  # that process's start time (clock ticks), against pid reuse
WATCH_S = 0.5  # how often the watchdog looks for sandboxes that died while idle
MAX_BACKOFF_S = 5.0  # longest wait between attempts to start a replacement (the engine may be restarting)
GRACE_S = 5.0  # how long past a job's timeout the worker may take to answer before it is declared dead
MAX_REPLY = 64 * 1024 * 1024  # a worker reply larger than this means the worker is broken
BACKENDS = ("docker", "bwrap")
# The output policy: a job may write at most this many bytes to stdout and stderr *together*; the
# worker kills it the moment it writes more and reports ``output_limit_exceeded`` (worker.run_job).
# The pool sends its cap with every job (``job_limits``), so every program any verifier runs, in any
# mode and on either backend, is held to the same number; a job may ask for less, never for more.
OUTPUT_CAP = 1 << 20
MAX_OUTPUT_CAP = 16 << 20  # replies above MAX_REPLY are refused as broken; stay well below it


class SandboxError(RuntimeError):
    """Infrastructure failure: not the program's fault."""


class PoolSaturated(SandboxError):
    """No sandbox became free before the caller's deadline, or too many callers wait (backpressure)."""


@dataclass
class Limits:
    cpu_s: int = 0  # 0: timeout + 1
    memory_mb: int = 1024  # address space of the job's process
    fsize_mb: int = 16
    nproc: int = 64
    nofile: int = 256
    output_bytes: int = 0  # a lower output cap for this job; 0 (and anything above it): the pool's cap


@dataclass
class Job:
    code: str
    stdin: str = ""
    timeout_s: float = 10.0
    limits: Limits = field(default_factory=Limits)
    mode: str = "fork"  # "fork": a child of the warm worker; "spawn": a fresh python3 -I process
    id: str = ""


@dataclass
class Result:
    exit_code: int | None = None
    signal: int | None = None
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    output_limit_exceeded: bool = False  # wrote more than output_cap bytes (stdout + stderr): killed at once
    output_cap: int = 0  # the cap the job ran under
    wall_s: float = 0.0
    timed_out: bool = False
    finished: bool = False  # fork mode: the program ran to its last line (not sys.exit / os._exit)
    sandbox_error: str | None = None
    id: str = ""

    @property
    def ok(self) -> bool:
        return self.sandbox_error is None and not self.timed_out and self.exit_code == 0


@dataclass
class SandboxConfig:
    size: int = field(default_factory=lambda: os.cpu_count() or 1)
    image: str = ""  # default: the tag the current sources describe (sandbox.image.image_tag())
    memory_mb: int = 1536  # sandbox memory limit (swap equal to it: no swap)
    cpus: float = 1.0
    pids: int = 128
    tmpfs_mb: int = 64
    tmpfs_inodes: int = 16384  # files a job may create in /tmp (bounds the wipe after it, too)
    preload: tuple[str, ...] = ("sympy", "math_verify", "latex2sympy2_extended")
    warmup: str = ""  # code run once in each worker after the preloads (builds lazy state before forking)
    max_waiters: int = 4096  # callers allowed to queue for a sandbox; beyond that: PoolSaturated at once
    start_timeout_s: float = 60.0
    runtime: str = ""  # e.g. "runsc" for gVisor where installed
    cgroup_parent: str = ""  # docker: the containers' parent cgroup ("/": each competes for CPU like one host process)
    grace_s: float = GRACE_S  # past a job's timeout, how long its worker may take before it is declared dead
    backend: str = "docker"  # "docker" or "bwrap" (weaker: see docs/sandbox.md)
    python: str = "/usr/bin/python3"  # bwrap: the host interpreter the worker runs on
    pylibs: str = ""  # bwrap: host directory shown read-only as /opt/pylibs (default: this venv's)
    output_bytes: int = OUTPUT_CAP  # the output cap, applied to every job this pool runs (see job_limits)
    tmpfs_exec: bool = False  # docker: /tmp without noexec (the toolchain pool runs compiled binaries there)


# -- ownership and stale containers -----------------------------------------------------------
def _start_time(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[19]
    except (OSError, IndexError):
        return ""


def _owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def docker_available() -> bool:
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def list_containers(owner: str | None = None) -> list[tuple[str, str, str]]:
    """(id, owner, owner start time) of every sandbox container, or of one owner's."""
    flt = ["--filter", f"label={LABEL}"] + (["--filter", f"label={OWNER_LABEL}={owner}"] if owner else [])
    fmt = '{{.ID}} {{.Label "' + OWNER_LABEL + '"}} {{.Label "' + STARTED_LABEL + '"}}'
    try:
        out = subprocess.run(["docker", "ps", "-a", *flt, "--format", fmt], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    rows = []
    for line in filter(None, out.stdout.split("\n")):
        cid, owner_, started = (line.split(" ") + ["", ""])[:3]
        rows.append((cid, owner_, started))
    return rows


def remove_stale_containers(all_owners: bool = False) -> int:
    """Remove sandbox containers whose owner process on this host is gone (or every one of them)."""
    stale = []
    host = socket.gethostname()
    for cid, owner, started in list_containers():
        h, _, pid = owner.rpartition(":")
        gone = h != host or not pid.isdigit() or not _alive(int(pid))
        reused = not gone and started and started != _start_time(int(pid))
        if all_owners or gone or reused:
            stale.append(cid)
    if stale:
        subprocess.run(["docker", "rm", "-f", *stale], capture_output=True)
    return len(stale)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def hardening_flags(cfg: SandboxConfig, uid: int) -> list[str]:
    """The ``docker run`` options every sandbox container gets (also used by bench/sandbox.py)."""
    tmp_exec = "exec" if cfg.tmpfs_exec else "noexec"
    cmd = [
        "--label", f"{LABEL}=1", "--label", f"{OWNER_LABEL}={_owner()}",
        "--label", f"{STARTED_LABEL}={_start_time(os.getpid())}",
        "--network", "none", "--read-only",
        "--tmpfs", f"/tmp:rw,nosuid,nodev,{tmp_exec},size={cfg.tmpfs_mb}m,nr_inodes={cfg.tmpfs_inodes},mode=1777",
        "--tmpfs", f"/dev/shm:rw,nosuid,nodev,noexec,size=16m,nr_inodes={cfg.tmpfs_inodes // 4},mode=1777",
        "--ipc", "private",
        "--pids-limit", str(cfg.pids),
        "--memory", f"{cfg.memory_mb}m", "--memory-swap", f"{cfg.memory_mb}m",
        "--cpus", str(cfg.cpus),
        "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
        "--user", f"{uid}:{uid}",
        "--hostname", "sandbox", "--workdir", "/tmp", "--log-driver", "none",
    ]  # fmt: skip
    cmd += ["--cgroup-parent", cfg.cgroup_parent] if cfg.cgroup_parent else []
    return cmd + (["--runtime", cfg.runtime] if cfg.runtime else [])


_uids = itertools.count(random.randrange(200_000, 900_000, 1000))


# -- one sandbox --------------------------------------------------------------------------------
class Sandbox:
    """A worker process behind a pipe: ``docker run -i`` here, bwrap in sandbox/bwrap.py."""

    backend = "docker"

    def __init__(self, cfg: SandboxConfig):
        self.cfg = cfg
        self.uid = next(_uids)
        self.name = f"rlvr-sbx-{os.getpid()}-{self.uid}"
        self.retire = ""  # set when the worker asks to be replaced after answering
        self.jobs = 0
        self._chan = ""  # host directory of the two FIFOs while connecting (docker backend)
        self._in: int | None = None  # FIFO we write jobs to (None: the process's stdin)
        self._death: int | None = None  # readable at end of file when the sandbox process ended
        self._fifo_out: int | None = None
        self._fd_lock = threading.Lock()
        self._open_channel()
        try:
            self.proc = self._spawn()
            self._out = self._out if self._chan else self.proc.stdout.fileno()
            if self._chan:
                self._death = self.proc.stdout.fileno()
            self.info, _ = self._read_frame(time.monotonic() + cfg.start_timeout_s)
            self._close_channel_dir()
        except Exception:
            self.destroy()
            raise

    # -- the frame channel: two FIFOs, unlinked once connected ----------------------------------
    def _open_channel(self) -> None:
        """Frames travel over two FIFOs in a host directory mounted read-only into the container, so
        they go process to process instead of through the docker CLI, dockerd and containerd-shim
        (one copy, not three, and no wake-up of three more processes per frame). The worker opens
        them before it reports ready; the host then unlinks them, before any job runs, so no job can
        reach them (and /proc/1/fd is closed to jobs: the worker is non-dumpable)."""
        self._chan = tempfile.mkdtemp(prefix="rlvr-chan-")
        for name in ("in", "out"):
            path = os.path.join(self._chan, name)
            os.mkfifo(path, 0o600)
            if os.geteuid() == 0:
                os.chown(path, self.uid, self.uid)
            else:
                os.chmod(path, 0o666)  # docker maps no uid here; the directory stays private to this run
        os.chmod(self._chan, 0o711)
        self._out = self._fifo_out = os.open(
            os.path.join(self._chan, "out"), os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
        )

    def _close_channel_dir(self) -> None:
        if not self._chan:
            return
        fd = os.open(os.path.join(self._chan, "in"), os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        os.set_blocking(fd, True)
        self._in = fd
        self._remove_channel_dir()

    def _remove_channel_dir(self) -> None:
        if self._chan and os.path.isdir(self._chan):
            for name in ("in", "out"):
                try:
                    os.unlink(os.path.join(self._chan, name))
                except FileNotFoundError:
                    pass
            os.rmdir(self._chan)

    def command(self) -> list[str]:
        cfg = self.cfg
        cmd = [
            "docker", "run", "-i", "--rm", "--pull", "never", "--name", self.name,
            *hardening_flags(cfg, self.uid),
            "--env", f"RLVR_PRELOAD={','.join(cfg.preload)}",
            "--mount", f"type=bind,src={self._chan},dst=/run/rlvr,readonly", "--env", "RLVR_CHANNEL=/run/rlvr",
        ]  # fmt: skip
        if cfg.warmup:
            cmd += ["--env", f"RLVR_WARMUP={cfg.warmup}"]
        return cmd + [cfg.image, "python3", "-s", "/opt/sandbox/worker.py"]

    def _spawn(self) -> subprocess.Popen:
        # The docker CLI gets a minimal environment: nothing of the service's (secrets) goes near it.
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "DOCKER_HOST", "DOCKER_CONFIG", "HOME")}
        return subprocess.Popen(
            self.command(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            env=env,
        )

    # -- frames --------------------------------------------------------------------------------
    def _read_exact(self, n: int, deadline: float) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise SandboxError(f"sandbox {self.name} did not answer in time")
            fds = [self._out] + ([self._death] if self._death is not None else [])
            ready, _, _ = select.select(fds, [], [], left)
            if self._out in ready:
                try:
                    chunk = os.read(self._out, min(n - len(buf), 1 << 20))
                except BlockingIOError:
                    continue
                if not chunk:
                    raise SandboxError(f"sandbox {self.name} exited ({self._exit_reason()})")
                buf += chunk
            elif ready and not os.read(self._death, 4096):
                raise SandboxError(f"sandbox {self.name} exited ({self._exit_reason()})")
        return bytes(buf)

    def _exit_reason(self) -> str:
        try:
            code = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            return "output closed"
        ready, _, _ = select.select([self.proc.stderr], [], [], 0)
        err = os.read(self.proc.stderr.fileno(), 4000).decode(errors="replace").strip() if ready else ""
        return f"status {code}" + (f": {err[-1500:]}" if err else "")

    def _read_frame(self, deadline: float) -> tuple[dict, list[bytes]]:
        (n,) = struct.unpack(">I", self._read_exact(4, deadline))
        if n > 1 << 20:
            raise SandboxError(f"sandbox {self.name} sent a {n}-byte header: protocol broken")
        header = json.loads(self._read_exact(n, deadline))
        sizes = [int(s) for s in header.get("sizes", ())]
        if sum(sizes) > MAX_REPLY:
            raise SandboxError(f"sandbox {self.name} sent a {sum(sizes)}-byte reply: protocol broken")
        return header, [self._read_exact(s, deadline) if s else b"" for s in sizes]

    def run(self, job: Job) -> Result:
        code, stdin = job.code.encode("utf-8", "surrogatepass"), job.stdin.encode("utf-8", "surrogatepass")
        header = {"id": job.id, "timeout": job.timeout_s, "mode": job.mode, "limits": job_limits(job, self.cfg),
                  "sizes": [len(code), len(stdin)]}  # fmt: skip
        head = json.dumps(header).encode()
        self.jobs += 1
        try:
            self._send(struct.pack(">I", len(head)) + head + code + stdin)
        except (BrokenPipeError, OSError) as e:
            raise SandboxError(f"sandbox {self.name} is gone ({e}): it is being replaced") from None
        reply, blobs = self._read_frame(time.monotonic() + job.timeout_s + self.cfg.grace_s)
        if "error" in reply:
            raise SandboxError(reply["error"])
        self.retire = reply.get("retire") or ""
        out, err = (blobs + [b"", b""])[:2]
        fields = {k: v for k, v in reply.items() if k in Result.__dataclass_fields__}
        return Result(**fields, stdout=out.decode(errors="replace"), stderr=err.decode(errors="replace"))

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _send(self, data: bytes) -> None:
        if self._in is None:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
            return
        view = memoryview(data)
        while view:
            view = view[os.write(self._in, view) :]

    def _close_fds(self) -> None:
        with self._fd_lock:  # destroy() may run twice (close() and a failing run()): never close twice
            fds, self._in = [self._in, self._fifo_out], None
            self._fifo_out = None
        for fd in fds:
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        try:
            self._remove_channel_dir()
        except OSError:
            pass

    def destroy(self, remove: bool = True) -> None:
        """Stop the sandbox; ``remove=False`` when the caller removes the container itself."""
        if getattr(self, "proc", None) is None:
            self._close_fds()
            return
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        if remove:
            subprocess.run(["docker", "rm", "-f", self.name], capture_output=True)
        self._reap()
        self._close_fds()

    def _reap(self) -> None:
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for f in (self.proc.stdout, self.proc.stderr):
            f.close()


Container = Sandbox  # the name verifiers/ and older code used


def job_limits(job: Job, cfg: SandboxConfig) -> dict:
    """The rlimits a job runs under, with the pool's output cap (lowered, never raised, by the job)."""
    limits = asdict(job.limits)
    asked = limits["output_bytes"]
    limits["output_bytes"] = min(asked, cfg.output_bytes) if asked > 0 else cfg.output_bytes
    return limits


def _sandbox_class(cfg: SandboxConfig) -> type[Sandbox]:
    if cfg.backend == "docker":
        return Sandbox
    if cfg.backend == "bwrap":
        from sandbox.bwrap import BwrapSandbox

        return BwrapSandbox
    raise SandboxError(f"unknown sandbox backend {cfg.backend!r}: choose one of {', '.join(BACKENDS)}")


# -- the pool -----------------------------------------------------------------------------------
_live_pools: weakref.WeakSet[SandboxPool] = weakref.WeakSet()


@atexit.register
def _close_live_pools() -> None:  # an interpreter exit without close() still removes the sandboxes
    for pool in list(_live_pools):
        pool.close()


class SandboxPool:
    """Thread-safe: ``run`` may be called from many threads; each sandbox runs one job at a time."""

    def __init__(self, config: SandboxConfig | None = None):
        self.cfg = config or SandboxConfig()
        self._cls = _sandbox_class(self.cfg)
        if not 0 < self.cfg.output_bytes <= MAX_OUTPUT_CAP:
            raise SandboxError(f"output cap {self.cfg.output_bytes} bytes: choose 1 to {MAX_OUTPUT_CAP} bytes")
        if not self.cfg.image and self.cfg.backend == "docker":
            from sandbox.image import image_tag

            self.cfg.image = image_tag()
        self._idle: queue.Queue[Sandbox] = queue.Queue()
        self._all: set[Sandbox] = set()
        self._lock = threading.Lock()
        self._helpers: set[threading.Thread] = set()
        self._waiters = 0
        self._closed = False
        self._closing = threading.Event()  # wakes replacement threads that are backing off
        self.startup_s = 0.0
        self.replaced = 0
        self._watchdog: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------------------
    def start(self) -> SandboxPool:
        t0 = time.monotonic()
        self._cls.preflight(self.cfg) if hasattr(self._cls, "preflight") else self._docker_preflight()
        errors: list[Exception] = []
        threads = [threading.Thread(target=self._add, args=(errors,)) for _ in range(self.cfg.size)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            self.close()
            raise SandboxError(f"could not start the sandbox pool: {errors[0]}")
        _live_pools.add(self)
        self.startup_s = time.monotonic() - t0
        self._watchdog = threading.Thread(target=self._watch, daemon=True, name="sandbox-watchdog")
        self._watchdog.start()
        return self

    def _watch(self) -> None:
        """Replace idle sandboxes that died (killed, OOM, the engine restarted) without waiting for a job
        to find them, so the pool heals, and ``healthy`` tells the truth, while no request comes."""
        while not self._closing.wait(WATCH_S):
            with self._lock:
                sandboxes = list(self._all)
            for c in sandboxes:
                if c.alive():
                    continue
                with self._idle.mutex:  # only an idle one: a busy one's job sees the death and replaces it
                    try:
                        self._idle.queue.remove(c)
                    except ValueError:
                        continue
                self._replace(c, "found dead while idle")

    def _docker_preflight(self) -> None:
        if not docker_available():
            raise SandboxError("Docker engine not reachable (docker info failed): run `make setup` or start dockerd")
        if subprocess.run(["docker", "image", "inspect", self.cfg.image], capture_output=True).returncode != 0:
            raise SandboxError(f"sandbox image {self.cfg.image} is missing: run `make image`")
        removed = remove_stale_containers()
        if removed:
            log.warning("removed %d sandbox container(s) left behind by a crashed run", removed)

    def _add(self, errors: list[Exception] | None = None) -> bool:
        try:
            c = self._cls(self.cfg)
        except Exception as e:  # noqa: BLE001 - reported to the caller
            log.error("sandbox failed to start: %s", e)
            if errors is not None:
                errors.append(e)
            return False
        with self._lock:
            if self._closed:
                closed = True
            else:
                closed = False
                self._all.add(c)
        if closed:
            c.destroy()
            return True
        self._idle.put(c)
        return True

    def close(self) -> None:
        """Remove every sandbox (idle or busy: a busy job returns ``sandbox_error``). Idempotent."""
        with self._lock:
            self._closed = True
            self._closing.set()
            sandboxes = list(self._all)
            self._all.clear()
            helpers = list(self._helpers)
        _live_pools.discard(self)
        if sandboxes and self.cfg.backend == "docker":
            subprocess.run(["docker", "rm", "-f", *[c.name for c in sandboxes]], capture_output=True)
        for c in sandboxes:
            c.destroy(remove=self.cfg.backend != "docker")
        for t in helpers:
            t.join(timeout=30)
        if self.cfg.backend == "docker" and self.startup_s:
            leftovers = [cid for cid, *_ in list_containers(_owner())]
            if leftovers and not _live_pools:  # another pool of this process may own them
                subprocess.run(["docker", "rm", "-f", *leftovers], capture_output=True)

    def __enter__(self) -> SandboxPool:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def size(self) -> int:
        return self.cfg.size

    @property
    def ready(self) -> bool:
        with self._lock:
            return not self._closed and len(self._all) == self.cfg.size

    @property
    def healthy(self) -> bool:
        """At least one sandbox is up: jobs can run (False while, e.g., the Docker engine is down)."""
        with self._lock:
            return not self._closed and any(c.alive() for c in self._all)

    def container_names(self) -> list[str]:
        with self._lock:
            return [c.name for c in self._all]

    def stats(self) -> dict:
        with self._lock:
            return {"size": self.cfg.size, "live": len(self._all), "idle": self._idle.qsize(),
                    "waiters": self._waiters, "replaced": self.replaced}  # fmt: skip

    # -- running ------------------------------------------------------------------------------------
    def run(self, job: Job, wait_s: float | None = None) -> Result:
        """Run one job. Waits up to ``wait_s`` (default: the job's timeout) for a free sandbox; raises
        PoolSaturated when none became free in time. Infrastructure failures during the job come back
        as ``Result.sandbox_error`` (and the sandbox is replaced), never as the program's fault."""
        c = self._acquire(job.timeout_s if wait_s is None else wait_s)
        try:
            result = c.run(job)
        except (SandboxError, OSError, ValueError) as e:
            self._replace(c, str(e))
            return Result(sandbox_error=str(e), id=job.id)
        except BaseException:  # e.g. KeyboardInterrupt mid-job: the worker's state is unknown
            self._replace(c, "interrupted while running a job")
            raise
        if c.retire:
            self._replace(c, c.retire)
        else:
            self._idle.put(c)
        return result

    def _acquire(self, wait_s: float) -> Sandbox:
        with self._lock:
            if self._closed:
                raise SandboxError("the sandbox pool is shut down")
            if self._waiters >= self.cfg.max_waiters:
                raise PoolSaturated(
                    f"sandbox pool saturated: {self._waiters} callers already waiting for {self.size} sandboxes"
                    f" (max_waiters={self.cfg.max_waiters}); send fewer concurrent jobs or raise"
                    " SandboxConfig.size / max_waiters"
                )
            self._waiters += 1
        deadline = time.monotonic() + max(wait_s, 0.0)
        try:
            while True:
                try:
                    c = self._idle.get(timeout=max(deadline - time.monotonic(), 0.001))
                except queue.Empty:
                    live = len(self._all)
                    hint = (
                        "the pool is saturated; retry later, pass a longer wait_s or raise SandboxConfig.size"
                        if live == self.size
                        else f"only {live} of {self.size} sandboxes are up (replacements failing? see the log)"
                    )
                    raise PoolSaturated(
                        f"no sandbox became free within {wait_s:.1f} s (pool size {self.size},"
                        f" {self._waiters} callers waiting): {hint}"
                    ) from None
                if c.alive():
                    return c
                self._replace(c, "found dead while idle")  # its job never started: try the next one
                if self._closed:
                    raise SandboxError("the sandbox pool is shut down")
        finally:
            with self._lock:
                self._waiters -= 1

    def _replace(self, c: Sandbox, why: str) -> None:
        """Destroy ``c`` and start a new sandbox in the background, retrying until it comes up."""
        log.warning("replacing sandbox %s: %s", c.name, why)
        with self._lock:
            self._all.discard(c)
            self.replaced += 1
            if self._closed:
                threading.Thread(target=c.destroy, daemon=True).start()
                return
            t = threading.Thread(target=self._replacement, args=(c,), daemon=True, name=f"replace-{c.name}")
            self._helpers.add(t)
        t.start()

    def _replacement(self, old: Sandbox) -> None:
        try:
            old.destroy()
            delay = 0.5
            while not self._closed and not self._add():
                self._closing.wait(delay)
                delay = min(delay * 2, MAX_BACKOFF_S)
        finally:
            with self._lock:
                self._helpers.discard(threading.current_thread())
