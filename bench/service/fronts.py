"""Per-call overhead of the HTTP/JSON API, OpenRLHF's /get_reward and SandboxFusion's /run_code vs the gRPC
client, batch of 256.

    flock /tmp/bench.lock .venv/bin/python -m bench.service.fronts [--rounds 5] [--out bench/results/http.txt]

One server process (pool of 2, ``--http-port 0``) answers all three ways; the client is this process:

  A  gRPC      ``VerifierClient.verify_batch`` (the baseline: what the trainer uses)
  B  HTTP      ``POST /v1/verify_batch`` with httpx (keep-alive), proto JSON built and parsed client-side
  C  OpenRLHF  ``POST /get_reward`` with httpx, {"query", "prompts", "labels"} as OpenRLHF sends them

SandboxFusion ``POST /run_code`` is compared per program: 256 small Python programs (stdin → stdout, one
in eight wrong) sent as 256 ``/run_code`` calls from ``--run-code-concurrency`` threads (4: a small
client's parallelism, twice the pool) vs the same programs through the gRPC client's code path, one
``verify_batch`` of 256 ``code`` items in stdio mode with the one stdin/stdout case (one sandbox job per
program either way). Agreement: /run_code's status Success with the expected output ⇔ gRPC's reward 1.
The row also prints this (client) process's CPU per program, so the client's share of the overhead shows.

Two workloads of 256 items per call: ``think_format`` (graded in-process in microseconds, so the ratio
is close to the pure transport cost: the worst case for HTTP) and ``math`` (sympy in the sandbox: what a
training step pays). Same items for A, B and C; each call's completions carry a fresh tag so the
service's cache never answers, and the tags never change a verdict (rewards are compared: a faster wrong
answer is not a result). Calls alternate A B C, B C A, C A B, … (rotating, so no method always follows
the same one); per round the median call time of each and the ratios B/A and C/A; at the end the median
and spread of those per-round ratios, p50/p99 per call and items/s.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BATCH = 256
_tags = itertools.count()


def think_items(rnd: random.Random) -> list[tuple[str, str, str]]:
    """(prompt, completion body, reference); about one in four badly formatted."""
    out = []
    for i in range(BATCH):
        reasoning = " ".join(str(rnd.randint(0, 99)) for _ in range(rnd.randint(20, 120)))
        body = f"<think>{reasoning}</think>the answer is {i}" if rnd.random() < 0.75 else f"answer {i} <think>x</think>"
        out.append((f"Question {i}: add the numbers.\n", body, ""))
    return out


def math_items(rnd: random.Random) -> list[tuple[str, str, str]]:
    out = []
    for _ in range(BATCH):
        a, b = rnd.randint(1, 9), rnd.randint(1, 9)
        ok = rnd.random() < 2 / 3
        answer = f"(x+{a})(x+{b})" if ok else f"(x+{a})(x+{b + 1})"
        out.append(
            (f"Expand (x+{a})(x+{b}).\n", f"<think>multiply</think>\\boxed{{{answer}}}", f"x^2 + {a + b}x + {a * b}")
        )
    return out


def tagged(items, tag: int) -> list[tuple[str, str, str]]:
    return [(p, f"{c} [t{tag}]", ref) for p, c, ref in items]


def call_grpc(client, verifier: str, items) -> list[float]:
    from verifiers.client import VerifyItem

    res = client.verify_batch([VerifyItem(verifier, c, ref, prompt=p) for p, c, ref in items])
    return [r.reward for r in res]


def call_http(http, verifier: str, items) -> list[float]:
    body = {"items": [{"verifier": verifier, "completion": c, "reference": ref, "prompt": p} for p, c, ref in items]}
    r = http.post("/v1/verify_batch", json=body)
    r.raise_for_status()
    return [x["reward"] for x in r.json()["results"]]


def call_openrlhf(http, verifier: str, items) -> list[float]:
    body = {
        "query": [p + c for p, c, _ in items],
        "prompts": [p for p, _, _ in items],
        "labels": [r for *_, r in items],
    }
    r = http.post(f"/get_reward?verifier={verifier}", json=body)
    r.raise_for_status()
    return r.json()["rewards"]


def code_items(rnd: random.Random) -> list[tuple[str, str, str]]:
    """(program, stdin, expected stdout): small stdin → stdout programs; one in eight prints a wrong answer."""
    ops = [("+", lambda a, b: a + b), ("*", lambda a, b: a * b), ("-", lambda a, b: a - b), ("%", lambda a, b: a % b)]
    out = []
    for i in range(BATCH):
        a, b = rnd.randint(1, 999), rnd.randint(1, 99)
        sym, fn = ops[i % len(ops)]
        wrong = " + 1" if i % 8 == 7 else ""
        src = f"import sys\na, b = map(int, sys.stdin.read().split())\nprint(a {sym} b{wrong})\n"
        out.append((src, f"{a} {b}\n", f"{fn(a, b)}\n"))
    return out


def code_tagged(items, tag: int) -> list[tuple[str, str, str]]:
    return [(f"{src}# t{tag}\n", stdin, want) for src, stdin, want in items]  # a fresh program: no cache hit


def code_args(item: tuple[str, str, str]) -> tuple[str, str]:
    """(completion, reference) of one program for the code verifier in stdio mode."""
    import json

    src, stdin, want = item
    return f"```python\n{src}```\n", json.dumps([{"input": stdin, "output": want}])


def call_code_grpc(client, items) -> list[bool]:
    from verifiers.client import VerifyItem

    batch = [VerifyItem("code", *code_args(it), options={"mode": "stdio"}) for it in items]
    return [r.reward == 1.0 for r in client.verify_batch(batch)]


def call_code_grpc_each(client, pool, items) -> list[bool]:
    """One gRPC Verify per program, as many in flight as /run_code's: the like-for-like baseline."""
    return list(
        pool.map(lambda it: client.verify("code", *code_args(it), options={"mode": "stdio"}).reward == 1.0, items)
    )


def call_run_code(http, pool, items) -> list[bool]:
    def one(item) -> bool:
        src, stdin, want = item
        r = http.post("/run_code", json={"code": src, "language": "python", "stdin": stdin, "run_timeout": 10})
        r.raise_for_status()
        got = r.json()
        return got["status"] == "Success" and got["run_result"]["stdout"].split() == want.split()

    return list(pool.map(one, items))


def bench_run_code(client, http, pool, calls: int, rounds: int, log) -> None:
    """Per-program overhead of /run_code (256 calls, a few at a time) vs the gRPC code path: one batch, and one
    Verify per program with the same concurrency (SandboxFusion's API has no batch form: the like-for-like row)."""
    base = code_items(random.Random(0))
    methods = {
        "gRPC": lambda it: call_code_grpc(client, it),
        "gRPC each": lambda it: call_code_grpc_each(client, pool, it),
        "run_code": lambda it: call_run_code(http, pool, it),
    }
    expect = methods["gRPC"](code_tagged(base, next(_tags)))
    per_call = {m: [] for m in methods}
    cpu: dict[str, list[float]] = {m: [] for m in methods}  # this process's CPU: the client side
    ratios: list[float] = []
    each: list[float] = []
    agree = 0
    for r in range(rounds):
        times = {m: [] for m in methods}
        for k in range(calls):
            for m in list(methods) if (r + k) % 2 == 0 else list(methods)[::-1]:  # A B C, C B A, …
                c0 = time.process_time()
                dt, ok = timed(methods[m], code_tagged(base, next(_tags)))
                cpu[m].append(time.process_time() - c0)
                times[m].append(dt)
                agree += ok == expect
        med = {m: statistics.median(ts) for m, ts in times.items()}
        for m, ts in times.items():
            per_call[m] += ts
        ratios.append(med["run_code"] / med["gRPC"])
        each.append(med["run_code"] / med["gRPC each"])
        log(f"run_code round {r}: load {os.getloadavg()[0]:.2f}  gRPC {med['gRPC'] * 1e3 / BATCH:6.2f} ms/program"
            f"  gRPC each {med['gRPC each'] * 1e3 / BATCH:6.2f} ms/program  run_code {med['run_code'] * 1e3 / BATCH:6.2f}"
            f" ms/program  run_code/gRPC {ratios[-1]:.3f}  run_code/gRPC each {each[-1]:.3f}")  # fmt: skip
    for m, ts in per_call.items():
        log(f"run_code {m:9s} {BATCH} programs: p50 {pct(ts, 0.5) * 1e3:7.1f} ms  p99 {pct(ts, 0.99) * 1e3:7.1f} ms"
            f"  ({BATCH / statistics.median(ts):6.1f} programs/s; client CPU {statistics.median(cpu[m]) * 1e3 / BATCH:.2f}"
            " ms/program)")  # fmt: skip
    extra = (statistics.median(per_call["run_code"]) - statistics.median(per_call["gRPC"])) / BATCH * 1e3
    log(
        f"run_code overhead per program vs gRPC: median {(statistics.median(ratios) - 1) * 100:+.1f}% ({extra:+.2f} ms)"
        f" (per-round ratio min {min(ratios):.3f}, max {max(ratios):.3f})"
    )
    log(
        f"run_code overhead per program vs one gRPC Verify per program (same concurrency): median"
        f" {(statistics.median(each) - 1) * 100:+.1f}% (per-round ratio min {min(each):.3f}, max {max(each):.3f})"
    )
    log(
        f"run_code results equal to gRPC's on the same programs: {agree}/{rounds * calls * len(methods)} calls"
        f" ({sum(expect)}/{BATCH} programs right)"
    )


def timed(fn, *args) -> tuple[float, list[float]]:
    t = time.perf_counter()
    rewards = fn(*args)
    return time.perf_counter() - t, rewards


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def bench(name, verifier, make_items, calls, rounds, methods, log) -> None:
    rnd = random.Random(0)
    base = make_items(rnd)
    per_call = {m: [] for m in methods}
    ratios = {m: [] for m in methods if m != "gRPC"}
    expect = methods["gRPC"](verifier, tagged(base, next(_tags)))  # the verdicts every call must reproduce
    agree = 0
    for r in range(rounds):
        times = {m: [] for m in methods}
        order = list(methods)
        for k in range(calls):  # A B C, B C A, C A B, …: each method sees the same neighbours
            for m in order[k % len(order) :] + order[: k % len(order)]:
                dt, rewards = timed(methods[m], verifier, tagged(base, next(_tags)))
                times[m].append(dt)
                agree += rewards == expect
        med = {m: statistics.median(ts) for m, ts in times.items()}
        for m, ts in times.items():
            per_call[m] += ts
        for m in ratios:
            ratios[m].append(med[m] / med["gRPC"])
        load = os.getloadavg()[0]
        parts = "  ".join(f"{m} {med[m] * 1e3:7.1f} ms" for m in methods)
        rr = "  ".join(f"{m}/gRPC {ratios[m][-1]:.3f}" for m in ratios)
        log(f"{name} round {r}: load {load:.2f}  {parts}  {rr}")
    for m, ts in per_call.items():
        log(f"{name} {m:9s} per call of {BATCH}: p50 {pct(ts, 0.5) * 1e3:7.1f} ms  p99 {pct(ts, 0.99) * 1e3:7.1f} ms"
            f"  ({BATCH / statistics.median(ts):7.0f} items/s)")  # fmt: skip
    for m, rs in ratios.items():
        over = (statistics.median(rs) - 1) * 100
        log(f"{name} overhead {m} vs gRPC: median {over:+.1f}% (per-round ratio min {min(rs):.3f}, max {max(rs):.3f})")
    total = rounds * calls * len(methods)
    log(f"{name} rewards equal to gRPC's on the same items: {agree}/{total} calls")


def main() -> None:
    import httpx

    from tests.http_helpers import http_base
    from verifiers.client import VerifierClient
    from verifiers.launch import LocalServer

    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--think-calls", type=int, default=10, help="calls per method per round, think_format")
    p.add_argument("--math-calls", type=int, default=2, help="calls per method per round, math")
    p.add_argument("--run-code-calls", type=int, default=1, help="calls of 256 programs per method per round")
    p.add_argument("--run-code-concurrency", type=int, default=4, help="/run_code calls in flight at once")
    p.add_argument("--only", choices=["think_format", "math", "run_code"], action="append", help="workloads to run")
    p.add_argument("--out", default="bench/results/http.txt")
    args = p.parse_args()
    lines: list[str] = []

    def log(s: str) -> None:
        print(s, flush=True)
        lines.append(s)

    t0 = time.perf_counter()
    with LocalServer(pool_size=2, extra_args=["--http-port", "0"]) as srv:
        log(
            f"http bench: batch {BATCH}, pool 2, {os.cpu_count()} CPUs, {args.rounds} rounds alternating gRPC, HTTP"
            f" /v1/verify_batch, OpenRLHF /get_reward; one server process (start-up {time.perf_counter() - t0:.1f} s)"
        )
        with (
            VerifierClient(srv.target, timeout_s=300) as client,
            httpx.Client(base_url=http_base(srv), timeout=300) as http,
        ):
            methods = {
                "gRPC": lambda v, it: call_grpc(client, v, it),
                "HTTP": lambda v, it: call_http(http, v, it),
                "OpenRLHF": lambda v, it: call_openrlhf(http, v, it),
            }
            only = set(args.only or ["think_format", "math", "run_code"])
            for m in methods.values():  # warm-up: connections, imports, the math worker's first parses
                m("think_format", tagged(think_items(random.Random(1)), next(_tags)))
                m("math", tagged(math_items(random.Random(1)), next(_tags)))
            if "think_format" in only:
                bench("think_format", "think_format", think_items, args.think_calls, args.rounds, methods, log)
            if "math" in only:
                bench("math", "math", math_items, args.math_calls, args.rounds, methods, log)
            if "run_code" in only:
                with ThreadPoolExecutor(args.run_code_concurrency) as pool:
                    bench_run_code(client, http, pool, args.run_code_calls, args.rounds, log)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
