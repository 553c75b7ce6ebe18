"""A weighted sum of other verifiers, e.g. DeepSeek-R1's ``0.9 * math + 0.1 * think_format``.

The reward is ``sum(w_i * r_i)`` clamped to [0, 1]; ``components`` holds each part's own reward. If any
part failed for infrastructure reasons the whole result is ``SANDBOX_ERROR`` (never a fake partial
score); otherwise the outcome is the first (heaviest-weighted) part's outcome.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from verifiers.shapes.base import Context, Verdict
from verifiers.shapes.outcome import Outcome
from verifiers.shapes.request import Request


@dataclass
class Part:
    verifier: str
    weight: float
    options: dict[str, str] = field(default_factory=dict)


@dataclass
class Composite:
    name: str
    parts: list[Part]
    description: str = ""
    kind: str = "composite"
    version: int = 1
    default_timeout_s: float = 10.0
    options = {"*": "passed on to every component (a component's own options win)"}
    sandbox_entry = ""  # its components run theirs
    warmup = ""
    result = Verdict

    def spec(self) -> dict:
        return {
            "components": [{"verifier": p.verifier, "weight": p.weight, "options": dict(p.options)} for p in self.parts]
        }

    def verify(self, req: Request, ctx: Context) -> Verdict:
        def one(p: Part) -> Verdict:
            sub = Request(
                p.verifier,
                req.completion,
                req.reference,
                req.prompt,
                {**req.options, **p.options},
                req.timeout_s,
                req.id,
            )
            if ctx.verify is not None:
                return ctx.verify(sub)
            return ctx.lookup(p.verifier).verify(sub, ctx)

        if len(self.parts) > 1:
            with ThreadPoolExecutor(len(self.parts)) as ex:
                verdicts = list(ex.map(one, self.parts))
        else:
            verdicts = [one(p) for p in self.parts]
        components = {p.verifier: v.reward for p, v in zip(self.parts, verdicts, strict=True)}
        for p, v in zip(self.parts, verdicts, strict=True):
            if v.outcome is Outcome.SANDBOX_ERROR:
                return Verdict(0.0, Outcome.SANDBOX_ERROR, f"{p.verifier}: {v.detail}", components)
        reward = min(1.0, max(0.0, sum(p.weight * v.reward for p, v in zip(self.parts, verdicts, strict=True))))
        main = max(zip(self.parts, verdicts, strict=True), key=lambda pv: pv[0].weight)[1]
        detail = "; ".join(
            f"{p.verifier}={v.reward:g} ({v.outcome.value})" for p, v in zip(self.parts, verdicts, strict=True)
        )
        signals = sorted({s for v in verdicts for s in v.signals})  # what the completion tried, whichever part saw it
        return Verdict(reward, main.outcome, detail, components, signals=signals)


def r1() -> Composite:
    """The built-in ``r1``: DeepSeek-R1's accuracy + format reward."""
    return Composite(
        "r1",
        [Part("math", 0.9), Part("think_format", 0.1)],
        description="DeepSeek-R1 style reward: 0.9 * math + 0.1 * think_format",
        kind="builtin",
    )
