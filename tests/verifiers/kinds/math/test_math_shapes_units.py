"""Comparisons that respect shape and units (issue 48), through the real service: a finite set never equals an
interval (in either order of its elements, either side the reference); an angle's unit is part of it (radians
against degrees refused, never equal by number); compound and volume units convert (m/s ↔ km/h, cm³ ↔ mL)
instead of reading as "several units"; both bounds of one variable joined by "and" are the interval they state."""

from __future__ import annotations

import pytest

# (answer, reference, outcome)
PAIRS = [
    ("\\{2, 3\\}", "(2, 3)", "INCORRECT"),
    ("\\{3, 2\\}", "(2, 3)", "INCORRECT"),
    ("(2, 3)", "\\{2, 3\\}", "INCORRECT"),
    ("3 \\text{ or } 4", "(3, 4)", "INCORRECT"),
    ("3 \\text{ or } 4", "[3, 4]", "INCORRECT"),
    ("\\{1, 2, 3\\}", "\\{1, 2\\} \\cup \\{3\\}", "CORRECT"),
    ("6 \\text{ rad}", "6^\\circ", "INCORRECT"),
    ("30^\\circ", "\\frac{\\pi}{6}", "INCORRECT"),
    ("1 \\text{ m/s}", "3.6 \\text{ km/h}", "CORRECT"),
    ("2 \\text{ m/s}", "3.6 \\text{ km/h}", "INCORRECT"),
    ("5 \\text{ cm}^3", "5 \\text{ mL}", "CORRECT"),
    ("5 \\text{ cm}^3", "5 \\text{ L}", "INCORRECT"),
    ("2 \\text{ L}", "2000 \\text{ mL}", "CORRECT"),
    ("x > 2 \\text{ and } x < 3", "(2, 3)", "CORRECT"),
    ("x < 3 \\text{ and } x > 2", "(2, 3)", "CORRECT"),
    ("x \\ge 2 \\text{ and } x \\le 3", "(2, 3)", "INCORRECT"),
    ("x > 2 \\text{ and } x > 3", "(2, 3)", "INCORRECT"),
]


@pytest.mark.docker
def test_shapes_and_units_compare_as_a_reader_would(client):
    items = [
        {"verifier": "math", "completion": f"<think>r</think>The answer is $\\boxed{{{a}}}$.", "reference": ref}
        for a, ref, _ in PAIRS
    ]
    got = client.verify_batch(items)
    wrong = [
        f"{a!r} vs {ref!r}: {r.outcome} (want {want}) [{r.detail[:90]}]"
        for (a, ref, want), r in zip(PAIRS, got, strict=True)
        if r.outcome != want
    ]
    assert not wrong, "\n".join(wrong)
