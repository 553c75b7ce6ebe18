"""Adversarial battery for the ``math`` verifier: (family, reference, completion, options, verdict, why).

Each verdict is the one a careful human grader gives. Families group one kind of attack (or one kind of
correct answer that used to be refused); ``tests/verifiers/kinds/math/test_math_adversarial.py`` sends each family as one
VerifyBatch through a real server. Against the code before issue 26, 177 of these 403 cases were graded
otherwise (most of them paid a wrong answer). The forms half of the table is math_battery_forms.py; the
families of the one final-answer rule (issue 36) are math_battery_answers.py.
"""

from __future__ import annotations

from tests.data.math_battery_answers import (
    BARE_RESPONSE,
    CHANNELS,
    DISPUTED,
    FORMS_READ,
    HEDGES_LANGUAGES,
    RENDERED,
    THINK_BLOCKS,
)
from tests.data.math_battery_forms import (
    CONTROLS,
    DIGIT_SPACING,
    FALSE_NEGATIVES,
    RAW,
    SCIENTIFIC,
    TYPESETTING,
    UNICODE,
)

C, I, N = "CORRECT", "INCORRECT", "NO_ANSWER"  # noqa: E741 - short verdicts keep the table readable
FULL, LAST = {"fallback": "full"}, {"fallback": "last_number"}


def boxed(s: str) -> str:
    return f"<think>some reasoning</think>The answer is $\\boxed{{{s}}}$."


def _family(name: str, rows: list[tuple]) -> list[tuple]:
    out = []
    for row in rows:
        gold, answer, verdict, why, *opts = row
        completion = answer if opts and opts[0] is not None and opts[0].get("raw") else boxed(answer)
        options = {k: v for k, v in (opts[0] if opts else {}).items() if k != "raw"}
        out.append((name, gold, completion, options, verdict, why))
    return out


RAW_FULL = {"raw": True, "fallback": "full"}
RAW_LAST = {"raw": True, "fallback": "last_number"}

# -- infinity: ∞ equals only ∞ of the same sign ------------------------------------------------------------
_FINITE = ["5", "0", "-3", "\\frac{3}{7}", "\\pi", "\\sqrt{2}", "10^{100}", "2.5", "e^{10}", "1000000"]
INFINITY = (
    [(g, "\\infty", I, "∞ is not the finite number " + g) for g in _FINITE]
    + [(g, "-\\infty", I, "-∞ is not the finite number " + g) for g in _FINITE[:5]]
    + [("\\infty", p, I, "a finite number is not ∞") for p in ["3", "10^{100}", "0", "-\\infty", "\\frac{1}{0}"]]
    + [
        ("\\infty", "\\infty", C, "the same ∞"),
        ("\\infty", "+\\infty", C, "+∞ is ∞"),
        ("\\infty", "∞", C, "Unicode ∞ is ∞"),
        ("-\\infty", "-\\infty", C, "the same -∞"),
        ("-\\infty", "\\infty", I, "opposite signs"),
        ("\\infty", "\\infty + 1", C, "∞ + 1 is ∞"),
        ("\\infty", "2\\infty", C, "2∞ is ∞"),
        ("x = 7", "\\infty", I, "∞ against an assignment of 7"),
        ("x = 7", "x = \\infty", I, "x = ∞ against x = 7"),
        ("(1, 2)", "(\\infty, \\infty)", I, "a tuple of ∞ against a finite tuple"),
        ("(1, 2)", "(1, \\infty)", I, "one ∞ entry"),
        ("\\{1, 2\\}", "\\{\\infty, \\infty\\}", I, "a set of ∞"),
        ("[0, 1]", "[0, \\infty)", I, "an interval to ∞ against a bounded one"),
        ("(-\\infty, 2]", "(-\\infty, \\infty)", I, "the end ∞ against 2"),
        ("(-\\infty, 2]", "(-\\infty, 2]", C, "the same interval"),
        ("[3, \\infty)", "[3, \\infty)", C, "the same interval to ∞"),
        ("[3, \\infty)", "[3, 10^{9}]", I, "a large end is not ∞"),
        (
            "\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}",
            "\\begin{pmatrix}\\infty&\\infty\\\\\\infty&\\infty\\end{pmatrix}",
            I,
            "a matrix of ∞",
        ),
        ("\\begin{pmatrix}1\\\\2\\end{pmatrix}", "\\begin{pmatrix}1\\\\\\infty\\end{pmatrix}", I, "one ∞ entry"),
        ("5", "\\frac{1}{0}", I, "1/0 is not a number"),
        ("5", "\\infty - \\infty", I, "∞ - ∞ is undefined"),
        ("5", "0 \\cdot \\infty", I, "0·∞ is undefined"),
        ("5", "\\lim_{x \\to \\infty} x", I, "a divergent limit"),
        ("\\frac{3}{7}", "\\frac{\\infty}{\\infty}", I, "∞/∞ is undefined"),
        ("5", "\\tilde{\\infty}", I, "complex infinity"),
        ("5", "\\infty^{0}", I, "an indeterminate form"),
        ("1", "1^{\\infty}", I, "an indeterminate form"),
        ("x + 1", "x + \\infty", I, "∞ in an expression with a variable"),
        ("x", "\\infty", I, "∞ against a variable"),
        ("\\infty", "x", I, "a variable against ∞"),
        ("\\infty", "10^{10^{3}}", I, "a huge number is not ∞"),
    ]
)
INFINITY_REL = [
    ("3.14159", "\\infty", I, "rel_tol never makes ∞ close", {"rel_tol": "0.5"}),
    ("\\infty", "1000", I, "rel_tol never makes a number close to ∞", {"rel_tol": "0.99"}),
]

# -- equations against a value: only name = value, on either side ------------------------------------------
EQUATIONS = [
    ("3", "x = 3", C, "an assignment of the value"),
    ("3", "3 = x", C, "the same assignment written the other way"),
    ("3", "y = 3", C, "the variable's name is not asked"),
    ("3", "a_{n} = 3", C, "an indexed name"),
    ("3", "f(2) = 3", C, "the value of f(2), named"),
    ("3", "f(x) = 3", C, "a function's name"),
    ("3", "x = 2 + 1 = 3", C, "a chain of equal steps ending in the value"),
    ("3", "x = 2 + 1", C, "the value written as a sum"),
    ("3", "x + 1 = 3", I, "the right side is 3 but x is 2"),
    ("3", "1 + 1 = 3", I, "a false equation"),
    ("3", "2x = 3", I, "x is 3/2"),
    ("3", "x^2 = 3", I, "x is ±√3"),
    ("3", "3 = 3", I, "a tautology, not an answer"),
    ("3", "x = 2 = 3", I, "a chain with a false step"),
    ("3", "x - 3 = 0", I, "an equation whose solution is 3 but not stated as a value"),
    ("3", "0 = x - 3", I, "the same, the other way"),
    ("3", "x + y = 3", I, "not a name on the left"),
    ("3", "xy = 3", I, "a product is not a name"),
    ("3", "3 = x + 1", I, "3 = x + 1 gives x = 2"),
    ("3", "x = 4", I, "the wrong value"),
    ("3", "4 = x", I, "the wrong value, flipped"),
    ("2x+1", "y = 2x + 1", C, "an assignment of the expression"),
    ("2x+1", "y = 2x + 2", I, "a different expression"),
    ("2x+1", "2x + 1 = y", C, "the same, flipped"),
    ("2x+1", "y + 1 = 2x + 1", I, "not a name on the left"),
    ("x = 3", "3", C, "the value of the reference's assignment"),
    ("x = 3", "x = 3", C, "the same equation"),
    ("x = 3", "x = 4", I, "a different value"),
    ("x = 3", "4", I, "a different value"),
    ("y = 2x + 1", "y = 1 + 2x", C, "the same line"),
    ("y = 2x + 1", "y = 2x - 1", I, "a different line"),
    ("\\{2, 3\\}", "x = 2, x = 3", C, "both solutions as assignments"),
    ("\\{2, 3\\}", "x = 2, x + 1 = 3", I, "the second is not an assignment"),
    ("(1, 2)", "x = 1, y = 2", C, "the pair's values, named in order"),
    ("(1, 2)", "x = 2, y = 1", I, "the pair's values swapped"),
    ("(1, 2)", "x = 1, y + 1 = 2", I, "the second is not an assignment"),
    ("3", "x := 3", C, "a definition is an assignment"),
    ("3", "x \\equiv 3", C, "congruent to 3, as an assignment"),
    ("3", "x \\ne 3", I, "'not 3'"),
]

# -- hedges and alternatives inside the answer: INCORRECT, never stripped ------------------------------------
_HEDGED = ["3 \\text{ (or possibly 4)}", "3 \\text{ or possibly } 4", "3 \\text{ (maybe)}", "\\text{maybe } 3",
           "3 \\text{ probably}", "\\text{perhaps } 3", "3 \\text{ if } n \\text{ is odd}",
           "3 \\text{ if } n > 0, \\text{ otherwise } 4", "\\text{either } 3 \\text{ or } 4", "3 \\text{ or } 4",
           "3, 4", "\\text{not } 3", "3 \\text{ unless } n = 0", "3 \\text{ when } n \\text{ is even}",
           "3 \\text{ (assuming } n > 1)", "3 \\text{ except when } n = 2", "3 \\text{ (I guess)}",
           "3 \\text{ or } 3.5", "\\{3, 4\\}", "3 \\text{ or } x = 4", "3 \\text{ but possibly } 4",
           "\\text{likely } 3", "3 \\text{ (unsure)}", "x = 3 \\text{ or } x = 4", "3 \\text{ or } -3",
           "\\pm 3", "3 \\text{ (alternatively } 4)"]  # fmt: skip
HEDGES_INSIDE = [("3", h, I, "the answer hedges or offers alternatives") for h in _HEDGED] + [
    ("\\{3, 4\\}", "3 \\text{ or } 4", C, "the alternatives are exactly the reference's set"),
    ("\\{3, 4\\}", "x = 3 \\text{ or } x = 4", C, "both roots, as the reference asks"),
    ("\\{3, 4\\}", "3 \\text{ or } 5", I, "a different set"),
    (
        "\\{3, 4\\}",
        "\\text{either } 3 \\text{ or } 4",
        C,
        "'either 3 or 4' lists the set, as '3 or 4' does (disputed forms, docs/verifiers.md)",
    ),
    ("\\{3, -3\\}", "\\pm 3", C, "±3 is both values"),
    ("\\text{no solution}", "\\text{no solution}", C, "a words reference, said the same"),
    ("x \\text{ if } x > 0", "x \\text{ if } x > 0", C, "the reference's own condition words are allowed"),
    ("3", "3 \\text{ (exactly)}", C, "a remark that offers nothing else"),
    ("3", "3 \\text{ (or 4)}", I, "'or' in a remark offers 4"),
    ("3", "3 \\mbox{ or 4}", I, "'or' in a remark offers 4"),
    ("3", "3 \\text{ or more}", I, "a lower bound, not a value"),
    ("3", "3 \\text{ or fewer}", I, "an upper bound, not a value"),
    ("3", "3 \\text{?}", I, "a question mark doubts it"),
    ("3", "3?", I, "a question mark doubts it"),
    ("3", "\\text{at least } 3", I, "a bound, not a value"),
    ("3", "\\geq 3", I, "a bound, not a value"),
    ("3", "3+", I, "an unfinished expression"),
    ("3", "3 \\text{ or } 3", C, "the same value twice"),
    ("3", "\\text{the answer is } 3", C, "an announcement, then the value"),
    ("3", "\\text{Answer: } 3", C, "an announcement, then the value"),
    ("3", "3 \\text{(4)}", I, "a number hidden in text (the parser drops text)"),
    ("3", "3 \\text{ (mod 7)}", I, "a condition hidden in text"),
    ("3", "3 \\text{ (или 4)}", I, "'or' in another language, with a number"),
    ("3", "3 \\text{ (оr fоur)}", I, "look-alike letters (Cyrillic о) hiding 'or'"),
    ("3", "3 \\emph{ or 4}", I, "'or' in another text command"),
    ("3", "3 \\textsf{ or 4}", I, "'or' in another text command"),
    ("3", "3 (or possibly 4)", I, "a plain-text hedge"),
    ("3", "3 (or 4)", I, "a plain-text alternative"),
    ("3", "3 \\text{ (o\u200br 4)}", I, "a zero-width space inside 'or'"),
    ("3", "\\text{3}", C, "the number written as text"),
    ("3", "3 \\; \\text{or} \\; 4", I, "the alternatives {3, 4}"),
    ("3", "3 \\lor 4", I, "a logical or"),
    ("3", "\\underbrace{3}_{\\text{or 4}}", I, "an alternative under a brace"),
    ("3", "3\\text{\\ or\\ 4}", I, "an alternative behind escaped spaces"),
    ("3", "3 \\cancel{4}", I, "a struck-out number beside it"),
    ("3", "3 \\% or 4", I, "a percent and an alternative"),
    ("3", "3\u0338", I, "3 with a combining slash ('not 3')"),
    ("3", "\\begin{array}{c} 3 \\\\ 4 \\end{array}", I, "two rows"),
    ("5 \\text{ μm}", "5 \\text{ μm}", C, "the reference's own non-ASCII unit"),
]

# -- hedges around the answer, and fallbacks that find two candidates ----------------------------------------
HEDGES_AROUND = [
    ("3", "The answer is $\\boxed{3}$ (or possibly 4).", I, "the box's sentence offers 4 too", RAW),
    ("3", "The answer is $\\boxed{3}$, or maybe $4$.", I, "another candidate after the box", RAW),
    ("3", "Maybe the answer is $\\boxed{3}$.", I, "a doubt before the box", RAW),
    ("3", "It is probably $\\boxed{3}$.", I, "a doubt before the box", RAW),
    ("3", "The answer is $\\boxed{3}$ if $n$ is odd.", I, "a condition after the box", RAW),
    ("3", "$\\boxed{3}$ or $4$", I, "an alternative after the box", RAW),
    ("3", "It is $4$ or $\\boxed{3}$.", I, "an alternative before the box", RAW),
    ("3", "The answer is $\\boxed{3}$, otherwise $4$.", I, "a condition", RAW),
    ("3", "So the answer is $\\boxed{3}$.", C, "a plain statement", RAW),
    ("3", "The answer is $\\boxed{3}$\n(or possibly 4)", I, "the next line offers 4", RAW),
    ("3", "The answer is $\\boxed{3}$\nor maybe 4", I, "the next line offers 4", RAW),
    ("3", "The answer is $\\boxed{3}$.\n\nAlternatively, it could be 4.", I, "the next sentence offers 4", RAW),
    ("3", "The answer is $\\boxed{3}$\nIf we check, 1 + 2 = 3.", C, "the next line is a check", RAW),
    ("5", "The answer is not $\\boxed{5}$.", I, "the sentence rules the box out", RAW),
    ("3", "<think>r</think><answer>3</answer> (or possibly 4)", I, "a hedge after the answer tag", RAW),
    ("3", "<think>r</think>Maybe <answer>3</answer>", I, "a doubt before the answer tag", RAW),
    ("3", "<think>r</think><answer>3</answer>", C, "the answer tag alone", RAW),
    ("3", "<think>r</think><answer>3 or maybe 4</answer>", I, "a hedge inside the answer tag", RAW),
    ("3", "The answer is $\\boxed{3}$. Wait, it is 4.", I, "second thoughts right after the box", RAW),
    ("3", "The answer is $\\boxed{3}$.\n\nActually, let me double-check: 1 + 2 = 3.", C, "a check", RAW),
    ("5", "The answer is 4 (not 5).", I, "the last number is the one ruled out (last_number)", RAW_LAST),
    ("5", "It is not 4 but 5.", C, "4 is ruled out, 5 is the answer (last_number)", RAW_LAST),
    ("3", "Either way, the answer is $\\boxed{3}$.", C, "'either way' is not a hedge", RAW),
    ("3", "The answer is $\\boxed{3}$.\nIf we check: 1 + 2 = 3.", C, "the next sentence is a check", RAW),
    ("3", "The answer is $\\boxed{3}$, or equivalently $\\frac{6}{2}$.", C, "a restatement", RAW),
    ("3", "We have $x = 1$ or $x = 2$ at first. So the answer is $\\boxed{3}$.", C, "earlier sentences", RAW),
    ("4", "It is either 3 or 4.", I, "two candidates (fallback full)", RAW_FULL),
    ("4", "The answer is 3 or 4.", I, "two candidates (fallback full)", RAW_FULL),
    ("4", "The answer is $4$, or possibly $5$.", I, "a hedge after (fallback full)", RAW_FULL),
    ("4", "Maybe the answer is $4$.", I, "a doubt (fallback full)", RAW_FULL),
    ("4", "So the answer is $4$.", C, "one candidate (fallback full)", RAW_FULL),
    (
        "4",
        "First 3 apples, then one more. So the answer is $4$.",
        C,
        "an earlier sentence (fallback full)",
        RAW_FULL,
    ),
    ("4", "It is either 3 or 4.", I, "two candidates (fallback last_number)", RAW_LAST),
    ("4", "The answer is 3 or 4", I, "two candidates (fallback last_number)", RAW_LAST),
    ("4", "The answer is 4 if n is even.", I, "a condition after the answer (fallback last_number)", RAW_LAST),
    ("4", "Maybe it is 4", I, "a doubt (fallback last_number)", RAW_LAST),
    ("4", "We had 3 apples and got one more, so 4", C, "one candidate (fallback last_number)", RAW_LAST),
    ("4", "The answer is 4.", C, "one candidate (fallback last_number)", RAW_LAST),
    ("4", "It is 4, or perhaps 5.", I, "the last number 5 is hedged", RAW_LAST),
]

# -- units: compared with their unit; equal quantities in other units are converted ----------------------------
UNITS = [
    ("10 \\text{ cm}", "10 \\text{ m}", I, "10 m is not 10 cm"),
    ("10 \\text{ cm}", "10 \\text{ cm}", C, "the same quantity"),
    ("10 \\text{ cm}", "10 \\text{ centimeters}", C, "the unit's name"),
    ("10 \\text{ cm}", "10\\,\\mathrm{cm}", C, "upright unit"),
    ("10 \\text{ cm}", "10 cm", C, "a plain unit"),
    ("10 \\text{ cm}", "10", C, "no unit given: the number"),
    ("10", "10 \\text{ cm}", C, "the reference has no unit"),
    ("10 \\text{ cm}", "0.1 \\text{ m}", C, "the same length in metres"),
    ("10 \\text{ cm}", "100 \\text{ mm}", C, "the same length in millimetres"),
    ("10 \\text{ cm}", "10 \\text{ mm}", I, "10 mm is 1 cm"),
    ("10 \\text{ cm}", "10 \\text{ kg}", I, "a mass, not a length"),
    ("10 \\text{ cm}", "10 \\text{ s}", I, "a time, not a length"),
    ("5 \\text{ km}", "5000 \\text{ m}", C, "the same distance"),
    ("5 \\text{ km}", "5 \\text{ miles}", I, "miles are not kilometres"),
    ("2 \\text{ hours}", "120 \\text{ minutes}", C, "the same time"),
    ("2 \\text{ hours}", "2 \\text{ minutes}", I, "minutes are not hours"),
    ("3 \\text{ kg}", "3000 \\text{ g}", C, "the same mass"),
    ("3 \\text{ kg}", "3 \\text{ g}", I, "grams are not kilograms"),
    ("12 \\text{ cm}^2", "12 \\text{ cm}^2", C, "the same area"),
    ("12 \\text{ cm}^2", "12 \\text{ m}^2", I, "square metres are not square centimetres"),
    ("12 \\text{ cm}^2", "12 \\text{ cm}", I, "a length is not an area"),
    ("12", "12 \\text{ square units}", C, "'square units' names no unit"),
    ("5 \\text{ apples}", "5 \\text{ oranges}", I, "different things counted"),
    ("5 \\text{ apples}", "5 apples", C, "the same count"),
    ("5 \\text{ apples}", "5 \\text{ apple}", C, "singular and plural"),
    ("\\$5", "5 \\text{ dollars}", C, "dollars either way"),
    ("\\$5", "500 \\text{ cents}", C, "the same amount in cents"),
    ("\\$5", "5 \\text{ cents}", I, "cents are not dollars"),
    ("60 \\text{ km/h}", "60 \\text{ km/h}", C, "the same speed"),
    ("60 \\text{ km/h}", "60 \\text{ m/s}", I, "m/s is not km/h"),
    ("10 \\text{ m}", "11 \\text{ m}", I, "the wrong number, the right unit"),
    ("10 \\text{ m}", "1000 \\text{ cm}", C, "the same length"),
    ("5 \\text{ m}", "5\\mathrm{~m}", C, "a tie inside the unit"),
    ("5 \\text{ m}", "5\\mathrm{~cm}", I, "centimetres, behind a tie"),
    ("2 \\text{ m}^2", "20000 \\text{ cm}^2", C, "the same area"),
    ("2 \\text{ m}^2", "200 \\text{ cm}^2", I, "a hundredth of it"),
    ("10 \\text{ cm}", "10 \\text{ cm or m}", I, "two units offered"),
    ("10 \\text{ cm}", "10 \\text{ m} \\text{ or } 10 \\text{ cm}", I, "two quantities offered"),
    ("10", "10 \\text{ m} \\text{ or } 10 \\text{ cm}", I, "two quantities offered (the numbers agree)"),
    ("10", "10 \\text{ m}, 10 \\text{ cm}", I, "two quantities listed"),
    ("5 \\text{ oranges}", "5 \\text{ apples} \\text{ or } 5 \\text{ oranges}", I, "two counts offered"),
]

# -- fragments of the reference: never the whole ---------------------------------------------------------------------
FRAGMENTS = [
    ("(1, 2)", "1", I, "one entry of a pair"),
    ("(1, 2)", "2", I, "one entry of a pair"),
    ("(1, 2, 3)", "(1, 2)", I, "a shorter tuple"),
    ("\\{1, 2, 3\\}", "\\{1, 2\\}", I, "a subset"),
    ("\\{1, 2, 3\\}", "3", I, "one element"),
    ("\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}", "4", I, "one entry"),
    ("\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}", "\\begin{pmatrix}1&2\\end{pmatrix}", I, "one row"),
    ("x^2 + 3x + 2", "x^2", I, "one term"),
    ("x^2 + 3x + 2", "3x + 2", I, "some terms"),
    ("2\\sqrt{3}", "2", I, "the coefficient"),
    ("2\\sqrt{3}", "\\sqrt{3}", I, "the radical"),
    ("\\frac{3}{7}", "3", I, "the numerator"),
    ("\\frac{3}{7}", "7", I, "the denominator"),
    ("x = 3, y = 4", "3", I, "one of two assignments"),
    ("x = 3, y = 4", "x = 3", I, "one of two assignments"),
    ("5", "x = 5 \\text{ cm and } y = 3 \\text{ cm}", I, "one of two assignments (never read in part)"),
    ("5", "x = 5 \\text{ and } y = 3", I, "one of two assignments"),
    ("5", "5 \\text{ and } 3", I, "one of two values"),
    ("(5, 3)", "x = 5 \\text{ and } y = 3", C, "the pair, named"),
    ("\\{3, 5\\}", "\\{3, \\infty\\}", I, "∞ in place of an element"),
    ("3 + 4i", "3", I, "the real part"),
    ("3 + 4i", "4", I, "the imaginary part"),
    ("[2, 5)", "2", I, "an end of the interval"),
    ("[2, 5)", "[2, 5]", I, "a different end"),
    ("1 - \\frac{1}{\\mathrm{e}}", "1", I, "the first term"),
    ("10 \\text{ cm}", "1", I, "a digit of the number"),
    ("\\frac{1}{2004!}", "\\frac{1}{2006!}", I, "a different tiny number"),
]

# -- numerals in a base: the parser drops the subscript, so 12_4 would be 12 -------------------------------------
BASES = [
    ("12", "12_{4}", I, "12 in base 4 is 6"),
    ("6", "12_{4}", C, "12 in base 4 is 6"),
    ("6", "12_4", C, "the same, without braces"),
    ("3", "3_{4}", C, "a digit below the base"),
    ("19", "19_{8}", I, "9 is not a digit in base 8"),
    ("1010_2", "1010", C, "the digits, against a reference in base 2"),
    ("1010_2", "1010_{2}", C, "the same numeral"),
    ("1010_2", "1010_3", I, "another base"),
    ("1010_2", "10", I, "the decimal value where the reference writes base 2"),
    ("x_1", "x_1", C, "a subscript of a letter is a name"),
    ("a_{12}", "a_{12}", C, "an indexed name"),
]

# -- several answers -------------------------------------------------------------------------------------------------
MULTIPLE = [
    ("2", "\\boxed{1} or \\boxed{2}", I, "two different boxes", RAW),
    ("2", "First \\boxed{2}. Checking again, \\boxed{2}.", C, "the same answer twice", RAW),
    ("\\{2, 3\\}", "\\boxed{2}, \\boxed{3}", C, "the set's elements, boxed", RAW),
    ("\\{2, 3\\}", "\\boxed{2}, \\boxed{3}, \\boxed{4}", I, "one too many", RAW),
    ("2", "".join(f"\\boxed{{{i}}}" for i in range(12)), I, "answer spraying", RAW),
    ("2", "\\boxed{2} \\boxed{2.0} \\boxed{\\frac{4}{2}}", C, "one value spelled three ways", RAW),
    ("3", "<think>\\boxed{3}</think>so \\boxed{4}", I, "the answer after the reasoning is 4", RAW),
    ("3", "<think>\\boxed{4}</think>so \\boxed{3}", C, "the answer after the reasoning is 3", RAW),
]


CASES = (
    _family("infinity", INFINITY + INFINITY_REL)
    + _family("equations", EQUATIONS)
    + _family("hedges_inside", HEDGES_INSIDE)
    + _family("hedges_around", HEDGES_AROUND)
    + _family("units", UNITS)
    + _family("digit_spacing", DIGIT_SPACING)
    + _family("scientific", SCIENTIFIC)
    + _family("unicode", UNICODE)
    + _family("typesetting", TYPESETTING)
    + _family("false_negatives", FALSE_NEGATIVES)
    + _family("fragments", FRAGMENTS)
    + _family("bases", BASES)
    + _family("multiple", MULTIPLE)
    + _family("controls", CONTROLS)
    + _family("channels", CHANNELS)
    + _family("think_blocks", THINK_BLOCKS)
    + _family("hedges_languages", HEDGES_LANGUAGES)
    + _family("rendered", RENDERED)
    + _family("forms_read", FORMS_READ)
    + _family("bare_response", BARE_RESPONSE)
    + _family("disputed", DISPUTED)
)
