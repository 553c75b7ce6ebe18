"""The bwrap backend's own properties (the shared battery runs against it in tests/security/)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from sandbox.bwrap import bwrap_usable
from sandbox.pool import Job, SandboxConfig, SandboxError, SandboxPool

USABLE, WHY = bwrap_usable()
needs_bwrap = pytest.mark.skipif(not USABLE, reason=f"bwrap backend unavailable here: {WHY}")


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(SandboxConfig(backend="bwrap", size=2, preload=())) as p:
        yield p


@needs_bwrap
def test_the_sandbox_sees_only_usr_and_its_own_places(pool):
    r = pool.run(Job(code="import json, os\nprint(json.dumps(sorted(os.listdir('/'))))"))
    assert set(json.loads(r.stdout)) <= {"bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "opt", "proc",
                                          "sbin", "tmp", "usr"}  # fmt: skip
    r = pool.run(Job(code="import json, os\nprint(json.dumps(os.listdir('/etc')))"))
    assert json.loads(r.stdout) in ([], ["ld.so.cache"])


@needs_bwrap
def test_the_worker_is_pid_1_of_its_own_namespace_as_a_distinct_user(pool):
    uids = {c.info["uid"] for c in pool._all}
    assert {c.info["pid"] for c in pool._all} == {1}
    if os.geteuid() == 0:
        assert len(uids) == pool.size and 0 not in uids


@needs_bwrap
@pytest.mark.skipif(os.geteuid() != 0, reason="cgroups are created only when the service runs as root")
def test_as_root_each_sandbox_has_memory_and_pids_cgroups(pool):
    for c in pool._all:
        assert c.cgroups.active, "no cgroup: see the warning logged at start"
        procs = [int(p) for d in c.cgroups.dirs for p in (d / "cgroup.procs").read_text().split()]
        assert c.proc.pid in procs


@needs_bwrap
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
