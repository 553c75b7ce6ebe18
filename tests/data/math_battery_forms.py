"""The battery's second half (see math_battery.py): how correct answers may be written — digit groups,
e-notation, Unicode and typesetting forms, words and inequalities for sets — and ordinary controls."""

from __future__ import annotations

C, I = "CORRECT", "INCORRECT"  # noqa: E741 - short verdicts keep the table readable
RAW = {"raw": True}

# -- digits separated by spaces: one number only in a thousands group ---------------------------------------------
DIGIT_SPACING = [
    ("0", "7 0", I, "'7 0' is not a number (never 7·0)"),
    ("70", "7 0", I, "'7 0' is not 70 either"),
    ("0", "0 0", I, "not a number"),
    ("6", "2 3", I, "not 2·3"),
    ("0", "5\\ 0", I, "an explicit space is still a space"),
    ("0", "9\\,0", I, "a thin space between single digits is not a thousands group"),
    ("0", "12 34", I, "not a thousands group"),
    ("1000", "1 000", C, "a thousands group"),
    ("1000", "1\\,000", C, "a thousands group with a thin space"),
    ("1000", "1{,}000", C, "a braced comma"),
    ("1000", "1,000", C, "thousands comma"),
    ("1000000", "1 000 000", C, "two groups"),
    ("1000000", "1\\,000\\,000", C, "two thin-spaced groups"),
    ("12345", "12 345", C, "a group of three after two digits"),
    ("1000", "10 00", I, "groups of two are not thousands"),
    ("1000", "1 0000", I, "a group of four"),
    ("1000.5", "1 000.5", C, "a thousands group with decimals"),
    ("1000", "1~000", C, "a tie as the group space"),
    ("\\frac{1}{2}", "\\frac 1 2", C, "a command's arguments, not spaced digits"),
    ("0", "7 \\cdot 0", C, "an explicit product"),
    ("0", "7 \\times 0", C, "an explicit product"),
    ("0", "7 \\quad 0", I, "two numbers side by side (never 7·0)"),
    ("0", "7\\qquad0", I, "two numbers side by side"),
    ("7", "3 \\quad 4", I, "two numbers side by side (never 3 + 4)"),
    ("12", "3 \\quad (4)", I, "two things side by side"),
    ("0", "7\\hspace{1em}0", I, "two numbers side by side"),
    ("0", "7{}0", I, "not a number"),
    ("0", "7\u200b0", I, "reads as 70 (the zero-width space is invisible)"),
    ("70", "7\u200b0", C, "reads as 70"),
    ("3", "3\u200b", C, "an invisible character after 3"),
    ("\\{1, 2\\}", "1, \\quad 2", C, "a wide space after a comma in a list"),
]

# -- scientific notation -------------------------------------------------------------------------------------------
SCIENTIFIC = [
    ("1500", "1.5e3", C, "e-notation"),
    ("1500", "1.5E3", C, "E-notation"),
    ("1500", "1.5e+3", C, "signed exponent"),
    ("0.0015", "1.5e-3", C, "negative exponent"),
    ("1500", "1.5 \\times 10^{3}", C, "LaTeX scientific notation"),
    ("1500", "1.5e4", I, "the wrong exponent"),
    ("1500", "15e2", C, "an integer mantissa"),
    ("2e", "2e", C, "2e is twice Euler's number, not e-notation"),
    ("6", "2e3", I, "2e3 is 2000, not 2·e·3"),
]

# -- Unicode and typesetting forms of a correct answer ----------------------------------------------------------
UNICODE = [
    ("\\frac{1}{2}", "½", C, "vulgar fraction"),
    ("\\frac{3}{4}", "¾", C, "vulgar fraction"),
    ("\\frac{1}{2}", "⅓", I, "a different fraction"),
    ("1\\frac{1}{2}", "1½", C, "a mixed number"),
    ("x^2", "x²", C, "superscript"),
    ("x^2 + 1", "x² + 1", C, "superscript in a sum"),
    ("x^{10}", "x¹⁰", C, "two superscript digits"),
    ("x^2", "x³", I, "a different power"),
    ("2^{-1}", "2⁻¹", C, "superscript minus"),
    ("\\sqrt{2}", "√2", C, "radical sign"),
    ("2\\sqrt{3}", "2√3", C, "a coefficient and a radical sign"),
    ("\\sqrt{x+1}", "√(x+1)", C, "a radical of a bracket"),
    ("\\sqrt{2}", "√3", I, "a different radical"),
    ("\\sqrt[3]{2}", "∛2", C, "cube root sign"),
    ("42", "４２", C, "full-width digits"),
    ("42", "４３", I, "full-width digits of another number"),
    ("-5", "−5", C, "the minus sign U+2212"),
    ("2\\pi", "2π", C, "π"),
    ("\\pi", "π", C, "π"),
    ("\\frac{\\pi}{2}", "π/2", C, "π over 2"),
    ("6", "2×3", C, "a multiplication sign"),
    ("6", "2·3", C, "a middle dot"),
    ("2", "6÷3", C, "a division sign"),
    ("x \\le 2", "x ≤ 2", C, "≤"),
    ("[2, \\infty)", "x ≥ 2", C, "≥ as an interval"),
    ("90^\\circ", "90°", C, "degree sign"),
    ("\\{1, 2\\} \\cup \\{3\\}", "\\{1, 2, 3\\}", C, "a union"),
    ("(-\\infty, \\infty)", "ℝ", C, "the reals' double-struck R"),
    ("x_1", "x₁", C, "subscript"),
    ("\\frac{1}{2}", "1⁄2", C, "fraction slash"),
]
TYPESETTING = [
    ("3", "\\color{red}{3}", C, "a colour"),
    ("3", "\\color{red} 3", C, "a colour switch"),
    ("3", "\\textcolor{blue}{3}", C, "a coloured text"),
    ("3", "\\textcolor{blue}{4}", I, "a coloured wrong answer"),
    ("\\frac{1}{2}", "\\displaystyle \\frac{1}{2}", C, "display style"),
    ("3", "\\mathbf{3}", C, "bold"),
    ("3", "\\boldsymbol{3}", C, "bold symbol"),
    ("\\frac{1}{2}", "\\dfrac{1}{2}", C, "display fraction"),
    ("\\frac{1}{2}", "\\tfrac12", C, "text fraction without braces"),
    ("3", "{{3}}", C, "extra braces"),
    ("3", "\\left( 3 \\right)", C, "sized brackets around a number"),
    ("3", "3 \\phantom{4}", C, "the phantom is invisible: 3 is what is seen"),
    ("7", "3 \\phantom{4}", I, "never 3 + 4"),
    ("34", "\\phantom{4}3", I, "the phantom is not part of the number"),
]

# -- sets, intervals and words for them: correct answers once refused -----------------------------------------------
FALSE_NEGATIVES = [
    ("(2, 3)", "So $x = \\boxed{2}$ and $y = \\boxed{3}$.", C, "two boxes, in order, make the pair", RAW),
    ("(2, 3)", "So $y = \\boxed{3}$ and $x = \\boxed{2}$.", I, "in the other order they make (3, 2)", RAW),
    ("(-\\infty, \\infty)", "\\text{all real numbers}", C, "words for the reals"),
    ("(-\\infty, \\infty)", "\\text{All real numbers}", C, "capitalised"),
    ("(-\\infty, \\infty)", "\\mathbb{R}", C, "the reals' symbol"),
    ("(-\\infty, \\infty)", "x \\in \\mathbb{R}", C, "membership in the reals"),
    ("(-\\infty, \\infty)", "\\text{all positive real numbers}", I, "not all reals"),
    ("\\text{all real numbers}", "(-\\infty, \\infty)", C, "a words reference for the reals"),
    ("\\mathbb{R}", "(-\\infty, \\infty)", C, "the reals"),
    ("(-\\infty, 2]", "x \\le 2", C, "an inequality as its interval"),
    ("(-\\infty, 2]", "x < 2", I, "2 excluded"),
    ("(-\\infty, 2]", "x \\ge 2", I, "the other side"),
    ("(1, 2)", "1 < x < 2", C, "a double inequality as its interval"),
    ("[1, 2]", "1 \\le x \\le 2", C, "a closed double inequality"),
    ("[1, 2]", "1 < x \\le 2", I, "1 excluded"),
    ("(2, \\infty)", "x > 2", C, "an inequality to ∞"),
    ("[2, \\infty)", "x >= 2", C, "an ASCII inequality"),
    ("(-\\infty, 2]", "x <= 2", C, "an ASCII inequality"),
    ("2", "x \\le 2", I, "an inequality is not a value"),
    ("2", "x \\ne 3", I, "'not 3' is not 2"),
    ("3", "x \\ne 3", I, "'not 3' is not 3"),
    ("3", "3 = x", C, "a flipped assignment"),
]


# -- controls: ordinary answers keep their verdicts -----------------------------------------------------------------
CONTROLS = [
    ("42", "42", C, "the same integer"),
    ("42", "43", I, "another integer"),
    ("\\frac{1}{2}", "0.5", C, "a fraction as a decimal"),
    ("\\frac{1}{3}", "0.33", I, "too few digits"),
    ("x^2+2x+1", "(x+1)^2", C, "the same polynomial"),
    ("2\\sqrt{3}", "\\sqrt{12}", C, "the same radical"),
    ("\\{1,2,3\\}", "\\{3,2,1\\}", C, "the same set"),
    ("50\\%", "0.5", C, "a percent as a decimal"),
    ("90", "90^\\circ", C, "degrees"),
    ("\\text{yes}", "\\text{Yes}", C, "the same word"),
    ("\\text{yes}", "\\text{no}", I, "another word"),
    ("\\pi", "3.14", I, "an approximation is not π"),
    ("\\pi", "3.1416", C, "within rel_tol", {"rel_tol": "1e-4"}),
]
