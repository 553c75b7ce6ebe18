"""What the math lane costs and saves, before/after in one sitting: a server from this tree and one from another
checkout (``--before``: e.g. ``git worktree add /tmp/before <commit>``), in rounds whose order alternates (ABBA).

    flock /tmp/bench.lock .venv/bin/python -m bench.service.math_lane --before /tmp/before [--rounds 4] [--out FILE]

Each round starts a server (``--pool`` sandboxes, one burst sandbox per lane), then:

* ``code``: ``--code`` assert-mode Python requests, one at a time (a service that grades no math), then the CPU
  its sandbox containers used since they started (docker's cpuacct cgroup of each: start, warm-up and jobs);
* ``first math``: one math request's wall time (on the after side it starts the math lane);
* ``math``: ``--groups`` VerifyBatch calls of G=8 varied pairs each, one at a time (a training step's groups),
  their wall time, every verdict compared with the other side's;

and the containers' CPU once more, and the memory they hold then (docker stats). Printed: each round's figures, then
each side's median per figure.
"""

from __future__ import annotations

import argparse
import glob
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.code_grading.before_after import server
from verifiers.client import VerifierClient

PAIRS = [  # (gold, answer): equal and unequal, the answer shapes a policy writes
    ("\\frac{1}{2}", "0.5"), ("2\\sqrt{3}", "\\sqrt{12}"), ("x^2+2x+1", "(x+1)^2"), ("(1,2)", "(1, 2)"),
    ("[0,1)", "[0, 1)"), ("\\{1,2,3\\}", "\\{3,2,1\\}"), ("y=2x+1", "y = 1 + 2x"), ("\\pi/3", "60^\\circ"),
    ("x^2+3x+2", "(x+1)(x+3)"), ("\\frac{2}{3}", "0.67"), ("[-2, 3)", "(-2, 3]"), ("e^{2}", "e^2"),
    ("\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}", "\\begin{bmatrix}1&2\\\\3&4\\end{bmatrix}"), ("50\\%", "0.5"),
    ("\\log_2 8", "3"), ("1 < x < 2", "(1,2)"),
]  # fmt: skip


def container_cpu_s(pid: int) -> tuple[int, float]:
    """(containers, CPU seconds they used) of the server ``pid``'s sandboxes (cgroup v1 cpuacct)."""
    from sandbox.backends.docker import list_containers

    ids = [c[0] for c in list_containers(f"{socket.gethostname()}:{pid}")]
    total = 0
    for short in ids:
        for path in glob.glob(f"/sys/fs/cgroup/cpuacct/docker/{short}*/cpuacct.usage"):
            total += int(Path(path).read_text())
    return len(ids), total / 1e9


def container_mem_mb(pid: int) -> float:
    """The memory the server ``pid``'s sandbox containers use now (docker stats), MiB in all."""
    from sandbox.backends.docker import list_containers

    ids = [c[0] for c in list_containers(f"{socket.gethostname()}:{pid}")]
    out = subprocess.run(
        ["docker", "stats", "--no-stream", "--format", "{{.MemUsage}}", *ids], capture_output=True, text=True
    ).stdout
    units = {"KiB": 1 / 1024, "MiB": 1.0, "GiB": 1024.0}
    total = 0.0
    for line in out.splitlines():
        used = line.split("/")[0].strip()
        total += float(used[:-3]) * units[used[-3:]]
    return total


def one_round(tree: Path | None, args, tag: str, log: str) -> tuple[dict, list]:
    t0 = time.perf_counter()
    srv = server(tree, args.pool, 1, log).start()
    out: dict = {"start_s": time.perf_counter() - t0}
    try:
        with VerifierClient(srv.target, timeout_s=300) as c:
            for i in range(args.code):
                body = f"```python\n# {tag} {i}\ndef f(x):\n    return x + {i}\n```"
                assert c.verify("code", body, f"assert f(1) == {1 + i}").outcome == "CORRECT"
            out["code_containers"], out["code_cpu_s"] = container_cpu_s(srv.proc.pid)
            t1 = time.perf_counter()
            first = c.verify("math", f"{tag}: \\boxed{{\\frac{{3}}{{4}}}}", "0.75")
            out["first_math_s"] = time.perf_counter() - t1
            assert first.outcome == "CORRECT", first.detail
            groups = [
                [{"verifier": "math", "completion": f"{tag} {g} {k}: \\boxed{{{a}}}", "reference": gold}
                 for k, (gold, a) in enumerate(PAIRS[(g * 8 + j) % len(PAIRS)] for j in range(8))]
                for g in range(args.groups)
            ]  # fmt: skip
            t2 = time.perf_counter()
            verdicts = [(r.outcome, r.reward) for grp in groups for r in c.verify_batch(grp)]
            out["math_s"] = time.perf_counter() - t2
            out["all_containers"], out["all_cpu_s"] = container_cpu_s(srv.proc.pid)
            out["all_mem_mb"] = container_mem_mb(srv.proc.pid)
    finally:
        srv.stop()
    return out, verdicts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, required=True, help="the other checkout's root")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--pool", type=int, default=2)
    ap.add_argument("--code", type=int, default=16)
    ap.add_argument("--groups", type=int, default=8)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    lines: list[str] = []

    def say(s: str) -> None:
        print(s, flush=True)
        lines.append(s)

    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    base = subprocess.run(
        ["git", "-C", str(args.before), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    say(f"# bench.service.math_lane: before {base} ({args.before}), after {head}; pool {args.pool}, {time.ctime()}")
    figures = {"before": [], "after": []}
    verdicts: dict[str, list] = {}
    for r in range(args.rounds):
        order = ("before", "after") if r % 2 == 0 else ("after", "before")
        for side in order:
            tree = args.before if side == "before" else None
            got, v = one_round(tree, args, f"r{r}", f"/tmp/math_lane_{side}.log")
            figures[side].append(got)
            verdicts.setdefault(side, v)
            if v != verdicts[side]:
                say(f"  {side} round {r}: verdicts differ from its first round")
            load = Path("/proc/loadavg").read_text().split()[0]
            say(f"round {r} {side:6s} " + " ".join(f"{k} {x:.2f}" for k, x in got.items()) + f" load {load}")
    diff = sum(a != b for a, b in zip(verdicts["before"], verdicts["after"], strict=True))
    say(f"verdicts: {len(verdicts['after'])} math items per side, {diff} differ between the sides")
    for key in figures["after"][0]:
        b = statistics.median(f[key] for f in figures["before"])
        a = statistics.median(f[key] for f in figures["after"])
        say(f"median {key:15s} before {b:8.2f}  after {a:8.2f}")
    if args.out:
        with args.out.open("a") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
