"""Record every string the math grader hands latex2sympy's parser on our whole corpus, for fastparse's test.

    PYTHONPATH=<tree> .venv/bin/python -m bench.math_grading.parses [--out tests/data/latex_parses.jsonl]

The cases are bench/math_grading/verdicts.py's (Math-Verify's test suite, our differential table, the math batteries,
the mix seeds 0-9), each graded in this process by the tree's ``grader.grade`` (a 10 s alarm an item) with a hook
on latex2sympy's ``parse`` that notes each string and the converter's ``is_real``, in first-seen order, once.
Strings that differ only in their digits are kept three times at most (the mix seeds make thousands of them).
Each line: ``{"s": text, "is_real": ..., "from": "mv_suite" | "other"}``. It runs on the host only because its
inputs are this repository's own test tables, never model output.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "latex_parses.jsonl"


def record() -> list[dict]:
    from latex2sympy2_extended.latex2sympy2 import _Latex2Sympy

    from bench.math_grading.verdicts import cases, payloads
    from in_sandbox.math import grader

    seen: dict[tuple, dict] = {}
    source = ["other"]
    parse = _Latex2Sympy.parse  # the grader's hook (imported above): fastparse, else ANTLR

    def noted(self, text):
        seen.setdefault((text, self.is_real), {"s": text, "is_real": self.is_real, "from": source[0]})
        return parse(self, text)

    def alarm(*_):
        raise grader.SoftTimeout

    _Latex2Sympy.parse = noted
    signal.signal(signal.SIGALRM, alarm)
    try:
        for name, item in payloads(cases()):
            if item is None:
                continue
            source[0] = "mv_suite" if name.startswith("mv_suite.tsv") else "other"
            signal.setitimer(signal.ITIMER_REAL, 10)
            try:
                grader.grade(item, {})
            except BaseException:  # noqa: BLE001 - a verdict is not what is recorded here
                pass
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        _Latex2Sympy.parse = parse
    shapes: dict[str, int] = {}
    kept = []
    for row in seen.values():
        shape = re.sub(r"[0-9]+", "0", row["s"])
        shapes[shape] = shapes.get(shape, 0) + 1
        if shapes[shape] <= 3 or row["from"] == "mv_suite":
            kept.append(row)
    return kept


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DATA)
    args = ap.parse_args()
    sys.setrecursionlimit(10_000)
    rows = record()
    args.out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    print(f"{len(rows)} strings ({sum(r['from'] == 'mv_suite' for r in rows)} from mv_suite.tsv) -> {args.out}")


if __name__ == "__main__":
    main()
