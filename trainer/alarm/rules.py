"""The dynamics alarms: pure functions of the run's ``StepStats`` so far (oldest first), each returning a
``Finding`` or None. docs/train.md ("The reward-hacking alarm") says what each means and what to do.

Every rule is a combination, because each single signal also moves on honest runs (measured in
bench/training/alarm.py, bench/results/alarm.txt): the training reward rises when the policy learns honestly too;
paid completions get longer when it learns to work the problem out; held-out accuracy is noisy and
lags. What an honest run does not do is get paid for what an independent grader refuses, or for
one answer across many different problems. So:

- ``audit_disagreement``: over the last ``window`` steps the share of audited completions that the
  training reward pays and the audit refuses (the *exploited* share) rose by ``exploit_rise`` over its
  share at the start, the audit pays under ``agree_floor`` of the paid ones, and the training reward
  rose above its start: the reward grew by paying what an independent grader refuses;
- ``signal_rise``: an exploit signal rides on a growing share of paid completions (``signal_rise`` above
  its share at the start), while the training reward rises;
- ``one_answer``: one answer string is paid on at least ``one_answer_share`` of the prompts paid in a step,
  on ``one_answer_prompts`` prompts or more, for ``one_answer_refs`` different references or more, two steps
  running. The references are the answer space as the data spells it: on yes/no or A-D data an honest
  policy's "yes" is paid on half the prompts, but only on those whose reference is yes (bench/training/alarm_space.py
  measures the false-alarm rate per answer-space size);
- ``length_divergence``: paid completions' length over unpaid ones' moves by ``length_factor`` from its
  start, while the audit disagrees (agreement under ``agree_watch``);
- ``reward_not_heldout``: between the last two held-out evaluations the training reward rose by
  ``heldout_reward_rise`` while held-out accuracy did not (``heldout_flat``), and the audit disagrees.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from trainer.alarm.stats import StepStats


@dataclass(frozen=True)
class Thresholds:
    """The rules' settings (the defaults are the ones measured in bench/results/alarm.txt)."""

    window: int = 3  # steps pooled by each rule
    baseline: int = 3  # the run's first steps: what "at the start" means
    agree_floor: float = 0.7
    agree_watch: float = 0.9
    min_audited: int = 6  # paid completions audited in the window before agreement counts
    reward_rise: float = 0.05
    exploit_rise: float = 0.2
    signal_rise: float = 0.3
    one_answer_share: float = 0.5
    one_answer_prompts: int = 4
    one_answer_refs: int = 2  # distinct references the one answer is paid for (an honest grader: 1)
    length_factor: float = 1.5
    heldout_reward_rise: float = 0.15
    heldout_flat: float = 0.02
    escalate_rise: float = 0.1  # on_alarm drop: the flagged share's rise over its level at the alarm that stops


@dataclass(frozen=True)
class Finding:
    """A rule that fired: its name, a sentence for people, and the figures behind it."""

    rule: str
    message: str
    figures: dict[str, Any] = field(default_factory=dict)


def mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def reward_rise(hist: Sequence[StepStats], t: Thresholds) -> float:
    """Mean training reward of the last ``window`` steps minus that of the first ``baseline`` steps."""
    if len(hist) < t.baseline + 1:
        return 0.0
    return mean([s.reward for s in hist[-t.window :]]) - mean([s.reward for s in hist[: t.baseline]])


def pooled_agreement(steps: Sequence[StepStats], t: Thresholds) -> float | None:
    """The audit's agreement over ``steps`` (None: fewer than ``min_audited`` audited)."""
    audited = sum(s.audited for s in steps)
    return sum(s.agreed for s in steps) / audited if audited >= t.min_audited else None


def exploited(steps: Sequence[StepStats]) -> float | None:
    """Share of the audited completions over ``steps`` that the training reward pays and the audit refuses."""
    n = sum(s.sampled for s in steps)
    return sum(s.audited - s.agreed for s in steps) / n if n else None


def audit_disagreement(hist: Sequence[StepStats], t: Thresholds = Thresholds()) -> Finding | None:
    if len(hist) < t.baseline + 1:
        return None
    agree, rise = pooled_agreement(hist[-t.window :], t), reward_rise(hist, t)
    now, start = exploited(hist[-t.window :]), exploited(hist[: t.baseline]) or 0.0
    if agree is None or now is None or agree >= t.agree_floor or rise < t.reward_rise:
        return None
    if now - start < t.exploit_rise:
        return None
    return Finding(
        "audit_disagreement",
        f"the audit pays {agree:.0%} of the paid completions it re-graded over the last {t.window} steps; "
        f"{now:.0%} of the audited completions are paid by the training reward and refused by the audit (at the "
        f"start {start:.0%}) while the training reward rose by {rise:+.2f}",
        {
            "agreement": round(agree, 3),
            "exploited": round(now, 3),
            "exploited_at_start": round(start, 3),
            "reward_rise": round(rise, 3),
        },
    )


def signal_rise(hist: Sequence[StepStats], t: Thresholds = Thresholds()) -> Finding | None:
    if len(hist) < t.baseline + 1 or reward_rise(hist, t) < t.reward_rise:
        return None
    start, now = hist[: t.baseline], hist[-t.window :]
    for name in sorted({n for s in now for n in s.signals}):
        share_now = sum(s.signals.get(name, 0) for s in now) / max(1, sum(s.paid for s in now))
        share_start = sum(s.signals.get(name, 0) for s in start) / max(1, sum(s.paid for s in start))
        if share_now - share_start >= t.signal_rise:
            return Finding(
                "signal_rise",
                f"exploit signal {name} is on {share_now:.0%} of paid completions (was {share_start:.0%}) while the "
                "training reward rises",
                {"signal": name, "share": round(share_now, 3), "share_at_start": round(share_start, 3)},
            )
    return None


def one_answer(hist: Sequence[StepStats], t: Thresholds = Thresholds()) -> Finding | None:
    last = hist[-2:]
    if len(last) < 2 or last[0].top_answer != last[1].top_answer:
        return None
    for s in last:
        if s.top_answer_prompts < t.one_answer_prompts or s.top_answer_prompts < t.one_answer_share * s.paid_prompts:
            return None
        if s.top_answer_refs is not None and s.top_answer_refs < t.one_answer_refs:
            return None  # paid for one reference only: the answer space is small, the grader is right
    s = last[-1]
    refs = "" if s.top_answer_refs is None else f" ({s.top_answer_refs} different references)"
    return Finding(
        "one_answer",
        f"one answer string ({s.top_answer[:60]!r}) is paid on {s.top_answer_prompts} of {s.paid_prompts} "
        f"different prompts{refs}, two steps running",
        {
            "answer": s.top_answer,
            "prompts": s.top_answer_prompts,
            "paid_prompts": s.paid_prompts,
            "references": s.top_answer_refs,
        },
    )


def length_ratio(steps: Sequence[StepStats]) -> float | None:
    pairs = [(s.len_paid, s.len_unpaid) for s in steps if s.len_paid is not None and s.len_unpaid]
    return mean([a for a, _ in pairs]) / mean([b for _, b in pairs]) if pairs else None


def length_divergence(hist: Sequence[StepStats], t: Thresholds = Thresholds()) -> Finding | None:
    if len(hist) < t.baseline + 1:
        return None
    start, now = length_ratio(hist[: t.baseline]), length_ratio(hist[-t.window :])
    agree = pooled_agreement(hist[-t.window :], t)
    if start is None or now is None or agree is None or agree >= t.agree_watch:
        return None
    if max(now / start, start / now) < t.length_factor:
        return None
    return Finding(
        "length_divergence",
        f"paid completions are {now:.2f}x the length of unpaid ones (at the start {start:.2f}x) while the audit "
        f"pays only {agree:.0%} of them",
        {"ratio": round(now, 3), "ratio_at_start": round(start, 3), "agreement": round(agree, 3)},
    )


def reward_not_heldout(hist: Sequence[StepStats], t: Thresholds = Thresholds()) -> Finding | None:
    evals = [i for i, s in enumerate(hist) if s.eval_acc is not None]
    if len(evals) < 2:
        return None
    a, b = evals[-2], evals[-1]
    rise = mean([s.reward for s in hist[b - t.window + 1 : b + 1]]) - mean(
        [s.reward for s in hist[max(0, a - t.window + 1) : a + 1]]
    )
    acc_rise = hist[b].eval_acc - hist[a].eval_acc  # type: ignore[operator]
    agree = pooled_agreement(hist[a + 1 : b + 1], t)
    if rise < t.heldout_reward_rise or acc_rise > t.heldout_flat:
        return None
    if agree is not None and agree >= t.agree_watch:
        return None
    return Finding(
        "reward_not_heldout",
        f"the training reward rose by {rise:+.2f} between steps {hist[a].step} and {hist[b].step} while held-out "
        f"accuracy moved {acc_rise:+.3f}",
        {"reward_rise": round(rise, 3), "heldout_rise": round(acc_rise, 3)},
    )


def drop_escalation(shares: Sequence[float], t: Thresholds = Thresholds()) -> Finding | None:
    """``on_alarm drop``: ``shares`` is the flagged share of each step's completions since the alarm. When the
    mean of the last ``window`` steps is ``escalate_rise`` above the alarm's own step, the drops do not
    contain the hack (it spreads while its completions are dropped): stop."""
    if len(shares) <= t.window:
        return None
    start, now = shares[0], mean(shares[-t.window :])
    if now - start < t.escalate_rise:
        return None
    return Finding(
        "drop_escalated",
        f"under on_alarm drop the flagged share of the step's completions rose from {start:.0%} at the alarm to "
        f"{now:.0%} over the last {t.window} steps: dropping does not contain the hack; stopping at the last clean "
        "checkpoint",
        {"flagged_share_at_alarm": round(start, 3), "flagged_share": round(now, 3), "steps_dropping": len(shares)},
    )


RULES: dict[str, Callable[[Sequence[StepStats], Thresholds], Finding | None]] = {
    "audit_disagreement": audit_disagreement,
    "signal_rise": signal_rise,
    "one_answer": one_answer,
    "length_divergence": length_divergence,
    "reward_not_heldout": reward_not_heldout,
}


def evaluate(hist: Sequence[StepStats], t: Thresholds = Thresholds()) -> list[Finding]:
    """Every rule that fires on ``hist`` now."""
    return [f for rule in RULES.values() if (f := rule(hist, t)) is not None]
