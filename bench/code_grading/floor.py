"""Where the price of isolation goes for one Python code job: the floor under bench/code_grading/humaneval.py's service/bare.

    flock /tmp/bench.lock .venv/bin/python -m bench.code_grading.floor [--jobs 400] [--rounds 3]

Two measurements, each printed with the load average:

* **fork + exit of a Python process, by its size**, run inside the sandbox image (``docker run``, the image's own
  /usr/bin/python3): a loop forking a child that exits at once, from a parent holding 8, 16, 24, 40 and 72 MB of
  touched memory. The parent's and the children's CPU per fork: the cost a job pays twice (the tests' process is
  forked from the worker, the candidate's from the tests' process) before any of its own work.
* **the worker's share of a no-work job**: a server started as a user would (pool = cores), ``--jobs`` one-line
  programs (``def f(): return 1`` / ``assert f() == 1``, each new to the cache) sent as ``Verify`` calls by
  2 callers per core; the sandbox containers' CPU (cpuacct) and, within it, their worker processes' (each
  container's PID 1, from /proc/<pid>/stat), per job. What is left is the job's two processes.
"""

from __future__ import annotations

import argparse
import os
import subprocess

# Run by the image's python3 inside a container: fork + exit from a parent of growing size.
FORK_PROBE = r"""
import gc, os, resource
def cpu():
    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return (a.ru_utime + a.ru_stime) * 1000, (b.ru_utime + b.ru_stime) * 1000
gc.freeze()
keep, n = [], 300
for extra in (0, 8, 16, 32, 64):
    while sum(len(b) for b in keep) < extra << 20:
        b = bytearray(1 << 20)
        for j in range(0, len(b), 4096):
            b[j] = 1
        keep.append(b)
    p0, c0 = cpu()
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    p1, c1 = cpu()
    rss = int(open("/proc/self/statm").read().split()[1]) * 4 // 1024
    print(f"  RSS {rss:3d} MB: parent {(p1 - p0) / n:.2f} + child {(c1 - c0) / n:.2f} ms CPU a fork + exit")
"""


def fork_by_size() -> None:
    from sandbox.image.python import image_tag

    print(f"fork + exit by the parent's size, in the sandbox image (load {os.getloadavg()[0]:.2f}):", flush=True)
    out = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", image_tag(), "python3", "-c", FORK_PROBE],
        capture_output=True,
        text=True,
        check=True,
    )
    print(out.stdout, end="", flush=True)


def _worker_pids(cids: list[str]) -> dict[str, int]:
    """container id -> its PID 1 (the worker) on the host."""
    pids = subprocess.run(["docker", "inspect", "-f", "{{.State.Pid}}", *cids], capture_output=True, text=True).stdout
    return dict(zip(cids, (int(p) for p in pids.split()), strict=True))


def worker_share(jobs: int, rounds: int) -> None:
    from bench.code_grading.humaneval import container_cpu_ms, floor_items, proc_cpu_ms, sandbox_ids, timed_map
    from verifiers.client import VerifierClient
    from verifiers.launch import LocalServer

    cores = os.cpu_count() or 1

    with LocalServer(pool_size=cores) as srv, VerifierClient(srv.target, timeout_s=900) as client:
        client.verify_batch(floor_items(8, "warm")["no work"])
        found = _worker_pids(sandbox_ids(srv.proc.pid))
        print(f"no-work jobs, {jobs} a round, {2 * cores} callers, {len(found)} sandboxes:", flush=True)
        for r in range(rounds):
            a = {c: (container_cpu_ms(c), proc_cpu_ms(p)) for c, p in found.items()}
            wall, res, _ = timed_map(
                lambda it: client.verify(**it), floor_items(jobs, f"round {r}")["no work"], 2 * cores
            )
            b = {c: (container_cpu_ms(c), proc_cpu_ms(p)) for c, p in found.items()}
            assert all(x.reward == 1.0 for x in res), [x.detail for x in res if x.reward != 1.0][:1]
            box = sum(b[c][0] - a[c][0] for c in a) / jobs
            worker = sum(b[c][1] - a[c][1] for c in a) / jobs
            print(f"  round {r}: {jobs / wall:6.1f} jobs/s; sandboxes {box:.2f} ms CPU a job: the workers {worker:.2f}, "
                  f"the job's two processes {box - worker:.2f}; load {os.getloadavg()[0]:.2f}", flush=True)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    fork_by_size()
    worker_share(args.jobs, args.rounds)


if __name__ == "__main__":
    main()
