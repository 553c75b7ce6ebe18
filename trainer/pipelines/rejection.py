"""Rejection sampling (DeepSeek-R1, stage 3): N samples per prompt from the RL model, graded by the
verifier service, kept only if verified correct AND well formed, deduplicated, written as an SFT set.

A sample enters the SFT set only when, for its own prompt and reference,

- the correctness verifier (``math`` by default) says ``CORRECT`` with reward 1, and
- the format verifier (``think_format``: exactly one non-empty ``<think>…</think>`` and the answer,
  nothing before ``<think>``) says ``CORRECT`` with reward 1,

and no sample with the same prompt and the same completion text was kept before it. Anything else —
a wrong answer, no answer, a malformed completion, a grading failure (SANDBOX_ERROR, a timeout), a
duplicate — is dropped and counted. Grading goes through ``verifiers.client`` only.

>>> s = [Sample("1+1=?", "2", "<think>2</think><answer>2</answer>", "CORRECT", 1.0, "CORRECT", 1.0)] * 2
>>> kept, counts = filter_samples(s)
>>> len(kept), counts["duplicates"]
(1, 1)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from trainer.grading import grade_items
from verifiers.client import Outcome, VerifierClient, VerifyItem


@dataclass(frozen=True)
class Sample:
    """One sampled completion and its two grades."""

    prompt: str
    reference: str
    completion: str
    correct_outcome: str = ""
    correct_reward: float = 0.0
    format_outcome: str = ""
    format_reward: float = 0.0

    @property
    def correct(self) -> bool:
        return self.correct_outcome == Outcome.CORRECT and self.correct_reward >= 1.0

    @property
    def well_formed(self) -> bool:
        return self.format_outcome == Outcome.CORRECT and self.format_reward >= 1.0


def grade_samples(
    client: VerifierClient,
    samples: Sequence[Sample],
    *,
    correct_verifier: str = "math",
    format_verifier: str = "think_format",
    batch: int = 256,
) -> list[Sample]:
    """The samples with their correctness and format grades filled in (VerifyBatch calls of ``batch`` items)."""
    out: list[Sample] = []
    for i in range(0, len(samples), batch):
        part = samples[i : i + batch]
        items = [
            VerifyItem(verifier=v, completion=s.completion, reference=s.reference, prompt=s.prompt, id=f"{v}/{j}")
            for v in (correct_verifier, format_verifier)
            for j, s in enumerate(part)
        ]
        res = grade_items(client, items)
        n = len(part)
        for j, s in enumerate(part):
            c, f = res[j], res[n + j]
            out.append(Sample(s.prompt, s.reference, s.completion, c.outcome, c.reward, f.outcome, f.reward))
    return out


def filter_samples(samples: Sequence[Sample]) -> tuple[list[dict[str, str]], dict[str, int]]:
    """SFT rows ``{"prompt", "completion", "answer"}`` of the correct, well-formed, first-seen samples, and
    the counts: sampled, correct, well_formed, correct_and_well_formed, duplicates, kept, prompts,
    prompts_kept (prompts with at least one kept sample)."""
    seen: set[tuple[str, str]] = set()
    kept: list[dict[str, str]] = []
    counts = dict.fromkeys(("sampled", "correct", "well_formed", "correct_and_well_formed", "duplicates", "kept"), 0)
    for s in samples:
        counts["sampled"] += 1
        counts["correct"] += s.correct
        counts["well_formed"] += s.well_formed
        if not (s.correct and s.well_formed):
            continue
        counts["correct_and_well_formed"] += 1
        key = (s.prompt, s.completion.strip())
        if key in seen:
            counts["duplicates"] += 1
            continue
        seen.add(key)
        kept.append({"prompt": s.prompt, "completion": s.completion.strip(), "answer": s.reference})
    counts["kept"] = len(kept)
    counts["prompts"] = len({s.prompt for s in samples})
    counts["prompts_kept"] = len({r["prompt"] for r in kept})
    return kept, counts


def sample_records(samples: Sequence[Sample]) -> list[dict]:
    """Every graded sample as a JSON-ready dict (the audit log next to the SFT set)."""
    return [asdict(s) | {"kept_if_first": s.correct and s.well_formed} for s in samples]
