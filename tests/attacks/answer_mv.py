"""The differential check against Math-Verify (the peer library, called in this test process as its
documentation shows: ``verify(parse(gold), parse(answer))``; never in the service or the trainer).

Pairs: every row of the math batteries (tests/data/math_battery*.py) that our service pays (the batteries'
CORRECT verdicts, which tests/verifiers/kinds/math/test_math_adversarial.py holds the service to) and the embedded task's worked
completions. Each pair we pay and Math-Verify refuses must have a row in tests/data/mv_differential.tsv
saying why; ``key`` names a pair in that file.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

TSV = Path(__file__).resolve().parent.parent / "data" / "mv_differential.tsv"


def key(reference: str, completion: str, options: dict) -> str:
    raw = "\x00".join([reference, completion, *sorted(f"{k}={v}" for k, v in options.items())])
    return hashlib.sha1(raw.encode()).hexdigest()[:12]


def paid_pairs() -> list[tuple[str, str, dict]]:
    """(reference, completion, options) of every pair we pay."""
    from tests.data.math_battery import CASES
    from trainer.config import TaskConfig
    from trainer.pipelines.task import make_problem

    out = [(gold, comp, dict(opts)) for _, gold, comp, opts, verdict, _ in CASES if verdict == "CORRECT"]
    rng = random.Random(0)
    for _ in range(20):
        p = make_problem(rng, TaskConfig())
        out.append((p["answer"], p["completion"], {}))
    return out


def math_verify_pays(reference: str, completion: str) -> bool:
    """Math-Verify's verdict, as its README calls it (a bare reference wrapped in ``$…$`` so its LaTeX
    extraction reads it, as its own tests write golds)."""
    from math_verify import parse, verify

    gold_text = reference if any(d in reference for d in ("$", "\\(", "\\[", "\\boxed")) else f"${reference}$"
    try:
        return bool(verify(parse(gold_text), parse(completion)))
    except Exception:
        return False


def listed() -> dict[str, str]:
    """key → reason, from tests/data/mv_differential.tsv (tab-separated: key, reference, completion, reason)."""
    rows = {}
    for line in TSV.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            k, _, _, reason = line.split("\t")
            rows[k] = reason
    return rows


def row(reference: str, completion: str, options: dict, reason: str) -> str:
    """One line of the file (newlines and tabs in the texts shown as ⏎ and ⇥; the key identifies the pair)."""

    def show(s: str) -> str:
        return s.replace("\t", "⇥").replace("\n", "⏎")

    opts = "" if not options else " " + " ".join(f"[{k}={v}]" for k, v in sorted(options.items()))
    return "\t".join([key(reference, completion, options), show(reference), show(completion) + opts, reason])
