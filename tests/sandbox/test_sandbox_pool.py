"""The pool's contract and its infrastructure behaviour: results, self-healing, backpressure, cleanup.

Real Docker (and real bwrap where it can run), no mocks. The adversarial programs are in
tests/security/.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time

import pytest

from sandbox.backend import Job, Limits, PoolSaturated, SandboxConfig, SandboxError, owner
from sandbox.backends.docker import LABEL, OWNER_LABEL, list_containers, remove_stale_containers
from sandbox.pool import SandboxPool
from tests.security.conftest import BACKENDS, ensure_image, make_pool


@pytest.fixture(scope="module", params=BACKENDS)
def pool(request):
    p = make_pool(request.param, size=2, grace_s=2.0).start()
    try:
        yield p
    finally:
        p.close()


def _wait_for(cond, timeout: float = 60.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.1)
    return False


# -- the result contract ------------------------------------------------------------------------
@pytest.mark.slow
def test_result_carries_status_output_and_flags(pool):
    r = pool.run(Job(code="import sys\nprint(input()[::-1])\nsys.stderr.write('warn')\n", stdin="abc", id="j1"))
    assert (r.exit_code, r.signal, r.stdout, r.stderr, r.id) == (0, None, "cba\n", "warn", "j1")
    assert r.ok and r.finished and not r.timed_out and r.wall_s > 0 and r.sandbox_error is None


@pytest.mark.parametrize(
    "code,exit_code,finished",
    [
        ("raise SystemExit(3)", 3, False),
        ("import os\nos._exit(0)", 0, False),  # exit 0 before the end: not finished
        ("1/0", 1, False),
        ("x = 1", 0, True),
    ],
    ids=["sys-exit-3", "os-exit-0", "exception", "ran-to-the-end"],
)
def test_exit_status_and_finished(pool, code, exit_code, finished):
    r = pool.run(Job(code=code))
    assert (r.exit_code, r.finished) == (exit_code, finished)


def test_a_job_killed_by_a_signal_reports_it(pool):
    r = pool.run(Job(code="import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)"))
    assert r.exit_code is None and r.signal == signal.SIGSEGV and not r.ok


def test_output_over_the_cap_ends_the_job_and_is_flagged(pool):
    """The cap counts stdout and stderr together; a job may lower it for itself (never raise it)."""
    r = pool.run(
        Job(code="import sys\nprint('y' * 600)\nsys.stderr.write('z' * 600)", limits=Limits(output_bytes=1000))
    )
    assert r.output_limit_exceeded and r.output_cap == 1000 and r.stdout == "y" * 600 + "\n"
    r = pool.run(
        Job(code="import sys\nprint('y' * 400)\nsys.stderr.write('z' * 400)", limits=Limits(output_bytes=1000))
    )
    assert r.ok and not r.output_limit_exceeded and (len(r.stdout), len(r.stderr)) == (401, 400)


def test_spawn_mode_runs_a_fresh_isolated_interpreter(pool):
    r = pool.run(Job(code="import sys\nprint(sys.flags.isolated, 'sympy' in sys.modules)", mode="spawn"))
    assert r.ok and r.stdout == "1 False\n"


def test_preloaded_modules_are_warm_in_fork_mode(pool):
    assert "sympy" in pool.cfg.preload  # the fixture's pool keeps the default preload
    r = pool.run(Job(code="import sys\nprint('sympy' in sys.modules)"))
    assert r.stdout == "True\n"


def test_large_code_and_stdin_round_trip(pool):
    blob = "é" * 300_000
    r = pool.run(Job(code=f"import sys\ns = sys.stdin.read()\nprint(len(s), s == {blob[:10]!r} * 30000)", stdin=blob))
    assert r.stdout == "300000 True\n"


# -- self-healing -------------------------------------------------------------------------------
def _kill_sandbox(pool: SandboxPool, name: str) -> None:
    if pool.cfg.backend == "docker":
        subprocess.run(["docker", "kill", name], capture_output=True, check=True)
    elif pool.cfg.backend == "podman":
        from sandbox.backends.podman import podman_cmd

        subprocess.run(podman_cmd("kill", name), capture_output=True, check=True)
    else:
        c = next(c for c in list(pool._all) if c.name == name)
        os.kill(c.proc.pid, signal.SIGKILL)


def _start_busy(pool: SandboxPool, job: Job, box: dict) -> tuple[threading.Thread, str]:
    """Run ``job`` in a thread; return it and the name of the sandbox it runs in once it was sent."""
    jobs = {c.name: c.jobs for c in list(pool._all)}
    t = threading.Thread(target=lambda: box.update(r=pool.run(job)))
    t.start()
    busy: list[str] = []

    def sent() -> bool:
        busy[:] = [c.name for c in list(pool._all) if c.jobs > jobs.get(c.name, 0)]
        return bool(busy)

    assert _wait_for(sent, 10)
    time.sleep(0.3)  # the worker has it
    return t, busy[0]


def test_a_sandbox_killed_mid_job_gives_sandbox_error_and_is_replaced(pool):
    box: dict = {}
    t, busy = _start_busy(pool, Job(code="import time\ntime.sleep(30)", timeout_s=40), box)
    _kill_sandbox(pool, busy)
    t.join(30)
    assert box["r"].sandbox_error  # not the 30 s sleep's clean exit: the kill ended the job
    assert _wait_for(lambda: pool.ready and busy not in pool.container_names())
    assert all(pool.run(Job(code="print(1)")).ok for _ in range(pool.size))


def test_a_sandbox_that_died_while_idle_is_skipped_not_failed(pool):
    # Hold the victim itself: the watchdog may replace it (and drop it from pool._all) before we look.
    victim_sbx = list(pool._idle.queue)[0]
    victim = victim_sbx.name
    _kill_sandbox(pool, victim)
    assert _wait_for(lambda: not victim_sbx.alive(), 10)
    r = pool.run(Job(code="print(2)"))  # would have gone to the dead one first
    assert r.ok and r.stdout == "2\n"
    assert _wait_for(lambda: pool.ready and victim not in pool.container_names())


@pytest.mark.docker
def test_an_idle_sandbox_whose_attach_socket_closed_is_replaced_not_raised():
    """The full suite once found an idle Docker sandbox whose attach socket had been closed (fd -1): select()
    raised ValueError in the pool's watchdog (the thread died) and in the next job's acquire (a
    SANDBOX_ERROR). A closed channel is a dead sandbox: it is replaced and the job runs on another."""
    with make_pool("docker", size=1) as pool:
        victim = list(pool._idle.queue)[0]
        os.close(victim._sock.detach())  # what the sandbox found: its stream closed (fd -1) while it sat idle
        assert victim.alive() is False
        r = pool.run(Job(code="print(3)"))
        assert r.ok and r.stdout == "3\n", r.sandbox_error
        assert _wait_for(lambda: pool.ready and victim.name not in pool.container_names())


@pytest.mark.docker
def test_a_sandbox_that_stops_answering_is_replaced():
    """A frozen worker: the job gets sandbox_error after its timeout + grace, and a new sandbox comes up.
    Docker's own pool (freezing a sandbox uses `docker pause`), so no other backend runs it as a skip."""
    with make_pool("docker", size=2, grace_s=2.0) as pool:
        box: dict = {}
        t, busy = _start_busy(pool, Job(code="import time\ntime.sleep(1)", timeout_s=1.5), box)
        subprocess.run(["docker", "pause", busy], capture_output=True, check=True)
        t.join(30)
        assert "did not answer" in (box["r"].sandbox_error or "")
        assert _wait_for(lambda: pool.ready and busy not in pool.container_names())


# -- backpressure -------------------------------------------------------------------------------
@pytest.mark.docker
def test_backpressure_wait_deadline_and_queue_bound():
    ensure_image()
    with SandboxPool(SandboxConfig(size=1, max_waiters=1, preload=())) as p:
        hold = threading.Thread(target=p.run, args=(Job(code="import time\ntime.sleep(3)", timeout_s=5),))
        hold.start()
        assert _wait_for(lambda: p.stats()["idle"] == 0 and p.stats()["waiters"] == 0, 10)
        with pytest.raises(PoolSaturated, match="no sandbox became free within 0.3 s"):
            p.run(Job(code="print(1)"), wait_s=0.3)  # the hold lasts 3 s: only the 0.3 s wait can end this
        waiter = threading.Thread(target=lambda: p.run(Job(code="print(1)"), wait_s=10))
        waiter.start()
        assert _wait_for(lambda: p.stats()["waiters"] == 1, 5)
        with pytest.raises(PoolSaturated, match="saturated: 1 callers already waiting"):
            p.run(Job(code="print(1)"), wait_s=10)  # refused for the bound, not "no sandbox became free"
        hold.join(), waiter.join()
        assert p.run(Job(code="print(1)")).ok


@pytest.mark.docker
def test_a_job_without_a_deadline_waits_the_queue_limit_not_its_own_timeout():
    # a 0.5 s program queued 2 s behind another still runs, with all of its 0.5 s; past the pool's
    # queue limit (max_wait_s) it is refused instead
    ensure_image()
    with SandboxPool(SandboxConfig(size=1, preload=(), max_wait_s=30)) as p:
        hold = threading.Thread(target=p.run, args=(Job(code="import time\ntime.sleep(2)", timeout_s=5),))
        hold.start()
        assert _wait_for(lambda: p.stats()["idle"] == 0, 10)
        r = p.run(Job(code="print('ran')", timeout_s=0.5))
        hold.join()
        assert r.ok and r.stdout == "ran\n" and r.time_limit_s == 0.5, r
    with SandboxPool(SandboxConfig(size=1, preload=(), max_wait_s=0.3)) as p:
        hold = threading.Thread(target=p.run, args=(Job(code="import time\ntime.sleep(2)", timeout_s=5),))
        hold.start()
        assert _wait_for(lambda: p.stats()["idle"] == 0, 10)
        with pytest.raises(PoolSaturated, match="no sandbox became free within 0.3 s"):
            p.run(Job(code="print(1)", timeout_s=10))
        hold.join()


# -- lifecycle and cleanup ----------------------------------------------------------------------
@pytest.mark.docker
def test_close_removes_every_container_and_later_runs_fail_clearly():
    ensure_image()
    p = SandboxPool(SandboxConfig(size=2, preload=())).start()
    names = p.container_names()
    busy = threading.Thread(target=lambda: p.run(Job(code="import time\ntime.sleep(20)", timeout_s=30)))
    busy.start()
    time.sleep(0.5)
    p.close()
    busy.join(30)
    assert not busy.is_alive()
    out = subprocess.run(["docker", "ps", "-a", "--format", "{{.Names}}"], capture_output=True, text=True).stdout
    assert not set(names) & set(out.split())
    with pytest.raises(SandboxError, match="shut down"):
        p.run(Job(code="print(1)"))
    p.close()  # idempotent


@pytest.mark.docker
def test_stale_containers_of_a_dead_owner_are_removed_by_label():
    ensure_image()
    from sandbox.image.python import image_tag

    dead = subprocess.Popen(["true"])
    dead.wait()
    host = socket.gethostname()

    def start(owner: str) -> str:
        cmd = ["docker", "run", "-d", "--rm", "--network", "none", "--label", f"{LABEL}=1",
               "--label", f"{OWNER_LABEL}={owner}", image_tag(), "python3", "-c", "import time; time.sleep(120)"]  # fmt: skip
        return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()[:12]

    stale, live = start(f"{host}:{dead.pid}"), start(owner())
    try:
        # Any pool starting on this host meanwhile (another test process) runs the same clean-up and
        # may remove the stale one first: the count may be 0, the outcome may not differ.
        remove_stale_containers()
        ids = [cid for cid, *_ in list_containers()]
        assert stale not in ids and live in ids
    finally:
        subprocess.run(["docker", "rm", "-f", stale, live], capture_output=True)


@pytest.mark.docker
def test_a_pool_start_removes_leftovers_of_a_crashed_run(tmp_path):
    """A process that owned a pool is SIGKILLed: its containers stay; the next pool start removes them."""
    ensure_image()
    script = tmp_path / "crash.py"
    script.write_text(
        "import os, signal, sys\nsys.path.insert(0, os.getcwd())\n"
        "from sandbox.pool import SandboxConfig, SandboxPool\n"
        "p = SandboxPool(SandboxConfig(size=1, preload=())).start()\n"
        "print(p.container_names()[0], flush=True)\nos.kill(os.getpid(), signal.SIGKILL)\n"
    )
    out = subprocess.run([os.sys.executable, str(script)], capture_output=True, text=True, cwd=os.getcwd())
    name = out.stdout.strip()
    assert name.startswith("rlvr-sbx-")
    running = subprocess.run(["docker", "ps", "-a", "--format", "{{.Names}}"], capture_output=True, text=True).stdout
    with SandboxPool(SandboxConfig(size=1, preload=())):
        after = subprocess.run(["docker", "ps", "-a", "--format", "{{.Names}}"], capture_output=True, text=True)
    # docker run -i --rm also ends on its own once the dead owner's pipe closes; either way it is gone
    assert name not in after.stdout.split() or name not in running.split()


def test_unknown_backend_is_refused_with_the_choices():
    with pytest.raises(SandboxError, match="docker, podman, bwrap"):
        SandboxPool(SandboxConfig(backend="chroot"))
