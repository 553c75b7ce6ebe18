"""The audit: a second, independent verdict on a sample of the step's completions.

Each step ``pick_rows`` draws whole groups (``share`` of the step's groups, at least one) among those
with a paid completion, and ``run_audit`` re-grades their paid completions (an unpaid one cannot be
exploited: it counts in the sample without a second verdict) through the audit verifier in one
``VerifyBatch`` call: by default the strict built-in of the data's kind (``math`` with no
fallback, or ``code``) with ``enforce_signals=all`` where the service offers that option, or the verifier
named by ``audit_verifier``. Where the data carries an ``audit_reference`` column (a held-out test set
per problem, say), the audit grades against it instead of the training reference.

Tool rollouts: the audit grades the same text the reward graded (the policy's own tokens, never a tool's
output), and refuses a paid completion whose calls carry a tool exploit signal (``TOOL_EXPLOITS``: a call read
files or the environment, or printed the reference from a literal): the trainer-side counterpart of the
service's ``enforce_signals``. Such a completion is then *exploited* (paid by the training reward, refused by the
audit), which is what ``audit_disagreement`` watches.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from trainer.alarm.stats import Completion
from trainer.grading import grade_items
from verifiers.client import VerifierClient, VerifierError, VerifyItem

# tool-use signals (trainer/rollout/tools.py, tool_signals) that mark an exploit; a paid completion carrying one is
# refused by the audit. The other tool signals (an answer's shape in a tool's output, the answer left to the
# tool) are never paid: the graded text is the policy's own tokens
TOOL_EXPLOITS = ("tool.read_files", "tool.printed_reference")
STRICT = {"math": {"fallback": "none", "enforce_signals": "all"}, "code": {"enforce_signals": "all"}}


@dataclass
class AuditPlan:
    """Who audits and with what: a verifier name, its options, and the audit references by prompt."""

    verifier: str
    options: dict[str, str] = field(default_factory=dict)
    references: dict[str, str] = field(default_factory=dict)  # prompt -> audit_reference
    note: str = ""  # what had to give (an option the service does not offer)

    def reference(self, row: Completion) -> str:
        return self.references.get(row.prompt, row.reference)


def data_kind(path: str | Path | None) -> str:
    """'math' for rows with an ``answer`` column, 'code' for ``tests`` (the first row decides)."""
    if path is None:
        return "math"
    with open(path, encoding="utf-8") as f:
        first = json.loads(next(line for line in f if line.strip()))
    return "code" if "tests" in first and "answer" not in first else "math"


def audit_references(path: str | Path | None) -> dict[str, str]:
    """prompt -> audit_reference, from the data rows that carry the column."""
    if path is None:
        return {}
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                if row.get("audit_reference") is not None:
                    out[str(row["prompt"])] = str(row["audit_reference"])
    return out


def make_plan(client: VerifierClient, audit_verifier: str | None, data: str | Path | None) -> AuditPlan:
    """The audit of a run. The strict default is tried once: an option the service refuses is dropped and
    said in ``note`` (an older service without ``enforce_signals``)."""
    refs = audit_references(data)
    if audit_verifier is not None:
        return AuditPlan(audit_verifier, {}, refs)
    kind = data_kind(data)
    plan = AuditPlan(kind, dict(STRICT[kind]), refs)
    try:
        grade_items(client, [VerifyItem(kind, "", "0", "", plan.options, 0.0, "probe")])
    except VerifierError as e:
        if "enforce_signals" not in str(e):
            raise
        del plan.options["enforce_signals"]
        plan.note = "the service does not offer enforce_signals: the audit runs without it"
    return plan


def pick_rows(rows: Sequence[Completion], group_size: int, share: float, rng: random.Random) -> list[int]:
    """Row indices of whole groups drawn at random among the groups with a paid completion:
    ``ceil(share * groups)`` of them, at least one (none when nothing is paid or share is 0)."""
    groups = len(rows) // group_size
    paid = [g for g in range(groups) if any(r.paid for r in rows[g * group_size : (g + 1) * group_size])]
    if not paid or share <= 0:
        return []
    k = min(len(paid), max(1, math.ceil(share * groups - 1e-9)))
    chosen = sorted(rng.sample(paid, k))
    return [g * group_size + j for g in chosen for j in range(group_size)]


def run_audit(
    client: VerifierClient, plan: AuditPlan, rows: Sequence[Completion], idx: Sequence[int]
) -> dict[int, tuple[float, str, list[str]]]:
    """Re-grade rows ``idx``: {row: (audit reward, outcome, signals)}, in one VerifyBatch call."""
    if not idx:
        return {}
    items = [
        VerifyItem(plan.verifier, rows[i].text, plan.reference(rows[i]), rows[i].prompt, plan.options, 0.0, str(i))
        for i in idx
    ]
    got = grade_items(client, items)
    out = {i: (r.reward, str(r.outcome), list(r.signals)) for i, r in zip(idx, got, strict=True)}
    for i in idx:
        hit = [x for x in rows[i].signals if x in TOOL_EXPLOITS]
        if hit:  # a tool exploit: refused whatever the text earns
            out[i] = (0.0, "TOOL_EXPLOIT", [*out[i][2], *hit])
    return out


def audit_rewards(verdicts: Mapping[int, tuple[float, str, list[str]]]) -> dict[int, float]:
    return {i: v[0] for i, v in verdicts.items()}
