"""The differential check against Math-Verify (tests/attacks/answer_mv.py): every pair we pay and
Math-Verify refuses has a row with its reason in tests/data/mv_differential.tsv, and every row there is
still such a pair. A pair the service starts paying is a new battery row (the batteries hold the service to
their verdicts), so it lands here too."""

from __future__ import annotations

from tests.attacks.answer_mv import key, listed, math_verify_pays, paid_pairs, row


def _refused() -> dict[str, tuple[str, str, dict]]:
    out = {}
    for reference, completion, options in paid_pairs():
        k = key(reference, completion, options)
        if k not in out and not math_verify_pays(reference, completion):
            out[k] = (reference, completion, options)
    return out


def test_every_pair_we_pay_and_math_verify_refuses_is_listed_with_a_reason():
    refused, rows = _refused(), listed()
    missing = [row(*refused[k], "WHY WE PAY IT") for k in sorted(set(refused) - set(rows))]
    assert not missing, "pairs we pay and Math-Verify refuses, not in tests/data/mv_differential.tsv:\n" + "\n".join(
        missing
    )
    stale = sorted(set(rows) - set(refused))
    assert not stale, f"rows of tests/data/mv_differential.tsv that no longer apply (remove them): {stale}"
    assert all(reason.strip() and "WHY" not in reason for reason in rows.values())
    assert len(rows) == len(refused) > 0
