"""Properties of the ``math`` verifier, checked with hypothesis through a real server:

1. reformatting the whitespace of a reference or an answer (newlines, tabs, no-break spaces, spaces
   around operators and matrix separators) never changes the verdict;
2. a part of a reference that is not equal to the whole (one entry of a matrix or tuple, one term or some
   of the terms of a sum) is never CORRECT, however the reference is laid out.

``make test`` runs a bounded number of examples; RLVR_PROPERTY_EXAMPLES raises it (``bench/fuzz.py``
does, for a longer search).
"""

from __future__ import annotations

import os
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

EXAMPLES = int(os.environ.get("RLVR_PROPERTY_EXAMPLES", "25"))
SETTINGS = settings(
    max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck), derandomize=False
)
SPACES = [" ", "  ", "\n", "\t", "\r\n", " \n  ", "\u00a0", "\n\n", "\u2003"]


def boxed(s: str) -> str:
    return f"<think>r</think>The answer is $\\boxed{{{s}}}$."


# (reference, answer): correct and incorrect pairs of each shape the grader knows
PAIRS = [
    ("x^2 + 1", "1 + x^2"),
    ("x^2 + 2x + 1", "(x+1)^2"),
    ("x^2 + 1", "x^2 + 2"),
    ("\\frac{1}{2}", "0.5"),
    ("\\frac{3}{4}", "\\frac{2}{3}"),
    ("2 \\sqrt{3}", "\\sqrt{12}"),
    ("\\{1, 2, 3\\}", "\\{3, 2, 1\\}"),
    ("(1, 2)", "(1, 2)"),
    ("(1, 2)", "(2, 1)"),
    ("[0, 1)", "[0, 1)"),
    ("(-\\infty, 2]", "(-\\infty, 2)"),
    ("\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}", "\\begin{bmatrix} 1 & 2 \\\\ 3 & 4 \\end{bmatrix}"),
    ("\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}", "\\begin{pmatrix} 1 & 2 \\\\ 3 & 5 \\end{pmatrix}"),
    ("y = 2x + 1", "y = 1 + 2x"),
    ("x = 3", "3"),
    ("50 \\%", "0.5"),
    ("10 \\text{ cm}", "10"),
    ("\\text{yes}", "\\text{Yes}"),
    ("north east", "north west"),
]
# where whitespace may be added without changing what LaTeX reads: around + = , & and after a \\ row break
_GAP = re.compile(r"(?<!\\)[+=&]|(?<!\\),(?!\d{3})|\\\\(?=\s)")


def reformat(text: str, draw) -> str:
    """The same text with every whitespace run replaced and whitespace added at the safe gaps."""
    pieces = re.split(r"(\s+)", text)
    out = []
    for piece in pieces:
        if piece and piece.isspace():
            out.append(draw(st.sampled_from(SPACES)))
            continue
        last = 0
        for m in _GAP.finditer(piece):
            out.append(piece[last : m.start()])
            out.append(draw(st.sampled_from(["", *SPACES])) + m.group() + draw(st.sampled_from(["", *SPACES])))
            last = m.end()
        out.append(piece[last:])
    return draw(st.sampled_from(["", *SPACES])) + "".join(out) + draw(st.sampled_from(["", *SPACES]))


@pytest.mark.docker
@SETTINGS
@given(pair=st.sampled_from(PAIRS), data=st.data())
def test_reformatting_whitespace_never_changes_the_verdict(client, pair, data):
    gold, answer = pair
    variants = [(gold, answer)] + [(reformat(gold, data.draw), reformat(answer, data.draw)) for _ in range(3)]
    items = [{"verifier": "math", "completion": boxed(a), "reference": g} for g, a in variants]
    got = [(r.outcome, r.detail) for r in client.verify_batch(items)]
    assert got[0][0] in ("CORRECT", "INCORRECT"), got[0]
    for (g, a), (outcome, detail) in zip(variants, got, strict=True):
        assert outcome == got[0][0], f"{g!r} vs {a!r}: {outcome} ({detail}), unformatted: {got[0]}"


# -- a part of the reference is never the whole --------------------------------------------------------------
ints = st.integers(-30, 30)
nonzero = ints.filter(bool)


@st.composite
def matrix(draw):
    rows, cols = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    if rows * cols == 1:
        cols = 2
    cells = [[draw(ints) for _ in range(cols)] for _ in range(rows)]
    env = draw(st.sampled_from(["pmatrix", "bmatrix"]))
    body = " \\\\ ".join(" & ".join(str(c) for c in row) for row in cells)
    whole = f"\\begin{{{env}}} {body} \\end{{{env}}}"
    flat = [c for row in cells for c in row]
    parts = [str(draw(st.sampled_from(flat))), " & ".join(str(c) for c in cells[draw(st.integers(0, rows - 1))])]
    return whole, parts


MONOMIALS = ["x^3", "x^2", "x", "", "y", "xy", "\\sqrt{2}", "\\pi"]


@st.composite
def polynomial(draw):
    monos = draw(st.lists(st.sampled_from(MONOMIALS), min_size=2, max_size=4, unique=True))
    terms = [f"{draw(nonzero)}{m}" if m else str(draw(nonzero)) for m in monos]
    whole = " + ".join(terms).replace("+ -", "- ")
    keep = draw(st.lists(st.sampled_from(range(len(terms))), min_size=1, max_size=len(terms) - 1, unique=True))
    some = " + ".join(terms[i] for i in sorted(keep)).replace("+ -", "- ")
    return whole, [terms[draw(st.integers(0, len(terms) - 1))], some]


@st.composite
def tuple_(draw):
    xs = draw(st.lists(ints, min_size=2, max_size=4))
    return "(" + ", ".join(map(str, xs)) + ")", [str(draw(st.sampled_from(xs))), ", ".join(map(str, xs[:-1]))]


@pytest.mark.docker
@SETTINGS
@given(shape=st.one_of(matrix(), polynomial(), tuple_()), data=st.data())
def test_a_part_of_the_reference_is_never_correct(client, shape, data):
    whole, parts = shape
    gold = reformat(whole, data.draw)
    items = [{"verifier": "math", "completion": boxed(p), "reference": gold} for p in [whole, *parts]]
    got = client.verify_batch(items)
    assert got[0].outcome == "CORRECT", f"the whole {whole!r} vs the reference {gold!r}: {got[0].detail}"
    for p, r in zip(parts, got[1:], strict=True):
        assert r.outcome != "CORRECT", f"part {p!r} of {gold!r} graded CORRECT: {r.detail}"
