"""The sandbox half of the ``math`` verifier, run over every case we have, to compare two versions of it.

    PYTHONPATH=<tree A> .venv/bin/python -m bench.math_grading.verdicts --out /tmp/a.json
    PYTHONPATH=<tree B> .venv/bin/python -m bench.math_grading.verdicts --out /tmp/b.json
    .venv/bin/python -m bench.math_grading.verdicts --diff /tmp/a.json /tmp/b.json

A speed change to the grader must leave every verdict as it was. This grades the cases of
tests/data/mv_suite.tsv (with ``fallback = full``, as bench/math_grading/speed.py sends them), tests/data/mv_differential.tsv,
the math batteries (tests/data/math_battery.py, with their forms and answers halves) and bench/math_grading/speed.py's mix
(seeds 0-9) with the grader of whichever tree is first on PYTHONPATH: the final answer extracted as the
service does (in_sandbox/answer.py), the items sent to ``grader.main`` in jobs of 32, each job forked from a
process that ran the kind's warm-up, as a sandbox worker does. It runs on the host only because its inputs
are this repository's own test tables, never model output. ``--diff`` prints each case whose line differs
(a ``timeout`` on either side is listed apart: it depends on the machine's load, not on the rules).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "tests" / "data"


def cases() -> list[tuple[str, str, str, dict]]:
    """(name, reference, completion, options) of every table."""
    from bench.math_grading.agreement import read_tsv
    from bench.math_grading.speed import pairs
    from tests.data.math_battery import CASES

    out = [(f"mv_suite.tsv:{c['line']}", c["gold"], c["pred"], {"fallback": "full"}) for c in read_tsv()]
    for n, line in enumerate((DATA / "mv_differential.tsv").read_text().splitlines(), 1):
        if line and not line.startswith("#"):
            key, ref, completion, *rest = line.split("\t")
            opts = json.loads(rest[0]) if len(rest) > 1 and rest[0].startswith("{") else {}
            out.append((f"mv_differential.tsv:{n}", ref, completion, opts))
    out += [(f"battery:{fam}:{i}", g, c, o) for i, (fam, g, c, o, _, _) in enumerate(CASES)]
    for seed in range(10):
        out += [
            (f"mix:{seed}:{i}", g, f"The answer is $\\boxed{{{a}}}$.", {}) for i, (_, g, a) in enumerate(pairs(seed))
        ]
    return out


def payloads(table: list[tuple[str, str, str, dict]]) -> list[tuple[str, dict | None]]:
    """(name, the item the service would send to the sandbox, or None where the host decides alone)."""
    from in_sandbox.answer import extract

    out = []
    for name, ref, completion, opts in table:
        ext = extract(completion, opts.get("fallback", "none"))
        if ext is None or ext.sprayed or ext.hedge:
            out.append((name, None))
            continue
        rel_tol = float(opts["rel_tol"]) if opts.get("rel_tol") else None
        item = {"gold": ref, "preds": ext.answers, "mode": "full" if ext.source == "full" else "answer",
                "rel_tol": rel_tol, "together": ext.together, "timeout": 10, "left": 600}  # fmt: skip
        out.append((name, item))
    return out


def grade_all(items: list[dict], jobs_of: int = 32) -> list[dict]:
    """Each job of ``jobs_of`` items through ``grader.main`` in a child forked from the warm process."""
    from verifiers.kinds.math.verifier import MATH_WARMUP

    exec(MATH_WARMUP, {"__name__": "__warmup__"})
    from in_sandbox.math import grader

    lines: list[dict] = []
    for k in range(0, len(items), jobs_of):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the job
            os.close(r)
            sys.stdin, out = io.StringIO(json.dumps({"items": items[k : k + jobs_of]})), io.StringIO()
            sys.stdout = out
            try:
                grader.main()
            finally:
                os.write(w, out.getvalue().encode())
                os._exit(0)
        os.close(w)
        with os.fdopen(r, "rb") as f:
            got = [json.loads(x) for x in f.read().decode().splitlines()]
        os.waitpid(pid, 0)
        lines += got
    return lines


def diff(a_path: Path, b_path: Path) -> int:
    a, b = json.loads(a_path.read_text()), json.loads(b_path.read_text())
    assert a.keys() == b.keys(), "the two runs graded different cases"
    same = slow = 0
    for name in a:
        x, y = a[name], b[name]
        if x == y:
            same += 1
        elif "timeout" in (x or {}) or "timeout" in (y or {}):
            slow += 1
            print(f"timeout on one side (load, not rules): {name}: {x} | {y}")
        else:
            print(f"DIFFERS {name}: {x} | {y}")
    print(f"{same}/{len(a)} identical, {slow} with a timeout on one side, {len(a) - same - slow} differ")
    return 0 if same + slow == len(a) else 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, help="write {case: the grader's line} here")
    ap.add_argument("--diff", type=Path, nargs=2, metavar=("A", "B"))
    args = ap.parse_args()
    if args.diff:
        sys.exit(diff(*args.diff))
    if not args.out:
        ap.error("give --out FILE (or --diff A B)")
    sys.setrecursionlimit(10_000)
    named = payloads(cases())
    lines = iter(grade_all([p for _, p in named if p is not None]))
    result = {}
    for name, p in named:
        line = next(lines) if p is not None else None
        result[name] = line and {k: v for k, v in line.items() if k != "i"}
    args.out.write_text(json.dumps(result, indent=0, sort_keys=True))
    print(f"{len(result)} cases, {sum(p is not None for _, p in named)} graded by the sandbox half; wrote {args.out}")


if __name__ == "__main__":
    main()
