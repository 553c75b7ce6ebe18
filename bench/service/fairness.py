"""Fairness between callers of one shared server (issue 30): a second caller's latency, quiet vs. while a
first caller floods /run_code with slow programs.

    flock /tmp/bench.lock .venv/bin/python -m bench.service.fairness [--rounds 3] [--flood 40] [--sleep-s 10]
        [--old-root /path/to/an/older/checkout]

Each round starts a fresh server (a pool of ``--pool`` sandboxes, HTTP on), measures caller B quiet
(``--cheap`` think_format /v1/verify calls, ``--sandboxed`` /run_code ``print`` calls, ``--asserts``
code-verifier assert jobs (issue 40: they waited for one of the flood's programs to end), sequential), then
starts caller A's flood (``--flood`` concurrent /run_code programs sleeping ``--sleep-s`` s, x-client-id
``flood``), waits until they are all queued, and measures B again (x-client-id ``other``). With
``--flood-lang c`` A's programs are C (each its own source) on the toolchain pool instead, and B's
``--compiled`` code-verifier C stdio jobs (each its own source: compiled every time) show whether B
waits for one of them to end (issue 40: the toolchain pool behind the turns). Rounds alternate
quiet/flood on the same server; the medians of each and of the per-round ratios are printed with the
spread and the 1-minute load. ``--old-root`` runs the same against another checkout (e.g. a worktree of the
commit before the fix), B's calls then capped at ``--cap-s``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
CHEAP = {"verifier": "think_format", "completion": "<think>a</think>b"}


def start(root: Path, pool: int, tmp: str, extra: list[str] | None = None) -> tuple[subprocess.Popen, str]:
    """A server process from the checkout at ``root`` (HTTP on); (process, its http://host:port)."""
    args = [sys.executable, "-m", "verifiers.fronts.server", "--port", "0", "--http-port", "0", "--pool-size", str(pool),
            "--registry", os.path.join(tmp, "r.sqlite"), "--grace-s", "1", *(extra or [])]  # fmt: skip
    proc = subprocess.Popen(args, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    base = ""
    for line in proc.stdout:
        if line.startswith("HTTP SERVING on "):
            base = "http://" + line.split()[-1]
        if line.startswith("SERVING on "):
            return proc, base
    raise RuntimeError(f"server in {root} exited before serving")


C_SLEEP = "#include <unistd.h>\nint main(void) { sleep(%d); return 0; } /* %d */\n"
C_JOB = {"verifier": "code", "options": {"mode": "stdio", "language": "c"}, "timeout_s": 120,
         "completion": "```c\n#include <stdio.h>\nint main(void) { int a, b; scanf(\"%d %d\", &a, &b); "
                       "printf(\"%d\\n\", a + b); return 0; }\n```",
         "reference": '[{"input": "1 2\\n", "output": "3\\n"}]'}  # fmt: skip
ASSERT_JOB = {"verifier": "code", "completion": "```python\ndef add(a, b):\n    return a + b\n```",
              "reference": "def check(candidate):\n    assert candidate(1, 2) == 3\n", "options": {"entry_point": "add"}}  # fmt: skip


def b_calls(
    http: httpx.Client, cheap: int, sandboxed: int, cap_s: float, asserts: int = 0, compiled: int = 0
) -> tuple[list[float], ...]:
    """Caller B: latencies (s) of sequential cheap, sandboxed, code-assert and C stdio calls (cap_s: timed out)."""
    out_cheap, out_sbx, out_assert, out_c = [], [], [], []
    for _ in range(compiled):
        job = dict(C_JOB, completion=C_JOB["completion"].replace("\n```", f" /* {time.time_ns()} */\n```"))
        t0 = time.monotonic()  # each its own source: compiled every time, never a cached verdict
        try:
            http.post("/v1/verify", json=job, headers={"x-client-id": "other"}, timeout=cap_s)
        except httpx.TimeoutException:
            pass
        out_c.append(time.monotonic() - t0)
    for _ in range(asserts):
        job = dict(ASSERT_JOB, completion=ASSERT_JOB["completion"].replace("\n```", f"  # {time.time_ns()}\n```"))
        t0 = time.monotonic()  # each job unique: the verdict cache never answers it
        try:
            http.post("/v1/verify", json=job, headers={"x-client-id": "other"}, timeout=cap_s)
        except httpx.TimeoutException:
            pass
        out_assert.append(time.monotonic() - t0)
    for _ in range(cheap):
        t0 = time.monotonic()
        try:
            http.post("/v1/verify", json=CHEAP, headers={"x-client-id": "other"}, timeout=cap_s)
        except httpx.TimeoutException:
            pass
        out_cheap.append(time.monotonic() - t0)
    body = {"code": "print('b')", "language": "python", "run_timeout": 10}
    for _ in range(sandboxed):
        t0 = time.monotonic()
        try:
            http.post("/run_code", json=body, headers={"x-client-id": "other"}, timeout=cap_s)
        except httpx.TimeoutException:
            pass
        out_sbx.append(time.monotonic() - t0)
    return out_cheap, out_sbx, out_assert, out_c


def flood(base: str, n: int, sleep_s: float, lang: str = "python") -> ThreadPoolExecutor:
    def one(i: int) -> None:
        if lang == "c":
            body = {"code": C_SLEEP % (round(sleep_s), i), "language": "c", "compile_timeout": 60,
                    "run_timeout": sleep_s + 5}  # fmt: skip
        else:
            body = {"code": f"import time\ntime.sleep({sleep_s})", "language": "python", "run_timeout": sleep_s + 5}
        with httpx.Client(base_url=base, timeout=None) as c:
            try:
                c.post("/run_code", json=body, headers={"x-client-id": "flood"})
            except httpx.HTTPError:
                pass  # the server went away at the end of the round

    ex = ThreadPoolExecutor(n)
    for i in range(n):
        ex.submit(one, i)
    return ex


def waiting(http: httpx.Client) -> float:
    m = http.get("/metrics").text
    keys = (
        'rlvr_queue_depth{class="sandbox_job"}',
        "rlvr_sandbox_pool_waiters",
        'rlvr_queue_depth{class="toolchain_job"}',
    )
    return sum(float(line.split()[-1]) for line in m.splitlines() if line.startswith(keys))


def one_round(root: Path, a: argparse.Namespace) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        proc, base = start(root, a.pool, tmp, ["--langs-pool-size", str(a.pool)])
        ex = None
        try:
            with httpx.Client(base_url=base) as http:
                b_calls(http, 3, 1, a.cap_s, 1, min(1, a.compiled))  # warm (the toolchain pool starts on first use)
                quiet = b_calls(http, a.cheap, a.sandboxed, a.cap_s, a.asserts, a.compiled)
                ex = flood(base, a.flood, a.sleep_s, a.flood_lang)
                until = time.monotonic() + 30
                while waiting(http) < min(a.flood - a.pool, 31) - 1 and time.monotonic() < until:
                    time.sleep(0.1)
                flooded = b_calls(http, a.cheap, a.sandboxed, a.cap_s, a.asserts, a.compiled)
        finally:
            proc.terminate()
            proc.wait(timeout=120)
            if ex is not None:
                ex.shutdown(wait=False, cancel_futures=True)
    return {"quiet": quiet, "flood": flooded, "load": os.getloadavg()[0]}


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def report(name: str, rounds: list[dict]) -> None:
    print(f"== {name}: {len(rounds)} rounds")
    kinds = ("cheap think_format /v1/verify", "sandboxed /run_code print", "code assert job /v1/verify",
             "code C stdio job /v1/verify")  # fmt: skip
    for i, kind in enumerate(kinds):
        if not rounds[0]["quiet"][i]:
            continue
        q50 = [statistics.median(r["quiet"][i]) for r in rounds]
        f50 = [statistics.median(r["flood"][i]) for r in rounds]
        f99 = [pct(r["flood"][i], 0.99) for r in rounds]
        ratios = [f / q for f, q in zip(f50, q50, strict=True)]
        print(f"  B {kind}: quiet p50 {statistics.median(q50) * 1e3:.1f} ms | under flood p50 "
              f"{statistics.median(f50) * 1e3:.1f} ms, p99 {statistics.median(f99) * 1e3:.1f} ms | ratio "
              f"{statistics.median(ratios):.2f} (spread {min(ratios):.2f}-{max(ratios):.2f})")  # fmt: skip
    loads = ", ".join(f"{r['load']:.2f}" for r in rounds)
    print(f"  load avg (1 min) per round: {loads}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--pool", type=int, default=2)
    p.add_argument("--flood", type=int, default=40)
    p.add_argument("--sleep-s", type=float, default=10.0)
    p.add_argument("--cheap", type=int, default=20)
    p.add_argument("--sandboxed", type=int, default=3)
    p.add_argument("--asserts", type=int, default=3, help="B's code-verifier assert jobs (issue 40's probe)")
    p.add_argument("--compiled", type=int, default=0, help="B's code-verifier C stdio jobs (the toolchain pool)")
    p.add_argument("--flood-lang", choices=("python", "c"), default="python", help="A's programs: which pool")
    p.add_argument("--cap-s", type=float, default=60.0)
    p.add_argument("--old-root", default="")
    p.add_argument("--old-rounds", type=int, default=0, help="rounds on --old-root (default: --rounds)")
    a = p.parse_args()
    print(
        f"flood: {a.flood} x /run_code {a.flood_lang} sleeping {a.sleep_s:g} s from one caller; pool {a.pool} "
        f"(toolchain pool {a.pool}); B: {a.cheap} cheap + {a.sandboxed} sandboxed + {a.asserts} code-assert + "
        f"{a.compiled} C stdio sequential calls; cap {a.cap_s:g} s"
    )
    ours = [one_round(ROOT, a) for _ in range(a.rounds)]
    report(f"this checkout ({ROOT})", ours)
    if a.old_root:
        old = [one_round(Path(a.old_root), a) for _ in range(a.old_rounds or a.rounds)]
        report(f"older checkout ({a.old_root})", old)


if __name__ == "__main__":
    main()
