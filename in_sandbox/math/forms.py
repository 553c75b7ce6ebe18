"""How final answers are written, read as text: Unicode and typesetting forms, digit groups, units and
hedges inside an answer. Nothing here parses math (plain ``re`` and string scans, linear time); it runs in the
sandbox, beside ``grader.py`` and ``text.py``, and reads ``in_sandbox/answer.py`` (the final-answer rule and
its hedge words).

* ``normalize``: Unicode math (``½``, ``x²``, ``√2``, ``π``, full-width digits), ``\\color``, ``1.5e3``
  and thousands groups (``1 000``, ``1\\,000``) rewritten as the LaTeX the parser reads;
  ``spaced_digits`` finds digits separated by a space outside a thousands group (``7 0``): such an
  answer is not a number at all (never the product 7·0).
* ``bases`` / ``in_decimal``: numerals in a base (``12_{4}``), whose subscript the parser drops.
* ``all_reals``: 'all real numbers' in words.
* ``hedge_inside``: a word that offers an alternative, a condition or a doubt (``possibly``, ``if``,
  ``oder``, ``或`` …: ``in_sandbox/answer.py``'s words) in the answer itself.
* ``unit_of`` / ``units_in`` / ``unit_factor``: the unit written after a quantity, so that ``10 m`` is
  not ``10 cm`` (and ``0.1 m`` is).
"""

import re
import unicodedata
from fractions import Fraction

from in_sandbox import hedges as answer_rule

# -- Unicode and typesetting ---------------------------------------------------------------------------
_FRACTIONS = {"½": (1, 2), "⅓": (1, 3), "⅔": (2, 3), "¼": (1, 4), "¾": (3, 4), "⅕": (1, 5), "⅖": (2, 5),
              "⅗": (3, 5), "⅘": (4, 5), "⅙": (1, 6), "⅚": (5, 6), "⅛": (1, 8), "⅜": (3, 8), "⅝": (5, 8),
              "⅞": (7, 8), "⅐": (1, 7), "⅑": (1, 9), "⅒": (1, 10)}  # fmt: skip
_SYMBOLS = {"π": "\\pi ", "∞": "\\infty ", "×": "\\times ", "·": "\\cdot ", "⋅": "\\cdot ", "÷": "\\div ",
            "−": "-", "–": "-", "≤": "\\le ", "≥": "\\ge ", "≠": "\\ne ", "±": "\\pm ", "∓": "\\mp ",
            "°": "^\\circ ", "∪": "\\cup ", "∩": "\\cap ", "∈": "\\in ", "ℝ": "\\mathbb{R}", "θ": "\\theta ",
            "α": "\\alpha ", "β": "\\beta ", "γ": "\\gamma ", "λ": "\\lambda ", "φ": "\\phi ", "⁄": "/",
            "∅": "\\emptyset "}  # fmt: skip
_SUPER = dict(zip("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁽⁾ⁿ", "0123456789+-()n", strict=True))
_SUB = dict(zip("₀₁₂₃₄₅₆₇₈₉₊₋₍₎", "0123456789+-()", strict=True))
_ROOTS = {"√": "\\sqrt", "∛": "\\sqrt[3]", "∜": "\\sqrt[4]"}
_RADICAND = re.compile(r"\s*(?:\((?P<p>[^()]*)\)|(?P<t>\d+(?:\.\d+)?|[A-Za-z]|\\[A-Za-z]+))")


def _unicode(s):
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c in _SUPER or c in _SUB:
            table, mark, j = (_SUPER, "^", i) if c in _SUPER else (_SUB, "_", i)
            while j < len(s) and s[j] in table:
                j += 1
            out.append(mark + "{" + "".join(table[x] for x in s[i:j]) + "}")
            i = j
            continue
        if c in _ROOTS:
            m = _RADICAND.match(s, i + 1)
            if m:
                out.append(_ROOTS[c] + "{" + (m.group("p") if m.group("p") is not None else m.group("t")) + "}")
                i = m.end()
                continue
            out.append(_ROOTS[c])
        elif c in _FRACTIONS:
            a, b = _FRACTIONS[c]
            out.append(("+" if out and out[-1][-1:].isdigit() else "") + f"\\frac{{{a}}}{{{b}}}")
        else:
            out.append(_SYMBOLS.get(c, c))
        i += 1
    return unicodedata.normalize("NFKC", "".join(out))


_COLOR = re.compile(
    r"\\(?:color|textcolor)\s*\{[A-Za-z!0-9. ]*\}|\\(?:displaystyle|textstyle|boldsymbol|bm)\b\s*"
    r"|\\[hv]?phantom\s*\{[^{}]*\}"
)
_ANNOUNCE = re.compile(
    r"^\\(?:text|textbf|textit|mathrm|mbox)\s*\{\s*(?:the )?(?:final )?answer(?: is)?\s*:?\s*\}\s*", re.I
)
# a space wider than a thin one between two operands: two things side by side, not one expression
_WIDE = re.compile(r"[\d)\]]\s*(?:\\(?:quad|qquad|enspace|hspace\*?\s*\{[^{}]*\}|hskip\s*[\d.]+[a-z]*)\s*)+[\d(]")
_SCI = re.compile(r"(?<![\w.\\^{])(\d+(?:\.\d*)?|\.\d+)[eE]([+-]?\d{1,4})(?![\w.])")
_GAP = r"(?: |\\,|\\ |~|\\;|\\:|\\thinspace ?)"
_THOUSANDS = re.compile(r"(?<![\d.,])(\d{1,3})((?:" + _GAP + r"\d{3})+)(?!\d|" + _GAP + r"\d)")
_SPACED = re.compile(r"(\\[A-Za-z]+\s*)?\d(?:\s|\\[,;: !]|~)+\d")


def normalize(s):
    """The text with Unicode math, colour commands, e-notation and thousands groups written as the LaTeX
    a parser reads (``½`` → ``\\frac{1}{2}``, ``x²`` → ``x^{2}``, ``√2`` → ``\\sqrt{2}``, ``４２`` → ``42``,
    ``\\color{red}{3}`` → ``{3}``, ``1.5e3`` → ``(1.5\\times 10^{3})``, ``1\\,000`` → ``1000``)."""
    if not s.isascii():  # invisible format characters (zero-width space, BOM, word joiner) are dropped
        s = _unicode("".join(c for c in s if unicodedata.category(c) != "Cf"))
    if "\\" in s:
        s = _ANNOUNCE.sub("", _COLOR.sub("", s))
        s = _and_chain(_currency(_EITHER_OR.sub(r"\1", s)))
    s = s.replace(":=", "=")
    s = _SCI.sub(r"(\1\\times 10^{\2})", s)
    s = _THOUSANDS.sub(lambda m: m.group(1) + re.sub(r"\D", "", m.group(2)), s)
    return rendered(s) if "{" in s or "^" in s or "\\" in s else s


_REL = r"(<|>|\\lt|\\gt|\\le(?:q|qslant)?|\\ge(?:q|qslant)?|≤|≥)"
_BOUND = r"(-?\d+(?:\.\d+)?|-?\\frac\{\d+\}\{\d+\})"
_AND_CHAIN = re.compile(
    rf"^\s*([a-z])\s*{_REL}\s*{_BOUND}\s*(?:\\text\s*\{{\s*and\s*\}}|\\land|\\wedge|,)\s*\1\s*{_REL}"
    rf"\s*{_BOUND}\s*$"
)
_FLIP = {"<": ">", ">": "<", "\\lt": "\\gt", "\\gt": "\\lt", "≤": "≥", "≥": "≤"}


def _flip(rel):
    if rel in _FLIP:
        return _FLIP[rel]
    return rel.replace("le", "GE").replace("ge", "le").replace("GE", "ge")


def _and_chain(s):
    """``x > 2 \\text{ and } x < 3`` (both bounds of one variable, joined by "and") as the chain ``2 < x < 3``
    it states (read as a set of two relations, it would be their union)."""
    m = _AND_CHAIN.match(s)
    if m is None:
        return s
    x, r1, a, r2, b = m.groups()
    bounds = {}
    for rel, v in ((r1, a), (r2, b)):
        greater = rel in (">", "\\gt", "≥") or "ge" in rel
        bounds["lower" if greater else "upper"] = (_flip(rel) if greater else rel, v)
    if len(bounds) < 2:
        return s  # both bounds on one side: not an interval
    (lo_rel, lower), (up_rel, upper) = bounds["lower"], bounds["upper"]
    return f"{lower} {lo_rel} {x} {up_rel} {upper}"


_EITHER_OR = re.compile(r"^\s*\\text\s*\{\s*either\s*\}\s*(.+\\text\s*\{\s*or\s*\}.+)$", re.I)
_CUR = r"(\\\$|\$|USD|dollars?|euros?|EUR|€|£|¥|yuan|rupees?|Rs\.?)"
_NUM = r"(-?\d+(?:[.,]\d+)*)"
_CURRENCY = (
    re.compile(rf"\\text\s*\{{\s*{_CUR}\s*\}}\s*{_NUM}", re.I),
    re.compile(rf"\\text\s*\{{\s*{_CUR}\s*{_NUM}\s*\}}", re.I),
)
_CURRENCY_AFTER = re.compile(rf"\\text\s*\{{\s*{_NUM}\s*{_CUR}\s*\}}", re.I)


def _currency(s):
    """Currency written in text (``\\text{\\$}5``, ``\\text{5 dollars}``, ``\\text{USD } 5``): the amount
    followed by its unit, as ``unit_of`` reads it (``5 \\text{ dollars}``)."""
    t = s.strip()
    for pattern in _CURRENCY:
        m = pattern.fullmatch(t)
        if m:
            return f"{m.group(2)} \\text{{ {_unit_word(m.group(1))}}}"
    m = _CURRENCY_AFTER.fullmatch(t)
    return f"{m.group(1)} \\text{{ {_unit_word(m.group(2))}}}" if m else s


def _unit_word(cur):
    return "dollars" if cur.strip("\\") == "$" else cur


# -- what is rendered is what is graded ------------------------------------------------------------------------
_WRITTEN_AS = (("\\varnothing", "\\emptyset"), ("\\langle", "("), ("\\rangle", ")"), ("⟨", "("), ("⟩", ")"))
_REPEATING = re.compile(r"(-?)(\d*)\.(\d*)\s*\\(?:overline|dot|bar)\s*\{\s*(\d{1,12})\s*\}")
_SET_BUILDER = re.compile(
    r"(?:\\left)?\\\{\s*([A-Za-z])\s*(?:\\in\s*\\mathbb\s*\{?R\}?\s*)?(?:\\mid|\\vert|\||:|\\colon)"
    r"\s*(.+?)\s*(?:\\right)?\\\}"
)


def rendered(s):
    """The answer as it renders: braces that only group digits glue them (``5{2}`` and the colours'
    ``{5}{2}`` are 52, never 5·2 or 5 + 2); ``a^b^c`` is ``a^{b^{c}}`` (powers associate to the right);
    ``0.\\overline{6}`` is the fraction it repeats to; ``\\varnothing`` is ``\\emptyset``, ``\\langle 1, 2
    \\rangle`` the tuple (1, 2); a set built from one variable's condition (``\\{x \\mid 1 < x < 3\\}``)
    is that condition, which the grader reads as the set it defines."""
    for a, b in _WRITTEN_AS:
        s = s.replace(a, b)
    s = _REPEATING.sub(_repeating, s)
    m = _SET_BUILDER.fullmatch(s.strip())
    if m and m.group(1) in m.group(2):
        s = m.group(2)
    return _right_powers(_glue_digits(s))


def _repeating(m):
    sign, whole, fixed, period = m.group(1), m.group(2) or "0", m.group(3), m.group(4)
    num = int(whole + fixed + period) - int(whole + fixed or "0")
    den = (10 ** len(period) - 1) * 10 ** len(fixed)
    return f"{sign}\\frac{{{num}}}{{{den}}}"


_DIGIT_GROUP = re.compile(r"\{\s*(\d+(?:\.\d+)?)\s*\}")


def _glue_digits(s):
    """Braces around digits that are no command's argument, superscript or subscript (nothing but a digit,
    an operator, a space or the start before them) are dropped: what remains is the digits as rendered."""
    out, i, before = [], 0, ""
    while True:
        j = s.find("{", i)
        if j < 0:
            out.append(s[i:])
            return "".join(out)
        out.append(s[i:j])
        before = s[j - 1] if j > i else before  # the last character written so far
        m = _DIGIT_GROUP.match(s, j)
        if m and (not before or not (before.isalpha() or before in "\\^_}]")):
            out.append(m.group(1))
            i, before = m.end(), m.group(1)[-1]
        else:
            out.append("{")
            i, before = j + 1, "{"


def _power_arg(s, k):
    """(the argument of a ``^`` starting at ``k``, where it ends): a brace group, a command or one character."""
    while k < len(s) and s[k] == " ":
        k += 1
    if k >= len(s):
        return "", k
    if s[k] == "{":
        depth = 0
        for m in range(k, len(s)):
            depth += {"{": 1, "}": -1}.get(s[m], 0)
            if depth == 0:
                return s[k + 1 : m], m + 1
        return s[k:], len(s)
    if s[k] == "\\":
        m = k + 1
        while m < len(s) and s[m].isalpha():
            m += 1
        return s[k : max(m, k + 2)], max(m, k + 2)
    return s[k], k + 1


def _right_powers(s):
    """``a^b^c`` → ``a^{b^{c}}``; a single power is left as written."""
    if s.count("^") < 2:
        return s
    out, i = [], 0
    while i < len(s):
        if s[i] != "^":
            out.append(s[i])
            i += 1
            continue
        args, k = [], i
        while k < len(s) and s[k] == "^":
            arg, k = _power_arg(s, k + 1)
            args.append(arg)
            while k < len(s) and s[k] == " " and s[k + 1 : k + 2] == "^":
                k += 1
        if len(args) == 1:
            out.append(s[i:k])
        else:
            nested = args[-1]
            for a in reversed(args[:-1]):
                nested = a + "^{" + nested + "}"
            out.append("^{" + nested + "}")
        i = k
    return "".join(out)


_BASE = re.compile(r"(?<![\w.\\^{])([0-9]+)_\s*(?:\{\s*\(?([0-9]{1,2})\)?\s*\}|([0-9]))")


def _in_base(m):
    digits, base = m.group(1), int(m.group(2) or m.group(3))
    try:
        return str(int(digits, base)) if 2 <= base <= 36 else m.group(0)
    except ValueError:
        return m.group(0)


def bases(s):
    """The bases of the numerals written in ``s`` (``1010_2``, ``12_{4}``): the parser drops the subscript."""
    return {int(m.group(2) or m.group(3)) for m in _BASE.finditer(s)}


def in_decimal(s):
    """Numerals in a base written as their decimal value (``12_{4}`` → ``6``), or None when one has a digit
    its base does not have (``19_{8}``). For answers to a reference written in decimal."""
    out = _BASE.sub(_in_base, s)
    return None if _BASE.search(out) else out


def spaced_digits(s):
    """True when two digits are separated only by spacing (``7 0``, ``4 \\ 5``) outside a thousands
    group (``normalize`` has joined those) and not as a command's arguments (``\\frac 1 2``), or two
    operands by a wide space (``7 \\quad 0``, ``3 \\quad (4)``)."""
    return any(m.group(1) is None for m in _SPACED.finditer(s)) or bool(_WIDE.search(s))


_REALS = re.compile(
    r"(?:[a-z]\s*(?:\\in|=)\s*)?(?:\\mathbb\s*\{?r\}?|the set of all real numbers"
    r"|(?:the set of |the )?(?:all|any|every) reals?(?: numbers?| values?)?|real numbers|reals)\.?"
)


_UNWRAP = re.compile(r"\\(?:text|textbf|textit|mathrm|mbox)\s*\{([^{}]*)\}")


def all_reals(answer):
    """True when the answer says 'all real numbers' (``\\text{all real numbers}``, ``x \\in \\mathbb{R}``)."""
    return bool(_REALS.fullmatch(" ".join(_UNWRAP.sub(r"\1", answer).lower().replace("$", " ").split())))


# -- hedges --------------------------------------------------------------------------------------------
# The hedge words (every language) and the sentence around an answer are the final-answer rule's
# (in_sandbox/answer.py); what an answer's own text hedges is here.
_TEXTLIKE = re.compile(r"\\(?:text[a-z]*|math(?:rm|it|sf|tt|normal)|mbox|hbox|emph|operatorname)\s*\{([^{}]*)\}")


def hedge_inside(answer, allowed=""):
    """The hedge in a final answer: a ``?``; text (which the parser drops) that holds a digit or a letter
    outside ASCII (``3 \\text{ (4)}``, ``3 \\text{ (или 4)}``) or an ``or``/``and`` that is more than the
    separator of a list (``3 \\text{ (or 4)}``, ``3 \\text{ or more}``, ``x = 5 \\text{ cm and } y = 3``: read
    as x = 5 alone); or a word of ``INSIDE``.
    What the reference ``allowed`` itself writes does not count."""
    if _EITHER_OR.match(answer):  # "either 3 or 4" lists the alternatives, as "3 or 4" does: a set
        allowed += " either"
    if "?" in answer and "?" not in allowed:
        return "?"
    texts = [m.group(1) for m in _TEXTLIKE.finditer(answer_rule.NOT_HEDGES.sub(" ", answer))]
    whole = len(texts) == 1 and _TEXTLIKE.fullmatch(answer.strip())
    for t in texts:
        if t in allowed:
            continue
        if not whole and (re.search(r"\d", t) or not t.isascii()):
            return t.strip()
        inner = t.strip(" ,;:~").lower()
        for word in ("or", "and"):  # a connector with more words: the parser may keep only what precedes it
            if inner != word and re.search(rf"(?<![a-z]){word}(?![a-z])", inner):
                return word
    return answer_rule.hedge(answer, answer_rule.INSIDE, allowed)


# -- units ---------------------------------------------------------------------------------------------
# unit -> (dimension, factor to the dimension's base unit); names and plurals map to these symbols
_FACTORS = {"mm": ("L", 1e-3), "cm": ("L", 1e-2), "m": ("L", 1), "km": ("L", 1e3), "in": ("L", 0.0254),
            "ft": ("L", 0.3048), "yd": ("L", 0.9144), "mi": ("L", 1609.344), "mg": ("M", 1e-3), "g": ("M", 1),
            "kg": ("M", 1e3), "lb": ("M", 453.59237), "oz": ("M", 28.349523125), "ms": ("T", 1e-3),
            "s": ("T", 1), "min": ("T", 60), "h": ("T", 3600), "day": ("T", 86400), "week": ("T", 604800),
            "ml": ("L3", 1e-6), "l": ("L3", 1e-3), "dollar": ("$", 1), "cent": ("$", 0.01)}  # fmt: skip
_NAMES = {"millimeter": "mm", "millimetre": "mm", "centimeter": "cm", "centimetre": "cm", "meter": "m",
          "metre": "m", "kilometer": "km", "kilometre": "km", "inch": "in", "inche": "in", "foot": "ft",
          "feet": "ft", "yard": "yd", "mile": "mi", "milligram": "mg", "gram": "g", "kilogram": "kg",
          "pound": "lb", "lbs": "lb", "ounce": "oz", "millisecond": "ms", "second": "s", "sec": "s",
          "minute": "min", "mins": "min", "hour": "h", "hr": "h", "hrs": "h", "days": "day", "weeks": "week",
          "milliliter": "ml", "millilitre": "ml", "liter": "l", "litre": "l", "$": "dollar", "usd": "dollar",
          "cents": "cent"}  # fmt: skip
_NO_UNIT = {"unit", "units", "square unit", "square units", "sq unit", "sq units", "cubic unit",
            "cubic units", "degree", "degrees", "deg", "radian", "radians", "rad", "percent"}  # fmt: skip
_MATH_NAMES = {"sin", "cos", "tan", "cot", "sec", "csc", "log", "ln", "exp", "pi", "infty", "sqrt", "frac",
               "and", "or", "cdot", "times", "circ", "le", "ge", "ne", "mod", "pmod", "dfrac", "tfrac"}  # fmt: skip
_TEXT_TAIL = re.compile(
    r"\\(?:text|mathrm|textrm|mbox|rm|textnormal)\s*\{(?:\s|~|\\[,;: ])*([A-Za-z$][A-Za-z .$/-]*?)\s*\}"
    r"(\^\s*\{?\s*[23]\s*\}?)?\s*\.?$"
)
_PLAIN_TAIL = re.compile(r"(?<=[\d}\s])([A-Za-z]{1,12}(?:\s*/\s*[A-Za-z]{1,5})?)(\^\s*\{?\s*[23]\s*\}?)?\s*\.?$")


def _canon(word):
    w = " ".join(word.replace("\\", " ").split()).strip(" .").lower()
    if w in _NO_UNIT or not w:
        return None
    if w in _FACTORS:
        return w
    return _NAMES.get(w) or _NAMES.get(w[:-1] if w.endswith("s") else w) or (w[:-1] if w.endswith("s") else w)


_CONNECTORS = {"or", "and", "then", "so"}


def units_in(answer):
    """Every unit the answer names: the one after its quantity (``unit_of``) and the words of each text
    command (connectors like ``or`` aside). Two or more means two quantities (``10 \\text{ m} \\text{ or }
    10 \\text{ cm}``), never one answer."""
    found = set()
    for m in _TEXTLIKE.finditer(answer):
        words = [w for w in re.findall(r"[A-Za-z$/]+", m.group(1)) if w.lower() not in _CONNECTORS]
        unit = "/".join(_canon(p) or "" for p in " ".join(words).split("/")) if words else None
        if unit:
            found.add(unit)
    tail = unit_of(answer)
    return {u.partition("^")[0] for u in (found | {tail} if tail else found)}


def unit_of(answer):
    """The unit written after the quantity of ``answer`` (``10 \\text{ cm}`` → ``cm``, ``3 apples`` →
    ``apple``, ``\\$5`` → ``dollar``; ``m/s``, ``cm^2`` kept whole), else None. A plain word counts only
    after a space or a digit and when it is a known unit or a word of three letters or more (``2x`` and
    ``2xy`` are products, not units)."""
    s = " ".join(answer.split())
    if s.startswith("\\$") and re.match(r"\\\$\s*[\d.]", s):
        return "dollar"
    m = _TEXT_TAIL.search(s)
    plain = False
    if m is None:
        m, plain = _PLAIN_TAIL.search(s), True
    if m is None or not re.search(r"\d", s[: m.start()]):
        return None
    parts = [_canon(p) for p in m.group(1).split("/")]
    if None in parts:
        return None
    if plain and not all(p in _FACTORS or len(p) >= 3 and p not in _MATH_NAMES for p in parts):
        return None
    power = re.sub(r"\D", "", m.group(2) or "")
    return "/".join(parts) + (f"^{power}" if power else "")


def unit_factor(unit):
    """(dimension, factor to its base unit) of a unit from ``unit_of``, or None when it is not one we
    convert: each part's factor, to its power (``m/s`` → length/time, ``km/h`` the same dimension at 1000/3600;
    ``cm^3`` and ``mL`` both a length cubed)."""
    base, _, power = unit.partition("^")
    exps: dict[str, int] = {}
    factor = Fraction(1)
    p = int(power or 1)
    for i, part in enumerate(base.split("/")):
        if part not in _FACTORS:
            return None
        d, f = _FACTORS[part]
        sign = 1 if i == 0 else -1
        name, n = (d[0], int(d[1:])) if d[1:].isdigit() else (d, 1)
        exps[name] = exps.get(name, 0) + sign * n * (p if i == 0 else 1)
        f = Fraction(repr(f))  # exact: 1e-2 cubed is 1/10^6, not 1.0000000000000002e-06
        factor = factor * f**p if i == 0 else factor / f
    return " ".join(f"{k}^{v}" for k, v in sorted(exps.items()) if v), factor
