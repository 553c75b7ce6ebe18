"""Canaries through the exact reward the run trains with (verifiers/canaries/: known-bad completions,
each against a control; paid = more reward than its control; and probes: a right and a plainly wrong
answer of the same shape, paid = the reward cannot tell them apart: verifiers/canaries/probes.py). At the start of a run a paid canary
stops it before training unless ``allow_hackable_reward``; every ``canary_every`` steps the set is
replayed and a canary paid that was not paid at the start is an alarm."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from trainer.alarm.tool_canaries import Segments, tool_canaries
from verifiers.canaries import CanaryReport, grade_with_client, run_canaries
from verifiers.canaries.probes import gate
from verifiers.client import VerifierClient


@dataclass
class CanaryCheck:
    """Replays the canary set of the data's ``kind`` through ``verifier`` (the training reward, no options); for a
    tool run (``tool_format`` and ``graded_text``: the tool loop's rule, ``transcript_text``) the tool canaries too
    (trainer/alarm/tool_canaries.py, math data)."""

    client: VerifierClient
    verifier: str
    kind: str  # math | code
    accepted: set[str] = field(default_factory=set)  # paid at start and allowed: not alarmed again
    tool_format: str | None = None
    graded_text: Callable[[Segments], str] | None = None

    def run(self) -> CanaryReport:
        grade = grade_with_client(self.client, self.verifier, {})
        report = gate(grade, self.kind)
        if self.tool_format is not None and self.graded_text is not None and self.kind == "math":
            report += run_canaries(grade, tool_canaries(self.tool_format, self.graded_text))
        return report

    def newly_paid(self, report: CanaryReport) -> list[str]:
        return sorted({r.canary.id for r in report.paid} - self.accepted)


def paid_lines(report: CanaryReport, limit: int = 8) -> list[str]:
    """The paid canaries, one line each: id, reward vs control, why it is bad."""
    out = [f"{r.canary.id}: {r.versus()} ({r.canary.why or r.canary.family})" for r in report.paid[:limit]]
    if len(report.paid) > limit:
        out.append(f"... and {len(report.paid) - limit} more")
    return out
