"""The security battery, resources: one adversarial program per property, against every backend
(fork bombs, memory, CPU, sleeping, runaway output, the disk, file size, deep trees).

Each test runs a hostile job and asserts the protection held, in a way that fails if the protection
were removed (the job reports what it managed to do; the test asserts it could not). After each
attack the service must keep serving: no sandbox error.
"""

from __future__ import annotations

import signal

from sandbox.backend import Limits
from tests.security.conftest import make_pool
from tests.security.gaps import expect_gap
from tests.security.jobs import assert_serving, on_each, report, run


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
    r = run(
        pool, "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n", timeout_s=2
    )
    assert r.timed_out and r.exit_code is None and 0 < r.time_limit_s <= 2, r  # killed at its own limit
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


def test_memory_bomb_across_processes_is_stopped_by_the_sandbox_limit(pool, request):
    expect_gap(request, pool.cfg.backend, "memory")  # docs/sandbox.md: where the sum over processes is not limited
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
    r = run(pool, "while True:\n    pass\n", timeout_s=30, limits=Limits(cpu_s=1))
    # the CPU limit (1 s), not the 30 s wall limit, ended it: a signal, and no time-out
    assert not r.timed_out and r.signal in (signal.SIGXCPU, signal.SIGKILL), r
    assert_serving(pool)


QUOTA = 0.25  # cores: far below what a loaded 2-core host still gives three spinning processes


def test_busy_processes_get_no_more_than_the_cpu_quota(pool, request):
    expect_gap(request, pool.cfg.backend, "cpu")  # docs/sandbox.md: where there is no CPU quota per sandbox
    code = """
        import json, os, time
        t0, kids = time.monotonic(), []
        for _ in range(3):  # three spinning processes: far more than the quota's worth of demand
            pid = os.fork()
            if pid == 0:
                end = time.monotonic() + 1.5
                while time.monotonic() < end:
                    pass
                os._exit(0)
            kids.append(pid)
        for p in kids:
            os.waitpid(p, 0)
        print(json.dumps({"cores": os.times().children_user / (time.monotonic() - t0)}))
        """
    small = make_pool(pool.cfg.backend, size=1, cpus=QUOTA, preload=()).start()  # its own quota
    try:
        r = run(small, code, timeout_s=30)
    finally:
        small.close()
    # CPU seconds used per second of wall time: a quota holds it at QUOTA; without one the three
    # processes take what the host's cores give (a ratio, not a timing: host load only lowers it)
    assert report(r)["cores"] < QUOTA * 1.3, report(r)


def test_sleeping_forever_is_killed_at_the_timeout(pool):
    r = run(
        pool,
        "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(10**6)\n",
        timeout_s=1,
    )
    assert r.timed_out and r.exit_code is None and 0 < r.time_limit_s <= 1, r  # SIGTERM ignored: killed at 1 s
    assert_serving(pool)


def test_runaway_output_is_capped_and_the_job_killed(pool):
    r = run(pool, "import sys\nfor _ in range(400):\n    sys.stdout.write('x' * (1 << 20))\n", timeout_s=60)
    # killed (SIGKILL) at the cap, not timed out after writing 400 MiB nor ended by itself
    assert r.output_limit_exceeded and r.stdout_truncated and r.signal == 9 and not r.timed_out, r
    assert len(r.stdout) == r.output_cap == pool.cfg.output_bytes  # what came before the cap is kept
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
