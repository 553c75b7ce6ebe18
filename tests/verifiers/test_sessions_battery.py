"""The hostile-program battery inside sessions, through a real server (gRPC on loopback) on every backend:
Docker, rootless Podman and bubblewrap. Each test is the cell a policy under pressure would write to get
around one rule, and what the session must still say and do.

Escape (the worker, the host's files, the session's code), network (the service's own port included),
fork bomb, another session's files and memory, a process left running after its cell (a daemon, a bash
job), a cell that tampers with the session's own helper, memory that ends the session, and the limits a
caller can try to get around (client ids, fork sizes, TTLs, a lifetime kept alive by calls).
"""

from __future__ import annotations

import secrets
import time

import grpc
import pytest

from tests.security.conftest import make_pool
from verifiers.client import VerifierClient, VerifierError
from verifiers.launch import LocalServer

BACKENDS = [pytest.param("docker", marks=pytest.mark.docker), pytest.param("podman", marks=pytest.mark.docker), "bwrap"]
ARGS = [
    "--max-sessions",
    "8",
    "--max-sessions-per-caller",
    "4",
    "--session-memory-mb",
    "512",
    "--session-timeout-s",
    "20",
]
SECRET = "RLVR_SESSION_BATTERY_SECRET"


@pytest.fixture(scope="module", params=BACKENDS)
def served(request, tmp_path_factory):
    make_pool(request.param, size=1)  # the backend is there (a required part), the image built
    tmp = tmp_path_factory.mktemp(f"battery-{request.param}")
    # Docker's containers out of its /docker group, whose one CPU share every container of a shared machine
    # divides (docs/sandbox.md): under other tests' load the pool could not start there. The hardening is the same.
    where = ["--cgroup-parent", "/"] if request.param == "docker" else []
    srv = LocalServer(
        pool_size=1,
        registry=str(tmp / "r.sqlite"),
        log_path=str(tmp / "server.log"),
        extra_args=[*ARGS, "--backend", request.param, *where],
        env={SECRET: "s3cr3t"},
    )
    with srv:
        yield srv


@pytest.fixture
def c(served):
    with VerifierClient(served.target, timeout_s=60, client_id="mallory") as client:
        yield client
        for s in client.list_sessions():
            client.close_session(s.id)


def ok(c, sid, code, **kw):
    r = c.exec(sid, code, **kw)
    assert r.status == "ok" and not r.error, (r.status, r.error, r.stderr)
    return r


def test_escape_the_worker_the_host_and_the_helpers_code(c, served):
    s = c.open_session("python")
    r = c.exec(s.id, "import os\nos.environ.get('" + SECRET + "'), os.getuid() == 0")
    assert r.value == "(None, False)"  # nothing of the service's environment, never root
    for path in ("/proc/1/mem", "/proc/1/environ", "/opt/sandbox/in_sandbox/worker.py"):
        r = c.exec(s.id, f"open({path!r}, 'r+b')")
        assert "Error" in r.error, path  # the worker's memory and the session's own code: not writable
    r = c.exec(s.id, "import os, signal\nos.kill(1, signal.SIGKILL)\n'alive'")
    assert r.status == "ok"
    for code in (
        "import os\nos.chroot('/tmp')",
        "import os\nos.unshare(os.CLONE_NEWUSER)",
        "import ctypes\nctypes.CDLL(None).mount(b'none', b'/tmp', b'tmpfs', 0, None) == 0 or 1/0",
    ):
        assert c.exec(s.id, code).error, code
    assert ok(c, s.id, "1 + 1").value == "2"  # the worker (PID 1) still serves the session


def test_no_network_not_even_the_service(c, served):
    s = c.open_session("python")
    port = int(served.target.rsplit(":", 1)[1])
    for host, p in (("127.0.0.1", port), ("1.1.1.1", 53), ("10.0.2.2", 80)):
        r = c.exec(s.id, f"import socket\nsocket.create_connection(({host!r}, {p}), timeout=2)", timeout_s=10)
        assert r.status == "ok" and "Error" in r.error, (host, r.error)
    r = c.exec(s.id, "import socket\nsocket.getaddrinfo('example.com', 80)", timeout_s=10)
    assert r.status == "ok" and "gaierror" in r.error


def test_a_fork_bomb_ends_with_its_cell(c):
    s = c.open_session("python", timeout_s=3)
    ok(c, s.id, "kept = 'before'")
    r = c.exec(s.id, "import os\nwhile True:\n    try: os.fork()\n    except OSError: pass", timeout_s=3)
    assert r.status in ("timeout", "cpu", "exited")
    assert ok(c, s.id, "kept").value == "'before'"
    survivors = ok(c, s.id, PROCESSES).value
    assert survivors == "[]", survivors  # nothing of the bomb is left


# every process of the sandbox but the worker and this cell's own line (its holder and itself)
PROCESSES = """
import os
me, parent = os.getpid(), os.getppid()
sorted(int(p) for p in os.listdir('/proc') if p.isdigit() and int(p) not in (1, me, parent)
       and open(f'/proc/{p}/stat').read().rpartition(')')[2].split()[0] != 'Z')
"""


def test_a_process_left_running_does_not_survive_its_cell(c):
    s = c.open_session("python")
    ok(c, s.id, "import os, subprocess, time\n"
                "p = subprocess.Popen(['sleep', '60'])\n"
                "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
                "        while True:\n            open('beat', 'a').write('.'); time.sleep(0.01)\n"
                "    os._exit(0)\n"
                "time.sleep(0.2)")  # fmt: skip
    assert ok(c, s.id, PROCESSES).value == "[]"
    size = ok(c, s.id, "import os\nos.path.getsize('beat')").value
    time.sleep(0.3)
    assert ok(c, s.id, "os.path.getsize('beat')").value == size  # the daemon is dead, not stopped
    b = c.open_session("bash")
    assert c.exec(b.id, "(sleep 100 &) ; nohup sleep 100 >/dev/null 2>&1 & disown; echo started").stdout == "started\n"
    r = c.exec(
        b.id, "for p in /proc/[0-9]*; do cat $p/cmdline 2>/dev/null | tr '\\0' ' '; echo; done | grep -c '^sleep'"
    )
    assert r.stdout.strip() == "0"


def test_another_session_s_files_and_memory_are_out_of_reach(c):
    token = secrets.token_hex(16)
    a = c.open_session("python")
    ok(c, a.id, f"secret = {token!r}\nopen('secret.txt', 'w').write(secret)\nimport os\nos.getpid(), os.getcwd()")
    b = c.open_session("python")
    hunt = (
        "import os\nfound = []\n"
        "for root, dirs, files in os.walk('/tmp'):\n"
        "    for f in files:\n"
        "        try: found += [f] if TOKEN in open(os.path.join(root, f), 'rb').read() else []\n"
        "        except OSError: pass\n"
        "for p in filter(str.isdigit, os.listdir('/proc')):\n"
        "    try:\n"
        "        mem = open(f'/proc/{p}/mem', 'rb')\n"
        "        for line in open(f'/proc/{p}/maps'):\n"
        "            lo, hi = (int(x, 16) for x in line.split()[0].split('-'))\n"
        "            if 'r' in line.split()[1] and hi - lo < 1 << 26:\n"
        "                try:\n"
        "                    mem.seek(lo); found += [p] if TOKEN in mem.read(hi - lo) else []\n"
        "                except (OSError, ValueError, OverflowError): pass\n"
        "    except OSError: pass\n"
        "found"
    ).replace("TOKEN", repr(token.encode()))
    assert ok(c, b.id, hunt, timeout_s=15).value == "[]"
    forks = c.fork_session(a.id, 2)  # forks of one session: one sandbox, each its own Landlock domain
    r = c.exec(forks[1].id, "import glob\n[open(p).read() for p in glob.glob('/tmp/s/*/secret.txt')]")
    assert token not in (r.value or "") + (r.stdout or "")
    assert ok(c, forks[1].id, "secret").value == repr(token)  # its own copy, which it was given


def test_tampering_with_the_helper_never_fakes_a_report(c):
    s = c.open_session("python", timeout_s=2, output_bytes=2000)
    ok(
        c,
        s.id,
        "import sys, resource, json\nh = sys.modules['in_sandbox.session_holder']\n"
        "h._limit_cpu = lambda cmd: None\nresource.setrlimit = lambda *a: None\n"
        "real = h.run_cell\nh.run_cell = lambda code, ns, f: (real(code, ns, f), ('42', None, False))[1]",
    )
    r = c.exec(s.id, "while True: pass", timeout_s=1)
    assert r.status in ("timeout", "cpu") and r.wall_s >= 1  # the worker's clock, not the helper's word
    r = c.exec(s.id, "print('x' * 100_000)")
    assert r.status == "output_limit" and r.stdout_truncated
    ok(c, s.id, "h.run_cell = real")
    # the helper's own reports now lie ("holder": 1): the worker checks every pid it is told and ends the session
    r = c.exec(s.id, 'import json\njson.dumps = lambda *a, **k: \'{"holder": 1, "status": "ok"}\'')
    assert r.status == "gone" and "helper" in r.ended  # a broken protocol ends the session, saying so
    with pytest.raises(VerifierError) as e:
        c.exec(s.id, "1")
    assert e.value.code == grpc.StatusCode.FAILED_PRECONDITION and "helper" in str(e.value)


def test_memory_ends_the_session_and_the_next_exec_says_why(c):
    s = c.open_session("python", memory_mb=256)
    r = c.exec(s.id, "hog = bytearray(400 * 1024 * 1024)")
    assert r.status == "memory" and "memory" in r.ended
    with pytest.raises(VerifierError) as e:
        c.exec(s.id, "1")
    assert e.value.code == grpc.StatusCode.FAILED_PRECONDITION and "memory" in str(e.value)
    r2 = c.open_session("python", memory_mb=256)  # a process that grows page by page
    r = c.exec(r2.id, "hog = []\nwhile True: hog.append(bytearray(1 << 20))")
    assert r.status == "memory"


def test_the_limits_a_caller_tries_to_get_around(c, served):
    for bad in (dict(memory_mb=4096), dict(timeout_s=60), dict(cpu_s=10_000), dict(ttl_s=10**6)):
        with pytest.raises(VerifierError) as e:
            c.open_session("python", **bad)
        assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT, bad
    s = c.open_session("python", timeout_s=2)
    r = c.exec(s.id, "import time\ntime.sleep(5)", timeout_s=60)  # an exec cannot ask for more than its session
    assert r.status == "timeout" and r.wall_s < 10
    for n in (0, 10_000):
        with pytest.raises(VerifierError) as e:
            c.fork_session(s.id, n)
        assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
    # the per-caller count is for a declared id: new ids each time still meet the service's total
    opened, codes = [], set()
    for i in range(12):
        with VerifierClient(served.target, timeout_s=60, client_id=f"sybil-{i}") as other:
            try:
                opened.append((other.open_session("python").id, i))
            except VerifierError as err:
                codes.add(err.code)
                assert "most" in str(err)
    assert len(opened) <= 8 - 1 and codes == {grpc.StatusCode.RESOURCE_EXHAUSTED}
    for sid, i in opened:
        with VerifierClient(served.target, timeout_s=60, client_id=f"sybil-{i}") as other:
            other.close_session(sid)


@pytest.mark.slow
def test_a_session_kept_busy_still_ends_at_its_maximum_lifetime(tmp_path):
    """Calls reset the idle TTL, never the lifetime: the reaper closes the session at its maximum, and the
    next call says so. (The reaper is the service's, the same on every backend: bubblewrap starts fastest.)"""
    make_pool("bwrap", size=1)
    args = ["--backend", "bwrap", "--session-max-life-s", "3", "--session-idle-ttl-s", "60"]
    with (
        LocalServer(
            pool_size=1, registry=str(tmp_path / "r.sqlite"), log_path=str(tmp_path / "s.log"), extra_args=args
        ) as srv,
        VerifierClient(srv.target, timeout_s=60, client_id="keeper") as c,
    ):
        s = c.open_session("python")
        err, end = None, time.monotonic() + 60  # a hang guard, not a timing
        while err is None and time.monotonic() < end:
            try:
                c.exec(s.id, "1")
            except VerifierError as e:
                err = e
            time.sleep(0.1)
        assert err is not None and err.code == grpc.StatusCode.FAILED_PRECONDITION
        assert "maximum" in str(err) and c.list_sessions() == []
