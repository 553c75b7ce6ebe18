"""fastparse (in_sandbox/math/fastparse.py) against latex2sympy's ANTLR parser: the same tree, or it declines.

The contract: for every string fastparse accepts, its tree is the one the ANTLR path builds (srepr, and every
node's class and arguments in stored order). Three sources of strings: (a) every string our grader hands the
parser on our whole corpus (tests/data/latex_parses.jsonl, recorded by bench/math_grading/parses.py), where the share
fastparse reads is also held to what bench/results/math.txt claims; (b) random LaTeX in and around its grammar
(latex_gen.py, seeded); (c) traps. And the check itself must fail on a wrong rule. Each comparison runs in a
fresh interpreter (fastparse_check.py): importing the grader patches Math-Verify for the whole process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.verifiers.kinds.math.latex_gen import Gen

ROOT = Path(__file__).resolve().parents[4]
PARSES = ROOT / "tests" / "data" / "latex_parses.jsonl"


def compare(strings: list[tuple[str, bool | None]], rule: str | None = None) -> list[dict]:
    q = json.dumps({"strings": strings, "break": rule})
    cmd = [sys.executable, "-m", "tests.verifiers.kinds.math.fastparse_check"]
    out = subprocess.run(cmd, cwd=ROOT, input=q, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def mismatches(rows: list[dict]) -> list[str]:
    return [f"{r['s']!r}\n  fast  {r['fast']}\n  antlr {r['antlr']}" for r in rows if r["same"] is False]


def test_the_corpus_strings_parse_as_antlr_does_and_most_take_the_fast_path():
    rows_in = [json.loads(x) for x in PARSES.read_text().splitlines()]
    rows = compare([(r["s"], r["is_real"]) for r in rows_in])
    assert not mismatches(rows), "\n".join(mismatches(rows)[:20])
    hit = [r["fast"] is not None for r in rows]
    suite = [h for h, r in zip(hit, rows_in, strict=True) if r["from"] == "mv_suite"]
    print(f"fast path: {sum(hit)}/{len(hit)} corpus strings, {sum(suite)}/{len(suite)} of Math-Verify's suite")
    assert sum(hit) >= 0.96 * len(hit)  # 685/713 when recorded
    assert sum(suite) >= 0.94 * len(suite)  # 316/334 when recorded


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_random_latex_parses_as_antlr_does_or_is_declined(seed):
    g = Gen(seed)
    rows = compare([(g.top(), True) for _ in range(1000)])
    assert not mismatches(rows), "\n".join(mismatches(rows)[:20])
    assert sum(r["fast"] is not None for r in rows) >= 500  # the generator exercises the fast path


# (text, what fastparse must do: "same" = accept with ANTLR's tree, "decline")
TRAPS = [
    ("2^3^4", "same"),  # left-associative in latex2sympy's grammar: (2^3)^4
    ("-2^2", "same"),  # -(2^2)
    ("\\frac12", "decline"),  # ANTLR refuses it
    ("1,000", "same"),  # a number, not the set {1, 0}
    ("1, 000", "same"),  # a set
    ("2\\sqrt{2}x", "same"),
    ("2 3", "same"),  # latex2sympy's mixed number: 2 + 3
    ("2\\frac{1}{2}", "same"),
    ("(1,2]", "same"),
    ("(2, 1)", "same"),  # an empty interval is the pair
    ("[1,2,3]", "same"),
    ("\\(1, 2\\)", "same"),
    ("\\{1,2\\}", "same"),
    ("{1}", "same"),  # a set, as a whole answer
    ("e^{i\\pi}", "same"),
    ("10\\%", "same"),
    ("x^2_1", "same"),
    ("x_n^2", "decline"),  # the power may go into the subscript
    ("f(x)", "same"),  # a function call
    ("x(x+1)", "same"),  # a product
    ("f(-1)", "same"),  # a product too
    ("x = 1, 2", "same"),  # Eq(x, {1, 2})
    ("x = 1, y = 2", "same"),  # {x = 1, y = 2}
    ("1 \\pm 2", "same"),
    ("x \\in [1,2] \\cup \\{3\\}", "same"),
    ("12:00", "same"),  # a ratio, 12/0
    ("I", "same"),
    ("E", "decline"),  # e-notation's letter
    ("d", "decline"),  # a differential's
    ("tr", "decline"),  # a keyword
    ("\\left(1\\right)", "decline"),
    ("1 < x \\le 2", "same"),
    ("\\text{(B)}", "same"),
    ("x^{2}(1)", "decline"),  # a function call raised to a power
    ("\\begin{pmatrix}1 & 2 \\\\ 3 & 4\\end{pmatrix}", "same"),
    ("\\begin{array}{cc}1 & 2 \\\\ 3 & 4 \\\\\\end{array}", "same"),
    ("\\begin{pmatrix}1 & 2 \\\\ 3\\end{pmatrix}", "decline"),  # ragged: ANTLR's path raises
    ("\\begin{pmatrix}1 \\end{bmatrix}", "decline"),
    ("[\\begin{pmatrix}1 \\end{pmatrix}]", "same"),
    ("\\sin(x) y", "same"),  # sin(x)*y
    ("\\sin x / 2", "same"),  # sin(x/2): the argument without parentheses is a product
    ("2 \\sin b \\cos a", "same"),  # the argument ends before another function
    ("\\sin^{-1}(x)", "same"),  # asin
    ("\\sin^0(x)", "same"),  # no power at all: latex2sympy tests the power's truth
    ("\\log_2 8", "same"),
    ("\\sum_{k=1}^{n} k^2 + 1", "same"),
    ("90^\\circ", "same"),  # degrees not converted: 90
    ("x^\\circle", "same"),
    ("x^T", "decline"),  # a transpose
    ("(p,q)=(3,2)", "same"),  # Eq(Tuple, Tuple): (3, 2) is an empty interval
    ("x=1,\\quadx=2", "same"),  # \\quad, then x
    ("053 \\%", "decline"),  # ANTLR's path raises (parse_expr of '053 ')
    ("053\\%", "same"),
    ("0 \\%", "same"),
    ("204_5", "same"),  # a base subscript, dropped: 204
    ("12_{10}", "same"),
    ("|x|+|y|", "same"),
    ("|x|^2", "same"),  # Pow(Abs(x), 2)
    ("1\\leq|z|\\leq 2", "same"),
    ("||x|-1|", "decline"),  # bars inside bars
    ("|x|_{1}", "decline"),  # an evaluation bar to latex2sympy
]


def test_traps():
    rows = compare([(t, True) for t, _ in TRAPS])
    for (text, want), row in zip(TRAPS, rows, strict=True):
        got = "decline" if row["fast"] is None else "same" if row["same"] else "DIFFERENT"
        assert got == want, f"{text!r}: {got} (fast {row['fast']}, antlr {row['antlr']})"


@pytest.mark.parametrize("rule", ["add-order", "power-right"])
def test_the_check_fails_on_a_wrong_rule(rule):
    rows = compare([("1 + x", True), ("2^3^4", True), ("a - b + 1", True)], rule=rule)
    assert mismatches(rows)
