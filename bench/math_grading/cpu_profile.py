"""Where the sandbox half of the ``math`` verifier spends its time on Math-Verify's own test cases.

    PYTHONPATH=<tree> .venv/bin/python -m bench.math_grading.cpu_profile [--top 25] [--no-profile] [--cache-parses]

The suite's items (tests/data/mv_suite.tsv as bench/math_grading/speed.py sends them: ``fallback = full``, the final
answer extracted on the host) are graded with the tree's grader in jobs of 32, each job a child forked
from a process that ran the kind's warm-up, as in a sandbox worker (a job's caches die with it). Printed:
CPU ms per pair, the LaTeX parser's DFA misses (prediction states a job had to build: ANTLR's
``computeTargetState``, ~2 ms each), and with cProfile on, the top entries by cumulative time over all jobs.
It runs on the host only because its inputs are this repository's test table, never model output; with
cProfile on, the pure-Python parser looks slower than it is (compare entries with each other, not with
bench/math_grading/speed.py's figures). ``--cache-parses``: every LaTeX parse (latex2sympy's ``parse``: ANTLR and the tree's
conversion to sympy) is made once before the jobs and handed to them from a table, sympy's cache then cleared
and the warm-up run again, so what is printed is a pair's cost outside the parser.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import sys
import tempfile
import time


def suite_payloads() -> list[dict]:
    from bench.math_grading.speed import suite_items
    from in_sandbox.answer import extract

    out = []
    for it in suite_items(0, 0):
        ext = extract(it["req"]["completion"], "full")
        if ext is not None:
            out.append(
                {
                    "gold": it["req"]["reference"],
                    "preds": ext.answers,
                    "together": ext.together,
                    "mode": "full" if ext.source == "full" else "answer",
                    "rel_tol": None,
                }
            )
    return out


def cache_parses(items: list[dict], grader) -> None:
    """Grade every item once, keeping each LaTeX parse (its value or its exception) in a table that later
    parses read; then clear sympy's cache and Math-Verify's parse cache, and run the warm-up again."""
    import sympy
    from latex2sympy2_extended import latex2sympy2
    from math_verify.parser import parse_latex_cached

    from in_sandbox.math import warm

    l2s, table = latex2sympy2._Latex2Sympy, {}
    parse = l2s.parse

    def from_table(self, latex_str):
        key = (latex_str, self.is_real, self.convert_degrees, repr(self.config), repr(self.var))
        if key not in table:
            try:
                table[key] = (True, parse(self, latex_str))
            except Exception as e:  # noqa: BLE001 (kept to be raised again, as the parse did)
                table[key] = (False, e)
        ok, value = table[key]
        if not ok:
            raise value
        return value

    l2s.parse = from_table
    for it in items:
        try:
            grader.grade(it, {})
        except Exception:  # noqa: BLE001
            pass
    parse_latex_cached.cache_clear()
    sympy.core.cache.clear_cache()
    warm.warm_up()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--no-profile", action="store_true", help="only CPU time and DFA misses")
    ap.add_argument("--cache-parses", action="store_true", help="parses served from a table: the cost outside them")
    args = ap.parse_args()
    sys.setrecursionlimit(10_000)
    from antlr4.atn.ParserATNSimulator import ParserATNSimulator

    from verifiers.kinds.math.verifier import MATH_WARMUP

    t = time.perf_counter()
    exec(MATH_WARMUP, {"__name__": "__warmup__"})
    warm_s = time.perf_counter() - t
    from in_sandbox.math import grader

    misses = [0]
    build = ParserATNSimulator.computeTargetState

    def counted(self, *a):
        misses[0] += 1
        return build(self, *a)

    ParserATNSimulator.computeTargetState = counted
    items, cpu, missed, stats = suite_payloads(), 0.0, 0, tempfile.mkdtemp()
    if args.cache_parses:
        cache_parses(items, grader)
    for k in range(0, len(items), 32):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the job
            os.close(r)
            prof = None if args.no_profile else cProfile.Profile()
            misses[0], t = 0, time.process_time()
            if prof:
                prof.enable()
            for it in items[k : k + 32]:
                try:
                    grader.grade(it, {})
                except Exception:
                    pass
            if prof:
                prof.disable()
                prof.dump_stats(f"{stats}/{k}.prof")
            os.write(w, json.dumps([time.process_time() - t, misses[0]]).encode())
            os._exit(0)
        os.close(w)
        with os.fdopen(r, "rb") as f:
            job_cpu, job_misses = json.loads(f.read())
        os.waitpid(pid, 0)
        cpu, missed = cpu + job_cpu, missed + job_misses
    n = len(items)
    note = (" (under cProfile)" if not args.no_profile else "") + (
        " (parses from a table)" if args.cache_parses else ""
    )
    print(
        f"{n} pairs in jobs of 32: CPU {1000 * cpu / n:.2f} ms/pair{note}, "
        f"DFA misses {missed} ({missed / n:.1f}/pair); warm-up {warm_s:.2f} s; load {os.getloadavg()[0]:.2f}"
    )
    if not args.no_profile:
        st = pstats.Stats(*[f"{stats}/{f}" for f in sorted(os.listdir(stats))], stream=sys.stdout)
        st.strip_dirs().sort_stats("cumulative").print_stats(args.top)


if __name__ == "__main__":
    main()
