"""The Podman backend: the Docker backend's hardened containers, created by a rootless Podman.

Chosen explicitly: ``SandboxConfig(backend="podman")`` (``--backend podman``). For hosts without a Docker
daemon or root (Slurm nodes, shared machines): Podman runs as an ordinary user and serves the Docker API
on that user's socket (``podman system service``), so everything in sandbox/backends/docker.py (the container
spec, the attach stream, the FIFO frame channel, labels, stale removal) serves both; only where the
API lives and how container uids map to the host differ.

* The service runs as a user: this process's own when it is not root; when it is root, the ordinary
  system user ``rlvr-podman`` (created by ``make podman`` with a subordinate uid range of 1,000,000),
  so no container engine in the chain has root. ``preflight`` starts the service when its socket does
  not answer (it outlives this process, like a daemon would) and loads the sandbox image into it
  offline from the Docker engine's copy (``docker save | podman load``) when it lacks it.
* Uids: a rootless container's uid ``u`` is the host's ``start + u - 1`` of the user's subordinate
  range; each sandbox keeps its own uid inside that range, and the frame channel's FIFOs are given to
  the host uid it maps to.
* Limits: memory, pids and CPU quotas need a cgroup v2 hierarchy delegated to the user; on a cgroup v1
  (or hybrid) host Podman ignores them (it says so) and only the worker's per-process rlimits bound a
  job (docs/sandbox.md, the backend table).
"""

from __future__ import annotations

import json
import logging
import os
import pwd
import shutil
import subprocess
import time
from pathlib import Path

import docker
import docker.errors

from sandbox.backend import SandboxConfig, SandboxError
from sandbox.backends import docker as engine_api
from sandbox.backends.docker import DockerSandbox

log = logging.getLogger(__name__)

SERVICE_USER = "rlvr-podman"  # who runs Podman when this process is root
START_TIMEOUT_S = 30.0
CGROUP_V2 = Path("/sys/fs/cgroup/cgroup.controllers")


def podman_user() -> pwd.struct_passwd:
    """The account Podman runs as: this process's, or ``rlvr-podman`` when this process is root."""
    if os.geteuid() != 0:
        return pwd.getpwuid(os.geteuid())
    try:
        return pwd.getpwnam(SERVICE_USER)
    except KeyError:
        raise SandboxError(
            f"running as root, the podman backend needs the user {SERVICE_USER}: run `make podman`"
        ) from None


def runtime_dir(user: pwd.struct_passwd) -> str:
    mine = os.geteuid() == user.pw_uid and os.environ.get("XDG_RUNTIME_DIR")
    return mine or f"/run/user/{user.pw_uid}"


def socket_path() -> str:
    """Where the Docker-compatible API listens (RLVR_PODMAN_SOCKET overrides)."""
    return os.environ.get("RLVR_PODMAN_SOCKET") or f"{runtime_dir(podman_user())}/podman/podman.sock"


def podman_cmd(*args: str) -> list[str]:
    """``podman args`` as the Podman user (through runuser when this process is root)."""
    user = podman_user()
    if os.geteuid() != 0:
        return ["podman", *args]
    env = [f"XDG_RUNTIME_DIR={runtime_dir(user)}", f"HOME={user.pw_dir}", "PATH=/usr/sbin:/usr/bin:/sbin:/bin"]
    return ["runuser", "-u", user.pw_name, "--", "env", "-i", *env, "podman", *args]


def subid_range(user: pwd.struct_passwd) -> tuple[int, int]:
    """(first host uid, count) of the user's subordinate uids (/etc/subuid); (0, 0) without one."""
    try:
        lines = Path("/etc/subuid").read_text().splitlines()
    except OSError:
        return 0, 0
    for line in lines:
        name, _, rest = line.partition(":")
        if name in (user.pw_name, str(user.pw_uid)):
            start, _, count = rest.partition(":")
            if start.isdigit() and count.isdigit():
                return int(start), int(count)
    return 0, 0


def _engine() -> docker.DockerClient:
    return docker.DockerClient(base_url=f"unix://{socket_path()}", max_pool_size=64, timeout=60)


engine_api.ENGINES["podman"] = _engine


def podman_available() -> tuple[bool, str]:
    """(usable, why not): installed, a user with subordinate uids, the API answering (started here)."""
    if not shutil.which("podman"):
        return False, "podman is not installed: run `make podman` (apt-get install podman uidmap)"
    try:
        user = podman_user()
        if subid_range(user)[1] < 65536:
            return False, f"the user {user.pw_name} has no subordinate uid range (/etc/subuid): run `make podman`"
        ensure_service()
    except SandboxError as e:
        return False, str(e)
    return True, ""


def ensure_service() -> None:
    """Start ``podman system service`` on the user's socket unless it answers already."""
    if engine_api.docker_available("podman"):
        return
    user = podman_user()
    sock = socket_path()
    run_dir = Path(sock).parent
    if os.geteuid() == 0:
        for d in (run_dir.parent, run_dir):
            d.mkdir(mode=0o700, exist_ok=True)
            os.chown(d, user.pw_uid, user.pw_gid)
    else:
        run_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    log_path = run_dir / "service.log"
    with open(log_path, "ab") as out:
        subprocess.Popen(
            podman_cmd("system", "service", "--time", "0", f"unix://{sock}"),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
            cwd=user.pw_dir,
        )
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        engine_api.forget_client("podman")  # one made before the socket existed
        if engine_api.docker_available("podman"):
            return
        time.sleep(0.2)
    tail = log_path.read_text(errors="replace")[-600:] if log_path.exists() else ""
    raise SandboxError(f"podman system service did not answer on {sock} within {START_TIMEOUT_S:.0f} s: {tail}")


# Podman's default seccomp profile lets a container create namespaces (clone/unshare/setns are allowed
# outright, for nested containers); the sandbox's is that profile with those three taken out and clone
# allowed back only without namespace flags, clone3 answering ENOSYS (libc falls back to clone), as
# Docker's default profile does for a container without CAP_SYS_ADMIN.
DEFAULT_PROFILES = ("/usr/share/containers/seccomp.json", "/etc/containers/seccomp.json")
NAMESPACE_FLAGS = 0x7E020000  # CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
NAMESPACE_CALLS = ("clone", "clone3", "unshare", "setns")


def seccomp_profile(base: dict) -> dict:
    """``base`` (an OCI seccomp profile) without namespace creation."""
    profile = json.loads(json.dumps(base))
    for rule in profile["syscalls"]:
        if rule.get("action") == "SCMP_ACT_ALLOW" and not rule.get("args"):
            rule["names"] = [n for n in rule["names"] if n not in NAMESPACE_CALLS]
    profile["syscalls"] = [r for r in profile["syscalls"] if r["names"]]
    no_ns = {"index": 0, "value": NAMESPACE_FLAGS, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}
    profile["syscalls"] += [
        {"names": ["clone"], "action": "SCMP_ACT_ALLOW", "args": [no_ns]},
        {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38},
        {"names": ["unshare", "setns"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1},
    ]
    return profile


def write_seccomp_profile() -> str:
    """The sandbox's profile, written where the Podman user can read it; "" without a base profile."""
    base = next((p for p in DEFAULT_PROFILES if os.path.exists(p)), "")
    if not base:
        log.warning(
            "podman backend: no default seccomp profile found (%s): jobs may create namespaces",
            " or ".join(DEFAULT_PROFILES),
        )
        return ""
    path = Path(socket_path()).parent / "rlvr-seccomp.json"
    tmp = path.with_suffix(f".{os.getpid()}")
    tmp.write_text(json.dumps(seccomp_profile(json.loads(Path(base).read_text()))))
    tmp.chmod(0o644)
    tmp.replace(path)
    return str(path)


def image_present(tag: str) -> bool:
    try:
        engine_api.client("podman").api.inspect_image(tag)
        return True
    except docker.errors.DockerException:
        return False


def load_image(tag: str) -> None:
    """Copy the sandbox image from the Docker engine into Podman, offline (``docker save | podman load``)."""
    if not engine_api.docker_available():
        raise SandboxError(f"podman lacks the sandbox image {tag} and there is no Docker engine to load it from")
    save = subprocess.Popen(["docker", "save", tag], stdout=subprocess.PIPE)
    load = subprocess.run(podman_cmd("load"), stdin=save.stdout, capture_output=True, text=True, timeout=600)
    save.stdout.close()
    if save.wait() != 0 or load.returncode != 0:
        raise SandboxError(f"could not load {tag} into podman: {load.stderr[-600:]}")


class PodmanSandbox(DockerSandbox):
    backend = "podman"
    engine = "podman"
    tmpfs_inodes = False  # podman 4.3 rejects nr_inodes=: /tmp is bounded by size only
    readonly_tmpfs = ("/var/tmp",)  # a read-only root gets a writable /var/tmp from Podman otherwise
    _subids: tuple[int, int] = (0, 0)
    _seccomp = ""

    @classmethod
    def security_opts(cls) -> list[str]:
        return [f"seccomp={cls._seccomp}"] if cls._seccomp else []  # Podman reads the path (Docker: the JSON)

    @classmethod
    def container_uid(cls, uid: int) -> int:
        count = cls._subids[1]
        return uid if uid < count else 10_000 + uid % (count - 10_000)

    @classmethod
    def host_uid(cls, uid: int) -> int:
        start = cls._subids[0]
        return start + uid - 1 if os.geteuid() == 0 else uid  # not root: FifoPair opens the FIFOs to all

    @classmethod
    def preflight(cls, cfg: SandboxConfig) -> None:
        ok, why = podman_available()
        if not ok:
            raise SandboxError(why)
        cls._subids = subid_range(podman_user())
        cls._seccomp = write_seccomp_profile()
        if not image_present(cfg.image):
            load_image(cfg.image)
        cls.check_image(cfg)
        if not CGROUP_V2.exists() and cfg.cgroup_parent:
            log.warning("podman backend: cgroup_parent %r ignored (rootless on cgroup v1)", cfg.cgroup_parent)
            cfg.cgroup_parent = ""
        if not CGROUP_V2.exists():
            log.warning(
                "podman backend on a cgroup v1 host: no memory, pids or CPU quota per container "
                "(rootless Podman ignores them); each job is bounded by its rlimits only"
            )
