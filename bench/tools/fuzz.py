"""The fuzz and property tests with many more examples than ``make test`` runs.

    .venv/bin/python -m bench.tools.fuzz [--examples 1000] [--properties 300]

Runs ``tests/verifiers/fronts/test_fuzz.py`` (hostile gRPC requests against a real server; ``make test``: 60 examples
per test) with RLVR_FUZZ_EXAMPLES and ``tests/verifiers/kinds/math/test_math_properties.py`` (whitespace reformatting and
parts of references; ``make test``: 25) with RLVR_PROPERTY_EXAMPLES, prints hypothesis' statistics
(outcomes and statuses seen) and the time taken, and exits non-zero when a property fails. This is a
search for bugs, not a timing: the time is printed only to size the next run.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=int, default=1000, help="fuzzed requests (and batches) per test")
    ap.add_argument("--properties", type=int, default=300, help="examples per math property")
    args = ap.parse_args()
    env = {**os.environ, "RLVR_FUZZ_EXAMPLES": str(args.examples), "RLVR_PROPERTY_EXAMPLES": str(args.properties)}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--hypothesis-show-statistics",
           "tests/verifiers/fronts/test_fuzz.py", "tests/verifiers/kinds/math/test_math_properties.py"]  # fmt: skip
    print(f"== {' '.join(cmd[2:])}  (RLVR_FUZZ_EXAMPLES={args.examples}, RLVR_PROPERTY_EXAMPLES={args.properties})")
    t0 = time.perf_counter()
    rc = subprocess.run(cmd, cwd=ROOT, env=env).returncode
    print(
        f"== {'all properties held' if rc == 0 else f'FAILED (pytest exit {rc})'} in {time.perf_counter() - t0:.0f} s"
    )
    return rc


if __name__ == "__main__":
    sys.exit(main())
