"""The ``format.*`` exploit signals (verifiers/shapes/signals.py) on real verdicts through the real service: each
is raised by a completion that tries it and never by a well-formed one with reasoning; a signal never
changes the reward unless the request enforces it."""

from __future__ import annotations

import pytest

from verifiers.kinds.format import format_signals
from verifiers.shapes.signals import SIGNALS

WELL_FORMED = "<think>3 + 4 is 7, and 7 - 2 is 5</think><answer>5</answer>"
# signal → completions that raise it (think_format's reward for each: the signal does not change it)
RAISED = {
    "format.odd_tags": [
        ("<think>a</think><answer>5</answer><answer>6</answer>", 0.0),  # a tag twice
        ("so <think>a</think><answer>5</answer>", 0.0),  # text before <think>
        ("<think>a <answer>5</answer></think>5", 1.0),  # an answer opened inside the reasoning (format holds)
    ],
    "format.think_is_answer": [
        ("<think>5</think><answer>5</answer>", 1.0),
        ("<think> 1 2 </think>12", 1.0),
    ],
}
NOT_RAISED = [WELL_FORMED, "<think>x</think>5", "<think>the sum is 12</think><answer>12</answer>"]


def test_every_format_signal_has_a_case():
    assert set(RAISED) == {name for name in SIGNALS if name.startswith("format.")}


@pytest.mark.parametrize("completion", NOT_RAISED)
def test_a_well_formed_completion_raises_none(completion):
    assert format_signals(completion) == []


@pytest.mark.docker
@pytest.mark.parametrize("name", sorted(RAISED))
def test_a_completion_that_tries_it_raises_the_signal_and_a_well_formed_one_does_not(client, name):
    items = [{"verifier": v, "completion": c} for c, _ in RAISED[name] for v in ("think_format", "tag_count")]
    results = client.verify_batch([*items, {"verifier": "think_format", "completion": WELL_FORMED}])
    for (completion, reward), fmt, tags in zip(RAISED[name], results[0:-1:2], results[1:-1:2], strict=True):
        assert name in fmt.signals and name in tags.signals, (completion, fmt.signals, tags.signals)
        assert fmt.reward == reward, (completion, fmt.detail)
    assert results[-1].signals == [] and results[-1].reward == 1.0


@pytest.mark.docker
def test_r1_carries_the_format_signal_and_enforcing_it_refuses_the_reward(client):
    completion = "<think>5</think><answer>5</answer>"
    plain = client.verify("r1", completion, "5")
    assert plain.reward == 1.0 and "format.think_is_answer" in plain.signals
    enforced = client.verify("r1", completion, "5", options={"enforce_signals": "format.think_is_answer"})
    assert (enforced.outcome, enforced.reward) == ("INCORRECT", 0.0)
