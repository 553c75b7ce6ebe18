"""Answer signals on honest corpora (issue 48): how many correct answers ``enforce_signals=all`` zeroes, and how
often each ``answer.*`` signal fires on completions that try nothing.

    .venv/bin/python -m bench.math_grading.answer_signals [--pool-size 2]

Corpora: Math-Verify's own suite (tests/data/mv_suite.tsv: each gold graded against itself, and every pred the
suite pays, ``fallback=full``), the math batteries' CORRECT rows (tests/data/math_battery*.py), the embedded
task's worked completions (``make train``'s data, trainer/pipelines/task.py) for ``math``, ``r1``,
``arith_steps`` and ``answer_consistency``, and the canaries' controls (verifiers/canaries/data/math.jsonl:
plainly wrong answers in an honest format, for the signals' false alarms). Results: bench/results/answer_signals.txt.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def corpora() -> dict[str, list[dict]]:
    from tests.attacks.answer_seeds import task_seeds
    from tests.data.math_battery import CASES
    from tests.verifiers.kinds.math.test_mv_suite import rows

    def item(verifier, completion, reference, options=None, prompt=""):
        return {"verifier": verifier, "completion": completion, "reference": reference, "options": options or {},
                "prompt": prompt, "timeout_s": 10}  # fmt: skip

    suite = rows()
    out = {
        "mv_golds": [item("math", r["gold"], r["gold"], {"fallback": "full"}) for r in suite],
        "mv_preds_paid": [item("math", r["pred"], r["gold"], {"fallback": "full"}) for r in suite if r["expected"]],
        "battery_correct": [item("math", c, g, o) for _, g, c, o, v, _ in CASES if v == "CORRECT"],
        "task": [item(s.verifier, s.completion, s.reference, s.options, s.prompt) for s in task_seeds()],
    }
    controls = [json.loads(line) for line in (ROOT / "verifiers/canaries/data/math.jsonl").read_text().splitlines()]
    out["canary_controls"] = [item("math", r["control"], r["reference"], {}, r["prompt"]) for r in controls]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pool-size", type=int, default=2)
    args = ap.parse_args()
    from verifiers.client import VerifierClient
    from verifiers.launch import LocalServer

    zeroed_total = 0
    with LocalServer(pool_size=args.pool_size) as srv, VerifierClient(srv.target, timeout_s=1800) as client:
        for name, items in corpora().items():
            plain = client.verify_batch(items)
            enforced = client.verify_batch(
                [dict(it, options={**it["options"], "enforce_signals": "all"}) for it in items]
            )
            paid = [n for n, r in enumerate(plain) if r.reward == 1.0]
            zeroed = [n for n in paid if enforced[n].reward < 1.0]
            zeroed_total += len(zeroed)
            fired = Counter(s for r in plain for s in r.signals if s.startswith("answer."))
            print(f"{name:16s} {len(items):4d} items  paid {len(paid):4d}  zeroed by enforce_signals=all {len(zeroed):3d}  "
                  f"signals: {dict(sorted(fired.items()))}")  # fmt: skip
            for n in zeroed[:8]:
                print(
                    f"    zeroed: {plain[n].signals} ref={items[n]['reference'][:30]!r} {items[n]['completion'][-90:]!r}"
                )
    print(f"\ncorrect answers zeroed by enforce_signals=all: {zeroed_total}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
