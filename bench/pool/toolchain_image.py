"""The toolchain image's size and build time, two recipes side by side (issue 40: Kotlin and Racket added).

    git worktree add --detach /tmp/wt/langs-base <commit before the change>
    flock /tmp/bench.lock .venv/bin/python -m bench.pool.toolchain_image --before /tmp/wt/langs-base --log r.jsonl
    (once per round: each round builds both, A then B, ~10 min)
    .venv/bin/python -m bench.pool.toolchain_image --summary r.jsonl

Each build is **uncached for the toolchain layer**: the ``rootfs-langs-<hash>`` directory is removed
first, so ``apt-get`` downloads and installs every toolchain package again (from the Debian mirror: the
download is part of the figure, as in ``make setup``); the Python image's minbase root filesystem below
it is cached (``--cache``: a directory holding ``rootfs-<hash>``, shared by both recipes, whose
``sandbox/image/python.py`` is the same). Printed per build: the root filesystem step (apt, the Go warm cache,
for ``after`` Kotlin's install, the trim and the smoke test), the ``docker import`` step, the image
size Docker reports, and the root filesystem's size on disk. The image is built under a bench-only tag
and removed afterwards, with its root filesystem.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# run in the checkout under test (its sandbox package), with the bench's cache directory
BUILD = """
import json, shutil, subprocess, sys, time
from pathlib import Path
from sandbox.image import langs as L
from sandbox.image import python as base
base.CACHE = Path(sys.argv[1])
tag = sys.argv[2]
dest = base.CACHE / f"rootfs-langs-{L.rootfs_hash()}"
shutil.rmtree(dest, ignore_errors=True)
t0 = time.monotonic()
L.build_rootfs()
t1 = time.monotonic()
L.build(tag)
t2 = time.monotonic()
du = subprocess.run(["du", "-sxb", str(dest)], capture_output=True, text=True, check=True).stdout.split()[0]
size = subprocess.run(["docker", "image", "inspect", "-f", "{{.Size}}", tag], capture_output=True, text=True,
                      check=True).stdout.strip()
subprocess.run(["docker", "rmi", tag], capture_output=True, check=True)
shutil.rmtree(dest)
print(json.dumps({"rootfs_s": t1 - t0, "import_s": t2 - t1, "image_bytes": int(size), "rootfs_bytes": int(du)}))
"""


def build_once(checkout: Path, cache: Path, label: str) -> dict:
    tag = f"rlvr-bench-langs:{label}-{os.getpid()}"
    load = os.getloadavg()[0]
    r = subprocess.run(
        [sys.executable, "-c", BUILD, str(cache), tag],
        cwd=checkout,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(checkout)},
    )
    if r.returncode != 0:
        raise SystemExit(f"{label} build failed: {r.stderr[-2000:]}")
    return {"recipe": label, "load": load, **json.loads(r.stdout.strip().splitlines()[-1])}


def summary(rows: list[dict]) -> None:
    print(f"{len(rows) // 2} rounds; medians (min-max); sizes in MB (10^6 bytes)")
    print(f"{'recipe':<8}{'rootfs s':>18}{'import s':>16}{'total s':>18}{'image MB':>10}{'rootfs MB':>11}{'load':>6}")
    for label in ("before", "after"):
        rs = [r for r in rows if r["recipe"] == label]

        def col(f, rs=rs):
            v = [f(r) for r in rs]
            return f"{statistics.median(v):7.1f} ({min(v):.0f}-{max(v):.0f})"

        print(
            f"{label:<8}{col(lambda r: r['rootfs_s']):>18}{col(lambda r: r['import_s']):>16}"
            f"{col(lambda r: r['rootfs_s'] + r['import_s']):>18}{statistics.median(r['image_bytes'] for r in rs) / 1e6:>10.0f}"
            f"{statistics.median(r['rootfs_bytes'] for r in rs) / 1e6:>11.0f}{statistics.median(r['load'] for r in rs):>6.1f}"
        )
    pairs = zip([r for r in rows if r["recipe"] == "before"], [r for r in rows if r["recipe"] == "after"], strict=False)
    ratios = [(a["rootfs_s"] + a["import_s"]) / (b["rootfs_s"] + b["import_s"]) for a, b in pairs]
    print(f"build time before/after per round: {', '.join(f'{x:.2f}' for x in ratios)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, help="a checkout of the recipe before the change")
    ap.add_argument("--cache", type=Path, default=REPO / "var" / "cache", help="holds the minbase rootfs-<hash>")
    ap.add_argument("--log", type=Path, help="append each build's figures (JSON lines)")
    ap.add_argument("--summary", type=Path, help="print the medians of a log and exit")
    args = ap.parse_args()
    if args.summary:
        summary([json.loads(line) for line in args.summary.read_text().splitlines() if line.strip()])
        return
    if not args.before or not args.log:
        ap.error("--before and --log are needed to build")
    if not shutil.which("docker"):
        raise SystemExit("docker not found: the bench builds real images")
    for label, checkout in (("before", args.before), ("after", REPO)):
        t0 = time.monotonic()
        row = build_once(checkout.resolve(), args.cache.resolve(), label)
        print(json.dumps(row), f"({time.monotonic() - t0:.0f} s)", flush=True)
        with args.log.open("a") as f:
            f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
