"""A warm pool of hardened Docker containers, each running ``worker.py`` (one job at a time).

What is covered (per container): no network, read-only root filesystem, a small tmpfs for scratch,
pids limit, memory limit with swap equal to it, CPU quota, every capability dropped, no-new-privileges,
Docker's default seccomp profile, a distinct unprivileged uid per container (so RLIMIT_NPROC, which
the kernel counts per uid, is effectively per container), a label naming the owner process. No host
path and never the Docker socket is mounted. Per job: see worker.py (fresh process, rlimits, kill of
every process at the end, wipe of every writable place).

What is not covered: kernel exploits (containers share the host kernel; use gVisor's runsc as the
runtime, ``SandboxConfig.runtime``, where that matters), and side channels between containers.

The host talks to each worker through ``docker run -i``'s stdin/stdout, so there is no network and
no ``docker exec`` per job. A container that dies or stops answering is replaced and its in-flight
job returns a result with ``sandbox_error`` set.
"""

from __future__ import annotations

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
import threading
import time
from dataclasses import asdict, dataclass, field

log = logging.getLogger(__name__)

LABEL = "rlvr.sandbox"
OWNER_LABEL = "rlvr.owner"
GRACE_S = 5.0  # how long past a job's timeout the worker may take to answer before it is declared dead


class SandboxError(RuntimeError):
    """Infrastructure failure: not the program's fault."""


class PoolSaturated(SandboxError):
    """No container became free before the caller's deadline (backpressure)."""


@dataclass
class Limits:
    cpu_s: int = 0  # 0: timeout + 1
    memory_mb: int = 1024  # address space of the job's process
    fsize_mb: int = 16
    nproc: int = 64
    nofile: int = 256
    output_bytes: int = 65536  # kept of each of stdout and stderr


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
    output_limit_exceeded: bool = False
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
    memory_mb: int = 1536  # container memory limit (swap equal to it: no swap)
    cpus: float = 1.0
    pids: int = 128
    tmpfs_mb: int = 64
    preload: tuple[str, ...] = ("sympy", "math_verify", "latex2sympy2_extended")
    warmup: str = ""  # code run once in each worker after the preloads (builds lazy state before forking)
    max_waiters: int = 4096  # callers allowed to queue for a container; beyond that: PoolSaturated at once
    start_timeout_s: float = 60.0
    runtime: str = ""  # e.g. "runsc" for gVisor where installed


def _owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def docker_available() -> bool:
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def remove_stale_containers(all_owners: bool = False) -> int:
    """Remove sandbox containers whose owner process on this host is gone (or every one of them)."""
    out = subprocess.run(
        ["docker", "ps", "-a", "--filter", f"label={LABEL}", "--format", '{{.ID}} {{.Label "' + OWNER_LABEL + '"}}'],
        capture_output=True,
        text=True,
    ).stdout.split("\n")
    stale = []
    host = socket.gethostname()
    for line in filter(None, out):
        cid, _, owner = line.partition(" ")
        h, _, pid = owner.rpartition(":")
        if all_owners or h != host or not pid.isdigit() or not _alive(int(pid)):
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


_uids = itertools.count(random.randrange(200_000, 900_000, 1000))


class Container:
    """One ``docker run -i`` process and its worker."""

    def __init__(self, cfg: SandboxConfig, image: str):
        self.uid = next(_uids)
        self.name = f"rlvr-sbx-{os.getpid()}-{self.uid}"
        cmd = [
            "docker", "run", "-i", "--rm", "--pull", "never", "--name", self.name,
            "--label", f"{LABEL}=1", "--label", f"{OWNER_LABEL}={_owner()}",
            "--network", "none", "--read-only",
            "--tmpfs", f"/tmp:rw,nosuid,nodev,size={cfg.tmpfs_mb}m,mode=1777",
            "--shm-size", "16m",
            "--pids-limit", str(cfg.pids),
            "--memory", f"{cfg.memory_mb}m", "--memory-swap", f"{cfg.memory_mb}m",
            "--cpus", str(cfg.cpus),
            "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
            "--user", f"{self.uid}:{self.uid}",
            "--hostname", "sandbox", "--workdir", "/tmp", "--log-driver", "none",
            "--env", f"RLVR_PRELOAD={','.join(cfg.preload)}",
        ]  # fmt: skip
        if cfg.warmup:
            cmd += ["--env", f"RLVR_WARMUP={cfg.warmup}"]
        if cfg.runtime:
            cmd += ["--runtime", cfg.runtime]
        cmd += [image, "python3", "-s", "/opt/sandbox/worker.py"]
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
        )
        self._out = self.proc.stdout.fileno()
        self.info = self._read_frame(time.monotonic() + cfg.start_timeout_s)

    def _read_exact(self, n: int, deadline: float) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise SandboxError(f"sandbox {self.name} did not answer in time")
            ready, _, _ = select.select([self._out], [], [], left)
            if ready:
                chunk = os.read(self._out, n - len(buf))
                if not chunk:
                    err = self.proc.stderr.read(4000).decode(errors="replace") if self.proc.poll() is not None else ""
                    raise SandboxError(f"sandbox {self.name} exited ({self.proc.returncode}): {err.strip()}")
                buf += chunk
        return bytes(buf)

    def _read_frame(self, deadline: float) -> dict:
        (n,) = struct.unpack(">I", self._read_exact(4, deadline))
        return json.loads(self._read_exact(n, deadline))

    def run(self, job: Job) -> Result:
        frame = {"id": job.id, "code": job.code, "stdin": job.stdin, "timeout": job.timeout_s, "mode": job.mode,
                 "limits": asdict(job.limits)}  # fmt: skip
        data = json.dumps(frame).encode()
        try:
            self.proc.stdin.write(struct.pack(">I", len(data)) + data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise SandboxError(f"sandbox {self.name} is gone: {e}") from None
        reply = self._read_frame(time.monotonic() + job.timeout_s + GRACE_S)
        if "error" in reply:
            raise SandboxError(reply["error"])
        return Result(**{k: v for k, v in reply.items() if k in Result.__dataclass_fields__})

    def alive(self) -> bool:
        return self.proc.poll() is None

    def destroy(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        subprocess.run(["docker", "rm", "-f", self.name], capture_output=True)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        for f in (self.proc.stdout, self.proc.stderr):
            f.close()


class SandboxPool:
    """Thread-safe: ``run`` may be called from many threads; each container runs one job at a time."""

    def __init__(self, config: SandboxConfig | None = None):
        self.cfg = config or SandboxConfig()
        if not self.cfg.image:
            from sandbox.image import image_tag

            self.cfg.image = image_tag()
        self._idle: queue.Queue[Container] = queue.Queue()
        self._all: set[Container] = set()
        self._lock = threading.Lock()
        self._waiters = 0
        self._closed = False
        self.startup_s = 0.0
        self.replaced = 0

    # -- lifecycle ----------------------------------------------------------------------------------
    def start(self) -> SandboxPool:
        t0 = time.monotonic()
        if not docker_available():
            raise SandboxError("Docker engine not reachable (docker info failed): run `make setup` or start dockerd")
        if subprocess.run(["docker", "image", "inspect", self.cfg.image], capture_output=True).returncode != 0:
            raise SandboxError(f"sandbox image {self.cfg.image} is missing: run `make image`")
        remove_stale_containers()
        errors: list[Exception] = []
        threads = [threading.Thread(target=self._add, args=(errors,)) for _ in range(self.cfg.size)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            self.close()
            raise SandboxError(f"could not start the sandbox pool: {errors[0]}")
        self.startup_s = time.monotonic() - t0
        return self

    def _add(self, errors: list[Exception] | None = None) -> None:
        try:
            c = Container(self.cfg, self.cfg.image)
        except Exception as e:  # noqa: BLE001 - reported to the caller
            log.error("sandbox container failed to start: %s", e)
            if errors is not None:
                errors.append(e)
            return
        with self._lock:
            if self._closed:
                c.destroy()
                return
            self._all.add(c)
        self._idle.put(c)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            containers = list(self._all)
            self._all.clear()
        for c in containers:
            c.destroy()

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

    def container_names(self) -> list[str]:
        with self._lock:
            return [c.name for c in self._all]

    # -- running ------------------------------------------------------------------------------------
    def run(self, job: Job, wait_s: float | None = None) -> Result:
        """Run one job. Waits up to ``wait_s`` (default: the job's timeout) for a free container."""
        c = self._acquire(job.timeout_s if wait_s is None else wait_s)
        try:
            result = c.run(job)
        except (SandboxError, OSError, ValueError) as e:
            self._replace(c)
            return Result(sandbox_error=str(e), id=job.id)
        self._idle.put(c)
        return result

    def _acquire(self, wait_s: float) -> Container:
        with self._lock:
            if self._closed:
                raise SandboxError("the sandbox pool is shut down")
            if self._waiters >= self.cfg.max_waiters:
                raise PoolSaturated(f"sandbox queue is full ({self._waiters} callers waiting)")
            self._waiters += 1
        try:
            return self._idle.get(timeout=max(wait_s, 0.001))
        except queue.Empty:
            raise PoolSaturated(f"no sandbox became free within {wait_s:.1f} s (pool size {self.size})") from None
        finally:
            with self._lock:
                self._waiters -= 1

    def _replace(self, c: Container) -> None:
        log.warning("replacing sandbox container %s", c.name)
        with self._lock:
            self._all.discard(c)
            self.replaced += 1
        threading.Thread(target=c.destroy, daemon=True).start()
        if not self._closed:
            threading.Thread(target=self._add, daemon=True).start()
