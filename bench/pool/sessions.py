"""Sessions (docs/sessions.md) against what a user would do instead, on the same machine, in one run.

    flock /tmp/bench.lock .venv/bin/python -m bench.pool.sessions [--rounds 3] [--opens 10] [--cells 40] [--backend docker]

Per round:
  cell     the trivial cell (``x = 1`` once, then ``x + 1``: the value comes back) three ways in turn, cell by
           cell, so a load that changes during the run weighs on all three alike: ours (one session held
           open, through the real service: gRPC client, one server for the run), a Jupyter kernel held open
           (jupyter_client's ``BlockingKernelClient.execute_interactive``, its execute_result read), and a
           fresh ``/usr/bin/python3 -c`` (no state kept: each cell re-runs the assignment);
  ours     open from the warm pool (each open followed by a close and a pause that lets the pool refill its
           lane), the first cells of the session just opened (``cell new``), fork to 8, close; and opening 8
           sessions back to back (what fork to 8 replaces);
  jupyter  an IPython kernel through jupyter_client (``KernelManager``): start (open), shutdown (close).
The same cells everywhere. Printed: p50 and p99 of each step per round, the medians over rounds, the
median of the per-round ratios, and the 1-minute load with each round. Needs ``pip install ipykernel
jupyter_client`` (pyproject's bench extra).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from verifiers.client import VerifierClient
from verifiers.launch import LocalServer

SETUP, CELL = "x = 1", "x + 1"
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))] * 1000


def timed(fn, *a, **kw):
    t = time.perf_counter()
    out = fn(*a, **kw)
    return time.perf_counter() - t, out


def ours(c: VerifierClient, opens: int, cells: int, refill_s: float) -> dict[str, list[float]]:
    r: dict[str, list[float]] = {"open": [], "cell new": [], "fork8": [], "close": [], "open8": []}
    for _ in range(opens):
        dt, s = timed(c.open_session, "python")
        r["open"].append(dt)
        c.exec(s.id, SETUP)
        for _ in range(cells // opens):
            dt, out = timed(c.exec, s.id, CELL)
            assert out.value == "2", out
            r["cell new"].append(dt)
        dt, forks = timed(c.fork_session, s.id, 8)
        r["fork8"].append(dt)
        assert c.exec(forks[-1].id, CELL).value == "2"
        for x in [s, *forks]:
            r["close"].append(timed(c.close_session, x.id)[0])
        time.sleep(refill_s)  # the pool starts a fresh sandbox for the one taken: the next open is warm again
    for _ in range(2):
        dt, eight = timed(lambda: [c.open_session("python") for _ in range(8)])
        r["open8"].append(dt)
        for x in eight:
            c.close_session(x.id)
        time.sleep(refill_s * 4)
    return r


def jupyter(opens: int) -> dict[str, list[float]]:
    from jupyter_client.manager import KernelManager

    r: dict[str, list[float]] = {"open": [], "close": []}
    for _ in range(opens):
        km = KernelManager(kernel_name="python3")
        t = time.perf_counter()
        km.start_kernel()
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=60)
        r["open"].append(time.perf_counter() - t)
        kc.execute_interactive(SETUP, timeout=30)
        t = time.perf_counter()
        kc.stop_channels()
        km.shutdown_kernel(now=False)
        r["close"].append(time.perf_counter() - t)
    return r


def paired(c: VerifierClient, cells: int) -> dict[str, dict[str, list[float]]]:
    """The trivial cell three ways in turn, cell by cell (ours, Jupyter's, ``python3 -c``): one session and one
    kernel held open, so a load that changes during the run weighs on all three alike."""
    from jupyter_client.manager import KernelManager

    km = KernelManager(kernel_name="python3")
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    s = c.open_session("python")
    r: dict[str, list[float]] = {"ours": [], "jupyter": [], "python -c": []}
    try:
        c.exec(s.id, SETUP)
        kc.execute_interactive(SETUP, timeout=30)
        for _ in range(cells):
            dt, out = timed(c.exec, s.id, CELL)
            assert out.value == "2", out
            r["ours"].append(dt)
            got: list[str] = []

            def hook(msg, got=got):
                if msg["msg_type"] == "execute_result":
                    got.append(msg["content"]["data"]["text/plain"])

            dt, _ = timed(kc.execute_interactive, CELL, output_hook=hook, timeout=30)
            assert got == ["2"], got
            r["jupyter"].append(dt)
            r["python -c"] += fresh_python(1)["cell"]
    finally:
        c.close_session(s.id)
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return {who: {"cell": xs} for who, xs in r.items()}


def fresh_python(cells: int) -> dict[str, list[float]]:
    r: dict[str, list[float]] = {"cell": []}
    for _ in range(cells):
        dt, out = timed(subprocess.run, [PYTHON, "-c", f"{SETUP}\nprint({CELL})"], capture_output=True, text=True)
        assert out.stdout == "2\n", out
        r["cell"].append(dt)
    return r


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--opens", type=int, default=10)
    p.add_argument("--cells", type=int, default=40)
    p.add_argument("--pool", type=int, default=2)
    p.add_argument("--refill-s", type=float, default=1.5)
    p.add_argument("--backend", default="docker", help="the service's sandbox backend (docker, podman, bwrap)")
    p.add_argument(
        "--cgroup-parent",
        default="/",
        help="the service's --cgroup-parent (docker; '' for Docker's"
        " own /docker group, which competes for CPU as one task against the host's: docs/sandbox.md)",
    )
    a = p.parse_args()
    runs: list[dict[str, dict[str, list[float]]]] = []
    with (
        tempfile.TemporaryDirectory() as tmp,
        LocalServer(
            pool_size=a.pool,
            registry=os.path.join(tmp, "r.sqlite"),
            log_path=os.path.join(tmp, "server.log"),
            extra_args=["--backend", a.backend, *(["--cgroup-parent", a.cgroup_parent] if a.cgroup_parent else [])],
        ) as srv,
        VerifierClient(srv.target, timeout_s=120, client_id="bench") as c,
    ):
        ours(c, 2, 4, a.refill_s)  # warm the client's channel and the server's code paths
        for i in range(a.rounds):
            load = os.getloadavg()[0]
            cells = paired(c, a.cells)
            rnd = {
                "ours": {**cells["ours"], **ours(c, a.opens, a.cells, a.refill_s)},
                "jupyter": {**cells["jupyter"], **jupyter(max(2, a.opens // 3))},
                "python -c": cells["python -c"],
            }
            runs.append(rnd)
            print(f"round {i + 1} (load {load:.2f})")
            for who, steps in rnd.items():
                print("  " + who.ljust(10) + "  ".join(f"{k} p50 {pct(v, .5):8.2f} p99 {pct(v, .99):8.2f} ms"
                                                       for k, v in steps.items()))  # fmt: skip
    print(f"\nmedians over {a.rounds} rounds (p50 of each round; ms):")
    for who in runs[0]:
        print("  " + who.ljust(10) + "  ".join(
            f"{k} {statistics.median(pct(r[who][k], .5) for r in runs):8.2f} (p99 "
            f"{statistics.median(pct(r[who][k], .99) for r in runs):.2f})" for k in runs[0][who]))  # fmt: skip
    ratio = [pct(r["jupyter"]["cell"], 0.5) / pct(r["ours"]["cell"], 0.5) for r in runs]
    ratio_py = [pct(r["python -c"]["cell"], 0.5) / pct(r["ours"]["cell"], 0.5) for r in runs]
    fork = [pct(r["ours"]["open8"], 0.5) / pct(r["ours"]["fork8"], 0.5) for r in runs]
    print(
        f"trivial cell: Jupyter / ours {statistics.median(ratio):.2f}x (rounds {', '.join(f'{x:.2f}' for x in ratio)});"
        f" python -c / ours {statistics.median(ratio_py):.2f}x (rounds {', '.join(f'{x:.2f}' for x in ratio_py)})"
    )
    print(
        f"fork to 8 vs opening 8: {statistics.median(fork):.2f}x cheaper (rounds {', '.join(f'{x:.2f}' for x in fork)})"
    )


if __name__ == "__main__":
    main()
