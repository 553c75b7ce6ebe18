"""The evaluator (trainer/evaluator.py) that training's periodic and final evaluation and `make eval` share:
its generation loop batches whole problems and keeps their order, greedy ``evaluate`` is that loop plus the
reward and the aggregate, and the aggregate keeps training's definition (every sample in the denominator).
A real tiny model built from a config; rewards from a plain Python function (the service's own path is
covered end to end in tests/test_eval_service.py and tests/test_train.py)."""

from __future__ import annotations

import pytest
import torch

from tests.test_rollout import tiny_model, tiny_tokenizer
from trainer.data import Example
from trainer.decode import generate_rollout
from trainer.evaluator import evaluate, generate_batches, greedy_figures
from trainer.rewards import PythonReward, Score

torch.set_num_threads(1)
EXAMPLES = [Example(f"{i}+{i + 1}=", str(2 * i + 1)) for i in range(5)]


def test_generate_batches_groups_whole_problems_in_order():
    tok = tiny_tokenizer()
    model = tiny_model(tok)
    counts = [1, 2, 1, 3, 1]
    calls = list(generate_batches(model, tok, list(zip(EXAMPLES, counts, strict=True)), per_call=2, max_new_tokens=4))
    # g: the most completions any problem of the call wants
    assert [(start, g) for start, g, _ in calls] == [(0, 2), (2, 3), (4, 1)]
    for start, g, ro in calls:
        part = EXAMPLES[start : start + 2]
        assert len(ro) == len(part) * g
        assert ro.references == [ex.reference for ex in part for _ in range(g)]
    with pytest.raises(ValueError, match="per_call"):
        next(generate_batches(model, tok, [(EXAMPLES[0], 1)], per_call=0, max_new_tokens=4))


def test_greedy_evaluate_is_the_loop_the_reward_and_the_aggregate():
    """evaluate == generate_rollout (greedy, the same batches) graded by the reward, counted by hand."""
    tok = tiny_tokenizer()
    model = tiny_model(tok)
    reward = PythonReward(lambda c, r: 1.0 if len(c) % 2 == 0 else 0.5)  # CORRECT on an even length
    got = evaluate(model, tok, EXAMPLES, reward, max_new_tokens=6, batch_size=2)
    texts = []
    for i in range(0, len(EXAMPLES), 2):
        texts += generate_rollout(model, tok, EXAMPLES[i : i + 2], 1, max_new_tokens=6, do_sample=False).texts
    assert got["completions"] == texts and got["n"] == 5
    even = sum(len(t) % 2 == 0 for t in texts)
    assert got["accuracy"] == even / 5 and got["reward_mean"] == pytest.approx((even + 0.5 * (5 - even)) / 5)
    assert sum(got["outcomes"].values()) == 5


def test_training_accuracy_counts_ungraded_samples_in_the_denominator():
    scores = [Score(1.0, "CORRECT"), Score(0.0, "INCORRECT"), Score(0.0, "SANDBOX_ERROR"), Score(1.0, "CORRECT")]
    fig = greedy_figures(scores, ["a", "b", "c", "d"])
    assert fig["accuracy"] == 0.5 and fig["reward_mean"] == 0.5 and fig["n"] == 4
    assert fig["outcomes"] == {"CORRECT": 2, "INCORRECT": 1, "SANDBOX_ERROR": 1}
    assert greedy_figures([], [])["accuracy"] == 0.0
