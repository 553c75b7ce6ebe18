"""Math grading throughput: our service (sandboxed, pool of 2) vs Math-Verify in-process, one thread.

    .venv/bin/python bench/math.py [--rounds 3] [--out bench/results/math.txt]

The same (gold, completion) pairs both ways: our own mix of integers, fractions, expressions, sets and
intervals, two thirds of them right, a fresh draw of that mix each round (so neither Math-Verify's
in-process parse caches nor our result cache see a pair twice). Math-Verify is called as its README shows (``parse`` both sides,
then ``verify``; its signal timeouts on, main thread). Ours is one ``VerifyBatch`` per round. Rounds
alternate (MV, ours as one VerifyBatch, ours as 32 concurrent Verify calls, MV, …); every round's completions carry a round tag after the answer so the
service's cache never answers. Printed: items/s, p50/p99 latency (ours: the service's per-item time,
which includes queueing inside the batch), the ratio per round, the verdict agreement, load average.
"""

from __future__ import annotations

import sys

# Run as a script, this file's folder comes first on sys.path and its name would shadow the stdlib's
# ``math``: put the repository root there instead, before anything imports ``math``.
sys.path[0] = __file__.rsplit("/", 2)[0]

import argparse  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402


def pairs(seed: int = 0) -> list[tuple[str, str, str]]:
    """(category, gold, answer) triples; the answer is right two times in three."""
    rnd = random.Random(seed)
    out = []
    for _ in range(60):
        a = rnd.randint(-999, 99999)
        out.append(("integer", str(a), str(a if rnd.random() < 2 / 3 else a + rnd.randint(1, 9))))
    for _ in range(60):
        p, q = rnd.randint(1, 50), rnd.randint(2, 60)
        right = rnd.random() < 2 / 3
        forms = [f"\\frac{{{p * 2}}}{{{q * 2}}}", f"{p}/{q}", f"\\dfrac{{{p}}}{{{q}}}"]
        out.append(("fraction", f"\\frac{{{p}}}{{{q}}}", rnd.choice(forms) if right else f"\\frac{{{p + 1}}}{{{q}}}"))
    for _ in range(60):
        a, b = rnd.randint(1, 9), rnd.randint(1, 9)
        right = rnd.random() < 2 / 3
        gold = f"x^2 + {a + b}x + {a * b}"
        out.append(("expression", gold, f"(x+{a})(x+{b})" if right else f"(x+{a})(x+{b + 1})"))
    for _ in range(60):
        xs = sorted(rnd.sample(range(-20, 40), rnd.randint(2, 5)))
        ys = list(xs)
        rnd.shuffle(ys)
        if rnd.random() >= 2 / 3:
            ys[0] += 100
        out.append(("set", "\\{" + ", ".join(map(str, xs)) + "\\}", "\\{" + ", ".join(map(str, ys)) + "\\}"))
    for _ in range(60):
        lo, hi = sorted(rnd.sample(range(-50, 50), 2))
        lb, rb = rnd.choice("[("), rnd.choice("])")
        right = rnd.random() < 2 / 3
        out.append(("interval", f"{lb}{lo}, {hi}{rb}", f"{lb}{lo},{hi}{rb}" if right else f"{lb}{lo}, {hi + 1}{rb}"))
    out = list(dict.fromkeys(out))  # no repeated pair: every item is real work, never a cache hit
    rnd.shuffle(out)
    return out


def completion(answer: str, round_no: int) -> str:
    return f"<think>working</think>So the answer is $\\boxed{{{answer}}}$. (round {round_no})"


def run_math_verify(items: list[tuple[str, str, str]], round_no: int) -> tuple[float, list[float], list[bool]]:
    from math_verify import parse, verify

    lat, verdicts = [], []
    t0 = time.perf_counter()
    for _, gold, answer in items:
        t = time.perf_counter()
        verdicts.append(bool(verify(parse(f"${gold}$"), parse(completion(answer, round_no)))))
        lat.append(time.perf_counter() - t)
    return time.perf_counter() - t0, lat, verdicts


def run_ours(client, items: list[tuple[str, str, str]], round_no: int) -> tuple[float, list[float], list[bool]]:
    batch = [{"verifier": "math", "completion": completion(a, round_no), "reference": g} for _, g, a in items]
    t0 = time.perf_counter()
    rs = client.verify_batch(batch)
    wall = time.perf_counter() - t0
    assert not any(r.cached for r in rs), "a round was answered from the cache"
    return wall, [r.elapsed_s for r in rs], [r.outcome == "CORRECT" for r in rs]


def run_ours_concurrent(client, items: list[tuple[str, str, str]], round_no: int, width: int = 32):
    """The same items as ``width`` concurrent Verify calls (the server's 32 RPC threads), which lets the
    math verifier coalesce more items per sandbox job than VerifyBatch's fan-out of 4 x pool size."""
    from concurrent.futures import ThreadPoolExecutor

    def one(it):
        _, g, a = it
        return client.verify("math", completion(a, round_no), g)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(width) as ex:
        rs = list(ex.map(one, items))
    return time.perf_counter() - t0, [r.elapsed_s for r in rs], [r.outcome == "CORRECT" for r in rs]


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pool-size", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    from verifiers.client import VerifierClient
    from verifiers.launch import LocalServer

    rounds = [pairs(seed=r) for r in range(args.rounds)]  # fresh pairs each round: no side's caches help
    items = rounds[0]
    lines: list[str] = []

    def say(s: str) -> None:
        print(s, flush=True)
        lines.append(s)

    say(f"math bench: {len(items)} pairs ({', '.join(sorted({c for c, _, _ in items}))}), pool {args.pool_size}, "
        f"{os.cpu_count()} CPUs, {args.rounds} rounds alternating")  # fmt: skip
    t0 = time.perf_counter()
    with LocalServer(pool_size=args.pool_size) as srv, VerifierClient(srv.target, timeout_s=600) as client:
        say(f"service start-up (server + {args.pool_size} warm containers): {time.perf_counter() - t0:.1f} s")
        run_ours(client, pairs(seed=99)[:20], -1)  # connect and warm
        mv_rates, our_rates, ratios, conc_rates, conc_ratios = [], [], [], [], []
        mv_lat_all, our_lat_all = [], []
        agree_by_cat: dict[str, list[int]] = {}
        for r in range(args.rounds):
            items = rounds[r]
            load = os.getloadavg()[0]
            mv_wall, mv_lat, mv_v = run_math_verify(items, r)
            our_wall, our_lat, our_v = run_ours(client, items, r)
            conc_wall, _, conc_v = run_ours_concurrent(client, items, 1000 + r)
            conc_rates.append(len(items) / conc_wall)
            mv_rates.append(len(items) / mv_wall)
            our_rates.append(len(items) / our_wall)
            ratios.append(our_rates[-1] / mv_rates[-1])
            conc_ratios.append(conc_rates[-1] / mv_rates[-1])
            mv_lat_all += mv_lat
            our_lat_all += our_lat
            for (cat, _, _), a, b in zip(items, mv_v, our_v, strict=True):
                agree_by_cat.setdefault(cat, [0, 0])
                agree_by_cat[cat][0] += a == b
                agree_by_cat[cat][1] += 1
            say(f"round {r}: load {load:.2f}  Math-Verify {mv_rates[-1]:7.1f}/s  ours {our_rates[-1]:7.1f}/s  "
                f"ratio {ratios[-1]:.2f}x  ours/32 Verify calls {conc_rates[-1]:7.1f}/s ({conc_ratios[-1]:.2f}x)  ours correct {sum(our_v)}/{len(items)}  MV correct {sum(mv_v)}/{len(items)}")  # fmt: skip
    say(f"Math-Verify in-process: median {statistics.median(mv_rates):.1f} pairs/s, "
        f"p50 {1000 * pct(mv_lat_all, 0.5):.1f} ms, p99 {1000 * pct(mv_lat_all, 0.99):.1f} ms")  # fmt: skip
    say(f"ours (service):         median {statistics.median(our_rates):.1f} pairs/s, "
        f"p50 {1000 * pct(our_lat_all, 0.5):.1f} ms, p99 {1000 * pct(our_lat_all, 0.99):.1f} ms (in-batch, incl. queueing)")  # fmt: skip
    say(
        f"ratio ours (VerifyBatch)/MV: median {statistics.median(ratios):.2f}x (min {min(ratios):.2f}, max {max(ratios):.2f})"
    )
    say(f"ratio ours (32 concurrent Verify)/MV: median {statistics.median(conc_ratios):.2f}x "
        f"(min {min(conc_ratios):.2f}, max {max(conc_ratios):.2f}); "
        f"concurrent verdicts equal to the batch's: {conc_v == our_v}")  # fmt: skip
    for cat, (a, n) in sorted(agree_by_cat.items()):
        say(f"verdict agreement {cat:10s} {a}/{n}")
    a, n = sum(v[0] for v in agree_by_cat.values()), sum(v[1] for v in agree_by_cat.values())
    say(f"verdict agreement overall {a}/{n} ({100 * a / n:.1f}%)")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
