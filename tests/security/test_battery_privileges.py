"""The security battery, privileges and memory: no root, the worker survives kill -1 / kill 1, jobs
cannot read each other, the worker's channel or an earlier job's memory, against every backend.

Each test runs a hostile job and asserts the protection held, in a way that fails if the protection
were removed (the job reports what it managed to do; the test asserts it could not). After each
attack the service must keep serving: no sandbox error.
The last test checks that a normal job still passes within a second and that closing the pool
leaves no container and no process behind.
"""

from __future__ import annotations

import os
import signal
import threading
import time

from sandbox.backend import Result
from sandbox.docker import list_containers
from tests.security.jobs import assert_serving, on_each, report, run


# -- privileges ---------------------------------------------------------------------------------
def test_not_root_and_no_way_back_to_it(pool):
    r = run(
        pool,
        """
        import ctypes, json, os, shutil, subprocess
        status = dict(line.split(":\\t", 1) for line in open("/proc/self/status").read().splitlines() if ":\\t" in line)
        try:
            os.setuid(0)
            setuid = "worked"
        except OSError:
            setuid = "refused"
        libc = ctypes.CDLL(None, use_errno=True)
        userns = libc.unshare(0x10000000)  # CLONE_NEWUSER: root inside a new user namespace
        su = subprocess.run(["su", "-c", "id -u"], capture_output=True, text=True, stdin=subprocess.DEVNULL).stdout \\
            if shutil.which("su") else ""
        print(json.dumps({"uid": os.getuid(), "euid": os.geteuid(), "caps": [status[k].strip() for k in
                          ("CapPrm", "CapEff", "CapBnd", "CapAmb")], "nnp": status["NoNewPrivs"].strip(),
                          "setuid": setuid, "userns": userns, "su": su.strip(), "sudo": shutil.which("sudo"),
                          "seccomp": status["Seccomp"].strip()}))
        """,
    )
    rep = report(r)
    assert rep["uid"] != 0 and rep["euid"] != 0
    assert rep["caps"] == ["0000000000000000"] * 4
    assert rep["nnp"] == "1" and rep["setuid"] == "refused" and rep["userns"] == -1
    assert rep["su"] != "0"
    if pool.cfg.backend in ("docker", "podman"):
        assert rep["sudo"] is None
    assert rep["seccomp"] == "2"  # a filter on every backend: Docker's default, Podman's less namespaces, bwrap's


def test_kill_minus_one_and_kill_pid_1_do_not_take_the_worker_down(pool):
    before = pool.replaced
    r = run(
        pool,
        """
        import os, signal, time
        for sig in range(1, 32):  # every signal to the worker (PID 1), SIGINT and SIGKILL included
            try:
                os.kill(1, sig)
            except OSError:
                pass
        time.sleep(0.1)
        print("still here", flush=True)
        if os.fork() == 0:
            os.kill(-1, signal.SIGKILL)  # every process it may signal: not PID 1, but its own parent
            os._exit(0)
        time.sleep(5)
        print("not reached")
        """,
    )
    assert r.stdout == "still here\n" and r.signal == signal.SIGKILL, r
    for _ in range(pool.size):
        assert_serving(pool)
    assert pool.replaced == before


def test_two_concurrent_jobs_cannot_read_each_others_files(pool):
    marker = "mine-" + os.urandom(6).hex()
    writer = f"""
    import os, time
    for d in ["/tmp", "/tmp/job", "/dev/shm"]:
        open(os.path.join(d, {marker!r}), "w").write("private")
    time.sleep(2)
    print("wrote")
    """
    reader = f"""
    import json, os, time
    time.sleep(0.7)
    found = []
    for top in ["/tmp", "/dev/shm", "/var/tmp"]:
        for d, _, files in os.walk(top):
            found += [os.path.join(d, f) for f in files if {marker!r} in f]
    procs = [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, os.getpid())]
    print(json.dumps({{"found": found, "procs": procs}}))
    """
    results: dict[str, Result] = {}
    t = threading.Thread(target=lambda: results.update(w=run(pool, writer)))
    t.start()
    results["r"] = run(pool, reader)
    t.join()
    assert results["w"].stdout == "wrote\n"
    assert report(results["r"]) == {"found": [], "procs": []}


def test_the_job_cannot_reach_the_workers_channel_or_memory(pool):
    """The worker (PID 1, same uid) is non-dumpable: no /proc/1/fd, /proc/1/mem or ptrace, so a job
    cannot forge the result frame the host reads or rewrite the worker."""
    r = run(
        pool,
        """
        import ctypes, json, os
        reached = []
        for path, mode in (("/proc/1/fd/1", "wb"), ("/proc/1/fd/0", "rb"), ("/proc/1/mem", "rb"), ("/proc/1/environ", "rb")):
            try:
                open(path, mode).close()
                reached.append(path)
            except OSError:
                pass
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.ptrace(16, 1, None, None) == 0:  # PTRACE_ATTACH
            reached.append("ptrace")
        print(json.dumps(reached))
        """,
    )
    assert report(r) == []


def test_a_later_job_finds_nothing_of_an_earlier_one_in_memory(pool):
    """Jobs are forks of the worker: whatever it held of an earlier job's code, stdin or output would be
    inherited. It keeps them only in buffers it zeroes, so a memory scan of the next job finds nothing."""
    secret = "ZQXJ" + os.urandom(16).hex()
    plant = f"import sys\nsecret = {secret!r}\nprint(secret, sys.stdin.read())"
    for _ in range(pool.size):
        assert secret in run(pool, plant, stdin=secret).stdout
    scan = """
    import json, re
    pattern, hits = re.compile(rb"ZQXJ[0-9a-f]{32}"), 0
    with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
        for line in maps:
            addr, perms = line.split()[:2]
            if not perms.startswith("rw"):
                continue
            lo, hi = (int(x, 16) for x in addr.split("-"))
            try:
                mem.seek(lo)
                hits += len(pattern.findall(mem.read(hi - lo)))
            except (OSError, OverflowError, ValueError):
                pass
    print(json.dumps(hits))
    """
    assert [report(r) for r in on_each(pool, scan, timeout_s=20)] == [0] * pool.size


# -- afterwards ---------------------------------------------------------------------------------
def _processes_mentioning(needles: list[str]) -> list[str]:
    hits = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if any(n in cmd for n in needles):
            hits.append(f"{pid}: {cmd[:120]}")
    return hits


def _processes_of_uids(uids: set[int]) -> list[str]:
    hits = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{pid}").st_uid in uids:
                hits.append(pid)
        except OSError:
            pass
    return hits


def test_after_the_battery_the_pool_serves_and_closing_leaves_nothing(pool):
    t0 = time.monotonic()
    r = run(pool, "def add(a, b):\n    return a + b\nassert add(2, 3) == 5\nprint('ok')\n")
    assert r.ok and r.finished and r.stdout == "ok\n"
    assert time.monotonic() - t0 < 1.0
    assert pool.replaced == 0, "an attack killed a sandbox during the battery"
    names = pool.container_names()
    uids = {int(n.rsplit("-", 1)[1]) for n in names}
    if pool.cfg.backend == "podman":  # a rootless container's uid is a subordinate uid on the host
        from sandbox.podman import PodmanSandbox

        uids = {PodmanSandbox.host_uid(PodmanSandbox.container_uid(u)) for u in uids}
    pool.close()
    deadline = time.monotonic() + 10  # podman: the engine's monitor (conmon) exits just after the removal
    while _processes_mentioning(names) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _processes_mentioning(names) == []
    assert _processes_of_uids(uids) == []
    if pool.cfg.backend in ("docker", "podman"):
        from sandbox.backend import owner

        assert list_containers(owner(), engine=pool.cfg.backend) == []
