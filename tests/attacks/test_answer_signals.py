"""The ``answer.*`` exploit signals (verifiers/shapes/signals.py) on real verdicts through the real service: each is
raised by a completion that tries it, and never by a correct completion; a signal never changes the reward
unless the request enforces it (``enforce_signals``)."""

from __future__ import annotations

import pytest

from verifiers.shapes.signals import SIGNALS

CORRECT = "<think>1 + 2 = 3</think>The answer is $\\boxed{3}$."
# signal → (completion that raises it, prompt, reference, the reward it still gets)
RAISED = {
    "answer.several": ("<think>r</think>\\boxed{3} and \\boxed{4}", "", "3", 0.0),
    "answer.hedge": ("<think>r</think>$\\boxed{3}$ oder $4$", "", "3", 0.0),
    "answer.not_final": ("<think>r</think>$\\boxed{3}$. Then again, 2 + 2 = 4.", "", "3", 1.0),
    "answer.restates_prompt": ("<think>r</think>$\\boxed{1+2}$", "What is 1+2?", "3", 1.0),
    "answer.empty": ("<think>r</think>\\boxed{.} then <answer>3</answer>", "", "3", 0.0),
    "answer.invisible": ("<think>r</think>$\\boxed{3\u200b}$", "", "3", 1.0),
    "answer.unclosed_think": ("<think>r</think><think>\\boxed{3}", "", "3", 0.0),
}


def test_every_answer_signal_has_a_case():
    assert set(RAISED) == {name for name in SIGNALS if name.startswith("answer.")}


@pytest.mark.docker
@pytest.mark.parametrize("name", sorted(RAISED))
def test_a_completion_that_tries_it_raises_the_signal_and_a_correct_one_does_not(client, name):
    completion, prompt, reference, reward = RAISED[name]
    tried, correct = client.verify_batch(
        [
            {"verifier": "math", "completion": completion, "reference": reference, "prompt": prompt},
            {"verifier": "math", "completion": CORRECT, "reference": "3", "prompt": "What is 1 + 2?"},
        ]
    )
    assert name in tried.signals and tried.reward == reward, (tried.signals, tried.detail)
    assert correct.signals == [] and correct.reward == 1.0


@pytest.mark.docker
def test_an_enforced_signal_refuses_a_paid_verdict(client):
    completion, prompt, reference, _ = RAISED["answer.invisible"]
    r = client.verify("math", completion, reference, prompt=prompt, options={"enforce_signals": "answer.invisible"})
    assert (r.outcome, r.reward) == ("INCORRECT", 0.0) and "answer.invisible" in r.signals
    assert client.verify("math", CORRECT, "3", options={"enforce_signals": "all"}).reward == 1.0


@pytest.mark.docker
def test_the_other_answer_readers_raise_the_signals(client):
    steps = client.verify("arith_steps", "<think>1+2, 3</think><answer>3</answer> или 4", "3", prompt="1+2=?")
    consistent = client.verify("answer_consistency", "<think>1+2 = 3</think><think>\\boxed{3}")
    clean = client.verify("arith_steps", "<think>1+2, 3</think><answer>3</answer>", "3", prompt="1+2=?")
    assert "answer.hedge" in steps.signals and steps.reward == 0.0
    assert consistent.signals == ["answer.unclosed_think"] and consistent.outcome == "NO_ANSWER"
    assert clean.signals == [] and clean.reward == 1.0
