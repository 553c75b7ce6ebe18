"""The security battery, privileges and memory: no root, the worker survives kill -1 / kill 1, jobs
cannot read each other, the worker's channel or an earlier job's memory, against every backend.

Each test runs a hostile job and asserts the protection held, in a way that fails if the protection
were removed (the job reports what it managed to do; the test asserts it could not). After each
attack the service must keep serving: no sandbox error.
After the module, the pool fixture checks that the attacked pool still serves, lost no sandbox, and
leaves no container and no process behind when closed.
"""

from __future__ import annotations

import os
import signal
import threading

from sandbox.backend import Result
from tests.security.conftest import make_pool
from tests.security.jobs import assert_serving, close_and_check, containers, on_each, report, run


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
    """The reader scans again and again while the writer holds its files; each side reports when (the
    host's clock, which both share) it wrote and scanned, so the test checks that a scan really fell
    between the writer's writing and its end instead of hoping a fixed sleep lined them up."""
    marker = "mine-" + os.urandom(6).hex()
    writer = f"""
    import json, os, time
    for d in ["/tmp", "/tmp/job", "/dev/shm"]:
        open(os.path.join(d, {marker!r}), "w").write("private")
    wrote = time.time()
    time.sleep(2)
    print(json.dumps({{"wrote": wrote, "done": time.time()}}))
    """
    reader = f"""
    import json, os, time
    found, procs, scans = [], [], []
    end = time.monotonic() + 4
    while time.monotonic() < end:
        start = time.time()
        for top in ["/tmp", "/dev/shm", "/var/tmp"]:
            for d, _, files in os.walk(top):
                found += [os.path.join(d, f) for f in files if {marker!r} in f]
        procs += [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, os.getpid())]
        scans.append([start, time.time()])
        time.sleep(0.05)
    print(json.dumps({{"found": found, "procs": procs, "scans": scans}}))
    """
    results: dict[str, Result] = {}
    t = threading.Thread(target=lambda: results.update(w=run(pool, writer, timeout_s=10)))
    t.start()
    results["r"] = run(pool, reader, timeout_s=10)
    t.join()
    w, rd = report(results["w"]), report(results["r"])
    inside = [s for s in rd["scans"] if w["wrote"] <= s[0] and s[1] <= w["done"]]
    assert inside, f"no scan fell while the writer's files existed: wrote/done {w}, scans {rd['scans']}"
    assert (rd["found"], rd["procs"]) == ([], [])


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


# -- afterwards: the pool fixture (tests/security/conftest.py) checks, once the module's attacks are
# done, that the attacked pool still serves, lost no sandbox and leaves nothing behind when closed
def test_closing_a_pool_leaves_no_container_and_no_process(pool):
    others = containers(pool)  # the module's pool, still open
    fresh = make_pool(pool.cfg.backend, size=1, preload=()).start()
    try:
        assert_serving(fresh)
        assert containers(fresh) - others or pool.cfg.backend == "bwrap", "the fresh pool started no container"
    finally:
        close_and_check(fresh, others)
