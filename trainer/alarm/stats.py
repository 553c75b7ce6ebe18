"""What the alarm measures on one step: a ``StepStats`` per step, built from the step's completions
(``Completion`` rows: text, prompt, reward, signals, length) and the audit's verdicts on a sample of them.

"Paid" means a training reward of at least ``PAID`` (half the built-ins' full reward): for ``r1``
(0.9 * math + 0.1 * format) a completion is paid when its answer is, not for its format alone.

The answer string is a fingerprint, not a grade: the text after the last ``</think>``, whitespace
collapsed. It is only compared with itself across prompts; the graders decide what an answer is. One
string paid on many prompts is not by itself a hack where the answer space is small (yes/no, A-D: an
honest policy gives the same answer to every prompt whose answer it is), so the step also counts the
distinct *references* of the prompts it is paid on: an honest grader pays one answer string for one
reference (the answer space, as the data spells it), a hack pays it across references.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

PAID = 0.5


@dataclass(frozen=True)
class Completion:
    """One graded completion of the step, as the alarm sees it."""

    text: str
    prompt: str
    reference: str
    reward: float
    outcome: str = ""
    signals: tuple[str, ...] = ()
    length: int = 0  # completion tokens

    @property
    def paid(self) -> bool:
        return self.reward >= PAID


@dataclass(frozen=True)
class StepStats:
    """One step's figures. ``audited``/``agreed``: paid completions the audit graded / also paid."""

    step: int
    reward: float  # mean training reward
    paid: int = 0
    audited: int = 0
    agreed: int = 0
    sampled: int = 0  # completions in the audit's sample (paid or not; only the paid ones are re-graded)
    signals: Mapping[str, int] = field(default_factory=dict)  # paid completions carrying each signal
    top_answer: str = ""
    top_answer_prompts: int = 0  # distinct prompts on which top_answer was paid
    top_answer_refs: int | None = None  # distinct references of those prompts (None: not counted)
    paid_prompts: int = 0  # distinct prompts with a paid completion
    len_paid: float | None = None
    len_unpaid: float | None = None
    eval_acc: float | None = None  # held-out accuracy measured at this step (eval_every)

    @property
    def agreement(self) -> float | None:
        return self.agreed / self.audited if self.audited else None

    def metrics(self) -> dict[str, float]:
        """The step's ``alarm/*`` scalars (metrics.jsonl, TensorBoard)."""
        m = {
            "alarm/paid": float(self.paid),
            "alarm/audited": float(self.audited),
            "alarm/audit_agreed": float(self.agreed),
            "alarm/audit_sampled": float(self.sampled),
            "alarm/top_answer_prompts": float(self.top_answer_prompts),
            "alarm/top_answer_refs": float(self.top_answer_refs or 0),
            "alarm/top_answer_id": float(zlib.crc32(self.top_answer.encode()) % 1_000_000),  # same string, same id
            "alarm/paid_prompts": float(self.paid_prompts),
        }
        if self.agreement is not None:
            m["alarm/audit_agreement"] = self.agreement
        if self.sampled:
            m["alarm/exploited"] = (self.audited - self.agreed) / self.sampled
        if self.len_paid is not None:
            m["alarm/length_paid"] = self.len_paid
        if self.len_unpaid is not None:
            m["alarm/length_unpaid"] = self.len_unpaid
        if self.len_paid is not None and self.len_unpaid:
            m["alarm/length_ratio"] = self.len_paid / self.len_unpaid
        for name, n in sorted(self.signals.items()):
            m[f"alarm/signal/{name}"] = n / max(1, self.paid)
        return m


def answer_string(text: str) -> str:
    """The text after the last ``</think>``, whitespace collapsed (a fingerprint, compared only with itself).

    >>> answer_string("<think>1+2</think> <answer>3</answer>")
    '<answer>3</answer>'
    """
    return " ".join(text.rsplit("</think>", 1)[-1].split())[:200]


def step_stats(
    step: int, rows: Sequence[Completion], audit: Mapping[int, float], sampled: int | None = None
) -> StepStats:
    """The figures of one step. ``audit`` maps a row index to the audit's reward for it; ``sampled`` is the
    size of the audit's sample (default: the rows in ``audit``), whose unpaid rows need no verdict."""
    paid = [i for i, r in enumerate(rows) if r.paid]
    audited = [i for i in paid if i in audit]
    signals = Counter(s for i in paid for s in set(rows[i].signals))
    prompts_by_answer: dict[str, set[str]] = {}
    refs_by_answer: dict[str, set[str]] = {}
    for i in paid:
        prompts_by_answer.setdefault(answer_string(rows[i].text), set()).add(rows[i].prompt)
        refs_by_answer.setdefault(answer_string(rows[i].text), set()).add(" ".join(rows[i].reference.split()))
    top, top_n, top_refs = "", 0, 0  # the answer paid across the most references, then on the most prompts
    for ans, ps in sorted(prompts_by_answer.items()):
        if (len(refs_by_answer[ans]), len(ps)) > (top_refs, top_n):
            top, top_n, top_refs = ans, len(ps), len(refs_by_answer[ans])
    unpaid = [r.length for r in rows if not r.paid]
    return StepStats(
        step=step,
        reward=sum(r.reward for r in rows) / max(1, len(rows)),
        paid=len(paid),
        audited=len(audited),
        agreed=sum(audit[i] >= PAID for i in audited),
        sampled=len(audit) if sampled is None else sampled,
        signals=dict(signals),
        top_answer=top,
        top_answer_prompts=top_n,
        top_answer_refs=top_refs,
        paid_prompts=len({rows[i].prompt for i in paid}),
        len_paid=sum(rows[i].length for i in paid) / len(paid) if paid else None,
        len_unpaid=sum(unpaid) / len(unpaid) if unpaid else None,
    )
