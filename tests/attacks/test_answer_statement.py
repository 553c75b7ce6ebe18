"""What a reader reads around the final answer (issue 48), through the real service: every family of
tests/attacks/answer_statement_ops.py (an operator against the box, a negation in the statement, other box
commands and tag spellings, hidden answers, several choices, a second value in any language or none, the verl
routes' forms) applied to correct seeds of every answer reader (``math``, ``r1``, ``arith_steps``,
``answer_consistency``, and the verl routes through verl's own ``compute_score_batch``). Invariant: the
mutation gets 0 (``r1``: at most its format part)."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.attacks.answer_ops import READER_LABELS, cases_by_reader, items, violations
from tests.attacks.answer_statement_ops import STATEMENT_OPERATORS

SEED, PER = 48, 3  # cases per (family, reader)
# a family that cannot apply to a reader: choices need a letter answer (math only); a hidden answer and the verl
# forms need the route's own seeds; the verl routes have no box to adjoin to
NOT_APPLICABLE = (
    {("choice", r) for r in READER_LABELS if r != "math"}
    | {("verl_forms", r) for r in READER_LABELS if r != "verl"}
    | {("hidden", "verl"), ("adjoin", "verl")}
)


def test_every_family_applies_to_every_reader_and_the_cases_are_the_same_every_run():
    batch = cases_by_reader(SEED, PER)
    got = Counter((c.op, c.seed.label.split(":")[0]) for c in batch)
    want = {(op, r) for op in STATEMENT_OPERATORS for r in READER_LABELS} - NOT_APPLICABLE
    assert {k for k, n in got.items() if n == PER} == want
    assert [c.completion for c in batch] == [c.completion for c in cases_by_reader(SEED, PER)]


def _grade(client, target, batch):
    """Seed then mutation for each case; verl seeds through verl's compute_score_batch, the rest in one batch."""
    from types import SimpleNamespace

    from verifiers.integrations.verl import compute_score_batch

    results = [None] * (2 * len(batch))
    plain = [n for n, c in enumerate(batch) if not c.seed.route]
    for n, r in zip(plain, _pairs(client.verify_batch(items([batch[n] for n in plain]))), strict=True):
        results[2 * n], results[2 * n + 1] = r
    verl = [n for n, c in enumerate(batch) if c.seed.route]
    sources = [batch[n].seed.route for n in verl for _ in (0, 1)]
    texts = [t for n in verl for t in (batch[n].seed.completion, batch[n].completion)]
    truths = [batch[n].seed.reference for n in verl for _ in (0, 1)]
    scores = compute_score_batch(sources, texts, truths, target=target)
    for k, n in enumerate(verl):
        for j in (0, 1):
            s = scores[2 * k + j]
            results[2 * n + j] = SimpleNamespace(reward=s["score"], outcome=s["outcome"], detail=s["signals"])
    return results


def _pairs(results):
    return list(zip(results[0::2], results[1::2], strict=True))


@pytest.mark.docker
@pytest.mark.parametrize("family", sorted(STATEMENT_OPERATORS))
def test_what_stands_around_the_answer_is_read_by_every_reader(client, verifier_server, family):
    batch = [c for c in cases_by_reader(SEED, PER) if c.op == family]
    results = _grade(client, verifier_server.target, batch)
    assert sum(r.reward for r in results[0::2]) == len(batch), "the seeds are correct answers"
    bad = violations(batch, results)
    assert not bad, f"{len(bad)} of {len(batch)} {family} mutations were paid:\n" + "\n".join(bad)
