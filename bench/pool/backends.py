"""Sandbox pool throughput per backend (Docker, rootless Podman, bubblewrap) against bare python3, in one sitting.

The work of bench/pool/throughput.py (HumanEval's 164 canonical solutions, each ``prompt + canonical_solution +
test + check(entry_point)``, at parallelism 2), once through a warm pool of each backend the machine
has and through a bare host ``python3 -`` per program. Rounds rotate the order of the paths so each
meets the same foreign load; per path: the median executions/s, p50/p99 latency, and the programs that
passed in every round (164/164 is the canonical set graded correctly on that backend).

    flock /tmp/bench.lock .venv/bin/python -m bench.pool.backends --rounds 3 --out bench/results/backends.txt
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from bench.pool import throughput as sbx
from sandbox.backend import SandboxConfig, SandboxError
from sandbox.pool import SandboxPool


def start_pools(names: list[str], parallel: int, say) -> dict[str, SandboxPool]:
    pools = {}
    for name in names:
        try:
            pools[name] = SandboxPool(SandboxConfig(backend=name, size=parallel, cgroup_parent="/")).start()
            say(f"# {name}: pool of {parallel} started in {pools[name].startup_s:.2f} s")
        except SandboxError as e:
            say(f"# {name}: not available here ({str(e)[:200]})")
    return pools


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--parallel", type=int, default=2)
    p.add_argument("--backends", default="docker,podman,bwrap")
    p.add_argument("--out", default="")
    args = p.parse_args()
    lines: list[str] = []

    def say(s: str = "") -> None:
        print(s, flush=True)
        lines.append(s)

    progs = sbx.programs()
    say(f"# pool throughput per backend: {len(progs)} HumanEval canonical solutions, parallelism {args.parallel}")
    say(f"# host: {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d %H:%M:%S')}, bare python: {sbx.BARE_PYTHON}")
    pools = start_pools(args.backends.split(","), args.parallel, say)
    paths = {name: (lambda code, _i, pool=pool: sbx.run_pool(pool, code)) for name, pool in pools.items()}
    paths["bare"] = lambda code, _i: sbx.run_bare(code)
    results: dict[str, list[dict]] = {k: [] for k in paths}
    try:
        for fn in paths.values():
            sbx.one_round(fn, progs[:20], args.parallel)  # warm every path alike
        say(f"{'round':>5} {'path':>7} {'exec/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'passed':>8} {'load1':>6}")
        names = list(paths)
        for rnd in range(args.rounds):
            order = names[rnd % len(names) :] + names[: rnd % len(names)]  # rotate: each path meets each slot
            for name in order:
                r = sbx.one_round(paths[name], progs, args.parallel)
                results[name].append(r)
                say(
                    f"{rnd + 1:>5} {name:>7} {r['per_s']:8.2f} {r['p50_ms']:8.1f} {r['p99_ms']:8.1f}"
                    f" {r['passed']:>4}/{r['n']:<3} {r['load1']:6.2f}"
                )
    finally:
        for pool in pools.values():
            pool.close()
    say()
    say(f"{'path':>7} {'median exec/s':>14} {'p50 ms':>8} {'p99 ms':>8} {'vs bare':>8} {'passed (each round)':>20}")
    bare = [r["per_s"] for r in results["bare"]]
    for name, rs in results.items():
        ratio = statistics.median(r["per_s"] / b for r, b in zip(rs, bare, strict=True))
        say(
            f"{name:>7} {statistics.median(r['per_s'] for r in rs):14.2f} {statistics.median(r['p50_ms'] for r in rs):8.1f}"
            f" {statistics.median(r['p99_ms'] for r in rs):8.1f} {ratio:7.2f}x {' '.join(str(r['passed']) for r in rs):>20}"
        )
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
