"""docs/sandbox.md's backend table, from the security battery's last results (not asserted by hand).

The battery's conftest records each test's outcome per backend in var/log/battery.json; this prints,
per backend, the counts and one cell per protection: "yes" when every attack on it was contained,
"GAP" when one is a documented gap here (an xfail: the attack worked, as documented; or, for the
non-strict CPU row, an xpass that host load hid), "no" when an attack got through unexpectedly, "-" when not run (skipped).

    .venv/bin/python -m pytest -q tests/security/test_battery_*.py && .venv/bin/python -m tests.security.table
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[2] / "var" / "log" / "battery.json"
# protection -> the battery tests (by name fragment) whose attacks it stops
PROTECTIONS = {
    "network": ["no_network"],
    "file system": [
        "nothing_outside_the_scratch",
        "host_files_and_the_docker_socket",
        "filling_the_disk",
        "one_file_cannot_exceed",
        "deep_directory_tree",
    ],
    "users": ["not_root_and_no_way_back", "two_concurrent_jobs", "services_environment", "workers_channel"],
    "capabilities": ["not_root_and_no_way_back", "kill_minus_one"],
    "seccomp": ["not_root_and_no_way_back"],
    "pids": ["fork_bomb", "endless_fork_loop"],
    "memory": ["memory_bomb"],
    "CPU": ["cpu_loop", "cpu_quota", "sleeping_forever"],
    "output": ["runaway_output"],
    "persistence": ["do_not_persist", "no_process_survives", "finds_nothing_of_an_earlier", "closing_a_pool_leaves"],
}


def cell(outcomes: list[str]) -> str:
    if not outcomes or all(o == "skipped" for o in outcomes):
        return "-"
    if "failed" in outcomes:
        return "no"
    return "GAP" if {"xfailed", "xpassed"} & set(outcomes) else "yes"  # xpassed: a non-strict gap load hid


def render(results: dict[str, str]) -> str:
    per: dict[str, dict[str, str]] = {}
    for nodeid, outcome in results.items():
        name, _, backend = nodeid.rpartition("::")[2].partition("[")
        per.setdefault(backend.rstrip("]"), {})[name] = outcome
    rows = ["| backend | " + " | ".join(PROTECTIONS) + " | battery |", "|---" * (len(PROTECTIONS) + 2) + "|"]
    for backend in ("docker", "podman", "bwrap"):
        tests = per.get(backend, {})
        cells = [cell([o for t, o in tests.items() if any(f in t for f in frags)]) for frags in PROTECTIONS.values()]
        counts = Counter(tests.values())
        summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
        rows.append(f"| {backend} | " + " | ".join(cells) + f" | {summary or 'not run'} |")
    return "\n".join(rows)


def main() -> int:
    if {"-h", "--help"} & set(sys.argv[1:]):
        print(__doc__)
        return 0
    if not RESULTS.exists():
        print(f"no battery results at {RESULTS}: run the battery first", file=sys.stderr)
        return 1
    print(render(json.loads(RESULTS.read_text())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
