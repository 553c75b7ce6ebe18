"""The alarm's dynamics rules (trainer/alarm/rules.py) and step figures (stats.py) as pure functions over
small tables of steps. Each rule fires on its combination and stays silent when only one of its signals
moves (the honest-run case: reward rising alone, length moving alone, held-out flat alone)."""

from __future__ import annotations

import pytest

from trainer.alarm.rules import (
    Thresholds,
    audit_disagreement,
    evaluate,
    length_divergence,
    one_answer,
    reward_not_heldout,
    signal_rise,
)
from trainer.alarm.stats import Completion, StepStats, answer_string, step_stats
from trainer.config import GRPOConfig
from trainer.errors import ConfigError

T = Thresholds()


def steps(rewards, audited=0, agreed=None, **kw) -> list[StepStats]:
    """One StepStats per reward; the same audit figures on every step unless lists are given."""
    out = []
    for i, r in enumerate(rewards):
        a = audited[i] if isinstance(audited, list) else audited
        g = (agreed[i] if isinstance(agreed, list) else agreed) if agreed is not None else a
        extra = {k: (v[i] if isinstance(v, list) else v) for k, v in kw.items()}
        out.append(StepStats(step=i + 1, reward=r, paid=8, audited=a, agreed=g, sampled=a, **extra))
    return out


@pytest.mark.parametrize(
    "rewards, audited, agreed, fires",
    [
        ([0.3, 0.3, 0.3, 0.5, 0.7, 0.9], 8, [8, 8, 8, 2, 1, 0], True),  # reward up, audit refuses: the hack
        ([0.3, 0.3, 0.3, 0.5, 0.7, 0.9], 8, 8, False),  # reward up, audit agrees: honest learning
        ([0.3, 0.3, 0.3, 0.3, 0.3, 0.3], 8, 0, False),  # audit refuses from the start, nothing learnt from it
        ([0.3, 0.3, 0.3, 0.5, 0.7, 0.9], 1, 0, False),  # too few audited to say
        ([0.3, 0.3, 0.3, 0.5, 0.7, 0.9], 8, [8, 8, 8, 6, 6, 6], False),  # 75%: above the floor
        ([0.3, 0.3, 0.4, 0.4, 0.4, 0.4], 8, [2, 2, 2, 1, 1, 1], False),  # a lenient grader from the start: no rise
    ],
)
def test_audit_disagreement_needs_the_reward_rising_and_the_exploited_share_rising(rewards, audited, agreed, fires):
    assert (audit_disagreement(steps(rewards, audited, agreed), T) is not None) is fires


@pytest.mark.parametrize(
    "signal_counts, rewards, fires",
    [
        ([0, 0, 0, 4, 6, 8], [0.3, 0.3, 0.3, 0.5, 0.7, 0.9], True),  # a signal on most paid completions, reward up
        ([0, 0, 0, 4, 6, 8], [0.3] * 6, False),  # the signal alone (reward flat)
        ([8, 8, 8, 8, 8, 8], [0.3, 0.3, 0.3, 0.5, 0.7, 0.9], False),  # there from the start: not rising
        ([0, 0, 0, 1, 1, 1], [0.3, 0.3, 0.3, 0.5, 0.7, 0.9], False),  # a small share
    ],
)
def test_signal_rise(signal_counts, rewards, fires):
    hist = steps(rewards, signals=[{"answer.several": n} if n else {} for n in signal_counts])
    f = signal_rise(hist, T)
    assert (f is not None) is fires
    if fires:
        assert f.figures["signal"] == "answer.several"


@pytest.mark.parametrize(
    "tops, fires",
    [
        ([("A", 6, 8), ("A", 7, 8)], True),  # one answer on most prompts, two steps running
        ([("A", 6, 8), ("B", 7, 8)], False),  # different strings
        ([("A", 1, 8), ("A", 6, 8)], False),  # only one step
        ([("A", 3, 4), ("A", 3, 4)], False),  # too few prompts
        ([("A", 4, 12), ("A", 4, 12)], False),  # a third of the prompts
    ],
)
def test_one_answer(tops, fires):
    hist = [
        StepStats(step=i + 1, reward=0.5, top_answer=a, top_answer_prompts=n, paid_prompts=p)
        for i, (a, n, p) in enumerate(tops)
    ]
    assert (one_answer(hist, T) is not None) is fires


@pytest.mark.parametrize(
    "len_paid, agreed, fires",
    [
        ([20, 20, 20, 40, 44, 46], [8, 8, 8, 2, 2, 2], True),  # paid ones grow while the audit refuses them
        ([20, 20, 20, 40, 44, 46], 8, False),  # they grow and the audit agrees: honest (worked chains are longer)
        ([20, 20, 20, 22, 21, 20], [8, 8, 8, 2, 2, 2], False),  # the audit refuses, the length does not move
    ],
)
def test_length_divergence(len_paid, agreed, fires):
    hist = steps([0.3] * 6, 8, agreed, len_paid=len_paid, len_unpaid=20.0)
    assert (length_divergence(hist, T) is not None) is fires


@pytest.mark.parametrize(
    "rewards, evals, agreed, fires",
    [
        ([0.3, 0.3, 0.3, 0.6, 0.7, 0.8], {3: 0.2, 6: 0.2}, 2, True),  # reward up, held-out flat, audit refuses
        ([0.3, 0.3, 0.3, 0.6, 0.7, 0.8], {3: 0.2, 6: 0.5}, 2, False),  # held-out follows
        ([0.3, 0.3, 0.3, 0.6, 0.7, 0.8], {3: 0.2, 6: 0.2}, 8, False),  # held-out lags but the audit agrees
        ([0.3, 0.3, 0.3, 0.3, 0.3, 0.3], {3: 0.2, 6: 0.2}, 2, False),  # nothing rises
    ],
)
def test_reward_not_heldout(rewards, evals, agreed, fires):
    hist = steps(rewards, 8, agreed, eval_acc=[evals.get(i + 1) for i in range(len(rewards))])
    assert (reward_not_heldout(hist, T) is not None) is fires


def test_an_honest_run_shape_raises_nothing():
    """Reward, length ratio and held-out all rising, the audit agreeing: every single signal moves, no rule fires."""
    n = 12
    hist = steps(
        [0.3 + 0.05 * i for i in range(n)],
        8,
        8,
        len_paid=[20 + 3 * i for i in range(n)],
        len_unpaid=20.0,
        eval_acc=[0.1 + 0.05 * i if i % 4 == 3 else None for i in range(n)],
        signals=[{"format.odd_tags": 1}] * n,
    )
    assert [evaluate(hist[: i + 1], T) for i in range(n)] == [[]] * n


def test_step_stats_counts_paid_audited_and_one_answer():
    rows = [
        Completion("<think>e</think><answer>1234</answer>", f"p{i}", str(i), 1.0, "CORRECT", ("answer.several",), 12)
        for i in range(4)
    ]
    rows += [Completion("<think>e</think><answer>7</answer>", "q", "8", 0.0, "INCORRECT", (), 6)]
    s = step_stats(5, rows, {0: 0.0, 1: 1.0, 4: 0.0})
    assert (s.paid, s.audited, s.agreed, s.agreement, s.sampled) == (4, 2, 1, 0.5, 3)
    assert s.metrics()["alarm/exploited"] == 1 / 3
    s8 = step_stats(5, rows, {0: 0.0, 1: 1.0}, sampled=8)  # the audit's sample of 8, its 2 paid rows re-graded
    assert (s8.audited, s8.agreed, s8.sampled, s8.metrics()["alarm/exploited"]) == (2, 1, 8, 1 / 8)
    assert (s.top_answer, s.top_answer_prompts, s.paid_prompts) == ("<answer>1234</answer>", 4, 4)
    assert s.signals == {"answer.several": 4} and (s.len_paid, s.len_unpaid) == (12, 6)
    assert s.metrics()["alarm/signal/answer.several"] == 1.0
    assert answer_string("no think here") == "no think here"


@pytest.mark.parametrize("field, value", [("on_alarm", "stop"), ("audit", 0.5), ("canary_every", 5)])
def test_alarm_settings_without_the_alarm_are_refused(field, value):
    with pytest.raises(ValueError, match=f"{field} needs alarm: true"):
        GRPOConfig(**{field: value})
    assert getattr(GRPOConfig(alarm=True, **{field: value}), field) == value


def test_the_audit_share_defaults_to_five_percent_with_the_alarm():
    assert GRPOConfig().audit_share == 0.0 and GRPOConfig(alarm=True).audit_share == 0.05
    assert issubclass(ConfigError, ValueError)


def test_make_train_takes_the_one_flag(tmp_path):
    from trainer.pipelines.make_train import load_args

    cfg = load_args(["--alarm", "true", "--grpo.on_alarm", "stop", "--runs", str(tmp_path)])
    assert cfg.grpo.alarm and cfg.grpo.on_alarm == "stop" and cfg.grpo.audit_share == 0.05
    assert not load_args(["--runs", str(tmp_path)]).grpo.alarm  # off by default
