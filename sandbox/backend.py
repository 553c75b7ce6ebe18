"""What every sandbox backend implements, and the types that cross it (jobs, limits, results, config).

A backend is a class (registered by name in sandbox/backends/table.py, ``BACKENDS``) whose instances are one
started sandbox each: a worker process (in_sandbox/worker.py) behind the frame channel (sandbox/backends/framing.py).
The pool above knows nothing else about it:

    cls.preflight(cfg)          check the host can run this backend (raise SandboxError saying why not)
                                and remove what crashed runs left behind
    cls(cfg)                    start one sandbox and wait until its worker reported ready
    sandbox.run(job) -> Result  one job over the frame channel (SandboxError: the sandbox is broken)
    sandbox.alive() -> bool     cheap: called by the watchdog every WATCH_S for every sandbox
    sandbox.destroy()           stop and remove it (idempotent; safe from any thread)
    cls.remove_stale(mine)      remove sandboxes whose owner process is gone (mine: this process's own)

Three backends today: sandbox/backends/docker.py (containers through the Docker SDK), sandbox/backends/podman.py (the
same containers from a rootless Podman) and sandbox/backends/bwrap.py (bubblewrap, for hosts without a container
engine). Docker's and bwrap's know nothing of each other; both subclass ``WorkerSandbox``
(below) for what they share: identity, the worker's environment, the ready frame, ``run``.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import socket
import struct
import time
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Protocol

from sandbox.deadline import Deadline

GRACE_S = 5.0  # how long past a job's timeout the worker may take to answer before it is declared dead
# The output policy: a job may write at most this many bytes to stdout and stderr *together*; the
# worker kills it the moment it writes more and reports ``output_limit_exceeded`` (worker.run_job).
# The pool sends its cap with every job (``job_limits``), so every program any verifier runs, in any
# mode and on either backend, is held to the same number; a job may ask for less, never for more.
OUTPUT_CAP = 1 << 20
MAX_OUTPUT_CAP = 16 << 20  # replies above framing.MAX_REPLY are refused as broken; stay well below it


class SandboxError(RuntimeError):
    """Infrastructure failure: not the program's fault."""


class NoAnswer(SandboxError):
    """The worker did not answer by the deadline (frozen, or still cleaning up after the program)."""


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
    lane: str = ""  # the pool's lane whose warm workers suit this job (sandbox/lanes.py, Lane); "": the pool's own
    id: str = ""
    # the request's deadline (sandbox/deadline.py); the pool gives the program what is left of it, less
    # the worker's time to answer, and never more than timeout_s. None: timeout_s + the pool's grace.
    deadline: Deadline | None = None


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
    time_limit_s: float = 0.0  # the wall time the program was given (the pool fills it in)

    @property
    def ok(self) -> bool:
        return self.sandbox_error is None and not self.timed_out and self.exit_code == 0


@dataclass
class SandboxConfig:
    size: int = field(default_factory=lambda: os.cpu_count() or 1)
    image: str = ""  # default: the tag the current sources describe (sandbox.image.python.image_tag())
    memory_mb: int = 1536  # sandbox memory limit (swap equal to it: no swap)
    cpus: float = 1.0
    pids: int = 128
    tmpfs_mb: int = 64
    tmpfs_inodes: int = 16384  # files a job may create in /tmp (bounds the wipe after it, too)
    preload: tuple[str, ...] = ("sympy", "math_verify", "latex2sympy2_extended")
    warmup: str = ""  # code run once in each worker after the preloads (builds lazy state before forking)
    max_waiters: int = 4096  # callers allowed to queue for a sandbox; beyond that: PoolSaturated at once
    max_wait_s: float = 300.0  # a job without a deadline waits this long for a sandbox (never its own timeout)
    start_timeout_s: float = 60.0
    runtime: str = ""  # e.g. "runsc" for gVisor where installed
    cgroup_parent: str = ""  # docker: the containers' parent cgroup ("/": each competes for CPU like one host process)
    grace_s: float = GRACE_S  # past a job's timeout, how long its worker may take before it is declared dead
    backend: str = "docker"  # a key of sandbox/backends/table.py's BACKENDS (docs/sandbox.md compares them)
    python: str = "/usr/bin/python3"  # bwrap: the host interpreter the worker runs on
    pylibs: str = ""  # bwrap: host directory shown read-only as /opt/pylibs (default: the image's, else this venv's)
    # bwrap: the root file system whose /usr (and /bin, /lib links) the sandbox sees. "": the sandbox image's
    # (var/cache/rootfs-*, from `make image`) when it is there, else the host's; "/": the host's
    rootfs: str = ""
    output_bytes: int = OUTPUT_CAP  # the output cap, applied to every job this pool runs (see job_limits)
    tmpfs_exec: bool = False  # docker: /tmp without noexec (the toolchain pool runs compiled binaries there)


class Backend(Protocol):
    """One started sandbox (see the module docstring for the contract)."""

    backend: ClassVar[str]
    name: str
    info: dict  # the worker's ready frame: pid, uid, preloaded modules
    jobs: int  # jobs sent to it so far
    retire: str  # set when the worker asked to be replaced after its last answer

    def __init__(self, cfg: SandboxConfig) -> None: ...

    @classmethod
    def preflight(cls, cfg: SandboxConfig) -> None: ...

    @classmethod
    def remove_stale(cls, mine: bool = False) -> int: ...

    def run(self, job: Job) -> Result: ...

    def alive(self) -> bool: ...

    def destroy(self) -> None: ...


class WorkerSandbox:
    """What both backends share (each subclasses this, never the other): a sandbox's identity, the
    worker's environment, waiting for its ready frame, and ``run`` over the frame channel ``self.chan``."""

    backend: ClassVar[str]
    chan: Any  # sandbox.backends.framing.FrameChannel, set by the backend once the worker is started

    def _identify(self, cfg: SandboxConfig) -> None:
        self.cfg = cfg
        self.uid = next_uid()
        self.name = f"rlvr-sbx-{os.getpid()}-{self.uid}"
        self.retire, self.jobs, self.info = "", 0, {}

    def worker_env(self) -> dict[str, str]:
        """What the worker reads at start: the modules to preload and the warm-up code."""
        env = {"RLVR_PRELOAD": ",".join(self.cfg.preload)}
        return env | ({"RLVR_WARMUP": self.cfg.warmup} if self.cfg.warmup else {})

    def _await_ready(self) -> None:
        """Wait for the worker's ready frame (pid, uid, preloaded modules), at most ``start_timeout_s``."""
        self.info, _ = self.chan.read_frame(time.monotonic() + self.cfg.start_timeout_s)

    def run(self, job: Job) -> Result:
        self.jobs += 1
        reply, blobs = self.chan.call(job_frame(job, self.cfg), answer_by(job, self.cfg))
        result, self.retire = job_result(reply, blobs)
        return result


# -- the job <-> frame mapping both backends send over their channel -----------------------------
def job_limits(job: Job, cfg: SandboxConfig) -> dict:
    """The rlimits a job runs under, with the pool's output cap (lowered, never raised, by the job)."""
    limits = asdict(job.limits)
    asked = limits["output_bytes"]
    limits["output_bytes"] = min(asked, cfg.output_bytes) if asked > 0 else cfg.output_bytes
    return limits


def job_frame(job: Job, cfg: SandboxConfig) -> bytes:
    """The frame that carries ``job`` to a worker (format: in_sandbox/worker.py)."""
    code, stdin = job.code.encode("utf-8", "surrogatepass"), job.stdin.encode("utf-8", "surrogatepass")
    header = {"id": job.id, "timeout": job.timeout_s, "mode": job.mode, "limits": job_limits(job, cfg),
              "sizes": [len(code), len(stdin)]}  # fmt: skip
    head = json.dumps(header).encode()
    return struct.pack(">I", len(head)) + head + code + stdin


def answer_by(job: Job, cfg: SandboxConfig) -> float:
    """The monotonic instant by which a worker must have answered ``job`` (else it is declared dead)."""
    return job.deadline.at if job.deadline is not None else time.monotonic() + job.timeout_s + cfg.grace_s


def job_result(reply: dict, blobs: list[bytes]) -> tuple[Result, str]:
    """(the Result, why the worker asks to be retired or "") of a worker's reply frame."""
    if "error" in reply:
        raise SandboxError(reply["error"])
    out, err = (blobs + [b"", b""])[:2]
    fields = {k: v for k, v in reply.items() if k in Result.__dataclass_fields__}
    result = Result(**fields, stdout=out.decode(errors="replace"), stderr=err.decode(errors="replace"))
    return result, reply.get("retire") or ""


# -- ownership: which process a sandbox belongs to (labels, cgroup names) ------------------------
_uids = itertools.count(random.randrange(200_000, 900_000, 1000))


def next_uid() -> int:
    """A distinct unprivileged uid per sandbox (RLIMIT_NPROC counts per uid: per sandbox, then)."""
    return next(_uids)


def owner_host() -> str:
    """Who judges this process's sandboxes: the host name, or RLVR_SANDBOX_OWNER where several service
    containers share one engine and one host name (host networking), each being PID 1 of its own."""
    return os.environ.get("RLVR_SANDBOX_OWNER") or socket.gethostname()


def owner() -> str:
    return f"{owner_host()}:{os.getpid()}"


def start_time(pid: int) -> str:
    """A process's start time (clock ticks since boot): tells a live owner from a reused pid."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[19]
    except (OSError, IndexError):
        return ""


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
