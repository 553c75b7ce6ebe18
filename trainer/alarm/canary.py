"""Canaries through the exact reward the run trains with (verifiers/canaries/: known-bad completions,
each against a control; paid = more reward than its control; and probes: a right and a plainly wrong
answer of the same shape, paid = the reward cannot tell them apart: verifiers/canaries/probes.py). At the start of a run a paid canary
stops it before training unless ``allow_hackable_reward``; every ``canary_every`` steps the set is
replayed and a canary paid that was not paid at the start is an alarm."""

from __future__ import annotations

from dataclasses import dataclass, field

from verifiers.canaries import CanaryReport, grade_with_client
from verifiers.canaries.probes import gate
from verifiers.client import VerifierClient


@dataclass
class CanaryCheck:
    """Replays the canary set of the data's ``kind`` through ``verifier`` (the training reward, no options)."""

    client: VerifierClient
    verifier: str
    kind: str  # math | code
    accepted: set[str] = field(default_factory=set)  # paid at start and allowed: not alarmed again

    def run(self) -> CanaryReport:
        return gate(grade_with_client(self.client, self.verifier, {}), self.kind)

    def newly_paid(self, report: CanaryReport) -> list[str]:
        return sorted({r.canary.id for r in report.paid} - self.accepted)


def paid_lines(report: CanaryReport, limit: int = 8) -> list[str]:
    """The paid canaries, one line each: id, reward vs control, why it is bad."""
    out = [f"{r.canary.id}: {r.versus()} ({r.canary.why or r.canary.family})" for r in report.paid[:limit]]
    if len(report.paid) > limit:
        out.append(f"... and {len(report.paid) - limit} more")
    return out
