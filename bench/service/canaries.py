"""The canary report (issue 37): ``python -m verifiers.canaries`` against our service and a weak grader.

    .venv/bin/python -m bench.service.canaries [--out bench/results/canaries.txt]

Starts a local service (pool of 2, default settings) and runs the CLI three times, printing each command,
its exit code and its output: our service with its default verifier per kind (math, code, think_format),
``r1`` on the math canaries, and a plain substring match (``tests.verifiers.client.test_canaries:substring_score``, verl's
``compute_score`` signature). A report of what is paid, not a timing: wall times include queueing on a
shared machine (and the r1 run reuses the service's cached math verdicts).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from verifiers.canaries import load_canaries
from verifiers.launch import LocalServer

ROOT = str(Path(__file__).resolve().parents[2])


def cli(args: list[str], label: str) -> str:
    t = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "verifiers.canaries", *args], cwd=ROOT, capture_output=True, text=True)
    head = f"$ python -m verifiers.canaries {' '.join(args)}    # {label}\n"
    head += f"# exit code {p.returncode}, {time.monotonic() - t:.0f} s wall, load average {os.getloadavg()[0]:.1f}\n"
    return head + p.stdout + p.stderr + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="also write the report here")
    a = ap.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    canaries = load_canaries()
    parts = [
        f"Canary report (bench/service/canaries.py), commit {commit.stdout.strip()}, "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC: {len(canaries)} canaries in "
        f"{len({c.family for c in canaries})} families. Paid = a reward above the canary's control (a plainly "
        "wrong answer in the same format).\nWall times include queueing on a shared 2-core machine: not a "
        "figure of any grader's speed.\n\n"
    ]
    with LocalServer(pool_size=2, log_path=os.path.join(ROOT, "var", "tmp", "bench-canaries.log")) as srv:
        parts.append(cli([srv.target], "our gRPC service, default settings (math, code, think_format)"))
        parts.append(cli([srv.target, "--verifier", "r1", "--kinds", "math"], "r1 = 0.9 math + 0.1 think_format"))
    parts.append(
        cli(
            ["tests.verifiers.client.test_canaries:substring_score", "--show", "5"],
            "a plain substring match (verl signature)",
        )
    )
    report = "".join(parts)
    print(report, end="")
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            f.write(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
