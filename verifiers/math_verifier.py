"""``math``: is the model's final answer equivalent to the gold answer?

The answer is extracted on the host with plain string scanning (linear time, nothing evaluated):
the last ``\\boxed{…}`` outside ``<think>…</think>``, else the last ``<answer>…</answer>``. Parsing and
the sympy comparison run in the sandbox's warm worker (Math-Verify + sympy preloaded), under a hard
kill timeout, so a power tower or a pathological expression costs one job, never the service.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from sandbox.pool import Job, Limits
from verifiers.base import Context, Outcome, Request, Verdict
from verifiers.extract import extract_answer

# Runs inside the sandbox. Reads {"gold", "pred"} as JSON on stdin, prints one JSON verdict.
SANDBOX_SCRIPT = r"""
import json, sys
from math_verify import parse, verify
from math_verify.parser import LatexExtractionConfig, ExprExtractionConfig
q = json.loads(sys.stdin.read())
cfg = [LatexExtractionConfig(boxed_match_priority=0), ExprExtractionConfig()]
def _p(s):
    s = s.strip()
    if not (s.startswith("$") or s.startswith("\\(") or s.startswith("\\[")):
        s = "$" + s + "$"
    return parse(s, extraction_config=cfg, parsing_timeout=None)
gold, pred = _p(q["gold"]), _p(q["pred"])
if not gold:
    print(json.dumps({"error": "reference did not parse"}))
elif not pred:
    print(json.dumps({"ok": False, "why": "answer did not parse"}))
else:
    ok = verify(gold, pred, timeout_seconds=None)
    print(json.dumps({"ok": bool(ok), "why": f"gold={gold[-1]!s:.60} pred={pred[-1]!s:.60}"}))
"""

# Run once in each sandbox worker before it forks jobs: builds Math-Verify's parsers and caches.
WARMUP = r"""
from math_verify import parse, verify
for a, b in [("$\\frac{1}{2}$", "$0.5$"), ("$x^2+1$", "$1+x^2$"), ("$\\{1,2\\}$", "$(1,2]$"), ("$3$", "3")]:
    verify(parse(a), parse(b))
"""


def sandbox_verdict(ctx: Context, req: Request, payload: dict, timeout_s: float) -> Verdict:
    """Run SANDBOX_SCRIPT on ``payload`` and turn the worker's result into a verdict."""
    res = ctx.run_job(Job(code=SANDBOX_SCRIPT, stdin=json.dumps(payload), timeout_s=timeout_s,
                          limits=Limits(memory_mb=1024), id=req.id))  # fmt: skip
    if res.sandbox_error:
        return Verdict.of(Outcome.SANDBOX_ERROR, res.sandbox_error)
    if res.timed_out:
        return Verdict.of(Outcome.TIMEOUT, f"comparison took longer than {timeout_s:g} s")
    if res.exit_code != 0:
        return Verdict.of(Outcome.INCORRECT, f"comparison failed: {res.stderr.strip()[-300:]}")
    try:
        out = json.loads(res.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return Verdict.of(Outcome.INCORRECT, "comparison printed no verdict")
    if "error" in out:
        return Verdict.of(Outcome.INCORRECT, out["error"])
    return Verdict.of(Outcome.CORRECT if out["ok"] else Outcome.INCORRECT, out.get("why", ""))


@dataclass
class MathVerifier:
    name: str = "math"
    kind: str = "builtin"
    description: str = "final answer (last \\boxed{}, else <answer>) equivalent to the reference (sympy)"
    version: int = 1
    default_timeout_s: float = 5.0

    def verify(self, req: Request, ctx: Context) -> Verdict:
        answer = extract_answer(req.completion)
        if answer is None:
            return Verdict.of(Outcome.NO_ANSWER, "no \\boxed{} or <answer> found")
        timeout = min(req.timeout_s or self.default_timeout_s, max(ctx.time_left(), 0.1))
        return sandbox_verdict(ctx, req, {"gold": req.reference, "pred": answer}, timeout)
