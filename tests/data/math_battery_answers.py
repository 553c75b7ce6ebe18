"""The math battery's families of issue 36: one final-answer rule (in_sandbox/answer.py) for every verifier,
what is rendered is what is graded, the forms datasets use, a bare response, and the disputed verdicts of
issue 41 (decided once in docs/verifiers.md, "The final-answer rule"). Rows are (reference, answer,
verdict, why[, options]); ``RAW`` rows are whole completions, the others are boxed by math_battery.py.
Each family failed on the code before issue 36 (at least one row of each was graded otherwise)."""

from __future__ import annotations

C, I, N = "CORRECT", "INCORRECT", "NO_ANSWER"  # noqa: E741 - short verdicts keep the table readable
RAW = {"raw": True}
RAW_FULL = {"raw": True, "fallback": "full"}  # what verl's numina_* and math_dapo routes send

# -- issue 36: one final-answer rule (in_sandbox/answer.py) --------------------------------------------------------
# answers through different channels (a box and an answer tag, several tags) are never read together
CHANNELS = [
    ("5", "<think>r</think><answer>5</answer> so \\boxed{6}", I, "a tag and a box that disagree", RAW),
    ("6", "<think>r</think><answer>5</answer> so \\boxed{6}", I, "the same, against the box's value", RAW),
    ("5", "<think>r</think>\\boxed{6} <answer>5</answer>", I, "a box before a tag that disagrees", RAW),
    ("5", "<think>r</think><answer>6</answer> then <answer>5</answer>", I, "two tags that disagree", RAW),
    ("6", "<think>r</think><answer>6</answer> then <answer>5</answer>", I, "two tags, against the first", RAW),
    ("\\{2, 3\\}", "<think>r</think><answer>2</answer><answer>3</answer>", I, "tags are not read together", RAW),
    ("5", "<think>r</think><answer>5</answer> so \\boxed{5}", C, "the same answer through both channels", RAW),
    (
        "\\frac{1}{2}",
        "<think>r</think><answer>0.5</answer> i.e. \\boxed{\\frac{1}{2}}",
        C,
        "one value, two spellings",
        RAW,
    ),
    ("5", "<think>r</think><answer>\\boxed{5}</answer>", C, "a box inside the tag is the tag's answer", RAW),
    ("5", "<think>r</think><answer>5</answer><answer>5</answer>", C, "the same tag twice", RAW),
]
# think blocks: a <think> left open leaves nothing to grade, even after a closed one
THINK_BLOCKS = [
    ("5", "<think>r</think> <think>more \\boxed{5}", N, "an answer inside a second, unclosed think", RAW),
    ("5", "<think>r</think>\\boxed{5}<think>wait", N, "a think opened after the answer is never closed", RAW),
    ("5", "<think>a</think><think>b</think>\\boxed{5}", C, "two closed blocks, then the answer", RAW),
    ("5", "<think>a</think>\\boxed{4}<think>b</think>\\boxed{5}", C, "the answer after the last block", RAW),
    ("5", "<think>r</think><answer>5</answer><think>again <answer>5</answer>", N, "a trailing open block", RAW),
]
# hedges in other languages, around and inside the answer
_HEDGED_AROUND = ["$\\boxed{3}$ oder $4$", "$\\boxed{3}$ 或 $4$", "$\\boxed{3}$ ou $4$", "$\\boxed{3}$ или $4$",
                  "$\\boxed{3}$ o $4$", "$\\boxed{3}$ oppure $4$", "$\\boxed{3}$ 或者 4", "Vielleicht $\\boxed{3}$.",
                  "Возможно, $\\boxed{3}$.", "答案可能是 $\\boxed{3}$。", "Es ist $4$ oder $\\boxed{3}$.",
                  "$\\boxed{3}$, sinon $4$.", "$\\boxed{3}$ wenn $n$ gerade ist.", "$\\boxed{3}$ либо $4$",
                  "<answer>3</answer> oder 4", "<answer>3</answer> 或 4", "<answer>3</answer> или 4",
                  "Peut-être <answer>3</answer>", "$\\boxed{3}$ talvez $4$", "$\\boxed{3}$ 또는 $4$"]  # fmt: skip
_HEDGED_INSIDE = ["3 \\text{ oder } 4", "3 \\text{ ou } 4", "3 \\text{ или } 4", "3 \\text{ 或 } 4",
                  "\\text{vielleicht } 3", "3 \\text{ (возможно)}", "3 \\text{ wenn } n > 0", "3 \\text{ oppure } 4"]  # fmt: skip
HEDGES_LANGUAGES = (
    [("3", "<think>r</think>" + h, I, "a hedge in another language", RAW) for h in _HEDGED_AROUND]
    + [("3", h, I, "a hedge in another language, inside the box") for h in _HEDGED_INSIDE]
    + [
        ("3", "<think>r</think>Also ist die Antwort $\\boxed{3}$.", C, "German prose, no hedge", RAW),
        ("3", "<think>r</think>所以答案是 $\\boxed{3}$。", C, "Chinese prose, no hedge", RAW),
        ("3", "<think>r</think>Donc la réponse est $\\boxed{3}$.", C, "French prose, no hedge", RAW),
        ("3", "<think>r</think>Итак, ответ $\\boxed{3}$.", C, "Russian prose, no hedge", RAW),
        ("3", "<think>r</think>$\\boxed{3}$, where o is the origin.", C, "a lone letter o is no hedge", RAW),
    ]
)
# what is rendered is what is graded: digits glued by braces or colours, powers to the right
RENDERED = [
    ("52", "5{2}", C, "5{2} renders as 52"),
    ("7", "5{2}", I, "never the sum of the digits"),
    ("10", "5{2}", I, "never their product"),
    ("52", "\\textcolor{red}{5}\\textcolor{blue}{2}", C, "two coloured digits render as 52"),
    ("7", "\\textcolor{red}{5}\\textcolor{blue}{2}", I, "never their sum"),
    ("10", "\\color{red}{5}\\color{blue}{2}", I, "never their product"),
    ("123", "{1}{2}{3}", C, "grouped digits"),
    ("7", "\\textcolor{red}{5}+\\textcolor{blue}{2}", C, "a rendered sum is a sum"),
    ("512", "2^3^2", C, "powers associate to the right"),
    ("64", "2^3^2", I, "never left to right"),
    ("512", "2^{3}^{2}", C, "braced powers, to the right"),
    ("\\frac{1}{2}", "\\frac{1}{2}", C, "command arguments stay arguments"),
]
# forms datasets use that were refused
FORMS_READ = [
    ("\\frac{2}{3}", "0.\\overline{6}", C, "a repeating decimal"),
    ("\\frac{1}{6}", "0.1\\overline{6}", C, "a repeating decimal after a fixed digit"),
    ("0.7", "0.\\overline{6}", I, "a repeating decimal is its fraction, not rounded"),
    ("(1, 3)", "\\{x \\mid 1 < x < 3\\}", C, "set-builder notation for an interval"),
    ("(1, 3)", "\\{x : 1 < x \\le 3\\}", I, "set-builder for another interval"),
    ("(-\\infty, 1) \\cup (3, \\infty)", "x < 1 \\text{ or } x > 3", C, "'or' of inequalities is a union"),
    ("(-\\infty, 1) \\cup (3, \\infty)", "x < 1 \\text{ or } x > 4", I, "another union"),
    ("\\{1, 3\\}", "x < 1 \\text{ or } x > 3", I, "never the set of the bounds"),
    ("\\emptyset", "\\varnothing", C, "another symbol for the empty set"),
    ("7", "\\text{(C) } 7", C, "a choice written with its value, against the value"),
    ("C", "\\text{(C) } 7", C, "the same, against the letter"),
    ("D", "\\text{(C) } 7", I, "another letter"),
    ("8", "\\text{(C) } 7", I, "another value"),
    ("5", "\\text{\\$}5", C, "currency in text"),
    ("5", "\\text{5 dollars}", C, "an amount in words, in text"),
    ("5", "\\text{USD } 5", C, "a currency code in text"),
    ("6", "\\text{\\$}5", I, "another amount"),
    ("(1, 2, 3)", "\\langle 1, 2, 3 \\rangle", C, "an angle-bracket vector"),
    ("(1, 2, 3)", "\\langle 1, 2, 4 \\rangle", I, "another vector"),
]
# the whole response is one bare LaTeX expression (fallback full: verl's numina_* and math_dapo routes)
BARE_RESPONSE = [
    ("\\frac{\\sqrt{3}}{2}", "\\frac{\\sqrt{3}}{2}", C, "a nested fraction, the whole response", RAW_FULL),
    ("\\frac{\\sqrt{3}}{2}", "\\frac{\\sqrt{2}}{2}", I, "another nested fraction", RAW_FULL),
    ("(x-1)^3", "x^3 - 3x^2 + 3x - 1", C, "an expanded polynomial, never its last number", RAW_FULL),
    ("-1", "x^3 - 3x^2 + 3x - 1", I, "the polynomial is not its constant term", RAW_FULL),
    (
        "\\begin{pmatrix}1&2\\\\3&4\\end{pmatrix}",
        "\\begin{bmatrix}1&2\\\\3&4\\end{bmatrix}",
        C,
        "a bare matrix",
        RAW_FULL,
    ),
    ("4", "\\begin{bmatrix}1&2\\\\3&4\\end{bmatrix}", I, "a matrix is not its last entry", RAW_FULL),
    ("2", "So $x = 2$.", C, "prose still goes to the extractor", RAW_FULL),
]
# disputed verdicts (issue 41), decided once: docs/verifiers.md, "Disputed forms"
DISPUTED = [
    ("\\{3, 4\\}", "3 \\text{ or } 4", C, "alternatives listed are the set"),
    ("\\{3, 4\\}", "\\text{either } 3 \\text{ or } 4", C, "'either … or' lists the same set"),
    ("3", "\\text{either } 3 \\text{ or } 4", I, "two values are not one"),
    ("3", "3 \\text{ or } 4", I, "two values are not one"),
    ("3", "x \\equiv 3", C, "a congruence's residue, no modulus named"),
    ("3", "3 \\pmod 7", C, "the residue, modulus aside"),
    ("3", "x \\equiv 3 \\pmod{7}", C, "the same, with x"),
    ("10", "3 \\pmod 7", I, "10 is congruent to 3, but the reference asks for 10"),
    ("(1, 2)", "(1, 2)", C, "the reference as written"),
    ("(1, 2)", "x = 1, y = 2", C, "a bare (1, 2) may be a point"),
    ("(1, 2)", "1 < x < 2", C, "or an open interval"),
    ("x \\in (1, 2)", "1 < x < 2", C, "a reference committed to an interval"),
    ("x \\in (1, 2)", "x = 1, y = 2", I, "a point is not the committed interval"),
    ("1 < x < 2", "x = 1, y = 2", I, "a point is not the committed interval"),
    ("(x, y) = (1, 2)", "x = 1, y = 2", C, "a reference committed to a point"),
    ("(x, y) = (1, 2)", "1 < x < 2", I, "an interval is not the committed point"),
    ("x < 1", "-x > -1", C, "a committed interval, its inequality rearranged"),
    ("x < 1", "-x > 1", I, "another interval"),
    ("-2 \\le x \\le 7", "x \\in [-2, 7]", C, "an inequality reference, the interval as membership"),
]
