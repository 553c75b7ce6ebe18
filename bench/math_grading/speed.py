"""Math grading throughput: our service (sandboxed, pool of 2) vs Math-Verify in-process, one thread.

    .venv/bin/python -m bench.math_grading.speed [--suite mv|mix] [--rounds 3] [--out bench/results/math.txt]

Same pairs both ways. ``--suite mv`` (the default): Math-Verify's own test cases (tests/data/mv_suite.tsv,
268 gold/pred pairs from its tests/*.py); ours grades them with ``fallback = full`` (the pred is a whole
text, as Math-Verify reads it), and the verdicts are compared with Math-Verify's (called as below) and with
the suite's expected values (their tests' own settings), every differing row listed. ``--suite mix``: our
own mix of integers, fractions, expressions, sets and intervals, two thirds right, a fresh draw each round.

Math-Verify is called as its README shows (``parse`` both sides, then ``verify``; its signal timeouts on,
main thread), sympy's cache cleared before each of its rounds so a repeated pair is real work. Ours is one
``VerifyBatch`` per round and the same items as 32 concurrent ``Verify`` calls. Rounds alternate (MV, ours
as one VerifyBatch, ours as Verify calls, MV, …); each round's requests differ from every other round's
(the mix: a round tag after the answer; the suite: a round-specific ``timeout_s``, part of the cache key),
so the service's cache never answers (asserted). Printed: items/s, p50/p99 latency (ours: the service's
per-item time, which includes queueing inside the batch), the ratio per round, agreement, load average.
``--first-sight`` adds a second Math-Verify column (first_sight(): its parser's DFA reset each round to what
our workers start with), since from round 1 on the plain one parses strings it has parsed before.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


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


def mix_items(round_no: int, tag: int) -> list[dict]:
    """The mix as bench items (round ``round_no``'s draw, ``tag`` after the answer): the request, Math-Verify's
    two texts, no expected value."""
    return [
        {
            "cat": cat,
            "req": {"verifier": "math", "completion": completion(a, tag), "reference": g},
            "mv": (f"${g}$", completion(a, tag)),
            "expected": None,
            "row": f"{cat} {g!r} {a!r}",
        }
        for cat, g, a in pairs(seed=round_no)
    ]


def suite_items(round_no: int, tag: int) -> list[dict]:
    """Math-Verify's test cases (every round the same), each (gold, pred) once (12 rows repeat a pair, some
    with other settings: the default-settings row is kept); ``tag`` is in ``timeout_s`` (5 s + thousandths)."""
    from bench.math_grading.agreement import read_tsv

    timeout_s = 5.0 + (tag % 1000) / 1000
    rows = read_tsv()
    first = {}  # (gold, pred) → its row, a default-settings row where the pair has one
    for c in sorted(rows, key=lambda c: c["nondefault"]):
        first.setdefault((c["gold"], c["pred"]), c)
    cases = [c for c in rows if first[c["gold"], c["pred"]] is c]
    return [
        {
            "cat": c["file"],
            "req": {
                "verifier": "math",
                "completion": c["pred"],
                "reference": c["gold"],
                "options": {"fallback": "full"},
                "timeout_s": timeout_s,
            },
            "mv": (c["gold"], c["pred"]),
            "expected": c["expected"],
            "row": f"mv_suite.tsv:{c['line']} {c['test']} gold={c['gold'][:50]!r} pred={c['pred'][:50]!r}",
        }
        for c in cases
    ]


SUITES = {"mv": suite_items, "mix": mix_items}


def first_sight() -> None:
    """Math-Verify's LaTeX parser as a new process would have it after our workers' warm-up: ANTLR's DFA cache
    (class-wide, kept across calls) emptied, then filled by parsing the answer shapes our warm-up parses
    (in_sandbox/math/warm.py). In later rounds the plain Math-Verify column parses strings it parsed in the
    rounds before (its DFA knows them all), which a trainer grading new completions never does; this
    column parses them for the first time, with the same start our sandbox jobs have."""
    from antlr4.dfa.DFA import DFA
    from latex2sympy2_extended.antlr_parser import PSParser
    from math_verify import parse

    from in_sandbox.math.warm import corpus

    PSParser.decisionsToDFA = [DFA(state, i) for i, state in enumerate(PSParser.atn.decisionToState)]
    for s in corpus():
        parse(f"${s}$")


def run_math_verify(items: list[dict], fresh: bool = False) -> tuple[float, list[float], list[bool]]:
    from math_verify import parse, verify
    from sympy.core.cache import clear_cache

    if fresh:
        first_sight()
    clear_cache()  # a pair seen in an earlier round is parsed and compared again, not looked up
    lat, verdicts = [], []
    t0 = time.perf_counter()
    for it in items:
        gold, pred = it["mv"]
        t = time.perf_counter()
        verdicts.append(bool(verify(parse(gold), parse(pred))))
        lat.append(time.perf_counter() - t)
    return time.perf_counter() - t0, lat, verdicts


def run_ours(client, items: list[dict]) -> tuple[float, list[float], list[bool]]:
    t0 = time.perf_counter()
    rs = client.verify_batch([it["req"] for it in items])
    wall = time.perf_counter() - t0
    assert not any(r.cached for r in rs), "a round was answered from the cache"
    return wall, [r.elapsed_s for r in rs], [r.outcome == "CORRECT" for r in rs]


def run_ours_concurrent(client, items: list[dict], width: int = 32) -> tuple[float, list[float], list[bool]]:
    """The same items as ``width`` concurrent Verify calls (the server's 32 RPC threads)."""

    def one(it):
        return client.verify(**it["req"])

    t0 = time.perf_counter()
    with ThreadPoolExecutor(width) as ex:
        rs = list(ex.map(one, items))
    assert not any(r.cached for r in rs), "a round was answered from the cache"
    return time.perf_counter() - t0, [r.elapsed_s for r in rs], [r.outcome == "CORRECT" for r in rs]


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def spread(xs: list[float]) -> str:
    return f"median {statistics.median(xs):.2f}x (min {min(xs):.2f}, max {max(xs):.2f})"


def phases(say, jobs_of: int = 32) -> None:
    """Where one batch's time goes (suite mv, a pool of 1 started here): the host's extraction, a sandbox job
    round trip with no item (fork of the warm worker, IPC, exit), the suite as one job per pair (the per-pair
    process cost) and as jobs of ``jobs_of``, and Math-Verify's parse vs verify share in-process."""
    from math_verify import parse, verify

    from in_sandbox.answer import extract
    from sandbox.backend import Job, Limits, SandboxConfig
    from sandbox.pool import SandboxPool
    from verifiers.kinds.math.verifier import JOB_CODE
    from verifiers.kinds.table import sandbox_warmup

    items = suite_items(0, 0)
    t = time.perf_counter()
    exts = [extract(it["req"]["completion"], "full") for it in items]
    host_s = time.perf_counter() - t
    payloads = [
        {
            "gold": it["req"]["reference"],
            "preds": e.answers,
            "mode": "full" if e.source == "full" else "answer",
            "rel_tol": None,
            "together": e.together,
            "timeout": 10,
            "left": 600,
        }
        for it, e in zip(items, exts, strict=True)
        if e is not None
    ]

    def job(ps: list[dict]) -> float:
        r = pool.run(Job(code=JOB_CODE, stdin=json.dumps({"items": ps}), timeout_s=300, limits=Limits(memory_mb=1024)))
        assert r.exit_code == 0 and r.stdout.count("\n") == len(ps), (r.exit_code, r.stderr[-300:])
        return r.wall_s

    with SandboxPool(SandboxConfig(size=1, warmup=sandbox_warmup())).start() as pool:
        empty = statistics.median(job([]) for _ in range(20))
        load = os.getloadavg()[0]
        batched = sum(job(payloads[i : i + jobs_of]) for i in range(0, len(payloads), jobs_of))
        single = sum(job([p]) for p in payloads)
    t = time.perf_counter()
    parsed = [(parse(it["mv"][0]), parse(it["mv"][1])) for it in items]
    mv_parse = time.perf_counter() - t
    t = time.perf_counter()
    for g, p in parsed:
        verify(g, p)
    mv_verify = time.perf_counter() - t
    n, per = len(payloads), 1000 / len(payloads)
    say(
        f"phases ({n} pairs of the suite to the sandbox, {len(items) - n} decided on the host; load {load:.2f}), ms per pair:"
    )
    say(f"  host: final-answer extraction           {1000 * host_s / len(items):7.2f}")
    say(f"  sandbox job with no item (round trip)   {1000 * empty:7.2f} per job")
    say(
        f"  sandbox, jobs of {jobs_of} pairs              {per * batched:7.2f}  (of which job round trips {per * empty * -(-n // jobs_of):.2f})"
    )
    say(
        f"  sandbox, one job per pair               {per * single:7.2f}  (per-pair process cost {per * (single - batched):.2f})"
    )
    say(
        f"  Math-Verify in-process: parse {1000 * mv_parse / len(items):.2f} + verify {1000 * mv_verify / len(items):.2f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", choices=sorted(SUITES), default="mv")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--pool-size", type=int, default=2)
    ap.add_argument("--phases", action="store_true", help="also time one batch's phases (suite mv, a pool of 1)")
    ap.add_argument("--out", type=Path, default=None, help="append the run (with its command) to this file")
    ap.add_argument(
        "--first-sight",
        action="store_true",
        help="also time Math-Verify with its parser's DFA reset to our workers' warm-up each round",
    )
    args = ap.parse_args()
    from verifiers.client import VerifierClient
    from verifiers.launch import LocalServer

    make = SUITES[args.suite]
    lines: list[str] = []

    def say(s: str) -> None:
        print(s, flush=True)
        lines.append(s)

    say(
        f"# .venv/bin/python -m bench.math_grading.speed {' '.join(sys.argv[1:])}   ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})"
    )
    first = make(0, 0)
    say(
        f"math bench, suite {args.suite}: {len(first)} pairs ({', '.join(sorted({it['cat'] for it in first}))}), "
        f"pool {args.pool_size}, {os.cpu_count()} CPUs, {args.rounds} rounds alternating"
    )
    t0 = time.perf_counter()
    with LocalServer(pool_size=args.pool_size) as srv, VerifierClient(srv.target, timeout_s=600) as client:
        say(f"service start-up (server + {args.pool_size} warm containers): {time.perf_counter() - t0:.1f} s")
        run_ours(client, make(99, 999)[:20])  # connect and warm
        rates: dict[str, list[float]] = {"mv": [], "batch": [], "conc": [], "fresh": []}
        lat: dict[str, list[float]] = {"mv": [], "batch": []}
        ratios, conc_ratios, fresh_ratios, same_conc, same_fresh = [], [], [], True, True
        for r in range(args.rounds):
            items, items_c = make(r, r + 1), make(r, 500 + r)
            load = os.getloadavg()[0]
            mv_wall, mv_lat, mv_v = run_math_verify(items)
            our_wall, our_lat, our_v = run_ours(client, items)
            conc_wall, _, conc_v = run_ours_concurrent(client, items_c)
            fresh_wall, _, fresh_v = run_math_verify(items, fresh=True) if args.first_sight else (0.0, [], mv_v)
            same_conc &= conc_v == our_v
            same_fresh &= fresh_v == mv_v
            for k, wall in (("mv", mv_wall), ("batch", our_wall), ("conc", conc_wall), ("fresh", fresh_wall)):
                rates[k].append(len(items) / wall if wall else 0.0)
            lat["mv"] += mv_lat
            lat["batch"] += our_lat
            ratios.append(rates["batch"][-1] / rates["mv"][-1])
            conc_ratios.append(rates["conc"][-1] / rates["mv"][-1])
            fresh_ratios.append(rates["batch"][-1] / rates["fresh"][-1] if fresh_wall else 0.0)
            first = (f"  MV at first sight {rates['fresh'][-1]:7.1f}/s (ours {fresh_ratios[-1]:.2f}x)"
                     if args.first_sight else "")  # fmt: skip
            say(f"round {r}: load {load:.2f}  Math-Verify {rates['mv'][-1]:7.1f}/s  ours {rates['batch'][-1]:7.1f}/s  "
                f"ratio {ratios[-1]:.2f}x  ours/32 Verify calls {rates['conc'][-1]:7.1f}/s ({conc_ratios[-1]:.2f}x)  "
                f"ours correct {sum(our_v)}/{len(items)}  MV correct {sum(mv_v)}/{len(items)}{first}")  # fmt: skip
    say(
        f"Math-Verify in-process: median {statistics.median(rates['mv']):.1f} pairs/s, "
        f"p50 {1000 * pct(lat['mv'], 0.5):.1f} ms, p99 {1000 * pct(lat['mv'], 0.99):.1f} ms"
    )
    say(f"ours (service):         median {statistics.median(rates['batch']):.1f} pairs/s, "
        f"p50 {1000 * pct(lat['batch'], 0.5):.1f} ms, p99 {1000 * pct(lat['batch'], 0.99):.1f} ms (in-batch, incl. queueing)")  # fmt: skip
    say(f"ratio ours (VerifyBatch)/MV: {spread(ratios)}")
    say(
        f"ratio ours (32 concurrent Verify)/MV: {spread(conc_ratios)}; concurrent verdicts equal to the batch's: {same_conc}"
    )
    if args.first_sight:
        say(
            f"ratio ours (VerifyBatch)/Math-Verify at first sight (DFA reset + our warm-up shapes each round): "
            f"{spread(fresh_ratios)}; its verdicts equal to Math-Verify's: {same_fresh}"
        )
    agreement(items, our_v, mv_v, say)
    if args.phases:
        phases(say)
    if args.out:
        with args.out.open("a") as f:
            f.write("\n" + "\n".join(lines) + "\n")


def agreement(items: list[dict], ours: list[bool], mv: list[bool], say) -> None:
    """The last round's verdicts: ours vs Math-Verify's (per category), and vs the suite's expected values."""
    by_cat: dict[str, list[int]] = {}
    for it, a, b in zip(items, ours, mv, strict=True):
        by_cat.setdefault(it["cat"], [0, 0])
        by_cat[it["cat"]][0] += a == b
        by_cat[it["cat"]][1] += 1
    for cat, (a, n) in sorted(by_cat.items()):
        say(f"agreement with Math-Verify {cat:22s} {a}/{n}")
    a = sum(x == y for x, y in zip(ours, mv, strict=True))
    say(f"agreement with Math-Verify overall {a}/{len(items)} ({100 * a / len(items):.1f}%)")
    if items[0]["expected"] is None:
        return
    exp = [it["expected"] for it in items]
    for who, v in (("ours", ours), ("Math-Verify (README defaults)", mv)):
        a = sum(x == y for x, y in zip(v, exp, strict=True))
        say(f"agreement with the suite's expected values, {who}: {a}/{len(items)}")
    for it, o, m in zip(items, ours, mv, strict=True):
        if o != it["expected"] or o != m:
            say(f"  differs: {it['row']}  expected {int(it['expected'])} ours {int(o)} MV {int(m)}")


if __name__ == "__main__":
    main()
