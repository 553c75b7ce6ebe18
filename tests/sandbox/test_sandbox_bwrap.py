"""The bwrap backend's own properties (the shared battery runs against it in tests/security/)."""

from __future__ import annotations

import errno
import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sandbox.backend import Job, SandboxConfig, SandboxError
from sandbox.backends.bwrap import bwrap_usable
from sandbox.pool import SandboxPool
from tests.parts import require
from tests.security.gaps import host_cgroup


@pytest.fixture(autouse=True)
def needs_bwrap():
    """bubblewrap is a required part (tests/parts.py): missing, or unusable by the project's own probe,
    each test here fails saying why; it never skips."""
    require("bwrap")
    ok, why = bwrap_usable()
    assert ok, f"bubblewrap is installed but the backend is unusable: {why}"


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(SandboxConfig(backend="bwrap", size=2, preload=())) as p:
        yield p


def test_the_sandbox_sees_only_usr_and_its_own_places(pool):
    r = pool.run(Job(code="import json, os\nprint(json.dumps(sorted(os.listdir('/'))))"))
    assert set(json.loads(r.stdout)) <= {
        "bin",
        "dev",
        "etc",
        "lib",
        "lib32",
        "lib64",
        "libx32",
        "opt",
        "proc",
        "sbin",
        "tmp",
        "usr",
    }
    r = pool.run(Job(code="import json, os\nprint(json.dumps(os.listdir('/etc')))"))
    assert json.loads(r.stdout) in ([], ["ld.so.cache"])


def test_the_worker_is_pid_1_of_its_own_namespace_as_a_distinct_user(pool):
    uids = {c.info["uid"] for c in pool._all}
    assert {c.info["pid"] for c in pool._all} == {1}
    if os.geteuid() == 0:
        assert len(uids) == pool.size and 0 not in uids


def test_each_sandbox_has_every_cgroup_the_host_offers(pool):
    """What the host offers is read from the kernel's facts (tests/security/gaps.py), not from sandbox/."""
    offered = {ctl for ctl in ("memory", "pids", "cpu") if host_cgroup(ctl)}
    for c in pool._all:
        assert set(c.cgroups.controllers) == offered, f"host offers {offered}: see the warning logged at start"
        assert c.cgroups.active == bool(offered)
        procs = [int(p) for d in c.cgroups.dirs for p in (d / "cgroup.procs").read_text().split()]
        assert c.proc.pid in procs


def test_killing_the_owner_leaves_no_sandbox_process(tmp_path):
    script = tmp_path / "owner.py"
    script.write_text(
        "import os, signal, sys\nsys.path.insert(0, os.getcwd())\n"
        "from sandbox.pool import Job, SandboxConfig, SandboxPool\n"
        "p = SandboxPool(SandboxConfig(backend='bwrap', size=1, preload=())).start()\n"
        "print(next(iter(p._all)).uid, flush=True)\n"
        "p.run(Job(code='import os, time\\nif os.fork() == 0:\\n    time.sleep(600)\\ntime.sleep(600)', timeout_s=600))\n"
    )
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, cwd=os.getcwd())
    uid = int(proc.stdout.readline())
    time.sleep(1.0)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _processes_of(uid):
        time.sleep(0.2)
    assert _processes_of(uid) == []


def _processes_of(uid: int) -> list[str]:
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{pid}").st_uid == uid:
                out.append(pid)
        except OSError:
            pass
    return out


def test_unusable_bwrap_is_reported_with_what_to_do(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")  # no bwrap to be found
    with pytest.raises(SandboxError, match="install_bwrap.sh"):
        SandboxPool(SandboxConfig(backend="bwrap", size=1)).start()


def test_the_seccomp_filter_refuses_namespaces_mounts_and_kernel_interfaces(pool):
    code = (
        "import ctypes, json, os, subprocess\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "def call(f, *a):\n    r = f(*a)\n    return ctypes.get_errno() if r == -1 else r\n"
        "print(json.dumps({'unshare': call(libc.unshare, 0x40000000),\n"
        "  'mount': call(libc.mount, b'none', b'/tmp', b'tmpfs', 0, None),\n"
        "  'keyctl': call(libc.syscall, 250, 0, 0), 'bpf': call(libc.syscall, 321, 0, 0, 0),\n"
        "  'child': subprocess.run(['/usr/bin/python3', '-c', 'print(1)'], capture_output=True).stdout.decode()}))\n"
    )
    r = pool.run(Job(code=code, mode="spawn"), wait_s=60)
    rep = json.loads(r.stdout)
    assert rep == {
        "unshare": errno.EPERM,
        "mount": errno.EPERM,
        "keyctl": errno.EPERM,
        "bpf": errno.EPERM,
        "child": "1\n",
    }, r


def test_the_root_is_the_sandbox_images_not_the_hosts_usr(pool):
    from sandbox.backends.bwrap import image_rootfs

    assert image_rootfs()[0], "the sandbox image's root file system is not under var/cache (`make image` builds it)"
    assert pool.cfg.rootfs == image_rootfs()[0]
    r = pool.run(Job(code="import os; print(os.path.exists('/usr/bin/bwrap'), os.path.exists('/usr/bin/python3'))"))
    assert r.stdout == "False True\n", r  # bwrap is on the host's /usr, not in the image


def test_start_up_says_which_root_filter_and_limits(caplog):
    with caplog.at_level(logging.WARNING, logger="sandbox.backends.bwrap"):
        SandboxPool(SandboxConfig(backend="bwrap", size=1, preload=())).start().close()
    line = next(r.getMessage() for r in caplog.records if r.getMessage().startswith("bwrap backend: root:"))
    assert "seccomp filter on" in line and "limits: " in line
    assert ("cgroup" in line) if os.geteuid() == 0 else True


@pytest.mark.docker
def test_a_checkout_that_did_not_build_the_image_takes_its_root_from_it(tmp_path, monkeypatch):
    """`make image` finds the image built (by another checkout, or loaded): the root file system and packages
    the bwrap backend binds still end up under var/cache, taken from the image, not the host's /usr."""
    from sandbox.backends.bwrap import image_rootfs
    from sandbox.image import python as image
    from tests.security.conftest import ensure_image

    ensure_image()
    monkeypatch.setattr(image, "CACHE", tmp_path)
    assert image_rootfs() == ("", "")  # an empty var/cache: bwrap would fall back to the host's /usr
    image.rootfs_from_image(image.image_tag())
    root, pylibs = image_rootfs()
    # what is on disk decides, not the cache paths the code under test computes: one root file system
    # and one package directory were made in the (patched) cache, and they are what image_rootfs hands on
    made = sorted(p.name for p in tmp_path.iterdir())
    assert [n.split("-", 1)[0] for n in made] == ["pylibs", "rootfs"], made
    assert (Path(pylibs), Path(root)) == tuple(tmp_path / n for n in made)
    assert Path(root, "usr/bin/python3").exists() and Path(pylibs, "sympy").is_dir()
    assert not Path(root, "usr/bin/bwrap").exists()  # the image's /usr, not the host's
