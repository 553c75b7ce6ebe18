"""Benchmark: what the TRL and verl adapters add per call over the plain gRPC client, batch of 256.

    flock /tmp/bench.lock .venv/bin/python -m bench.service.adapters [--rounds 5] [--calls 20] [--workloads think_format,math]

One verifier service (LocalServer, 2 sandbox containers) on loopback; one client process. Variants, each
grading the same kind of batch of 256 completions in one call:

- ``client``       ``VerifierClient.verify_batch([VerifyItem(...) x256])``: the baseline (items built in the call);
- ``trl``          ``reward_function(...)(prompts=..., completions=..., answer=..., completion_ids=...,
                   trainer_state=..., log_extra=..., log_metric=...)``, called the way GRPOTrainer calls it;
- ``trl_async``    the async variant, awaited on a long-lived event loop thread (TRL's daemon loop), compared
                   with ``client_on_loop``: an ``async def`` calling the plain client, awaited the same way;
- ``verl_batch``   ``compute_score_batch(data_sources=<numpy object array>, solution_strs=..., ground_truths=...,
                   extra_infos=...)``, called the way verl's BatchRewardManager calls it, routed by data_source;
- per-item pair (think_format only): ``client_single`` (256 x ``client.verify``) vs ``verl_single`` (256 x
  ``compute_score``, verl's naive manager), so the naive path's overhead is measured against the client used
  the same way.

Workloads: ``think_format`` (graded in the service process, no sandbox: the service's fastest path, so the
worst case for an adapter's relative overhead) and ``math`` (a fraction in \\boxed{} against a decimal: every
item goes through the sandbox, the usual case).

Same work: every call gets a fresh batch (a per-call nonce in every completion, so the service's verdict cache
never answers), generated the same way for every variant; half the completions are correct. The TRL adapter
also sends each row's prompt (a short R1-style prompt here; verifiers such as reward models use it) and the
baseline does not: that cost is counted against the adapter. Within a round the variants' calls are
interleaved one by one, the order rotated every call (A B C D E, B C D E A, ...), so load changes on a shared
machine hit every variant alike; per round each variant's median per-call wall time and client-process CPU
time. Printed: per-variant medians, p50/p99 per-call latency and items/s, the median of per-round ratios
variant/client with the spread, the 1-minute load average per round, agreement of every variant's rewards with
the client's on a common batch, the adapters' translation time alone (no RPC), import start-up apart, and
the client process's peak RSS.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from verifiers.client import VerifyItem
from verifiers.integrations import client_for
from verifiers.integrations.trl import async_reward_function, reward_function
from verifiers.integrations.verl import compute_score, compute_score_batch, route_for, to_item
from verifiers.launch import LocalServer

ROOT = Path(__file__).resolve().parents[2]
N = 256
PROMPT = "A conversation between User and Assistant. The user asks a question. User: what is 12+34? Assistant:"
SOURCE = {"think_format": "bench_format", "math": "bench_math"}  # verl data_source -> verifier (routes)


def batch(workload: str, nonce: str) -> tuple[list[str], list[str]]:
    """256 (completion, reference) pairs, half of them correct, unique to ``nonce``."""
    comps, refs = [], []
    for i in range(N):
        if workload == "think_format":
            think = f"step {i} of {nonce}: " + "reasoning " * (i % 40)
            comps.append(f"<think>{think}</think>answer {i}" if i % 2 == 0 else f"{think} answer {i}")
            refs.append("")
        else:  # a fraction against a decimal: no integer fast path, so every item goes through the sandbox
            comps.append(f"<think>{nonce} {i}</think>so \\boxed{{\\frac{{{i + 1}}}{{4}}}}")
            refs.append(str((i + 1) / 4 if i % 2 == 0 else (i + 1) / 4 + 1))
    return comps, refs


class Variants:
    def __init__(self, target: str, workload: str):
        self.client = client_for(target)  # the adapters' own channel: every variant uses the same transport
        self.workload, self.target = workload, target
        answer_column = "answer" if workload == "math" else None
        self.trl = reward_function(workload, target=target, answer_column=answer_column)
        self.trl_async = async_reward_function(workload, target=target, answer_column=answer_column)
        self.routes = {SOURCE[workload]: workload}
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.metrics: list = []

    def trl_kwargs(self, comps: list[str], refs: list[str]) -> dict:
        return dict(
            prompts=[PROMPT] * N,
            completions=comps,
            answer=refs,
            completion_ids=[[0]] * N,
            trainer_state=None,
            log_extra=lambda c, v: None,
            log_metric=lambda n, v: self.metrics.append(v),
        )

    def verl_kwargs(self, comps: list[str], refs: list[str]) -> dict:
        return dict(
            data_sources=np.array([SOURCE[self.workload]] * N, dtype=object),
            solution_strs=comps,
            ground_truths=refs,
            extra_infos=np.array([{"rollout_reward_scores": {}} for _ in range(N)]),
            routes=self.routes,
            target=self.target,
        )

    # each returns the rewards, so agreement can be checked on a common batch
    def client_batch(self, comps, refs):
        items = [VerifyItem(self.workload, c, r) for c, r in zip(comps, refs, strict=True)]
        return [r.reward for r in self.client.verify_batch(items)]

    def trl_call(self, comps, refs):
        return self.trl(**self.trl_kwargs(comps, refs))

    def trl_async_call(self, comps, refs):
        return asyncio.run_coroutine_threadsafe(self.trl_async(**self.trl_kwargs(comps, refs)), self.loop).result()

    def client_on_loop(self, comps, refs):
        async def plain():  # an async reward function a user would write around the plain client
            return self.client_batch(comps, refs)

        return asyncio.run_coroutine_threadsafe(plain(), self.loop).result()

    def verl_batch(self, comps, refs):
        return [s["score"] for s in compute_score_batch(**self.verl_kwargs(comps, refs))]

    def client_single(self, comps, refs):
        return [self.client.verify(self.workload, c, r).reward for c, r in zip(comps, refs, strict=True)]

    def verl_single(self, comps, refs):
        src = SOURCE[self.workload]
        return [
            compute_score(
                data_source=src, solution_str=c, ground_truth=r, extra_info={}, routes=self.routes, target=self.target
            )["score"]
            for c, r in zip(comps, refs, strict=True)
        ]


BATCH = ["client_batch", "trl_call", "verl_batch", "client_on_loop", "trl_async_call"]
# (variant, its baseline): the async one is compared with the plain client awaited on the same event loop
PAIRS = [("trl_call", "client_batch"), ("verl_batch", "client_batch"), ("trl_async_call", "client_on_loop"),
         ("trl_async_call", "client_batch"), ("verl_single", "client_single")]  # fmt: skip
SINGLE = ["client_single", "verl_single"]


def one_call(fn: Callable, workload: str, tag: str) -> tuple[float, float]:
    """(wall s, client-process CPU s) of one call on a fresh batch (batch generation not timed)."""
    comps, refs = batch(workload, f"{tag}-{time.monotonic_ns()}")
    t0, c0 = time.perf_counter(), time.process_time()
    fn(comps, refs)
    return time.perf_counter() - t0, time.process_time() - c0


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


Times = dict[str, list[list[tuple[float, float]]]]  # variant -> rounds -> calls -> (wall, cpu)


def run_workload(v: Variants, workload: str, rounds: int, calls: int, single_calls: int) -> None:
    """Calls interleaved one by one (order rotated every call), so load changes hit every variant alike."""
    print(f"\n== {workload}: batch {N}, {rounds} rounds x {calls} calls per variant ({single_calls} for per-item)")
    groups = [(BATCH, calls)] + ([(SINGLE, single_calls)] if single_calls else [])
    names = [n for group, _ in groups for n in group]
    times: Times = {name: [] for name in names}
    loads = []
    for name in names:  # warm-up: channel, imports, first-call paths
        getattr(v, name)(*batch(workload, f"warm-{name}"))
    for r in range(rounds):
        loads.append(os.getloadavg()[0])
        for name in names:
            times[name].append([])
        for group, n_calls in groups:
            for k in range(n_calls):
                j = (r + k) % len(group)
                for name in group[j:] + group[:j]:
                    times[name][-1].append(one_call(getattr(v, name), workload, f"{r}-{k}-{name}"))
        line = "  ".join(f"{n} {statistics.median(w for w, _ in times[n][-1]) * 1e3:6.1f} ms" for n in names)
        print(f"round {r + 1}: load {loads[-1]:.2f}  {line}", flush=True)
    report(times, loads)


def report(times: Times, loads: list[float]) -> None:
    print(f"1-min load average per round: {', '.join(f'{x:.2f}' for x in loads)}")
    for name, per_round in times.items():
        wall = [w for rnd in per_round for w, _ in rnd]
        med = statistics.median(statistics.median(w for w, _ in rnd) for rnd in per_round)
        cpu = statistics.median(statistics.median(c for _, c in rnd) for rnd in per_round)
        print(f"  {name:>15}: median {med * 1e3:6.1f} ms/call, {N / med:6.0f} items/s, p50 {pct(wall, 0.5) * 1e3:6.1f} ms, "
              f"p99 {pct(wall, 0.99) * 1e3:6.1f} ms; client CPU {cpu * 1e3:5.1f} ms/call")  # fmt: skip
    for (name, base), (label, i) in itertools.product(PAIRS, (("wall", 0), ("client CPU", 1))):
        if name not in times:
            continue
        ratios = [
            statistics.median(x[i] for x in a) / statistics.median(x[i] for x in b)
            for a, b in zip(times[name], times[base], strict=True)
        ]
        med = statistics.median(ratios)
        print(f"  {name} / {base} ({label}): median {med:.3f}x (overhead {100 * (med - 1):+.1f}%; "
              f"per round min {min(ratios):.3f}, max {max(ratios):.3f})")  # fmt: skip


def translation(v: Variants, workload: str, reps: int = 50) -> None:
    """The adapters' own work (no RPC): building the 256 items from each tool's call shape."""
    comps, refs = batch(workload, "translate")
    trl_kw = v.trl_kwargs(comps, refs)
    src = SOURCE[workload]

    def verl_items():
        route = route_for(src, v.routes)
        return [to_item(c, g, route) for c, g in zip(comps, refs, strict=True)]

    jobs = {
        "client VerifyItem x256": lambda: [VerifyItem(workload, c, r) for c, r in zip(comps, refs, strict=True)],
        "trl items()": lambda: v.trl.items(trl_kw["prompts"], comps, trl_kw),
        "verl to_item x256": verl_items,
    }
    for name, job in jobs.items():
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            job()
            ts.append(time.perf_counter() - t0)
        print(f"  translation only, {name}: median {statistics.median(ts) * 1e3:.2f} ms")


def agreement(v: Variants, workload: str) -> None:
    comps, refs = batch(workload, "agreement")
    want = v.client_batch(comps, refs)
    for name in BATCH[1:] + (SINGLE if workload == "think_format" else []):
        got = getattr(v, name)(comps, refs)
        same = sum(a == b for a, b in zip(got, want, strict=True))
        print(f"  agreement {name} vs client_batch: {same}/{N} rewards equal")
    print(f"  client rewards: {sum(want):.0f}/{N} correct (half by construction)")


def startup() -> None:
    def imp(mod: str) -> float:
        code = f"import time; t = time.perf_counter(); import {mod}; print(time.perf_counter() - t)"
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        runs = [
            float(
                subprocess.run(
                    [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
                ).stdout
            )
            for _ in range(3)
        ]
        return statistics.median(runs)

    base = imp("verifiers.client")
    for mod in ("verifiers.integrations.trl", "verifiers.integrations.verl"):
        print(f"start-up: import {mod} {imp(mod) * 1e3:.0f} ms (verifiers.client alone {base * 1e3:.0f} ms)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=20, help="batched calls per variant per round")
    ap.add_argument("--single-calls", type=int, default=2, help="per-item passes (256 calls each) per round")
    ap.add_argument("--workloads", default="think_format,math")
    ap.add_argument("--pool-size", type=int, default=2)
    a = ap.parse_args()
    print(f"adapters bench: batch {N}, pool {a.pool_size}, {os.cpu_count()} CPUs, {a.rounds} rounds alternating")
    startup()
    t0 = time.perf_counter()
    with LocalServer(pool_size=a.pool_size) as srv:
        print(f"service start-up: {time.perf_counter() - t0:.1f} s")
        for w in a.workloads.split(","):
            # math goes through the sandbox (~100x slower per item): fewer calls, and no per-item passes
            scale, singles = (1, a.single_calls) if w == "think_format" else (10, 0)
            v = Variants(srv.target, w)
            agreement(v, w)
            translation(v, w)
            run_workload(v, w, a.rounds, max(3, a.calls // scale), singles)
            v.loop.call_soon_threadsafe(v.loop.stop)
    print(f"\nclient process peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
