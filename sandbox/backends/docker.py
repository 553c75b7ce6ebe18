"""The Docker backend: each sandbox is a hardened container, its lifecycle driven through the Docker SDK.

Per container: no network, read-only root filesystem, a small tmpfs for scratch (size and inode count
bounded), pids limit, memory limit with swap equal to it, CPU quota, every capability dropped (the
worker needs none), no-new-privileges, Docker's default seccomp profile, a distinct unprivileged uid
per container (so RLIMIT_NPROC, which the kernel counts per uid, is effectively per container), labels
naming the owner process. No host path but the frame channel's directory, and never the Docker socket,
is mounted. Per job: see worker.py.

Lifecycle (SDK, one HTTP call each to dockerd): create, attach, start, kill/remove, list by label.
The attach holds the container's stdin open (``StdinOnce``: when this process dies the connection
drops, the worker reads end of file and exits, and ``AutoRemove`` deletes the container) and carries
its stderr; dockerd closes it when the container ends, which is how a death is seen at once. Jobs
never go through dockerd: frames travel over two FIFOs (sandbox/backends/framing.py ``FifoPair``).
"""

from __future__ import annotations

import logging
import os
import select
import socket
import struct
import threading
from collections.abc import Callable

import docker
import docker.errors
from docker.types import LogConfig, Mount

from sandbox.backend import (
    SandboxConfig,
    SandboxError,
    WorkerSandbox,
    owner,
    owner_host,
    pid_alive,
    start_time,
)
from sandbox.backends.framing import FifoPair, FrameChannel
from sandbox.image.python import WORKER_CMD

log = logging.getLogger(__name__)

LABEL = "rlvr.sandbox"
OWNER_LABEL = "rlvr.owner"  # "<hostname>:<pid>" of the process that owns the container
STARTED_LABEL = "rlvr.owner_started"  # that process's start time (clock ticks), against pid reuse
_clients: dict[str, docker.DockerClient] = {}
_client_lock = threading.Lock()


def _docker_engine() -> docker.DockerClient:
    try:
        return docker.from_env(max_pool_size=64, timeout=60)
    except docker.errors.DockerException as e:
        raise SandboxError(f"Docker engine not reachable ({e}): run `make setup` or start dockerd") from None


# engine name -> how to connect to it: "docker" (DOCKER_HOST honoured); sandbox/backends/podman.py adds "podman"
# (the same API, served by `podman system service` on a user's socket)
ENGINES: dict[str, Callable[[], docker.DockerClient]] = {"docker": _docker_engine}


def client(engine: str = "docker") -> docker.DockerClient:
    """One SDK client per engine and process; its connection pool serves every thread."""
    with _client_lock:
        if engine not in _clients:
            _clients[engine] = ENGINES[engine]()
        return _clients[engine]


def forget_client(engine: str) -> None:
    """Drop the cached client of ``engine`` (its API moved or was not up yet)."""
    with _client_lock:
        _clients.pop(engine, None)


def docker_available(engine: str = "docker") -> bool:
    try:
        return bool(client(engine).ping())
    except (SandboxError, docker.errors.DockerException, OSError):
        return False


# -- the hardening: one spec, rendered for the SDK and (bench/pool/throughput.py) for `docker run` ---------
def _labels() -> dict[str, str]:
    return {LABEL: "1", OWNER_LABEL: owner(), STARTED_LABEL: start_time(os.getpid())}


def _tmpfs(cfg: SandboxConfig, inodes: bool = True) -> dict[str, str]:
    tmp_exec = "exec" if cfg.tmpfs_exec else "noexec"
    tmp_n, shm_n = (f",nr_inodes={cfg.tmpfs_inodes}", f",nr_inodes={cfg.tmpfs_inodes // 4}") if inodes else ("", "")
    return {
        "/tmp": f"rw,nosuid,nodev,{tmp_exec},size={cfg.tmpfs_mb}m{tmp_n},mode=1777",
        "/dev/shm": f"rw,nosuid,nodev,noexec,size=16m{shm_n},mode=1777",
    }


def container_spec(cfg: SandboxConfig, uid: int, engine: str = "docker", inodes: bool = True) -> dict:
    """Keyword arguments of ``APIClient.create_container`` (host config included) for one sandbox
    (``inodes``: bound the tmpfs inode counts; Podman 4.3 rejects the option)."""
    host = client(engine).api.create_host_config(
        network_mode="none",
        read_only=True,
        tmpfs=_tmpfs(cfg, inodes),
        ipc_mode="private",
        pids_limit=cfg.pids,
        mem_limit=f"{cfg.memory_mb}m",
        memswap_limit=f"{cfg.memory_mb}m",
        nano_cpus=int(cfg.cpus * 1e9),
        cap_drop=["ALL"],
        security_opt=["no-new-privileges"],
        log_config=LogConfig(type="none"),
        cgroup_parent=cfg.cgroup_parent or None,
        runtime=cfg.runtime or None,
        auto_remove=True,
    )
    return {"labels": _labels(), "user": f"{uid}:{uid}", "hostname": "sandbox", "working_dir": "/tmp",
            "host_config": host}  # fmt: skip


def hardening_flags(cfg: SandboxConfig, uid: int) -> list[str]:
    """The same hardening as ``docker run`` options (bench/pool/throughput.py's per-program baseline)."""
    cmd = [x for k, v in _labels().items() for x in ("--label", f"{k}={v}")]
    cmd += [x for k, v in _tmpfs(cfg).items() for x in ("--tmpfs", f"{k}:{v}")]
    cmd += [
        "--network", "none", "--read-only", "--ipc", "private", "--pids-limit", str(cfg.pids),
        "--memory", f"{cfg.memory_mb}m", "--memory-swap", f"{cfg.memory_mb}m", "--cpus", str(cfg.cpus),
        "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--user", f"{uid}:{uid}",
        "--hostname", "sandbox", "--workdir", "/tmp", "--log-driver", "none",
    ]  # fmt: skip
    cmd += ["--cgroup-parent", cfg.cgroup_parent] if cfg.cgroup_parent else []
    return cmd + (["--runtime", cfg.runtime] if cfg.runtime else [])


# -- stale containers, by label --------------------------------------------------------------------
def list_containers(owner_: str | None = None, engine: str = "docker") -> list[tuple[str, str, str]]:
    """(short id, owner, owner start time) of every sandbox container, or of one owner's."""
    labels = [LABEL] + ([f"{OWNER_LABEL}={owner_}"] if owner_ else [])
    try:
        rows = client(engine).api.containers(all=True, filters={"label": labels})
    except (SandboxError, docker.errors.DockerException, OSError):
        return []
    return [(r["Id"][:12], r["Labels"].get(OWNER_LABEL, ""), r["Labels"].get(STARTED_LABEL, "")) for r in rows]


def remove_containers(ids: list[str], engine: str = "docker") -> None:
    """Force-remove containers (concurrently: one API call each); gone already is fine."""

    def rm(cid: str) -> None:
        try:
            client(engine).api.remove_container(cid, force=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as e:
            if e.status_code not in (404, 409):  # 409: removal already in progress (AutoRemove)
                log.warning("could not remove container %s: %s", cid, e)

    threads = [threading.Thread(target=rm, args=(cid,)) for cid in ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def remove_stale_containers(all_owners: bool = False, mine: bool = False, engine: str = "docker") -> int:
    """Remove sandbox containers whose owner process on this host is gone (or every one of them;
    ``mine``: this process's own leftovers)."""
    stale = []
    host, me = owner_host(), owner()
    for cid, owner_, started in list_containers(engine=engine):
        h, _, pid = owner_.rpartition(":")
        if h != host and not all_owners:
            continue  # another host's, or another service container's on this engine: its owner judges them
        gone = not pid.isdigit() or not pid_alive(int(pid))
        reused = not gone and started and started != start_time(int(pid))
        if all_owners or gone or reused or (mine and owner_ == me):
            stale.append(cid)
    remove_containers(stale, engine)
    return len(stale)


# -- one sandbox -----------------------------------------------------------------------------------
class DockerSandbox(WorkerSandbox):
    backend = "docker"
    engine = "docker"  # a key of ENGINES: which API server creates the containers
    tmpfs_inodes = True  # the engine takes nr_inodes= on a tmpfs
    readonly_tmpfs: tuple[str, ...] = ()  # places the engine would make writable: empty, read-only tmpfs

    def __init__(self, cfg: SandboxConfig):
        self._identify(cfg)
        self.uid = self.container_uid(self.uid)
        self._sock: socket.socket | None = None
        self._attach = None  # what attach_socket returned (see _start)
        self._stream = bytearray()  # the worker's stderr, multiplexed (first 64 KiB)
        self._ended = False
        self._drain_lock, self._destroyed = threading.Lock(), False
        self._fifos = FifoPair(self.host_uid(self.uid))
        try:
            self._start()
            self.chan = FrameChannel(self.name, self._fifos.out_fd, None, self._sock, self._drain, self._exit_reason)
            self._await_ready()
            self.chan.write_fd = self._fifos.connect()
        except docker.errors.DockerException as e:
            self.destroy()
            raise SandboxError(f"sandbox {self.name} did not start: {e}") from None
        except BaseException:
            self.destroy()
            raise

    @classmethod
    def container_uid(cls, uid: int) -> int:
        """The uid the worker runs as inside the container (the engine may map only so many)."""
        return uid

    @classmethod
    def security_opts(cls) -> list[str]:
        """Options beyond no-new-privileges (Docker: none; its default seccomp profile applies)."""
        return []

    @classmethod
    def host_uid(cls, uid: int) -> int:
        """The host uid a container's ``uid`` is (root Docker: the same; rootless Podman: mapped)."""
        return uid

    def _start(self) -> None:
        api, cfg = client(self.engine).api, self.cfg
        env = self.worker_env() | {"RLVR_CHANNEL": "/run/rlvr"}
        spec = container_spec(cfg, self.uid, self.engine, self.tmpfs_inodes)
        spec["host_config"]["Mounts"] = [Mount("/run/rlvr", self._fifos.dir, type="bind", read_only=True)]
        spec["host_config"]["Tmpfs"].update({p: "ro,nosuid,nodev,noexec,size=4k" for p in self.readonly_tmpfs})
        spec["host_config"]["SecurityOpt"] += self.security_opts()
        api.create_container(cfg.image, WORKER_CMD, name=self.name, stdin_open=True, environment=env, **spec)
        sock = api.attach_socket(self.name, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
        # held for the sandbox's life: the wrapper (and the HTTP response docker-py hangs on it) keeps the socket's
        # last reference, so a close by the client's connection pool or the wrapper's collection cannot close it
        # under a running job (seen once under load: select on fd -1, "file descriptor cannot be a negative integer")
        self._attach = sock
        self._sock = getattr(sock, "_sock", sock)
        self._sock.setblocking(False)
        api.start(self.name)

    def _drain(self) -> bool:
        """Read what the attach stream holds (the worker's stderr); True once dockerd closed it."""
        with self._drain_lock:
            while not self._ended:
                try:
                    chunk = self._sock.recv(65536)
                except (BlockingIOError, InterruptedError):
                    break
                except OSError:
                    chunk = b""
                if not chunk:
                    self._ended = True
                elif len(self._stream) < 65536:
                    self._stream += chunk
            return self._ended

    def _exit_reason(self) -> str:
        code = "unknown status"
        try:
            code = f"status {client(self.engine).api.wait(self.name, timeout=2)['StatusCode']}"
        except (docker.errors.DockerException, OSError, KeyError, ValueError):
            pass  # removed already (AutoRemove) or the engine is gone
        self._drain()
        err, buf = bytearray(), self._stream
        while len(buf) >= 8:  # frames: stream byte, 3 zero bytes, 4-byte big-endian size, payload
            size = struct.unpack(">I", buf[4:8])[0]
            err += buf[8 : 8 + size]
            buf = buf[8 + size :]
        err = err.decode(errors="replace").strip()
        return code + (f": {err[-1500:]}" if err else "")

    def alive(self) -> bool:
        if self._sock is None or self._destroyed:
            return False
        if self._ended:
            return False
        try:
            ready, _, _ = select.select([self._sock], [], [], 0)
        except (ValueError, OSError):  # the attach socket was closed under us (fd -1): the sandbox is unusable
            return False
        return not (ready and self._drain())

    def destroy(self) -> None:
        with self._drain_lock:
            first, self._destroyed = not self._destroyed, True
        if first:
            remove_containers([self.name], self.engine)
        for s in (self._sock, self._attach):
            try:
                if s is not None:
                    s.close()
            except OSError:
                pass
        self._fifos.close()

    @classmethod
    def preflight(cls, cfg: SandboxConfig) -> None:
        if not docker_available():
            raise SandboxError("Docker engine not reachable (docker info failed): run `make setup` or start dockerd")
        cls.check_image(cfg)

    @classmethod
    def check_image(cls, cfg: SandboxConfig) -> None:
        """Fail unless the engine holds the sandbox image; then remove what crashed runs left behind."""
        try:
            client(cls.engine).api.inspect_image(cfg.image)
        except docker.errors.ImageNotFound:
            raise SandboxError(f"sandbox image {cfg.image} is missing: run `make image`") from None
        except docker.errors.DockerException as e:
            raise SandboxError(f"could not inspect sandbox image {cfg.image}: {e}") from None
        removed = cls.remove_stale()
        if removed:
            log.warning("removed %d sandbox container(s) left behind by a crashed run", removed)

    @classmethod
    def remove_stale(cls, mine: bool = False) -> int:
        return remove_stale_containers(mine=mine, engine=cls.engine)
