"""Properties of the ``math`` verifier, checked with hypothesis through a real server:

1. reformatting the whitespace of a reference or an answer (newlines, tabs, no-break spaces, spaces
   around operators and matrix separators) never changes the verdict;
2. a part of a reference that is not equal to the whole (one entry of a matrix or tuple, one term or some
   of the terms of a sum) is never CORRECT, however the reference is laid out;
3. appending a hedge, a second different answer or an ∞ to an answer (inside the box or around it) never
   raises its reward (each is graded 0);
4. writing a correct answer with Unicode forms (``½``, ``x²``, ``√2``, ``π``, full-width digits), thousands
   spaces, e-notation or other whitespace never lowers its reward.

Deterministic and complete over the small tables: properties 1, 3 and 4 are parametrized over every
row and try every whitespace, hedge and form against it (the cross product, no sampling); property 2
draws matrices, sums and tuples with ``derandomize=True`` (the same examples every run, the failing one
printed), 25 of them; RLVR_PROPERTY_EXAMPLES (``bench/tools/fuzz.py``) raises that and searches afresh.
``test_every_form_applies_to_some_answer`` keeps each table row able to apply.
"""

from __future__ import annotations

import os
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

EXAMPLES = int(os.environ.get("RLVR_PROPERTY_EXAMPLES", "25"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
    derandomize="RLVR_PROPERTY_EXAMPLES" not in os.environ,  # bench/tools/fuzz.py sets it: a fresh search each time
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


def spaced(text: str, space: str, gap: str) -> str:
    """``text`` with every whitespace run replaced by ``space`` and ``gap`` added around each safe gap."""
    out = re.sub(r"\s+", lambda _: space, text)
    return gap + _GAP.sub(lambda m: gap + m.group() + gap, out) + gap


def variants_of(text: str) -> list[str]:
    """Every whitespace of SPACES, at every run and gap; and with no space added at the gaps."""
    return [spaced(text, sp, sp) for sp in SPACES] + [spaced(text, " ", "")]


def reformat(text: str, draw) -> str:
    """The same text with every whitespace run replaced and whitespace added at the safe gaps (drawn)."""
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


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.parametrize("pair", PAIRS, ids=[f"{g} | {a}" for g, a in PAIRS])
def test_reformatting_whitespace_never_changes_the_verdict(client, pair):
    gold, answer = pair
    variants = [(gold, answer)] + list(zip(variants_of(gold), variants_of(answer), strict=True))
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


@pytest.mark.slow
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


# -- hedging, a second answer or ∞ never raises a reward; Unicode and spacing never lower it ------------------
# (reference, a correct answer, a wrong value of the same kind)
KNOWN = [
    ("3", "3", "4"),
    ("-7", "-7", "7"),
    ("\\frac{1}{2}", "\\frac{1}{2}", "\\frac{1}{3}"),
    ("\\frac{1}{2}", "0.5", "0.25"),
    ("2\\sqrt{3}", "\\sqrt{12}", "3\\sqrt{2}"),
    ("x^2 + 1", "1 + x^2", "x^2 - 1"),
    ("\\pi", "\\pi", "2\\pi"),
    ("(1, 2)", "(1, 2)", "(2, 1)"),
    ("\\{1, 2\\}", "\\{2, 1\\}", "\\{1, 3\\}"),
    ("[0, 1)", "[0, 1)", "[0, 1]"),
    ("x = 3", "x = 3", "x = 4"),
    ("10 \\text{ cm}", "10 \\text{ cm}", "10 \\text{ m}"),
    ("1000", "1000", "100"),
]
HEDGES = [
    "{a} \\text{{ (or possibly {b})}}",
    "{a} \\text{{ or }} {b}",
    "{a}, {b}",
    "\\text{{maybe }} {a}",
    "{a} \\text{{ if }} n > 0",
    "{a} \\text{{ (probably)}}",
    "\\text{{either }} {a} \\text{{ or }} {b}",
    "{a} \\text{{ or }} \\infty",
    "{a}, \\infty",
    "\\infty",
    "{a} \\text{{ otherwise }} {b}",
    "{a} \\text{{ unless }} n = 0",
]
AROUND = [
    "The answer is $\\boxed{{{a}}}$ (or possibly ${b}$).",
    "Maybe the answer is $\\boxed{{{a}}}$.",
    "It is ${b}$ or $\\boxed{{{a}}}$.",
    "$\\boxed{{{a}}}$ or $\\boxed{{{b}}}$",
    "$\\boxed{{{a}}}$ if $n$ is odd, otherwise ${b}$.",
]


def reward_of(client, gold, completions, options=None):
    items = [{"verifier": "math", "completion": c, "reference": gold, "options": options or {}} for c in completions]
    return [r.reward for r in client.verify_batch(items)]


@pytest.mark.docker
@pytest.mark.parametrize("which", ["right", "wrong"])
@pytest.mark.parametrize("known", KNOWN, ids=[k[0] for k in KNOWN])
def test_a_hedge_a_second_answer_or_infinity_never_raises_the_reward(client, known, which):
    gold, right, wrong = known
    a, b = (right, wrong) if which == "right" else (wrong, right)
    completions = [boxed(a)] + [boxed(h.format(a=a, b=b)) for h in HEDGES] + [t.format(a=a, b=b) for t in AROUND]
    got = reward_of(client, gold, completions)
    assert got[0] == (1.0 if a == right else 0.0), f"{a!r} vs {gold!r}: {got[0]}"
    for c, r in zip(completions[1:], got[1:], strict=True):
        assert r <= got[0], f"{c!r} vs {gold!r} raised the reward {got[0]} -> {r}"
        assert r == 0.0, f"hedged {c!r} vs {gold!r} was paid"


# Unicode and typesetting forms: (LaTeX, its Unicode or other written form)
FORMS = [
    ("\\frac{1}{2}", "½"),
    ("\\frac{3}{4}", "¾"),
    ("x^2", "x²"),
    ("x^3", "x³"),
    ("\\sqrt{2}", "√2"),
    ("\\sqrt{3}", "√3"),
    ("\\pi", "π"),
    ("\\cdot", "·"),
    ("\\le", "≤"),
    ("\\infty", "∞"),
    ("-", "−"),
    ("1000", "1\\,000"),
    ("1000", "1 000"),
    ("1500", "1.5e3"),
]
UNICODE_PAIRS = [
    ("\\frac{1}{2}", "\\frac{1}{2}"),
    ("\\frac{3}{4} + x^2", "x^2 + \\frac{3}{4}"),
    ("2\\sqrt{2}", "2\\sqrt{2}"),
    ("x^3 - x^2", "x^3 - x^2"),
    ("\\sqrt{3}\\pi", "\\pi\\sqrt{3}"),
    ("(-\\infty, 2]", "(-\\infty, 2]"),
    ("x \\le 2", "x \\le 2"),
    ("1000 - 1", "999"),
    ("1500", "1500"),
    ("-7", "-7"),
    ("6", "2 \\cdot 3"),
    ("1000", "1000"),
    ("\\frac{\\pi}{2}", "\\frac{\\pi}{2}"),
]
FULLWIDTH = str.maketrans("0123456789", "０１２３４５６７８９")


def forms_of(answer: str) -> list[str]:
    """Each form that applies written alone, all of them together, and each of those with full-width digits."""
    one = [answer.replace(latex, form) for latex, form in FORMS if latex in answer]
    every = answer
    for latex, form in FORMS:
        every = every.replace(latex, form) if latex in every else every
    written = list(dict.fromkeys([*one, every]))
    return written + [w.translate(FULLWIDTH) for w in [answer, *written]]


def test_every_form_applies_to_some_answer():
    """No row of FORMS is dead: each rewrites at least one answer of UNICODE_PAIRS."""
    dead = [(latex, form) for latex, form in FORMS if not any(latex in a for _, a in UNICODE_PAIRS)]
    assert not dead, f"forms no answer contains: {dead}"


@pytest.mark.docker
@pytest.mark.parametrize("pair", UNICODE_PAIRS, ids=[f"{g} | {a}" for g, a in UNICODE_PAIRS])
def test_unicode_and_spacing_forms_never_lower_the_reward(client, pair):
    gold, answer = pair
    variants = forms_of(answer) + variants_of(answer)
    got = reward_of(client, gold, [boxed(answer)] + [boxed(v) for v in variants])
    assert got[0] == 1.0, f"{answer!r} vs {gold!r} not paid"
    for v, r in zip(variants, got[1:], strict=True):
        assert r >= got[0], f"{v!r} (a form of {answer!r}) vs {gold!r}: reward {r} < {got[0]}"
