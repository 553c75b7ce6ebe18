"""Sessions in the sandbox room (sandbox/session.py, in_sandbox/session.py): a sandbox checked out of the
one pool, held between calls, with notebook semantics, limits that end a cell or the session, forks
that start from a copy of the state, and cells that cannot outlive themselves or fake the next report.

Real sandboxes (Docker; bubblewrap), no mocks.
"""

from __future__ import annotations

import pytest

from sandbox.lanes import Lane
from sandbox.pool import SandboxPool
from sandbox.session import SESSION_LANE, SESSION_PRELOAD, SessionError, SessionLimits, SessionSandbox
from tests.security.conftest import make_pool

BACKENDS = [pytest.param("docker", marks=pytest.mark.docker), "bwrap"]


@pytest.fixture(scope="module", params=BACKENDS)
def pool(request):
    cfg = make_pool(request.param, size=1).cfg
    cfg.preload = ()
    p = SandboxPool(cfg, lanes={SESSION_LANE: Lane(preload=(SESSION_PRELOAD,))}).start()  # the service's lane
    try:
        yield p
    finally:
        p.close()


@pytest.fixture
def py(pool):
    s = SessionSandbox(
        pool, "python", SessionLimits(timeout_s=3, cpu_s=2, output_bytes=4096, memory_mb=512), {"data/in.txt": b"hello"}
    )
    yield s
    for slot in list(s.live):
        s.close_slot(slot)


def test_a_session_is_a_sandbox_held_out_of_the_pool_and_never_returned(pool, py):
    assert py.name not in pool.container_names() and pool.held() >= 1
    name = py.name
    py.close_slot(0)
    assert py.box is None and name not in pool.container_names()


def test_notebook_semantics(py):
    assert py.exec(0, "import os\nx = 41\nx + 1").value == "42"
    c = py.exec(0, "import sys\nprint('out'); print('err', file=sys.stderr)\nx")
    assert (c.status, c.stdout, c.stderr, c.value) == ("ok", "out\n", "err\n", "41")
    c = py.exec(0, "def f():\n    return 1 / 0\nf()")
    assert c.status == "ok" and c.value is None and c.error.endswith("ZeroDivisionError: division by zero\n")
    assert 'File "<cell 3>", line 2, in f' in c.error
    assert py.exec(0, "x = x + 1").value is None  # an assignment shows nothing
    assert py.exec(0, "os.path.basename(os.getcwd()), open('data/in.txt').read(), x").value == "('0', 'hello', 42)"
    assert py.exec(0, "open('made.txt', 'w').write('k')\nsorted(os.listdir('.'))").value == "['data', 'made.txt']"


def test_the_throwaway_cell_run_ahead_leaves_no_trace(py):
    """The process forked for the next cell runs a throwaway cell while it waits (in_sandbox/session_holder.py,
    ``_warm``): nothing of it shows in the session (its value, its source, an output, a cell number)."""
    c = py.exec(0, "import linecache\n'_' in globals(), sorted(k for k in linecache.cache if k.startswith('<'))")
    assert (c.status, c.stdout, c.stderr, c.value) == ("ok", "", "", "(False, ['<cell 1>'])")
    c = py.exec(0, "1 / 0")
    assert 'File "<cell 2>", line 1' in c.error
    assert py.exec(0, "_").value == "(False, ['<cell 1>'])"  # the last value a cell showed, not the throwaway's


def test_a_long_session_keeps_its_descriptors(py):
    """Hundreds of cells (a tool-using rollout runs ~50; NeMo Gym's users ask for more): the holder keeps no
    descriptor of a cell (one leaked per cell used to end the session at its nofile limit, 256)."""
    first = py.exec(0, "import os\nlen(os.listdir('/proc/self/fd'))").value
    for _ in range(300):
        assert py.exec(0, "1").value == "1"
    assert py.exec(0, "len(os.listdir('/proc/self/fd'))").value == first


def test_a_cell_killed_for_time_leaves_the_state_before_it(py):
    py.exec(0, "n = 1")
    c = py.exec(0, "n = 2\nwhile True: pass", timeout_s=0.5)
    assert c.status in ("timeout", "cpu") and c.wall_s >= 0.5
    assert py.exec(0, "n").value == "1"  # rolled back: the cell never ended


def test_cpu_limit_per_cell(py):
    c = py.exec(0, "while True: pass", timeout_s=3, cpu_s=1)  # a loaded host may reach the wall time first
    assert c.status in ("cpu", "timeout") and c.cpu_s > 0
    assert py.exec(0, "1").value == "1"


def test_output_cap_per_cell(py):
    c = py.exec(0, "print('x' * 100_000)")
    assert c.status == "output_limit" and c.stdout_truncated and len(c.stdout) <= 4096
    assert py.exec(0, "print('fits')").stdout == "fits\n"
    # past the cap, then ended at once (before the worker looked): still past the cap, and not kept
    c = py.exec(0, "import sys\nsys.stdout.write('y' * 5000)\nkept = 1")
    assert c.status == "output_limit" and c.stdout_truncated
    assert py.exec(0, "'kept' in globals()").value == "False"


def test_memory_ends_the_session_and_says_so(py):
    c = py.exec(0, "keep = bytearray(800 * 1024 * 1024)")
    assert c.status == "memory" and "memory" in c.ended
    again = py.exec(0, "1")
    assert again.status == "gone" and "memory" in again.ended


def test_exit_in_a_cell_is_survived(py):
    py.exec(0, "k = 5")
    assert py.exec(0, "import os\nos._exit(3)").status == "exited"
    assert py.exec(0, "k").value == "5"
    c = py.exec(0, "raise SystemExit(2)")
    assert c.status == "ok" and "SystemExit: 2" in c.error


def test_a_process_a_cell_leaves_does_not_survive_it(py):
    py.exec(0, "import subprocess\np = subprocess.Popen(['sleep', '60'])\npid = p.pid")
    c = py.exec(0, "import os\nos.path.exists(f'/proc/{pid}') and open(f'/proc/{pid}/stat').read().split()[2] != 'Z'")
    assert c.value == "False"
    # a thread, too: it never reaches the next cell's output or the one after
    py.exec(
        0,
        "import threading, time\nthreading.Thread(target=lambda: [print('leak') or time.sleep(0.01) for _ in range(10**6)], daemon=True).start()",
    )  # noqa: E501
    assert py.exec(0, "import time; time.sleep(0.2)").stdout == ""
    assert py.exec(0, "import threading; threading.active_count()").value == "1"


def test_tampering_with_the_helper_does_not_fake_the_next_report(py):
    # the cell disarms every limit the helper sets and makes it run nothing: the worker still measures
    py.exec(
        0,
        "import sys, resource\nh = sys.modules['in_sandbox.session_holder']\n"
        "h._limit_cpu = lambda cmd: None\nresource.setrlimit = lambda *a: None\n"
        "real = h.run_cell\nh.run_cell = lambda code, ns, f: real(code, ns, f) and ('fake', None, False)",
    )
    c = py.exec(0, "while True: pass", timeout_s=0.5)
    assert c.status in ("timeout", "cpu") and c.value is None
    c = py.exec(0, "print('x' * 100_000)")
    assert c.status == "output_limit" and c.stdout_truncated


def test_a_helper_that_names_a_leftover_as_its_next_cell_ends_the_session(py):
    """The holder announces the process that will run the next cell, which the worker spares; a cell that
    rewrites it to name a process of its own (its parent is the holder, as the worker checks) would keep that
    process alive. The kernel says who sent each message (SO_PASSCRED): a process speaks only for itself, so
    the lie ends the session, saying so, and the process dies with it."""
    import os

    uid = py.box.uid
    py.exec(0, "import subprocess, sys\nh = sys.modules['in_sandbox.session_holder']\n"
               "p = subprocess.Popen(['sleep', '60'])\n"
               "def ready(self):\n    self.send({'next': p.pid})\nh.Holder.ready = ready")  # fmt: skip
    c = py.exec(0, "x = 1")
    assert c.status == "gone" and "not itself" in c.ended

    def sleeping() -> list[str]:
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                if os.stat(f"/proc/{pid}").st_uid == uid and open(f"/proc/{pid}/cmdline").read().startswith("sleep"):
                    found.append(pid)
            except OSError:
                pass
        return found

    assert sleeping() == []  # killed before the worker read the next call


def test_breaking_the_helpers_protocol_ends_the_session_with_the_reason(py):
    py.exec(0, "import json\njson.dumps = lambda *a, **k: '{\"holder\": 1}'")
    c = py.exec(0, "while True: pass", timeout_s=0.5)
    assert c.status == "gone" and "helper" in c.ended
    assert py.exec(0, "1").ended == c.ended


def test_a_cell_that_closes_its_helpers_channel_is_reported_as_not_ending(py):
    py.exec(0, "k = 7")
    c = py.exec(0, "import os\nfor fd in range(3, 64):\n    try: os.close(fd)\n    except OSError: pass")
    assert c.status == "exited"  # its process could not report: the holder before it takes over
    assert py.exec(0, "k").value == "7"


def test_fork_independence(py):
    py.exec(0, "x = 1\nopen('f.txt', 'w').write('parent')")
    kids = py.fork(0, 3)
    assert len(kids) == 3 and len(set(kids) | {0}) == 4
    assert (
        py.exec(kids[0], "x = 100\nopen('f.txt', 'w').write('fork0')\nopen('new.txt', 'w').write('n')").status == "ok"
    )
    for k in kids[1:]:
        assert (
            py.exec(k, "import os\nx, open('f.txt').read(), os.path.exists('new.txt')").value == "(1, 'parent', False)"
        )
    assert py.exec(0, "import os\nx, open('f.txt').read(), os.path.exists('new.txt')").value == "(1, 'parent', False)"
    assert py.exec(kids[0], "x, open('f.txt').read()").value == "(100, 'fork0')"


def test_a_fork_cannot_reach_its_siblings(py):
    assert py.isolation == "landlock"  # without Landlock siblings share a uid and reach each other (docs/sessions.md)
    a, b = py.fork(0, 2)
    pid_a = py.exec(a, "import os\nos.getpid()").value
    c = py.exec(b, f"import os, signal\nos.kill({pid_a}, signal.SIGKILL)")
    assert "PermissionError" in c.error
    c = py.exec(b, f"open('/tmp/s/{a}/x', 'w')")
    assert "PermissionError" in c.error
    c = py.exec(b, f"open('/proc/{pid_a}/mem', 'rb')")
    assert "PermissionError" in c.error
    assert py.exec(a, "1").value == "1"


def test_a_fork_of_a_fork_is_refused(py):
    (a,) = py.fork(0, 1)
    if py.isolation == "landlock":
        with pytest.raises(SessionError, match="cannot be forked again"):
            py.fork(a, 1)


def test_bash_session(pool):
    s = SessionSandbox(pool, "bash", SessionLimits(timeout_s=3))
    try:
        c = s.exec(0, "mkdir -p sub && cd sub && export FOO=bar && echo hi > f && echo made")
        assert (c.status, c.stdout, c.exit_code) == ("ok", "made\n", 0)
        assert s.exec(0, "pwd; echo $FOO; cat f").stdout.endswith("/sub\nbar\nhi\n")
        assert s.exec(0, "exit 3").exit_code == 3
        assert s.exec(0, "false").exit_code == 1
        s.exec(0, "sleep 60 & echo $! > pid")
        state = (
            "s=$(cut -d' ' -f3 /proc/$(cat pid)/stat 2>/dev/null); [ -z \"$s\" ] || [ $s = Z ] && echo gone || echo $s"
        )
        assert s.exec(0, state).stdout == "gone\n"  # killed: reaped, or a zombie its parent has not reaped yet
        (k,) = s.fork(0, 1)
        s.exec(k, "echo fork > f; export FOO=baz")
        assert s.exec(0, "cat f; echo $FOO").stdout == "hi\nbar\n"
    finally:
        for slot in list(s.live):
            s.close_slot(slot)


def test_unknown_kind_and_bad_file_names_are_refused(pool):
    with pytest.raises(SessionError, match="unknown session kind"):
        SessionSandbox(pool, "cobol", SessionLimits())
    with pytest.raises(SessionError, match="leaves the session's directory"):
        SessionSandbox(pool, "python", SessionLimits(), {"../../etc/x": b""})


HOLDER = """
import sys, time
sys.path.insert(0, {root!r})
from sandbox.backend import SandboxConfig
from sandbox.lanes import Lane
from sandbox.pool import SandboxPool
from sandbox.session import SESSION_LANE, SessionLimits, SessionSandbox
cfg = SandboxConfig(backend={backend!r}, size=1, preload=())
pool = SandboxPool(cfg, lanes={{SESSION_LANE: Lane()}}).start()
s = SessionSandbox(pool, "python", SessionLimits())
s.fork(0, 2)
s.exec(0, "import os; x = 1")
print(s.box.uid, flush=True)
time.sleep(600)
"""


@pytest.mark.parametrize("backend", [*BACKENDS, pytest.param("podman", marks=pytest.mark.docker)])
def test_kill_9_of_the_host_leaves_no_session_process(backend, tmp_path):
    """A host process holding a session (and its forks) is killed with SIGKILL: no process of the sandbox
    stays (Podman: no container of that owner), and the next start finds nothing of it left to remove."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    from sandbox.backends.table import backend_entry

    def processes_of_uids(uids: set[int]) -> list[str]:
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                found += [pid] if os.stat(f"/proc/{pid}").st_uid in uids else []
            except OSError:
                pass
        return found

    make_pool(backend, size=1)  # the backend is there (a required part), the image built
    root = str(Path(__file__).resolve().parents[2])
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER.format(root=root, backend=backend)], stdout=subprocess.PIPE, text=True
    )
    uid = int(proc.stdout.readline())

    def left() -> list:
        if backend in ("docker", "podman"):
            from sandbox.backends.docker import list_containers

            mine = [c for c, owner, _ in list_containers(engine=backend) if owner.endswith(f":{proc.pid}")]
            return mine if backend == "podman" else mine + processes_of_uids({uid})
        return processes_of_uids({uid})  # podman maps uids: its containers are counted instead

    assert left()  # the worker, the holders of the session and its two forks
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    backend_entry(backend).load().remove_stale()  # what the next start does first
    end = time.monotonic() + 30
    while left() and time.monotonic() < end:
        time.sleep(0.2)
    assert left() == []
