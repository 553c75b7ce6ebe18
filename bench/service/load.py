"""Load: 10,000 mixed requests from 64 concurrent callers against a real server on loopback.

    .venv/bin/python -m bench.service.load [--requests 10000] [--callers 64] [--pool-size 2] [--out bench/results/load.txt]

The server runs in its own process (``python -m verifiers.fronts.server``, started here); the callers are 64
threads of this process, each with its own gRPC channel, calling the raw stubs (no client-side retry, so
every failure is counted). The mix: ``think_format`` (no sandbox), ``math`` (integers on the host fast
path; fractions, polynomials, sets and matrices in the sandbox), ``code`` (a small Python function and its
asserts, right or wrong), and ``VerifyBatch`` calls of 8 mixed items; every item is unique, so no verdict
comes from the cache; each has a known expected outcome, and a verdict that differs is counted as wrong.
About 1% of the calls are deliberate mistakes (an unknown verifier: NOT_FOUND; a negative timeout:
INVALID_ARGUMENT), counted apart.

Classes (issue 38): a call *needs no sandbox* when every item of it is graded in the service process
(``think_format``, math with integers on both sides: the host fast path) or is a deliberate mistake; all
others may wait for one of the ``--pool-size`` sandboxes. The goal: the no-sandbox class's p99 under load
< 100 ms; the sandbox class's p99 is printed with no goal (on a 2-core machine its calls queue for 2
sandboxes). RSS is *flat* when the end figure is within 10% of the one after warm-up (the verdict cache
already full, ``--fill-cache``).

Per-phase timing (``--phases``): the server then runs with a timing interceptor (this file run with
``--serve-timed``: ``python -m verifiers.fronts.server`` plus the interceptor), which returns in each reply's
trailing metadata when the server's Python saw the call, when its handler thread started and ended, and
the handler thread's CPU time. One clock: CLOCK_MONOTONIC, the same in both processes on one host.
Printed per class: send -> seen by the server (client serialisation, HTTP/2, gRPC core, the server's
polling thread), seen -> handler start (the thread pool's queue), the handler (grading, sandbox waits
included), its CPU (the rest of its wall time: waits for a sandbox, the GIL, the CPU), handler end ->
the client has the reply.

Phases: warm-up (``--warmup`` calls, 64 callers, then ``--fill-cache`` unique cheap items so that the
bounded verdict cache is at its steady size), then the server's RSS; a baseline of ``--baseline``
calls from one caller (the same mix: the in-run reference point BENCHMARKS.md asks for); the 10,000
calls from 64 callers, with the server's RSS sampled every second; the RSS at the end. Printed:
throughput (calls/s, items/s, and the ratio to the one-caller baseline), p50/p99/max latency per kind,
answers, errors by status, wrong verdicts, RSS after warm-up / peak / end, load average.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import threading
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import grpc

from proto.verifier.v1 import verifier_pb2 as pb
from proto.verifier.v1 import verifier_pb2_grpc as pb_grpc

BATCH = 8
DEADLINE_S = 120.0
GOAL_P99_MS = 100.0  # for calls that need no sandbox
RSS_FLAT = 1.10  # end / after warm-up
TIMING_KEY = "x-bench-timing"


@dataclass
class Call:
    kind: str  # format | math-int | math | code | batch | batch-host (no item needs a sandbox) | deliberate
    items: list[tuple[pb.VerifyRequest, str]]  # (request, expected outcome name)
    expected_error: grpc.StatusCode | None = None
    sandbox: bool = True  # False: every item is graded in the service process (or refused before grading)


# -- the mix -----------------------------------------------------------------------------------------------
def format_item(rnd: random.Random, n: int) -> tuple[pb.VerifyRequest, str]:  # no sandbox
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


def needs_sandbox(req: pb.VerifyRequest) -> bool:
    """think_format grades in the service process; math does too when both sides are integer literals."""
    if req.verifier == "think_format":
        return False
    return not (req.verifier == "math" and req.reference.isdigit())


def build_calls(count: int, seed: int) -> list[Call]:
    rnd, calls, n = random.Random(seed), [], seed * 10_000_000
    makers = {"format": format_item, "math": math_item, "code": code_item}
    for _ in range(count):
        n += 1
        r = rnd.random()
        if r < 0.01:
            bad = rnd.random() < 0.5
            req = pb.VerifyRequest(
                verifier="no-such-verifier" if bad else "math",
                completion="\\boxed{1}",
                reference="1",
                timeout_s=0.0 if bad else -1.0,
            )
            code = grpc.StatusCode.NOT_FOUND if bad else grpc.StatusCode.INVALID_ARGUMENT
            calls.append(Call("deliberate", [(req, "")], code, sandbox=False))
        elif r < 0.16:
            items = []
            for _ in range(BATCH):
                n += 1
                items.append(rnd.choice([format_item, math_item, math_item])(rnd, n))
            sandbox = any(needs_sandbox(q) for q, _ in items)
            calls.append(Call("batch" if sandbox else "batch-host", items, sandbox=sandbox))
        else:
            kind = "format" if r < 0.50 else "math" if r < 0.88 else "code"
            req, want = makers[kind](rnd, n)
            sandbox = needs_sandbox(req)
            calls.append(Call("math-int" if kind == "math" and not sandbox else kind, [(req, want)], sandbox=sandbox))
    return calls


# -- driving it --------------------------------------------------------------------------------------------
@dataclass
class Outcome:
    kind: str
    latency_s: float
    status: str  # OK or a gRPC status name
    wrong: int  # verdicts that differ from the expected outcome
    items: int
    sandbox: bool = True
    phases: tuple[float, ...] | None = None  # ms: send->seen, seen->handler, handler, handler CPU, end->reply


def phases_of(t0_ns: int, t_end_ns: int, metadata) -> tuple[float, ...] | None:
    """The per-phase split of one call from the timing server's trailing metadata (None without it)."""
    raw = dict(metadata or ()).get(TIMING_KEY)
    if raw is None:
        return None
    seen, start, end, cpu = map(int, raw.split(","))
    return tuple(x / 1e6 for x in (seen - t0_ns, start - seen, end - start, cpu, t_end_ns - end))


def do_call(stub, call: Call) -> Outcome:
    t0 = time.monotonic_ns()
    items = len(call.items)
    try:
        if call.kind.startswith("batch"):
            reply, rpc = stub.VerifyBatch.with_call(
                pb.VerifyBatchRequest(items=[r for r, _ in call.items]), timeout=DEADLINE_S
            )
            got = reply.results
        else:
            reply, rpc = stub.Verify.with_call(call.items[0][0], timeout=DEADLINE_S)
            got = [reply]
    except grpc.RpcError as e:
        t1 = time.monotonic_ns()
        status = e.code().name if e.code() != call.expected_error else f"{e.code().name} (deliberate)"
        return Outcome(
            call.kind, (t1 - t0) / 1e9, status, 0, items, call.sandbox, phases_of(t0, t1, e.trailing_metadata())
        )
    t1 = time.monotonic_ns()
    lat, phases = (t1 - t0) / 1e9, phases_of(t0, t1, rpc.trailing_metadata())
    if call.expected_error is not None:
        return Outcome(call.kind, lat, "OK (a deliberate mistake was accepted)", 0, items, call.sandbox, phases)
    wrong = sum(
        pb.Outcome.Name(v.outcome).removeprefix("OUTCOME_") != want
        for v, (_, want) in zip(got, call.items, strict=False)
    )
    return Outcome(call.kind, lat, "OK", wrong + abs(len(got) - items), items, call.sandbox, phases)


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
            items = [
                pb.VerifyRequest(verifier="think_format", completion=f"<think>fill {i}</think>{i}")
                for i in range(start, min(n, start + 4096))
            ]
            stub.VerifyBatch(pb.VerifyBatchRequest(items=items), timeout=DEADLINE_S)
    say(f"verdict cache filled with {n} think_format items in {time.perf_counter() - t0:.1f} s")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system) the process has used, all its threads."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def report(name: str, wall: float, outs: list[Outcome], say) -> float:
    n, items = len(outs), sum(o.items for o in outs)
    say(
        f"{name}: {n} calls ({items} items) in {wall:.1f} s: {n / wall:.1f} calls/s, {items / wall:.1f} items/s, "
        f"load {os.getloadavg()[0]:.2f}"
    )
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
    for sandbox in (False, True):
        lat = [o.latency_s * 1000 for o in outs if o.sandbox == sandbox]
        if not lat:
            continue
        p99 = pct(lat, 0.99)
        verdict = (
            "no goal: they queue for the sandboxes"
            if sandbox
            else f"goal p99 < {GOAL_P99_MS:.0f} ms: {'MET' if p99 < GOAL_P99_MS else 'MISSED'}"
        )
        say(f"  class {'sandbox' if sandbox else 'no-sandbox':<10} {len(lat):>6} calls  p50 {pct(lat, 0.5):8.1f} ms  "
            f"p99 {p99:8.1f} ms  max {max(lat):8.1f} ms  ({verdict})")  # fmt: skip
    report_phases(outs, say)
    answered = sum(o.status == "OK" or o.status.endswith("(deliberate)") for o in outs)
    say(f"  answered {answered}/{n}; by status: {dict(Counter(o.status for o in outs))}; "
        f"wrong verdicts {sum(o.wrong for o in outs)}")  # fmt: skip
    return n / wall


PHASES = ("send->seen", "seen->handler", "handler", "handler CPU", "end->reply")


def report_phases(outs: list[Outcome], say) -> None:
    """p50 / p99 of each phase of a call, per class (only with --phases)."""
    for sandbox in (False, True):
        rows = [o.phases for o in outs if o.sandbox == sandbox and o.phases is not None]
        if not rows:
            continue
        cells = [
            f"{name} {pct([r[i] for r in rows], 0.5):.1f}/{pct([r[i] for r in rows], 0.99):.1f}"
            for i, name in enumerate(PHASES)
        ]
        say(f"    phases of {'sandbox' if sandbox else 'no-sandbox'} calls, ms p50/p99: {', '.join(cells)}")


def serve_timed() -> None:
    """``python -m verifiers.fronts.server`` (the arguments after --serve-timed) with a server interceptor that puts
    when the call was seen, its handler's start and end (monotonic ns) and the handler's CPU time into the
    reply's trailing metadata."""
    import verifiers.fronts.server as server

    class Timing(grpc.ServerInterceptor):
        def intercept_service(self, continuation, details):
            seen = time.monotonic_ns()
            handler = continuation(details)
            if handler is None or handler.unary_unary is None:
                return handler
            inner = handler.unary_unary

            def timed(request, context):
                start, cpu = time.monotonic_ns(), time.thread_time_ns()
                try:
                    return inner(request, context)
                finally:
                    cpu, end = time.thread_time_ns() - cpu, time.monotonic_ns()
                    context.set_trailing_metadata(((TIMING_KEY, f"{seen},{start},{end},{cpu}"),))

            return grpc.unary_unary_rpc_method_handler(timed, handler.request_deserializer, handler.response_serializer)

    plain = grpc.server
    grpc.server = lambda *a, **kw: plain(*a, **kw, interceptors=[Timing()])
    sys.argv = [sys.argv[0], *sys.argv[2:]]
    server.main()


def timed_server(pool_size: int):
    """A LocalServer whose command is this file's --serve-timed in place of ``-m verifiers.fronts.server``."""
    from verifiers.launch import LocalServer

    srv = LocalServer(pool_size=pool_size, command=[sys.executable, str(Path(__file__).resolve()), "--serve-timed"])
    return srv


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=10_000)
    ap.add_argument("--callers", type=int, default=64)
    ap.add_argument("--warmup", type=int, default=1_000)
    ap.add_argument("--baseline", type=int, default=300)
    ap.add_argument("--pool-size", type=int, default=2)
    ap.add_argument(
        "--fill-cache",
        type=int,
        default=50_000,
        help="warm-up also grades this many unique think_format items (VerifyBatch, no sandbox), so the "
        "server's verdict cache (50,000 entries, bounded) is full before RSS is read; 0: skip",
    )
    ap.add_argument(
        "--phases",
        action="store_true",
        help="time each call's phases (the server runs with a timing interceptor: see the docstring)",
    )
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    from verifiers.launch import LocalServer

    lines: list[str] = []

    def say(s: str) -> None:
        print(s, flush=True)
        lines.append(s)

    say(f"# .venv/bin/python -m bench.service.load --requests {args.requests} --callers {args.callers} "
        f"--pool-size {args.pool_size}{' --phases' if args.phases else ''}   ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f})")  # fmt: skip
    t0 = time.perf_counter()
    with timed_server(args.pool_size) if args.phases else LocalServer(pool_size=args.pool_size) as srv:
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
        cpu0 = cpu_s(pid)
        wall, outs = drive(srv.target, build_calls(args.requests, seed=3), args.callers)
        cpu = cpu_s(pid) - cpu0
        stop.set()
        rate = report(f"load ({args.callers} callers)", wall, outs, say)
        say(
            f"server process CPU during the load: {cpu:.1f} s in {wall:.1f} s ({cpu / wall:.0%} of one core; "
            f"{1000 * cpu / len(outs):.2f} ms a call; the sandboxes' CPU is not in it)"
        )
        rss_end = rss_mb(pid)
        say(f"throughput ratio {args.callers} callers / 1 caller: {rate / base:.2f}x")
        say(
            f"server RSS: after warm-up {rss_warm:.0f} MB, peak {max(peak):.0f} MB, end {rss_end:.0f} MB "
            f"(end/warm-up {rss_end / rss_warm:.3f}; median of samples {statistics.median(peak):.0f} MB)"
        )
        flat = rss_end / rss_warm <= RSS_FLAT
        say(f"RSS flat (end within {RSS_FLAT - 1:.0%} of after warm-up, the cache full): {'yes' if flat else 'NO'}")
        errors = [o for o in outs if o.status != "OK" and not o.status.endswith("(deliberate)")]
        say(f"errors other than deliberate ones: {len(errors)}; wrong verdicts: {sum(o.wrong for o in outs)}")
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve-timed"]:
        serve_timed()
    else:
        main()
