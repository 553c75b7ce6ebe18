"""Load: 10,000 mixed requests from 64 concurrent callers against a real server on loopback.

    .venv/bin/python bench/load.py [--requests 10000] [--callers 64] [--pool-size 2] [--out bench/results/load.txt]

The server runs in its own process (``python -m verifiers.server``, started here); the callers are 64
threads of this process, each with its own gRPC channel, calling the raw stubs (no client-side retry, so
every failure is counted). The mix: ``think_format`` (no sandbox), ``math`` (integers on the host fast
path; fractions, polynomials, sets and matrices in the sandbox), ``code`` (a small Python function and its
asserts, right or wrong), and ``VerifyBatch`` calls of 8 mixed items; every item is unique, so no verdict
comes from the cache; each has a known expected outcome, and a verdict that differs is counted as wrong.
About 1% of the calls are deliberate mistakes (an unknown verifier: NOT_FOUND; a negative timeout:
INVALID_ARGUMENT), counted apart.

Phases: warm-up (``--warmup`` calls, 64 callers, then ``--fill-cache`` unique cheap items so that the
bounded verdict cache is at its steady size), then the server's RSS; a baseline of ``--baseline``
calls from one caller (the same mix: the in-run reference point BENCHMARKS.md asks for); the 10,000
calls from 64 callers, with the server's RSS sampled every second; the RSS at the end. Printed:
throughput (calls/s, items/s, and the ratio to the one-caller baseline), p50/p99/max latency per kind,
answers, errors by status, wrong verdicts, RSS after warm-up / peak / end, load average.
"""

from __future__ import annotations

import sys

sys.path[0] = __file__.rsplit("/", 2)[0]  # the repository root, not bench/ (whose math.py shadows the stdlib's)

import argparse  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from collections import Counter, defaultdict  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

import grpc  # noqa: E402

from proto.verifier.v1 import verifier_pb2 as pb  # noqa: E402
from proto.verifier.v1 import verifier_pb2_grpc as pb_grpc  # noqa: E402

BATCH = 8
DEADLINE_S = 120.0


@dataclass
class Call:
    kind: str  # format | math | code | batch | deliberate
    items: list[tuple[pb.VerifyRequest, str]]  # (request, expected outcome name)
    expected_error: grpc.StatusCode | None = None


# -- the mix -----------------------------------------------------------------------------------------------
def format_item(rnd: random.Random, n: int) -> tuple[pb.VerifyRequest, str]:
    good = rnd.random() < 0.6
    text = f"<think>step {n}: {rnd.random()}</think><answer>{n}</answer>" if good else f"answer {n} <think>late</think>"
    return pb.VerifyRequest(verifier="think_format", completion=text, id=f"f{n}"), "CORRECT" if good else "INCORRECT"


def math_item(rnd: random.Random, n: int) -> tuple[pb.VerifyRequest, str]:
    right = rnd.random() < 2 / 3
    shape = rnd.choice(["int", "frac", "poly", "set", "matrix"])
    a, b = rnd.randint(1, 9), rnd.randint(1, 9)
    if shape == "int":
        gold, ans = str(n * 7 + a), str(n * 7 + a + (0 if right else 1))
    elif shape == "frac":
        gold, ans = f"\\frac{{{n}}}{{{n + a}}}", f"{2 * n}/{2 * (n + a)}" if right else f"{n + 1}/{n + a}"
    elif shape == "poly":
        gold = f"x^2 + {a + b}x + {a * b + n}"
        ans = f"(x+{a})(x+{b}) + {n}" if right else f"(x+{a})(x+{b}) + {n + 1}"
    elif shape == "set":
        xs = [n, n + a, n + a + b]
        gold, ans = (
            "\\{" + ", ".join(map(str, xs)) + "\\}",
            "\\{" + ", ".join(map(str, xs[::-1] if right else xs[:2])) + "\\}",
        )
    else:
        gold = f"\\begin{{pmatrix}} {n} & {a} \\\\ {b} & 1 \\end{{pmatrix}}"
        ans = f"\\begin{{bmatrix}}{n}&{a}\\\\{b}&{1 if right else 2}\\end{{bmatrix}}"
    req = pb.VerifyRequest(
        verifier="math", completion=f"<think>r</think>$\\boxed{{{ans}}}$", reference=gold, id=f"m{n}"
    )
    return req, "CORRECT" if right else "INCORRECT"


def code_item(rnd: random.Random, n: int) -> tuple[pb.VerifyRequest, str]:
    right = rnd.random() < 0.5
    body = "return a + b" if right else "return a - b"
    completion = f"```python\ndef add(a, b):\n    {body}\n```"
    tests = f"assert add({n}, 2) == {n + 2}\nassert add(-1, 1) == 0\n"
    return pb.VerifyRequest(verifier="code", completion=completion, reference=tests, id=f"c{n}"), (
        "CORRECT" if right else "INCORRECT"
    )


def build_calls(count: int, seed: int) -> list[Call]:
    rnd, calls, n = random.Random(seed), [], seed * 10_000_000
    makers = {"format": format_item, "math": math_item, "code": code_item}
    for _ in range(count):
        n += 1
        r = rnd.random()
        if r < 0.01:
            bad = rnd.random() < 0.5
            req = pb.VerifyRequest(verifier="no-such-verifier" if bad else "math", completion="\\boxed{1}",
                                   reference="1", timeout_s=0.0 if bad else -1.0)  # fmt: skip
            code = grpc.StatusCode.NOT_FOUND if bad else grpc.StatusCode.INVALID_ARGUMENT
            calls.append(Call("deliberate", [(req, "")], code))
        elif r < 0.16:
            items = []
            for _ in range(BATCH):
                n += 1
                items.append(rnd.choice([format_item, math_item, math_item])(rnd, n))
            calls.append(Call("batch", items))
        else:
            kind = "format" if r < 0.50 else "math" if r < 0.88 else "code"
            calls.append(Call(kind, [makers[kind](rnd, n)]))
    return calls


# -- driving it --------------------------------------------------------------------------------------------
@dataclass
class Outcome:
    kind: str
    latency_s: float
    status: str  # OK or a gRPC status name
    wrong: int  # verdicts that differ from the expected outcome
    items: int


def do_call(stub, call: Call) -> Outcome:
    t0 = time.perf_counter()
    try:
        if call.kind == "batch":
            got = stub.VerifyBatch(pb.VerifyBatchRequest(items=[r for r, _ in call.items]), timeout=DEADLINE_S).results
        else:
            got = [stub.Verify(call.items[0][0], timeout=DEADLINE_S)]
    except grpc.RpcError as e:
        status = e.code().name if e.code() != call.expected_error else f"{e.code().name} (deliberate)"
        return Outcome(call.kind, time.perf_counter() - t0, status, 0, len(call.items))
    lat = time.perf_counter() - t0
    if call.expected_error is not None:
        return Outcome(call.kind, lat, "OK (a deliberate mistake was accepted)", 0, len(call.items))
    wrong = sum(
        pb.Outcome.Name(v.outcome).removeprefix("OUTCOME_") != want
        for v, (_, want) in zip(got, call.items, strict=False)
    )
    return Outcome(call.kind, lat, "OK", wrong + abs(len(got) - len(call.items)), len(call.items))


def drive(target: str, calls: list[Call], callers: int) -> tuple[float, list[Outcome]]:
    channels = [grpc.insecure_channel(target) for _ in range(callers)]
    stubs = [pb_grpc.VerifierServiceStub(c) for c in channels]
    local = threading.local()
    counter = iter(range(callers))
    lock = threading.Lock()

    def run(call: Call) -> Outcome:
        if not hasattr(local, "stub"):
            with lock:
                local.stub = stubs[next(counter)]
        return do_call(local.stub, call)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(callers) as ex:
        outs = list(ex.map(run, calls))
    wall = time.perf_counter() - t0
    for c in channels:
        c.close()
    return wall, outs


def fill_cache(target: str, n: int, say) -> None:
    """Grade ``n`` unique cheap items so the bounded verdict cache reaches its steady size: RSS growth
    after that is the service's own, not the cache filling up."""
    t0 = time.perf_counter()
    with grpc.insecure_channel(target) as ch:
        stub = pb_grpc.VerifierServiceStub(ch)
        for start in range(0, n, 4096):
            items = [pb.VerifyRequest(verifier="think_format", completion=f"<think>fill {i}</think>{i}")
                     for i in range(start, min(n, start + 4096))]  # fmt: skip
            stub.VerifyBatch(pb.VerifyBatchRequest(items=items), timeout=DEADLINE_S)
    say(f"verdict cache filled with {n} think_format items in {time.perf_counter() - t0:.1f} s")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def report(name: str, wall: float, outs: list[Outcome], say) -> float:
    n, items = len(outs), sum(o.items for o in outs)
    say(f"{name}: {n} calls ({items} items) in {wall:.1f} s: {n / wall:.1f} calls/s, {items / wall:.1f} items/s, "
        f"load {os.getloadavg()[0]:.2f}")  # fmt: skip
    by_kind = defaultdict(list)
    for o in outs:
        by_kind[o.kind].append(o.latency_s * 1000)
    for kind, lat in sorted(by_kind.items()):
        say(f"  {kind:<10} {len(lat):>6} calls  p50 {pct(lat, 0.5):8.1f} ms  p99 {pct(lat, 0.99):8.1f} ms  "
            f"max {max(lat):8.1f} ms")  # fmt: skip
    lat = [o.latency_s * 1000 for o in outs]
    say(
        f"  {'all':<10} {n:>6} calls  p50 {pct(lat, 0.5):8.1f} ms  p99 {pct(lat, 0.99):8.1f} ms  max {max(lat):8.1f} ms"
    )
    answered = sum(o.status == "OK" or o.status.endswith("(deliberate)") for o in outs)
    say(f"  answered {answered}/{n}; by status: {dict(Counter(o.status for o in outs))}; "
        f"wrong verdicts {sum(o.wrong for o in outs)}")  # fmt: skip
    return n / wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=10_000)
    ap.add_argument("--callers", type=int, default=64)
    ap.add_argument("--warmup", type=int, default=1_000)
    ap.add_argument("--baseline", type=int, default=300)
    ap.add_argument("--pool-size", type=int, default=2)
    ap.add_argument("--fill-cache", type=int, default=50_000,
                    help="warm-up also grades this many unique think_format items (VerifyBatch, no sandbox), so the "
                    "server's verdict cache (50,000 entries, bounded) is full before RSS is read; 0: skip")  # fmt: skip
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    from verifiers.launch import LocalServer

    lines: list[str] = []

    def say(s: str) -> None:
        print(s, flush=True)
        lines.append(s)

    say(f"# .venv/bin/python bench/load.py --requests {args.requests} --callers {args.callers} "
        f"--pool-size {args.pool_size}   ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f})")  # fmt: skip
    t0 = time.perf_counter()
    with LocalServer(pool_size=args.pool_size) as srv:
        pid = srv.proc.pid
        say(f"server pid {pid} on {srv.target}: up in {time.perf_counter() - t0:.1f} s, RSS {rss_mb(pid):.0f} MB")
        wall, outs = drive(srv.target, build_calls(args.warmup, seed=1), args.callers)
        report("warm-up", wall, outs, say)
        if args.fill_cache:
            fill_cache(srv.target, args.fill_cache, say)
        rss_warm = rss_mb(pid)
        say(f"server RSS after warm-up: {rss_warm:.0f} MB")
        wall, outs = drive(srv.target, build_calls(args.baseline, seed=2), 1)
        base = report("baseline (1 caller)", wall, outs, say)
        peak, stop = [rss_warm], threading.Event()

        def sample() -> None:
            while not stop.wait(1.0):
                peak.append(rss_mb(pid))

        threading.Thread(target=sample, daemon=True).start()
        wall, outs = drive(srv.target, build_calls(args.requests, seed=3), args.callers)
        stop.set()
        rate = report(f"load ({args.callers} callers)", wall, outs, say)
        rss_end = rss_mb(pid)
        say(f"throughput ratio {args.callers} callers / 1 caller: {rate / base:.2f}x")
        say(f"server RSS: after warm-up {rss_warm:.0f} MB, peak {max(peak):.0f} MB, end {rss_end:.0f} MB "
            f"(end/warm-up {rss_end / rss_warm:.3f}; median of samples {statistics.median(peak):.0f} MB)")  # fmt: skip
        errors = [o for o in outs if o.status != "OK" and not o.status.endswith("(deliberate)")]
        say(f"errors other than deliberate ones: {len(errors)}; wrong verdicts: {sum(o.wrong for o in outs)}")
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
