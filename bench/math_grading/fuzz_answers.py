"""The answer mutation fuzzer (tests/attacks/answer_ops.py) with a larger budget than CI runs.

    .venv/bin/python -m bench.math_grading.fuzz_answers [--seed 36] [--budget 1400] [--pool-size 2]

Grades every mutation beside its seed through a local server (one VerifyBatch per 200 cases), prints the
cases per operator, every case that breaks its invariant (a mutation that raised the reward, or one that
must give 0 and did not), with the seed's and the mutation's outcome, and exits non-zero when there is one.
A search for bugs, not a timing: the time is printed only to size the next run. Findings and what was done
about each: bench/results/fuzz_answers.txt.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=36)
    ap.add_argument("--budget", type=int, default=1400, help="mutated cases (each graded beside its seed)")
    ap.add_argument("--pool-size", type=int, default=2)
    args = ap.parse_args()
    from tests.attacks.answer_ops import cases, items, violations
    from verifiers.client import VerifierClient
    from verifiers.launch import LocalServer

    batch = cases(args.seed, args.budget)
    t0 = time.perf_counter()
    results = []
    with LocalServer(pool_size=args.pool_size) as srv, VerifierClient(srv.target, timeout_s=1800) as client:
        for i in range(0, len(batch), 200):
            results += client.verify_batch(items(batch[i : i + 200]))
    bad = violations(batch, results)
    seeds_paid = sum(r.reward == 1.0 for r in results[0::2])
    print(
        f"# seed {args.seed}, {len(batch)} cases, graded in {time.perf_counter() - t0:.0f} s; "
        f"seeds paid {seeds_paid}/{len(batch)}"
    )
    per_op = Counter(c.op for c in batch)
    broke = Counter(line.split(" ", 1)[0] for line in bad)
    for op, n in sorted(per_op.items()):
        print(f"{op:16s} {n:5d} cases  {broke[op]:4d} broke the invariant")
    unpaid = [(c, r) for c, r in zip(batch, results[0::2], strict=True) if r.reward != 1.0]
    print(f"\n{len(unpaid)} seeds not paid (a correct pair graded otherwise: a false negative or a flake):")
    for c, r in unpaid[:40]:
        print(
            f"  {c.seed.verifier} ref={c.seed.reference!r}: {r.outcome} [{r.detail[:100]}] {c.seed.completion[-80:]!r}"
        )
    print(f"\n{len(bad)} violations:")
    print("\n".join(bad))
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
