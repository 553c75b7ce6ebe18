"""A long run of mixed hostile traffic against one server, its RSS sampled (issue 30: memory stays flat).

    flock /tmp/bench.lock .venv/bin/python -m bench.service.soak [--minutes 30] [--pool 2] [--cache-mb 64]

Traffic, each kind from its own threads, all the run long:
  * heads that never end (a header grown 64 KiB at a time: the server answers 431 and closes);
  * 5,000 headers per request (431); JSON nested 1,200 deep to /v1/verify (400);
  * bodies declared over --max-message-mb (413, unread);
  * unique think_format completions of 4-64 kB (each a new cache entry: the cache's byte budget);
  * /run_code programs, half sleeping 2 s, half printing 200 kB (output cap, detail cut);
  * a well-behaved caller's think_format calls, whose latency is reported.
A /run_code answer that is not JSON is counted under its status and first bytes. (The one such answer of
the 30-minute run, ``run_code_failed_JSONDecodeError``, was the server's shutdown at the end of the run:
a program still running past ``--grace-s`` got uvicorn's plain-text 500; it now gets SandboxFusion's
``SandboxError``, tests/verifiers/fronts/test_run_code_queue.py.)
The server's VmRSS is read from /proc every ``--every-s`` seconds; printed: the samples' min / median /
max, the mean of the first and of the last tenth of the run, and the counts of each answer.
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import statistics
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

from bench.service.fairness import start

ROOT = Path(__file__).resolve().parents[2]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def endless_head(base: str, stop: threading.Event, seen: Counter) -> None:
    host, port = base.removeprefix("http://").split(":")
    while not stop.is_set():
        try:
            with socket.create_connection((host, int(port)), timeout=10) as s:
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ")
                for _ in range(64):
                    s.sendall(b"a" * 65536)
        except OSError:
            seen["endless_head_cut"] += 1


def hostile_http(base: str, stop: threading.Event, seen: Counter) -> None:
    many = [(f"x-h{i}", "v") for i in range(5000)]
    deep = b"[" * 1200 + b"]" * 1200
    with httpx.Client(base_url=base, timeout=30) as http:
        while not stop.is_set():
            try:
                seen[f"many_headers_{http.post('/v1/verify', json={}, headers=many).status_code}"] += 1
                seen[f"deep_json_{http.post('/v1/verify_batch', content=deep).status_code}"] += 1
                seen[f"big_body_{declared_big_body(base)}"] += 1
            except httpx.HTTPError as e:
                seen[f"hostile_error_{type(e).__name__}"] += 1


def declared_big_body(base: str) -> str:
    """A body declared at 512 MiB (only its first bytes sent): the status the server answers."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(b"POST /v1/verify HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n{" % (512 << 20))
        return s.recv(64).split(b" ")[1].decode(errors="replace")


def cache_filler(base: str, stop: threading.Event, seen: Counter, who: str) -> None:
    rnd = random.Random(who)
    with httpx.Client(base_url=base, timeout=60, headers={"x-client-id": who}) as http:
        while not stop.is_set():
            text = "".join(rnd.choices("abcdefgh ", k=rnd.randint(4_000, 64_000)))
            r = http.post("/v1/verify", json={"verifier": "think_format", "completion": f"<think>{text}</think>x"})
            seen[f"filler_{r.status_code}"] += 1


def run_code(base: str, stop: threading.Event, seen: Counter, who: str) -> None:
    programs = ["import time\ntime.sleep(2)", "print('x' * 200_000)"]
    with httpx.Client(base_url=base, timeout=120, headers={"x-client-id": who}) as http:
        while not stop.is_set():
            body = {"code": random.choice(programs), "language": "python", "run_timeout": 5}
            try:
                r = http.post("/run_code", json=body)
                try:
                    seen[f"run_code_{r.json()['status']}"] += 1
                except ValueError:  # named by what came back (it was a shutdown's plain-text 500: issue 40)
                    seen[f"run_code_not_json_{r.status_code}_{r.text[:40]!r}"] += 1
            except httpx.HTTPError as e:
                seen[f"run_code_error_{type(e).__name__}"] += 1


def polite(base: str, stop: threading.Event, lat: list[float]) -> None:
    with httpx.Client(base_url=base, timeout=60, headers={"x-client-id": "polite"}) as http:
        while not stop.is_set():
            t0 = time.monotonic()
            http.post("/v1/verify", json={"verifier": "think_format", "completion": "<think>a</think>b"})
            lat.append(time.monotonic() - t0)
            time.sleep(0.2)


def guarded(fn, args: tuple, stop: threading.Event, seen: Counter) -> None:
    """Run ``fn(*args)`` again whenever it fails, until ``stop``: one kind of traffic never dies quietly."""
    while not stop.is_set():
        try:
            fn(*args)
        except Exception as e:  # noqa: BLE001 - counted and retried
            seen[f"{fn.__name__}_failed_{type(e).__name__}"] += 1
            time.sleep(0.1)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--minutes", type=float, default=30)
    p.add_argument("--pool", type=int, default=2)
    p.add_argument("--cache-mb", type=int, default=64)
    p.add_argument("--every-s", type=float, default=5)
    a = p.parse_args()
    seen: Counter = Counter()
    lat: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["PYTHONUNBUFFERED"] = "1"
        proc, base = start(ROOT, a.pool, tmp, extra=["--cache-mb", str(a.cache_mb)])
        stop = threading.Event()
        jobs = [(endless_head, (base, stop, seen)), (endless_head, (base, stop, seen)),
                (hostile_http, (base, stop, seen)), (cache_filler, (base, stop, seen, "f1")),
                (cache_filler, (base, stop, seen, "f2")), (run_code, (base, stop, seen, "r1")),
                (run_code, (base, stop, seen, "r2")), (run_code, (base, stop, seen, "r3")),
                (polite, (base, stop, lat))]  # fmt: skip
        threads = [threading.Thread(target=guarded, args=(f, args, stop, seen), daemon=True) for f, args in jobs]
        for t in threads:
            t.start()
        samples: list[tuple[float, float]] = []
        t0 = time.monotonic()
        try:
            while time.monotonic() - t0 < a.minutes * 60:
                samples.append((time.monotonic() - t0, rss_mb(proc.pid)))
                time.sleep(a.every_s)
        finally:
            stop.set()
            proc.terminate()
            proc.wait(timeout=120)
    rss = [r for _, r in samples]
    tenth = max(1, len(rss) // 10)
    print(
        f"soak: {a.minutes:g} min, pool {a.pool}, --cache-mb {a.cache_mb}; {len(rss)} RSS samples every {a.every_s:g} s"
    )
    print(f"  server RSS MiB: min {min(rss):.0f} / median {statistics.median(rss):.0f} / max {max(rss):.0f}; "
          f"first tenth mean {statistics.mean(rss[:tenth]):.0f}, last tenth mean {statistics.mean(rss[-tenth:]):.0f}")  # fmt: skip
    print("  samples (s: MiB): " + ", ".join(f"{t:.0f}:{r:.0f}" for t, r in samples[:: max(1, len(samples) // 20)]))
    if lat:
        print(f"  polite think_format: {len(lat)} calls, p50 {statistics.median(lat) * 1e3:.1f} ms, "
              f"p99 {sorted(lat)[int(0.99 * (len(lat) - 1))] * 1e3:.1f} ms, max {max(lat) * 1e3:.1f} ms")  # fmt: skip
    print("  answers: " + ", ".join(f"{k} {v}" for k, v in sorted(seen.items())))


if __name__ == "__main__":
    main()
