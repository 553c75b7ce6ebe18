"""The ``math`` verifier against an adversarial battery (tests/data/math_battery.py): hundreds of cases
grouped by family (infinity, equations, hedges inside and around the answer, units, digit spacing,
scientific notation, Unicode and typesetting forms, false negatives, fragments of the reference, several
answers, controls), each with the verdict a careful human grader gives and why. Each family goes to a
real server as one VerifyBatch, so the battery costs a few sandbox jobs, not hundreds."""

from __future__ import annotations

from collections import defaultdict

import pytest

from tests.data.math_battery import CASES

FAMILIES: dict[str, list[tuple]] = defaultdict(list)
for _case in CASES:
    FAMILIES[_case[0]].append(_case)


def test_the_battery_is_hundreds_of_cases_in_families():
    assert len(CASES) >= 300 and len(FAMILIES) >= 12
    assert all(len(case) == 6 and case[5] for case in CASES), "every case says why"


@pytest.mark.docker
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family(client, family):
    cases = FAMILIES[family]
    items = [
        {"verifier": "math", "completion": comp, "reference": gold, "options": opts}
        for _, gold, comp, opts, _, _ in cases
    ]
    got = client.verify_batch(items)
    wrong = [
        f"  {gold!r} vs {comp[-70:]!r} {opts or ''}: {r.outcome}, a careful grader says {verdict} ({why}) "
        f"[{r.detail[:100]}]"
        for (_, gold, comp, opts, verdict, why), r in zip(cases, got, strict=True)
        if r.outcome != verdict or r.reward != (1.0 if verdict == "CORRECT" else 0.0)
    ]
    assert not wrong, f"{len(wrong)} of {len(cases)} {family} cases graded otherwise:\n" + "\n".join(wrong)


# verl's numina_* and math_dapo routes send fallback=full; a bare LaTeX response is its own answer (the
# final-answer rule), never NO_ANSWER or its last number: (data_source, response, ground truth, score)
VERL_BARE = [
    ("numina_synthetic_math", "\\frac{\\sqrt{3}}{2}", "\\frac{\\sqrt{3}}{2}", 1.0),
    ("numina_olympiads", "x^3 - 3x^2 + 3x - 1", "(x-1)^3", 1.0),
    ("numina_olympiads", "x^3 - 3x^2 + 3x - 1", "-1", 0.0),
    ("numina_cn_k12", "\\begin{bmatrix}1&2\\\\3&4\\end{bmatrix}", "\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}", 1.0),
    ("numina_cn_k12", "\\begin{bmatrix}1&2\\\\3&4\\end{bmatrix}", "4", 0.0),
    ("math_dapo", "So the answer is $\\frac{1}{2}$.", "0.5", 1.0),
]


@pytest.mark.docker
def test_verl_routes_read_a_bare_latex_response_whole(verifier_server):
    from verifiers.integrations.verl import compute_score_batch

    sources, responses, truths, want = zip(*VERL_BARE, strict=True)
    got = compute_score_batch(sources, responses, truths, target=verifier_server.target)
    assert [g["score"] for g in got] == list(want), [g["outcome"] for g in got]
