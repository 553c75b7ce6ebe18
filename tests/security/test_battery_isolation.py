"""The security battery, isolation: the network, the filesystem, persistence between jobs, the host's
files and environment, against every backend.

Each test runs a hostile job and asserts the protection held, in a way that fails if the protection
were removed (the job reports what it managed to do; the test asserts it could not). After each
attack the service must keep serving: no sandbox error.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time

import pytest

from tests.security.conftest import SECRET_NAME, SECRET_VALUE
from tests.security.jobs import on_each, report, run


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
