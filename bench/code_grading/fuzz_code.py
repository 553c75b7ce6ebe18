"""The ``code`` verifier's mutation fuzzer, run long (issue 36): tests/attacks/code_ops.py's operators on
every HumanEval canonical solution and the battery's seeds, graded through a real service.

    .venv/bin/python -m bench.code_grading.fuzz_code [--n 2000] [--seed 1] [--out bench/results/fuzz_code.txt]
    .venv/bin/python -m bench.code_grading.fuzz_code --langs 300 --shapes [--seed 49] --out bench/results/fuzz_code_langs.txt

``--langs N`` (issue 49) grades N mutants of tests/attacks/code_lang_ops.py (assert mode beyond Python, one
or two attack families each) twice: as a trainer sends them (every one must be refused or unpaid) and opted
in with ``allow_shared_program=true`` (what the refusal keeps out: how many the shared program pays; each
such verdict must carry ``code.shared_program``). ``--shapes`` grades every seed's tests in each dataset
shape (pytest, unittest, ``__main__`` guard) with the correct program and a broken one (never paid).

The invariant is the CI test's (tests/attacks/test_code_mutations.py): a mutant is never paid more than
its seed, and one whose function under test is broken is paid 0. Prints the mutants per operator, the
outcomes, the rate, and every violation (seed, operators, verdict, the program's tail); writes the same
report to ``--out``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path


def main() -> None:
    from tests.attacks.code_ops import battery_seeds, humaneval_seeds, mutants, violations
    from verifiers.client import VerifierClient
    from verifiers.launch import LocalServer

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--batch", type=int, default=200)
    ap.add_argument("--out", default="bench/results/fuzz_code.txt")
    ap.add_argument("--langs", type=int, default=0, help="language mutants instead of the Python operators")
    ap.add_argument("--shapes", action="store_true", help="and Python tests in every dataset shape")
    args = ap.parse_args()
    if args.langs or args.shapes:
        from bench.code_grading.fuzz_code_langs import run

        text = run(args.langs, args.shapes, args.seed)
        print(text)
        Path(args.out).write_text(text)
        return
    seeds = battery_seeds() + humaneval_seeds()
    muts = mutants(seeds, args.n, args.seed)
    outcomes: Counter = Counter()
    found, counts = [], Counter()
    with LocalServer(pool_size=2) as srv, VerifierClient(srv.target, timeout_s=600) as client:

        def grade(items):
            got = []
            for i in range(0, len(items), args.batch):
                got += client.verify_batch(items[i : i + args.batch])
            outcomes.update(str(v.outcome) for v in got)
            return got

        t0 = time.monotonic()
        for i in range(0, len(muts), args.batch):
            f, c = violations(grade, muts[i : i + args.batch])
            found += f
            counts.update(c)
            print(f"{i + args.batch}/{len(muts)} mutants, {len(found)} violations", file=sys.stderr)
        wall = time.monotonic() - t0
    load = os.getloadavg()[0]
    lines = [
        f"bench/code_grading/fuzz_code.py --n {args.n} --seed {args.seed}: {len(muts)} mutants of {len(seeds)} seeds "
        f"({len(seeds) - 5} HumanEval canonical solutions + 5 battery seeds), pool of 2, load {load:.1f}",
        f"graded {sum(outcomes.values())} verdicts (mutants + their seeds, per batch) in {wall:.0f} s "
        f"({sum(outcomes.values()) / wall:.1f}/s)",
        "operators applied: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())),
        "outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())),
        f"violations of the invariant: {len(found)}",
        *found,
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
