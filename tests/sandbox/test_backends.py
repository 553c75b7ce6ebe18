"""The sandbox backends beyond the shared battery (tests/security/): how each is chosen and what is
particular to it. Podman: rootless, its own seccomp profile without namespace creation."""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import pytest

from sandbox.backend import Job, SandboxConfig
from sandbox.pool import SandboxPool
from tests.parts import require
from verifiers.shapes import limits as service_limits


def test_podman_is_chosen_with_the_backend_flag():
    parser = argparse.ArgumentParser()
    service_limits.add_arguments(parser)
    cfg = service_limits.from_args(parser.parse_args(["--backend", "podman"])).sandbox_config()
    assert cfg.backend == "podman"
    with pytest.raises(SystemExit):
        parser.parse_args(["--backend", "lxc"])


def test_the_podman_seccomp_profile_takes_namespace_creation_out():
    from sandbox.backends.podman import DEFAULT_PROFILES, NAMESPACE_FLAGS, seccomp_profile

    base_path = next((p for p in DEFAULT_PROFILES if os.path.exists(p)), "")
    base = (
        json.loads(Path(base_path).read_text())
        if base_path
        else {
            "defaultAction": "SCMP_ACT_ERRNO",
            "syscalls": [{"names": ["read", "clone", "unshare", "setns", "clone3"], "action": "SCMP_ACT_ALLOW"}],
        }
    )
    rules = seccomp_profile(base)["syscalls"]
    unconditional = {n for r in rules if r["action"] == "SCMP_ACT_ALLOW" and not r.get("args") for n in r["names"]}
    assert not unconditional & {"clone", "clone3", "unshare", "setns"}
    assert "read" in unconditional
    clone = [r for r in rules if "clone" in r["names"] and r["action"] == "SCMP_ACT_ALLOW"]
    assert clone and all(a["value"] == NAMESPACE_FLAGS and a["op"] == "SCMP_CMP_MASKED_EQ" for a in clone[-1]["args"])


@pytest.mark.docker
def test_podman_runs_the_worker_as_a_mapped_user_without_root_anywhere():
    from sandbox.backends.podman import podman_available, podman_user

    require("podman")
    ok, why = podman_available()
    assert ok, f"podman is installed but the backend is unusable: {why}"
    code = "import json, os; print(os.getuid(), json.dumps(open('/proc/self/uid_map').read().split()))"
    with SandboxPool(SandboxConfig(backend="podman", size=1, preload=())) as pool:
        r = pool.run(Job(code=code), wait_s=60)
    assert r.ok, r
    uid, umap = r.stdout.split(" ", 1)
    umap = json.loads(umap)
    assert int(uid) != 0
    # the container's root is the ordinary user Podman runs as; every other uid is a subordinate one
    assert umap[:3] == ["0", str(podman_user().pw_uid), "1"] and umap[1] != "0"


@pytest.mark.slow
@pytest.mark.docker
def test_podman_loads_the_sandbox_image_offline_from_dockers_copy():
    import subprocess

    from sandbox.backends.podman import image_present, podman_available, podman_cmd
    from sandbox.image.python import image_tag

    require("podman")
    ok, why = podman_available()
    assert ok, f"podman is installed but the backend is unusable: {why}"
    tag = image_tag()
    end = time.monotonic() + 180  # never rmi -f: another pool (a concurrent test run) may be using it
    while (rm := subprocess.run(podman_cmd("rmi", tag), capture_output=True, text=True)).returncode and image_present(
        tag
    ):
        assert time.monotonic() < end, f"the image stayed in use by podman containers: {rm.stderr.strip()[:200]}"
        time.sleep(2)
    assert not image_present(tag)
    with SandboxPool(SandboxConfig(backend="podman", size=1, preload=())) as pool:  # preflight loads it
        assert pool.run(Job(code="print(6 * 7)"), wait_s=60).stdout == "42\n"
    assert image_present(tag)


@pytest.mark.docker
def test_sandboxes_of_another_owner_sharing_the_engine_are_left_to_it():
    """Two service containers on one engine (compose replicas) are each PID 1 under the host's name:
    each labels its sandboxes with RLVR_SANDBOX_OWNER, and neither sweeps the other's as left behind
    (before: replica B's start removed replica A's sandboxes, whose owner pid 1 looked reused)."""
    import subprocess

    from sandbox.backends.docker import LABEL, OWNER_LABEL, STARTED_LABEL, list_containers, remove_stale_containers
    from sandbox.image.python import image_tag
    from tests.security.conftest import ensure_image

    ensure_image()
    cmd = ["docker", "run", "-d", "--rm", "--network", "none", "--label", f"{LABEL}=1",
           "--label", f"{OWNER_LABEL}=replica-a:1", "--label", f"{STARTED_LABEL}=1",
           image_tag(), "python3", "-c", "import time; time.sleep(120)"]  # fmt: skip
    other = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()[:12]
    try:
        remove_stale_containers()  # this process: another owner host (the machine's name)
        assert other in [cid for cid, *_ in list_containers()]
    finally:
        subprocess.run(["docker", "rm", "-f", other], capture_output=True)


def test_every_sandbox_class_has_its_line_in_the_backend_table():
    """A backend is its module plus one line of sandbox.backends.table.BACKENDS: a sandbox class written without its
    line would be unreachable from --backend, and a line must load a sandbox class."""
    import importlib
    import pkgutil

    import sandbox
    import sandbox.backends
    from sandbox.backend import WorkerSandbox
    from sandbox.backends.table import BACKENDS

    for pkg in (sandbox, sandbox.backends):  # where a backend module may stand
        for mod in pkgutil.iter_modules(pkg.__path__):
            importlib.import_module(f"{pkg.__name__}.{mod.name}")

    def concrete(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from concrete(sub)

    classes = {c for c in concrete(WorkerSandbox) if c.__module__.startswith("sandbox.")}
    loaded = {entry.load() for entry in BACKENDS.values()}
    assert loaded <= classes, "a table line that loads no sandbox class"
    assert classes == loaded, f"sandbox classes without a line in BACKENDS: {classes - loaded}"
