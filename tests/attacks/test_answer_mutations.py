"""The mutation fuzzer for final answers (tests/attacks/answer_ops.py) through a real service: a fixed seed
and a bounded budget (``CI_BUDGET`` cases, each operator in turn), every mutation graded beside its seed in one
VerifyBatch. Invariant: a mutation never raises the reward; one that adds a wrong second answer, a hedge, or
hides the answer in reasoning gets 0. ``bench/math_grading/fuzz_answers.py`` runs the same with a larger budget."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.attacks.answer_ops import OPERATORS, ZERO, cases, items, seeds, violations

SEED, CI_BUDGET = 36, 105  # 5 cases per operator


def test_every_operator_applies_and_the_cases_are_the_same_every_run():
    batch = cases(SEED, CI_BUDGET)
    assert len(batch) == CI_BUDGET and len({s.reference for s in seeds()}) > 80
    assert set(Counter(c.op for c in batch)) == set(OPERATORS), "an operator never applied to any seed"
    assert [c.completion for c in batch] == [c.completion for c in cases(SEED, CI_BUDGET)]
    assert all(c.completion != c.seed.completion for c in batch)


@pytest.mark.docker
def test_a_mutation_never_raises_the_reward(client):
    batch = cases(SEED, CI_BUDGET)
    results = client.verify_batch(items(batch))
    assert sum(r.reward for r in results[0::2]) >= 0.9 * len(batch), "the seeds are correct answers"
    bad = violations(batch, results)
    assert not bad, f"{len(bad)} of {len(batch)} mutations broke their invariant:\n" + "\n".join(bad)
    assert any(c.expect == ZERO for c in batch)
