"""The math kind's warm-up (``warm_up``), run once in each sandbox worker: it grades a pair of each answer
shape, then parses the answer shapes below, so that jobs fork from a worker whose LaTeX parser has already
built its prediction tables for them.

Why: latex2sympy's grammar decides most inputs with ANTLR's adaptive prediction, whose DFA cache grows with
each new sequence of token kinds it meets (``(a, b)``, ``x_{1} = a, x_{2} = b``, a matrix...). A job is a fork
of the warm worker, so what one job's parses add to that cache is gone when it exits, and each job met the
same shapes cold again: on Math-Verify's own test cases half of the grader's time was building DFA states
(bench/results/math.txt). The DFA is only a cache of the parser's prediction: a warmer one parses faster and
gives the very same parse.

The shapes are the common forms of a final answer (numbers, fractions, radicals, expressions, equations,
tuples, intervals, sets, matrices, ratios, units...), each written with a few atoms of different token kinds;
nothing here comes from a test suite. ``corpus()`` is what the warm-up parses: each shape with one of the
atom pairs below, paid once per worker instead of in every job (its cost and what it saves: bench/results/math.txt).
"""

from __future__ import annotations

from latex2sympy2_extended import latex2sympy2
from math_verify.parser import LatexExtractionConfig

# token-kind variety: integer, negative, decimal, letter, fraction, radical, constant, power, subscript, call
ATOMS = (
    ("7", "-3"),
    ("2.5", "x"),
    ("\\frac{1}{2}", "-\\frac{3}{4}"),
    ("\\sqrt{3}", "2\\sqrt{5}"),
    ("\\frac{\\sqrt{3}}{2}", "\\frac{1+\\sqrt{5}}{2}"),
    ("\\pi", "\\frac{\\pi}{3}"),
    ("x^{2}", "3x+1"),
    ("e^{2}", "10^{-3}"),
    ("a_{1}", "\\sin(x)"),
)

SHAPES = (
    "{a}",
    "-{a}",
    "{a} + {b}",
    "{a}{b}",
    "{a} \\cdot {b}",
    "\\frac{{{a}}}{{{b}}}",
    "\\dfrac{{{a}}}{{{b}}}",
    "\\sqrt{{{a}}}",
    "\\sqrt[3]{{{a}}}",
    "({a})^{{2}}",
    "|{a}|",
    "\\left({a}\\right)",
    "{a}, {b}",
    "({a}, {b})",
    "\\left({a}, {b}\\right)",
    "({a}, {b}, {a})",
    "[{a}, {b}]",
    "[{a}, {b})",
    "({a}, {b}]",
    "\\left[{a}, {b}\\right)",
    "(-\\infty, {a}]",
    "({a}, \\infty)",
    "({a}, {b}) \\cup ({b}, \\infty)",
    "[{a}, {b}] \\cup [{b}, {a}]",
    "\\{{{a}, {b}\\}}",
    "\\{{{a}\\}}",
    "\\left\\{{{a}, {b}\\right\\}}",
    "x = {a}",
    "x = {a}, y = {b}",
    "x_{{1}} = {a}, x_{{2}} = {b}",
    "x_{{1}}={a},\\quad x_{{2}}={b}",
    "x = {a} \\text{{ or }} x = {b}",
    "(x, y) = ({a}, {b})",
    "y = {a}x + {b}",
    "f(x) = {a}",
    "a_{{n}} = {a}",
    "{a}x + {b}y = {a}",
    "{a} < x < {b}",
    "{a} \\le x \\le {b}",
    "x \\geq {a}",
    "x \\in [{a}, {b}]",
    "x \\in ({a}, {b}) \\cup ({b}, \\infty)",
    "{a} : {b}",
    "x : y = {a} : {b}",
    "\\begin{{pmatrix}} {a} \\\\ {b} \\end{{pmatrix}}",
    "\\begin{{pmatrix}} {a} & {b} \\\\ {b} & {a} \\end{{pmatrix}}",
    "\\begin{{bmatrix}} {a} & {b} \\\\ {b} & {a} \\end{{bmatrix}}",
    "\\sum_{{k=1}}^{{n}} {a}",
    "\\int_{{0}}^{{1}} {a} \\, dx",
    "\\lim_{{x \\to 0}} {a}",
    "\\log_{{2}} {a}",
    "\\ln({a})",
    "\\cos({a})",
    "{a}^\\circ",
    "{a}\\%",
    "\\${a}",
    "{a} \\text{{ cm}}",
    "\\text{{{a}}}",
    "\\boxed{{{a}}}",
)


def corpus(per_shape: int = 1) -> list[str]:
    """Each shape written with ``per_shape`` of the atom pairs (a different choice for each shape, so that
    every pair meets many shapes): the strings the warm-up parses."""
    return [
        shape.format(a=a, b=b)
        for i, shape in enumerate(SHAPES)
        for a, b in (ATOMS[(i + 4 * k) % len(ATOMS)] for k in range(per_shape))
    ]


def fill_prediction_tables(strings: list[str] | None = None) -> None:
    """Run the LaTeX parser (the first, SLL stage of grader's two-stage parse) over each string as the
    grader would see it (its spelling rules, then Math-Verify's normalisation), building parse trees only:
    no sympy object is made, so nothing but ANTLR's DFA cache is left behind. (The grader is imported here, not
    at the top: importing it puts our rules in place of Math-Verify's, and bench/math_grading/speed.py reads ``corpus()`` in
    the process where it times Math-Verify as it ships.)"""
    from in_sandbox.math import grader

    config = LatexExtractionConfig().normalization_config
    for s in corpus() if strings is None else strings:
        converter = latex2sympy2._Latex2Sympy()
        converter._sll = True
        try:
            converter.create_parser(latex2sympy2.normalize_latex(grader.written(s), config)).math()
        except Exception:
            pass


# (gold, answer) pairs the warm-up grades, one per answer shape, so that antlr's lazily built prediction
# tables, the regex caches and sympy's caches are inherited warm by every job; unequal pairs at the end, so the
# disproving paths (probe points, set and interval mismatches) are warm too
PAIRS = [
    ("3", "3"),
    ("-5", "5"),
    ("\\frac{1}{2}", "0.5"),
    ("\\frac{3}{7}", "3/7"),
    ("2.5", "\\dfrac{5}{2}"),
    ("\\sqrt{2}/2", "\\frac{1}{\\sqrt{2}}"),
    ("2\\sqrt{3}", "\\sqrt{12}"),
    ("\\pi", "3.14"),
    ("e^{2}", "e^2"),
    ("x^2+2x+1", "(x+1)^2"),
    ("x = 3", "3"),
    ("y=2x+1", "y = 1 + 2x"),
    ("\\{1,2,3\\}", "\\{3,2,1\\}"),
    ("(1,2)", "(1, 2)"),
    ("[0,1)", "[0, 1)"),
    ("(-\\infty, 2]", "x \\le 2"),
    ("1 < x < 2", "(1,2)"),
    ("\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}", "\\begin{bmatrix}1&2\\\\3&4\\end{bmatrix}"),
    ("50\\%", "0.5"),
    ("10\\text{ cm}", "10"),
    ("1,000,000", "1000000"),
    ("\\$5", "5"),
    ("90^\\circ", "90"),
    ("\\frac{1}{2004!}", "\\frac{1}{2006!}"),
    ("\\log_2 8", "3"),
    ("\\sin(\\pi/6)", "1/2"),
    ("2^{10}", "1024"),
    ("a_{n} = 2n", "2n"),
    ("\\text{(B)}", "B"),
    ("-\\frac{3}{4}", "-0.75"),
    ("1.5 \\times 10^{3}", "1500"),
    # unequal pairs, so the disproving paths (probe points, set and interval mismatches) are warm too
    ("x^2+3x+2", "(x+1)(x+3)"),
    ("\\{-1, 4\\}", "\\{4, 5\\}"),
    ("[-2, 3)", "(-2, 3]"),
    ("\\frac{2}{3}", "0.67"),
]


def warm_up() -> None:
    """The math kind's warm-up (verifiers/kinds/math/verifier.py ``MATH_WARMUP``): grade ``PAIRS`` as an
    answer and inside a sentence, then fill the prediction tables for ``corpus()``."""
    from in_sandbox.math import grader

    for g, p in PAIRS:
        try:
            grader.grade({"gold": g, "preds": [p], "mode": "answer"}, {})
            grader.grade({"gold": g, "preds": ["so the answer is $" + p + "$"], "mode": "full"}, {})
        except Exception:
            pass
    fill_prediction_tables()
