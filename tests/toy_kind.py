"""A toy built-in verifier kind, added the way docs/verifiers.md ("Adding a verifier kind") says: this
one file plus one ``register_builtin(...)`` line (tests/verifiers/kinds/test_plugin_kind.py makes that line, so the toy
stays out of the real service).

``shout``: reward 1 when the completion, stripped, is the reference in capitals (an option ``strip``
= "0" keeps surrounding spaces). It runs nothing in the sandbox.
"""

from __future__ import annotations

from dataclasses import dataclass

from verifiers.shapes.base import BadRequest, Context, Verdict
from verifiers.shapes.outcome import Outcome
from verifiers.shapes.request import Request


@dataclass
class Shout:
    name: str = "shout"
    kind: str = "builtin"
    description: str = "1 if the completion is the reference in capitals"
    version: int = 1
    default_timeout_s: float = 1.0
    options = {"strip": "1 (default): ignore surrounding whitespace; 0: compare as is"}
    sandbox_entry = ""
    warmup = ""
    result = Verdict

    def check(self, req: Request) -> None:
        """The request's own mistakes, found before grading (VerifyBatch names the item)."""
        if req.options.get("strip", "1") not in ("0", "1"):
            raise BadRequest(f"shout: options['strip'] must be 0 or 1, got {req.options['strip']!r}")

    def verify(self, req: Request, ctx: Context) -> Verdict:
        self.check(req)
        text = req.completion.strip() if req.options.get("strip", "1") == "1" else req.completion
        ok = text == req.reference.upper()
        return Verdict.of(
            Outcome.CORRECT if ok else Outcome.INCORRECT, f"{text[:40]!r} vs {req.reference.upper()[:40]!r}"
        )
