"""The evaluator (trainer/evaluation/evaluator.py) that training's periodic and final evaluation and `make eval` share:
its generation loop batches whole problems and keeps their order, greedy ``evaluate`` is that loop plus the
reward and the aggregate, and the aggregate is ``make eval``'s (trainer.evaluation.passk: ungraded samples out of the
denominator, counted apart).
A real tiny model built from a config; rewards from a plain Python function (the service's own path is
covered end to end in tests/trainer/test_eval_service.py and tests/trainer/test_train.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.trainer.test_rollout import tiny_model, tiny_tokenizer
from trainer.data import Example
from trainer.evaluation import passk
from trainer.evaluation.evaluator import evaluate, generate_batches, greedy_figures
from trainer.evaluation.heldout import sampled_figures
from trainer.grpo.rewards import PythonReward, Score
from trainer.rollout.decode import generate_rollout

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


class ByIndex:
    """A RewardFn that grades the i-th completion it sees (over all its calls) with ``outcomes[i]``."""

    def __init__(self, outcomes: list[str]):
        self.outcomes, self.seen = outcomes, 0

    def __call__(self, completions, references, prompts):
        out = [
            Score(1.0 if o == "CORRECT" else 0.0, o) for o in self.outcomes[self.seen : self.seen + len(completions)]
        ]
        self.seen += len(completions)
        return out


EIGHT = ["SANDBOX_ERROR", "CORRECT", "INCORRECT", "CORRECT", "SANDBOX_ERROR", "CORRECT", "NO_ANSWER", "INCORRECT"]


def test_training_accuracy_is_make_evals_ungraded_samples_out_of_the_denominator():
    """2 of 8 samples SANDBOX_ERROR: training's evaluator and make eval's report (trainer.evaluation.passk) both say
    3 correct of 6 graded, reward mean over the 6, and count the 2 apart."""
    tok = tiny_tokenizer()
    model = tiny_model(tok)
    examples = [Example(f"{i}+1=", str(i + 1)) for i in range(8)]
    got = evaluate(model, tok, examples, ByIndex(EIGHT), max_new_tokens=3, batch_size=3)
    report = passk.build_report(
        [
            {
                "id": i,
                "sample": 0,
                "verifier": "v",
                "reward": 1.0 if o == "CORRECT" else 0.0,
                "outcome": o,
                "elapsed_s": 0.0,
                "components": {},
            }
            for i, o in enumerate(EIGHT)
        ]
    )
    assert report["accuracy"] == 0.5 and report["infra_errors"] == 2
    assert got["accuracy"] == report["accuracy"] == 3 / 6 and got["reward_mean"] == report["reward_mean"]
    assert got["ungraded"] == 2 and got["n"] == 8 and got["outcomes"]["SANDBOX_ERROR"] == 2
    assert greedy_figures([], [])["accuracy"] is None  # nothing graded: no accuracy, as make eval says n/a


def test_sampled_figures_aggregate_as_make_eval_does():
    """k=4 samples of 2 problems, 2 of the 8 SANDBOX_ERROR: sampled accuracy and pass@4 as trainer.evaluation.passk
    computes them (problem 0 keeps 2 graded samples, fewer than k, so pass@4 is over problem 1 alone)."""
    tok = tiny_tokenizer()
    model = tiny_model(tok)
    outcomes = [
        "SANDBOX_ERROR",
        "CORRECT",
        "SANDBOX_ERROR",
        "INCORRECT",
        "INCORRECT",
        "CORRECT",
        "NO_ANSWER",
        "CORRECT",
    ]
    got = sampled_figures(model, tok, EXAMPLES[:2], ByIndex(outcomes), k=4, max_new_tokens=3, batch_size=4)
    records = [
        {
            "id": i // 4,
            "sample": i % 4,
            "verifier": "v",
            "reward": float(o == "CORRECT"),
            "outcome": o,
            "elapsed_s": 0.0,
            "components": {},
        }
        for i, o in enumerate(outcomes)
    ]
    report = passk.build_report(records, extra_ks=[4])
    assert got["sampled_accuracy"] == report["accuracy"] == 3 / 6
    assert got["pass@4"] == report["pass@k"]["4"] == 1.0 and report["pass@k_problems"]["4"] == 1
    assert got["n_samples"] == 6 and got["sampled_ungraded"] == 2


# callers of VerifierClient.verify_batch in trainer/ other than trainer/grading.py (none left)
PENDING_DIRECT_CALLERS: dict[str, int] = {}


def test_trainer_grades_through_one_call():
    """trainer.grading.grade_items is the one grading call: make eval's Grader uses it, and no new module
    calls the client's verify_batch on its own (the PENDING ones are listed; drop a line once moved)."""
    root = Path(__file__).resolve().parents[2]
    seen = {}
    for path in sorted((root / "trainer").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        n = path.read_text().count(".verify_batch(")
        if n and rel != "trainer/grading.py":
            seen[rel] = n
    assert "grade_items(" in (root / "trainer/evaluation/grade.py").read_text()
    assert seen == PENDING_DIRECT_CALLERS, f"call trainer.grading.grade_items instead: {seen}"
