"""The security battery: one adversarial program per property, against every backend.

Each test runs a hostile job and asserts the protection held, in a way that fails if the protection
were removed (the job reports what it managed to do; the test asserts it could not). After each
attack the service must keep serving: no sandbox error, no replaced sandbox (checked at the end).
The last test checks that a normal job still passes within a second and that closing the pool
leaves no container and no process behind.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
from textwrap import dedent

import pytest

from sandbox.pool import Job, Limits, Result, SandboxPool, list_containers
from tests.security.conftest import SECRET_NAME, SECRET_VALUE


def run(pool: SandboxPool, code: str, timeout_s: float = 5.0, **kw) -> Result:
    r = pool.run(Job(code=dedent(code), timeout_s=timeout_s, **kw), wait_s=60)
    assert r.sandbox_error is None, f"the attack broke the sandbox instead of failing: {r.sandbox_error}"
    return r


def on_each(pool: SandboxPool, code: str, **kw) -> list[Result]:
    """Run ``code`` once in every sandbox: the idle queue is FIFO, so ``size`` sequential runs visit each."""
    return [run(pool, code, **kw) for _ in range(pool.size)]


def report(r: Result) -> dict:
    """The job's JSON report: its last line of stdout."""
    lines = r.stdout.strip().splitlines()
    assert lines, f"the job printed no report (exit {r.exit_code}, signal {r.signal}): {r.stderr[-2000:]}"
    return json.loads(lines[-1])


def assert_serving(pool: SandboxPool) -> None:
    r = run(pool, "print(6 * 7)")
    assert r.ok and r.stdout == "42\n"


# -- resource exhaustion ------------------------------------------------------------------------
def test_fork_bomb_is_capped_and_cleaned_up(pool):
    r = run(
        pool,
        """
        import json, os, time
        made, error = 0, ""
        for _ in range(5000):
            try:
                if os.fork() == 0:
                    time.sleep(60)
                    os._exit(0)
                made += 1
            except OSError as e:
                error = type(e).__name__
                break
        print(json.dumps({"made": made, "error": error}), flush=True)
        """,
        timeout_s=10,
    )
    rep = report(r)
    assert rep["error"] == "BlockingIOError" and rep["made"] < 130, rep  # nproc 64 / pids 128, not 5000
    assert_serving(pool)


def test_endless_fork_loop_ends_at_the_timeout(pool):
    t0 = time.monotonic()
    r = run(
        pool, "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n", timeout_s=2
    )
    assert r.timed_out and time.monotonic() - t0 < 10
    assert_serving(pool)


def test_memory_bomb_in_one_process_fails(pool):
    r = run(
        pool,
        """
        import json
        chunks = []
        try:
            for _ in range(64):
                chunks.append(bytearray(128 << 20))  # 8 GiB in all, touched
        except MemoryError:
            pass
        print(json.dumps({"mb": 128 * len(chunks)}))
        """,
        timeout_s=20,
    )
    assert report(r)["mb"] <= 1024, "the job's address space is not limited"
    assert_serving(pool)


def test_memory_bomb_across_processes_is_stopped_by_the_sandbox_limit(pool):
    if pool.cfg.backend == "bwrap" and not all(getattr(c, "cgroups", None) and c.cgroups.active for c in pool._all):
        pytest.skip("bwrap without a memory cgroup: the sum over processes is not limited (docs/sandbox.md)")
    r = run(
        pool,
        """
        import json, os, time
        kids = []
        for _ in range(4):  # 4 x 700 MiB, each under RLIMIT_AS, together far over the sandbox's 1.5 GiB
            pid = os.fork()
            if pid == 0:
                b = bytearray(700 << 20)
                for i in range(0, len(b), 4096):
                    b[i] = 1
                os._exit(0)
            kids.append(pid)
        ok = sum(os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) == 0 for p in kids)
        print(json.dumps({"completed": ok}))
        """,
        timeout_s=30,
    )
    if r.stdout:  # the kernel may also pick the job's parent
        assert report(r)["completed"] < 4, "4 x 700 MiB fitted: the sandbox memory is not limited"
    assert_serving(pool)


def test_cpu_loop_is_killed_by_the_cpu_limit(pool):
    t0 = time.monotonic()
    r = run(pool, "while True:\n    pass\n", timeout_s=30, limits=Limits(cpu_s=1))
    assert not r.timed_out and r.signal in (signal.SIGXCPU, signal.SIGKILL), r
    assert time.monotonic() - t0 < 15
    assert_serving(pool)


def test_sleeping_forever_is_killed_at_the_timeout(pool):
    t0 = time.monotonic()
    r = run(
        pool,
        "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(10**6)\n",
        timeout_s=1,
    )
    assert r.timed_out and r.exit_code is None
    assert time.monotonic() - t0 < 5
    assert_serving(pool)


def test_runaway_output_is_capped_and_the_job_killed(pool):
    t0 = time.monotonic()
    r = run(pool, "import sys\nfor _ in range(400):\n    sys.stdout.write('x' * (1 << 20))\n", timeout_s=60)
    assert r.output_limit_exceeded and r.stdout_truncated and r.signal == 9
    assert len(r.stdout) == r.output_cap == pool.cfg.output_bytes  # what came before the cap is kept
    assert time.monotonic() - t0 < 20  # killed at the cap, not after writing 400 MiB
    assert_serving(pool)


def test_filling_the_disk_stops_at_the_scratch_size(pool):
    r = run(
        pool,
        """
        import json, os
        written, error = 0, ""
        try:
            for i in range(1000):
                with open(f"fill{i}", "wb") as f:
                    for _ in range(4):
                        f.write(b"x" * (1 << 20))
                        written += 1
        except OSError as e:
            error = type(e).__name__ + str(e.errno)
        print(json.dumps({"mb": written, "error": error}))
        """,
        timeout_s=30,
    )
    rep = report(r)
    assert rep["error"] and rep["mb"] <= 64, rep  # the 64 MiB tmpfs, not the host's disk
    after = report(run(pool, "import json, shutil\nprint(json.dumps(shutil.disk_usage('/tmp').used))"))
    assert after < 4 << 20  # and it was wiped for the next job
    assert_serving(pool)


def test_one_file_cannot_exceed_the_file_size_limit(pool):
    r = run(
        pool,
        """
        import json
        n = 0
        try:
            with open("big", "wb") as f:
                for _ in range(40):
                    f.write(b"x" * (1 << 20))
                    n += 1
        except OSError as e:
            print(json.dumps({"mb": n, "errno": e.errno}))
        else:
            print(json.dumps({"mb": n, "errno": 0}))
        """,
    )
    assert report(r) == {"mb": 16, "errno": 27}  # EFBIG at RLIMIT_FSIZE (16 MiB)


def test_deep_directory_tree_is_wiped_without_breaking_the_worker(pool):
    r = run(
        pool,
        """
        import os
        for _ in range(5000):
            os.mkdir("d")
            os.chdir("d")
        os.chmod(".", 0)
        print("deep")
        """,
        timeout_s=20,
    )
    assert r.stdout == "deep\n"
    left = [report(x) for x in on_each(pool, "import json, os\nprint(json.dumps(os.listdir('/tmp')))")]
    assert left == [["job"]] * pool.size
    assert_serving(pool)


# -- network ------------------------------------------------------------------------------------
def _listener(host: str) -> tuple[socket.socket, int]:
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind((host, 0))
    srv.listen(8)
    srv.settimeout(0.1)
    return srv, srv.getsockname()[1]


CONNECT = """
import json, socket
try:
    socket.create_connection(({host!r}, {port}), timeout=2).close()
    print(json.dumps("connected"))
except OSError as e:
    print(json.dumps(type(e).__name__))
"""


def _accepted(srv: socket.socket) -> bool:
    try:
        srv.accept()[0].close()
        return True
    except OSError:
        return False


def test_no_network_to_the_hosts_loopback(pool):
    srv, port = _listener("127.0.0.1")
    try:
        r = run(pool, CONNECT.format(host="127.0.0.1", port=port))
        assert report(r) != "connected" and not _accepted(srv)
    finally:
        srv.close()


def _docker0_address() -> str | None:
    out = subprocess.run(["ip", "-4", "-o", "addr", "show", "docker0"], capture_output=True, text=True).stdout
    return out.split("inet ")[1].split("/")[0] if "inet " in out else None


def test_no_network_to_the_docker_host_gateway(pool):
    gw = _docker0_address()
    if gw is None:
        pytest.skip("no docker0 bridge on this host: nothing to connect to")
    srv, port = _listener(gw)
    try:
        r = run(pool, CONNECT.format(host=gw, port=port))
        assert report(r) != "connected" and not _accepted(srv)
    finally:
        srv.close()


def test_no_network_to_the_outside_only_loopback_and_no_route(pool):
    r = run(
        pool,
        """
        import json, socket
        routes = open("/proc/net/route").read().splitlines()[1:]
        v6 = open("/proc/net/ipv6_route").read().split() if __import__("os").path.exists("/proc/net/ipv6_route") else []
        print(json.dumps({"ifs": sorted(n for _, n in socket.if_nameindex()), "routes": len(routes)}))
        """,
    )
    assert report(r) == {"ifs": ["lo"], "routes": 0}


# -- the filesystem -----------------------------------------------------------------------------
def test_nothing_outside_the_scratch_places_is_writable(pool):
    r = run(
        pool,
        """
        import json, os
        wrote = []
        for d in ["/", "/usr", "/usr/lib", "/etc", "/opt", "/opt/sandbox", "/var/tmp", "/var", "/home", "/root",
                  "/run", "/dev", "/bin", "/usr/local/bin", "/proc/self", "/sys"]:
            try:
                with open(os.path.join(d, "pwned"), "w") as f:
                    f.write("x")
                wrote.append(d)
            except OSError:
                pass
        print(json.dumps(wrote))
        """,
    )
    assert report(r) == []


PLANT = """
import ctypes, json, os
planted = []
for d in ["/tmp", "/tmp/job", "/dev/shm", "/var/tmp", os.path.expanduser("~"), "/dev/mqueue"]:
    try:
        with open(os.path.join(d, "planted"), "w") as f:
            f.write("from an earlier job")
        planted.append(d)
    except OSError:
        pass
libc = ctypes.CDLL(None, use_errno=True)
shm = libc.shmget(0x5EC2E7, 4096, 0o1666)  # IPC_CREAT | 0666: a System V segment outlives its process
print(json.dumps({"planted": planted, "shm": shm}))
"""

FIND = """
import json, os
found = [d for d in ["/tmp", "/tmp/job", "/dev/shm", "/var/tmp", os.path.expanduser("~"), "/dev/mqueue"]
         if os.path.exists(os.path.join(d, "planted"))]
shm = open("/proc/sysvipc/shm").read().splitlines()[1:]
print(json.dumps({"found": found, "shm": len(shm)}))
"""


def test_files_and_ipc_do_not_persist_into_a_later_job(pool):
    planted = [report(r) for r in on_each(pool, PLANT)]
    assert all(p["planted"] and p["shm"] >= 0 for p in planted), planted  # the attack itself worked
    assert [report(r) for r in on_each(pool, FIND)] == [{"found": [], "shm": 0}] * pool.size


DAEMON = """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:  # the daemonised grandchild
        os.closerange(0, 3)
        time.sleep(1.5)
        open("/tmp/still-alive", "w").write("yes")
        time.sleep(600)
    os._exit(0)
time.sleep(0.2)
print("parent exits")
"""

PROCESSES = """
import json, os
others = [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, os.getpid())]
print(json.dumps({"others": others, "marker": os.path.exists("/tmp/still-alive")}))
"""


def test_no_process_survives_its_job(pool):
    assert run(pool, DAEMON).stdout == "parent exits\n"
    time.sleep(2)  # past the moment the grandchild would have written its marker
    assert [report(r) for r in on_each(pool, PROCESSES)] == [{"others": [], "marker": False}] * pool.size


def test_host_files_and_the_docker_socket_are_out_of_reach(pool, tmp_path):
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host secret")
    r = run(
        pool,
        f"""
        import json, os
        seen = [p for p in [{str(secret)!r}, "/var/run/docker.sock", "/run/docker.sock", "/work", "/root/.ssh",
                            "/home", "/var/lib/docker", "/etc/shadow", "/run/rlvr/in", "/run/rlvr/out"]
                if os.path.exists(p) and os.access(p, os.R_OK)]
        mounts = [line.split()[1] for line in open("/proc/self/mounts")]
        print(json.dumps({{"seen": seen, "mounts": mounts}}))
        """,
    )
    rep = report(r)
    assert str(secret) not in rep["seen"] and not any("docker.sock" in p for p in rep["seen"])
    assert not any(p in rep["seen"] for p in ("/work", "/root/.ssh", "/var/lib/docker", "/etc/shadow")), rep
    assert not any(p.startswith("/run/rlvr/") for p in rep["seen"])  # the frame FIFOs are gone before any job
    assert not any("docker.sock" in m or m.startswith(("/work", "/home", "/root")) for m in rep["mounts"])


def test_the_services_environment_is_not_visible(pool):
    assert os.environ[SECRET_NAME] == SECRET_VALUE  # set in this process before the pool started
    r = run(
        pool,
        f"""
        import json, os
        hits = [k for k, v in os.environ.items() if {SECRET_VALUE!r} in v or k == {SECRET_NAME!r}]
        for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
            try:
                if {SECRET_VALUE!r}.encode() in open(f"/proc/{{pid}}/environ", "rb").read():
                    hits.append(pid)
            except OSError:
                pass
        print(json.dumps(hits))
        """,
    )
    assert report(r) == []


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
    if pool.cfg.backend == "docker":
        assert rep["sudo"] is None
        assert rep["seccomp"] == "2"  # Docker's default seccomp profile is on (bwrap has none: docs/sandbox.md)


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
    pool.close()
    assert _processes_mentioning(names) == []
    assert _processes_of_uids(uids) == []
    if pool.cfg.backend == "docker":
        from sandbox.pool import _owner

        assert list_containers(_owner()) == []
