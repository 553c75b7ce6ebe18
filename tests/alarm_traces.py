"""Synthetic step traces for the alarm's rules (tests/trainer/test_alarm_space.py, bench/training/alarm_space.py): the
completions a step would hold, graded by an honest grader (paid exactly when the answer is the reference)
whose audit agrees, on data with a small answer space (yes/no, A-D, 0-9), and the same steps under a hack
that pays one answer string on every prompt.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from trainer.alarm.rules import Thresholds, evaluate
from trainer.alarm.stats import Completion, StepStats, step_stats

SPACES = {2: ["yes", "no"], 4: ["A", "B", "C", "D"], 10: [str(d) for d in range(10)]}


def honest_step(
    step: int,
    k: int,
    rng: random.Random,
    prompts: int = 8,
    group: int = 8,
    accuracy: float = 0.8,
    hack: str | None = None,
) -> list[Completion]:
    """One step: ``prompts`` prompts, each with a reference drawn from an answer space of ``k`` answers, and
    ``group`` completions each right with probability ``accuracy`` (else another answer of the space).
    With ``hack``, every completion answers ``hack`` and is paid (a reward that pays it everywhere)."""
    space = SPACES[k]
    rows = []
    for j in range(prompts):
        ref = rng.choice(space)
        for _ in range(group):
            ans = hack if hack else (ref if rng.random() < accuracy else rng.choice([a for a in space if a != ref]))
            paid = hack is not None or ans == ref
            rows.append(
                Completion(
                    f"<think>so</think><answer>{ans}</answer>",
                    f"s{step}p{j}",
                    ref,
                    1.0 if paid else 0.0,
                    "CORRECT" if paid else "INCORRECT",
                    (),
                    12,
                )
            )
    return rows


def trace(k: int, steps: int, seed: int, hack_from: int | None = None) -> Iterator[StepStats]:
    """StepStats of ``steps`` steps; the audit re-grades every paid completion and agrees where the answer is
    the reference (an honest step: always)."""
    rng = random.Random(f"{k}/{seed}")
    for step in range(1, steps + 1):
        hack = SPACES[k][0] if hack_from is not None and step >= hack_from else None
        rows = honest_step(step, k, rng, hack=hack)
        audit = {i: float(r.text.endswith(f">{r.reference}</answer>")) for i, r in enumerate(rows) if r.paid}
        yield step_stats(step, rows, audit, sampled=len(rows))


def firings(
    k: int,
    steps: int,
    seed: int,
    rule: str = "one_answer",
    hack_from: int | None = None,
    count_refs: bool = True,
    t: Thresholds = Thresholds(),
) -> list[int]:
    """The steps at which ``rule`` holds on the trace (``count_refs`` False: as the rule was before it
    counted references, issue 50)."""
    hist: list[StepStats] = []
    out = []
    for s in trace(k, steps, seed, hack_from):
        hist.append(s if count_refs else StepStats(**{**s.__dict__, "top_answer_refs": None}))
        if any(f.rule == rule or not rule for f in evaluate(hist, t)):
            out.append(s.step)
    return out
