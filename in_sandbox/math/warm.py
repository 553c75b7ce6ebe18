"""The answer shapes the math kind's warm-up parses in each sandbox worker, so that jobs fork from a worker
whose LaTeX parser has already built its prediction tables for them.

Why: latex2sympy's grammar decides most inputs with ANTLR's adaptive prediction, whose DFA cache grows with
each new sequence of token kinds it meets (``(a, b)``, ``x_{1} = a, x_{2} = b``, a matrix...). A job is a fork
of the warm worker, so what one job's parses add to that cache is gone when it exits, and each job met the
same shapes cold again: on Math-Verify's own test cases half of the grader's time was building DFA states
(bench/results/math.txt). The DFA is only a cache of the parser's prediction: a warmer one parses faster and
gives the very same parse.

The shapes are the common forms of a final answer (numbers, fractions, radicals, expressions, equations,
tuples, intervals, sets, matrices, ratios, units...), each written with a few atoms of different token kinds;
nothing here comes from a test suite. ``corpus()`` is what the warm-up parses: each shape with one of the
atom pairs below (59 strings, ~800 DFA states, ~2 ms each: 1.5-4 s of each worker's start-up on a loaded
2-core machine, paid once instead of in every job; on Math-Verify's cases a job then builds 1,267 states
where it built 1,745). Two atom pairs a shape (118 strings) saved 600 instead of 478 at half again the
start-up; all nine (531) 793 at three times it (bench/results/math.txt).
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
    return [shape.format(a=a, b=b) for i, shape in enumerate(SHAPES)
            for a, b in (ATOMS[(i + 4 * k) % len(ATOMS)] for k in range(per_shape))]  # fmt: skip


def fill_prediction_tables(strings: list[str] | None = None) -> None:
    """Run the LaTeX parser (the first, SLL stage of grader's two-stage parse) over each string as the
    grader would see it (its spelling rules, then Math-Verify's normalisation), building parse trees only:
    no sympy object is made, so nothing but ANTLR's DFA cache is left behind. (The grader is imported here, not
    at the top: importing it puts our rules in place of Math-Verify's, and bench/math.py reads ``corpus()`` in
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
