"""What a reader reads around a final answer: the part of the final-answer rule (in_sandbox/answer.py) that
looks at the statement a box or tag stands in, rather than at the box.

* **Rendered text** (``rendered``): content a reader never sees is blanked (same length, so positions hold):
  HTML comments, TeX comments (``%`` to the end of the line, not a percent sign after a number), the
  arguments of ``\\phantom`` / ``\\hphantom`` / ``\\vphantom``, text coloured white (``\\textcolor{white}{…}``,
  ``\\color{white}`` to the end of its group, an HTML ``color:white``).
* **What adjoins a box** (``adjoined``): a sign, an operator, a power, a root, a fraction or a factor written
  against it (``-\\boxed{3}``, ``\\frac{1}{\\boxed{3}}``, ``\\boxed{3}^2``), or a relation other than ``=``
  (``x \\neq \\boxed{3}``, ``x > \\boxed{2}``): a reader reads another value than the box's.
* **A negation in the statement** (``negation_near``): a negation word of any of ``NEGATIONS``' languages
  within two words of the answer, in its clause.
* **A second value** (``other_value``): a value offered in the final statement besides the answer, decided by
  the values written, not by the word joining them: any stand-alone number after the answer (the rest of
  the text) that is not the answer's own value, nor in a sentence that computes the answer (``1 + 2 = 3``);
  a stand-alone number right before it (two words at most between, in its sentence); inside the answer, a
  number in or after a ``\\text{…}`` phrase that is not a set's "and"/"or".
* **Multiple choice** (``choice_letters``): the letters an answer names, so several letters against a
  one-letter reference are several answers.

Only stdlib and linear regexes, as answer.py (the sandbox imports this module too, for ``fallback=full``).
"""

from __future__ import annotations

import re
from fractions import Fraction

# -- rendered text ---------------------------------------------------------------------------------------
_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
_TEX_COMMENT = re.compile(r"(?<![\\\d}.])%[^\n]*")  # not \%, not a percent sign after a number or a box
_PHANTOM = re.compile(r"\\[hv]?phantom\s*(?=\{)")
_WHITE = r"(?:white|#?fff(?:fff)?\b|\[rgb\]\s*\{\s*1\s*,\s*1\s*,\s*1\s*\}|\[HTML\]\s*\{\s*FFFFFF\s*\}|transparent)"
_TEXTCOLOR_WHITE = re.compile(
    r"\\(?:textcolor|mathcolor)\s*(?:\{\s*" + _WHITE + r"\s*\}|" + _WHITE + r")\s*(?=\{)", re.I
)
_COLOR_WHITE = re.compile(r"\\color\s*(?:\{\s*" + _WHITE + r"\s*\}|" + _WHITE + r")", re.I)
_HTML_WHITE = re.compile(
    r"<(span|font|div|p)\b[^>]*(?:color\s*[:=]\s*[\"']?\s*(?:white|#fff(?:fff)?\b))[^>]*>.*?(?:</\1\s*>|\Z)",
    re.I | re.S,
)


def _blank(chars: list[str], a: int, b: int) -> None:
    for i in range(a, b):
        if chars[i] != "\n":
            chars[i] = " "


def _group_end(text: str, k: int) -> int:
    """End (exclusive) of the brace group opening at ``k``, or the end of the text when it never closes."""
    depth = 0
    for i in range(k, len(text)):
        c = text[i]
        if c == "{" and (i == 0 or text[i - 1] != "\\"):
            depth += 1
        elif c == "}" and (i == 0 or text[i - 1] != "\\"):
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


def _switch_end(text: str, k: int) -> int:
    """Where a ``\\color`` switch at ``k`` stops: the end of its enclosing group, math region or line."""
    depth = 0
    for i in range(k, len(text)):
        c = text[i]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth < 0:
                return i
        elif c in "$\n" and depth <= 0:
            return i
    return len(text)


def rendered(text: str) -> str:
    """``text`` with what a reader never sees blanked to spaces (the same length; line breaks kept)."""
    if not any(s in text for s in ("<!--", "%", "phantom", "color", "white", "fff", "FFF")):
        return text
    chars = list(text)
    for m in _HTML_COMMENT.finditer(text):
        _blank(chars, m.start(), m.end())
    for m in _HTML_WHITE.finditer(text):
        _blank(chars, m.start(), m.end())
    for m in _TEX_COMMENT.finditer(text):
        _blank(chars, m.start(), m.end())
    for pat in (_PHANTOM, _TEXTCOLOR_WHITE):
        for m in pat.finditer(text):
            _blank(chars, m.start(), _group_end(text, m.end()))
    for m in _COLOR_WHITE.finditer(text):
        _blank(chars, m.start(), _switch_end(text, m.end()))
    return "".join(chars)


# -- what adjoins a box ----------------------------------------------------------------------------------
_OPEN_MATH = re.compile(r"(?:\$\$?|\\\(|\\\[)\s*$")
_CLOSE_MATH = re.compile(r"^\s*(?:\$\$?|\\\)|\\\])")
# a relation that is not "=": a condition or a negation, never a value (``\in`` is a value's membership)
_LEFT_RELATION = re.compile(
    r"(?:\\(?:neq?|not\s*[=<>]?|notin|nless|ngtr|leq?|geq?|lt|gt|leqslant|geqslant|nmid|mid)"
    r"|[<>≠≤≥∉])\s*$"
)
_LEFT_OP = re.compile(r"(?:[-+−±∓/*^_×·÷]|\\(?:pm|mp|cdot|times|div|sqrt|frac|dfrac|tfrac|cfrac|sqrt\[[^\]]*\]))\s*$")
_LEFT_GROUP = re.compile(r"(?:[\^_]|\\[A-Za-z]+(?:\{[^{}]*\})*|\})\s*\{\s*$")  # the box is an argument: \frac{1}{■}
_RIGHT_OP = re.compile(
    r"^\s*(?:[-+−±∓/*×·÷!]|\^(?!\s*\{?\s*\\circ)|_|\\(?:pm|mp|cdot|times|div|sqrt|frac|pi)"
    r"(?![A-Za-z]))"
)
_ADJACENT = re.compile(r"^(?:[0-9(\[]|[A-Za-z](?![A-Za-z]))")  # right against the box: a factor (2x, \boxed{2}(3))


def adjoined(text: str, start: int, end: int) -> str | None:
    """What adjoins the box at ``text[start:end]`` and changes the value a reader reads, else None."""
    raw = text[max(0, start - 60) : start]
    before = re.sub(r"(?:<[^<>]*>\s*)+$", "", raw)  # an answer tag around the box is no operator
    after = text[end : end + 60]
    inside = _OPEN_MATH.search(before)
    left = before[: inside.start()] if inside else before
    for pat in (_LEFT_RELATION, _LEFT_GROUP):
        m = pat.search(re.sub(r"[\s$]+$", "", before) if pat is _LEFT_RELATION else before.rstrip())
        if m:
            return m.group().strip()
    m = _LEFT_OP.search(before.rstrip() if not inside else before[: inside.start()])
    if m and (not inside or not left[-1:].isspace()) and not (m.group().strip() in "-−" and _prose_dash(left)):
        return m.group().strip()
    if re.search(r"[0-9]$", raw):
        return raw[-1]
    closing = _CLOSE_MATH.match(after)
    rest = after[closing.end() :] if closing else after
    m = (
        _RIGHT_OP.match(after)
        if not closing
        else _RIGHT_OP.match(rest)
        if rest[:1] and not rest[:1].isspace()
        else None
    )
    if m and not (closing and m.group().strip() in "-−!"):
        return m.group().strip()
    m = _ADJACENT.match(after)
    return m.group() if m else None


def _prose_dash(left: str) -> bool:
    """A dash that stands between words (``answer - $\\boxed{3}$``), not a sign: spaces on both sides."""
    return len(left) >= 2 and left[-1].isspace() and left.rstrip()[-1:] in "-−" and left.rstrip()[-2:-1].isspace()


# -- negations -----------------------------------------------------------------------------------------------
NEGATIONS = ("not", "never", "nor", "cannot", "can't", "isn't", "aren't", "wasn't", "doesn't", "don't", "won't",
             "nicht", "kein", "keine", "niet", "geen", "pas", "non", "no", "nunca", "jamais", "mai", "nie", "не",
             "ні", "нет", "není", "ne", "nejsou", "değil", "inte", "ikke", "ei", "nem", "không", "tidak", "bukan",
             "नहीं", "न", "ليس", "ليست", "لا", "لن", "לא", "אינו", "不是", "不等于", "不等於", "不", "并非", "ではない",
             "じゃない", "ません", "아니")  # fmt: skip
_WORD = re.compile(r"[^\s\d.,;:!?()\[\]{}$\\=+*/<>\"“”«»|&~^_-]+(?:['’-][^\s\d.,;:!?()\[\]{}$\\=+*/<>\"-]+)*|\d+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_CLAUSE = re.compile(r"[,;:，；：]|[.!?](?:\s|$)|[。！？]|\n")


def negation_near(text: str, start: int, end: int, reach: int = 2) -> str | None:
    """A negation word within ``reach`` words of the answer at ``text[start:end]``, in its clause."""
    head = text[max(0, start - 120) : start]
    cut = [m.end() for m in _CLAUSE.finditer(head)]
    head = head[cut[-1] :] if cut else head
    tail = text[end : end + 120]
    stop = _CLAUSE.search(tail)
    tail = tail[: stop.start()] if stop else tail
    words = [w.lower() for w in _WORD.findall(_math_words(head))][-(reach + 1) :]
    words += [w.lower() for w in _WORD.findall(_math_words(tail))][: reach + 1]
    for w in words:
        if w in NEGATIONS:
            return w
        if _CJK.search(w):
            for n in NEGATIONS:
                if _CJK.search(n) and n in w:
                    return n
    return None


def _math_words(s: str) -> str:
    """Text of ``\\text{...}`` kept, other command names dropped (``\\not`` is read by ``adjoined``)."""
    return re.sub(r"\\[A-Za-z]+", " ", s)


# -- values ----------------------------------------------------------------------------------------------------
# a number standing alone: not an exponent or subscript, not part of a name (x1, H2O), not a digit group
_VALUE = re.compile(
    r"(?<![\w^_{.,\\=+*/×·<>≤≥-])(?<![=+*/×·<>≤≥-]\s)-?\d+(?:[.,]\d+)*(?:\s*/\s*\d+)?(?![\w.]*\d)(?!-?[^\W\d_])"
    r"(?!\s*[\^_=+*/×·-]\s*[\w(\\])"
)
_SENTENCE = re.compile(r"[.!?](?:\s|$)|[。！？]|\n")
SHORT = 80  # characters: a sentence after the answer's that is no longer is read as part of its statement
SET_WORDS = ("and", "or", "und", "oder", "et", "ou", "y", "o", "e", "и", "или", "和", "或")


def value(text: str) -> Fraction | None:
    """The exact value of a plain number (``-3``, ``0.5``, ``1,000``, ``3/4``, ``\\frac{3}{4}``), else None."""
    s = text.strip().strip("$").strip().replace("\\!", "").replace("{,}", "").replace("\\$", "").strip()
    m = re.fullmatch(r"\\[dt]?frac\{\s*(-?\d+)\s*\}\{\s*(\d+)\s*\}", s)
    if m:
        s = f"{m.group(1)}/{m.group(2)}"
    s = s.replace(" ", "")
    if re.fullmatch(r"-?\d{1,3}(?:,\d{3})+(?:\.\d+)?", s):
        s = s.replace(",", "")
    try:
        return Fraction(s) if re.fullmatch(r"-?\d+(?:\.\d+)?(?:/\d+)?", s) and len(s) < 60 else None
    except (ValueError, ZeroDivisionError):
        return None


def _same(found: str, answers: list[str]) -> bool:
    v = value(found)
    return any(v is not None and v == value(a) or found.replace(" ", "") == a.strip().strip("$") for a in answers)


def other_value(text: str, start: int, end: int, answers: list[str], sentences: int = 3) -> str | None:
    """A value offered beside the answer at ``text[start:end]``: a stand-alone number after it (anywhere in
    the rest of the text) that is not the answer's own value, nor in a sentence that computes the answer;
    a stand-alone number right before it (at most two words between, in its sentence). ``sentences``: how many
    sentences after it are read, each next one only while it is at most ``SHORT`` characters (0: the whole rest
    of the text)."""
    rest = _statement_after(text[end:], sentences) if sentences else text[end:]
    own = {m.group() for a in answers for m in _VALUE.finditer(a)}
    for a in answers:
        rest = rest.replace(a, " " * len(a)) if a.strip() else rest
    for m in _VALUE.finditer(rest):
        if m.group() in own or re.match(r"(?:\s+|-)[^\W\d_]{3,}", rest[m.end() :]):
            continue  # the answer's own numbers; a count of something ("after 5 years") is no answer offered
        if _same(m.group(), answers) or _computes(rest, m.start(), answers):
            continue
        return m.group()
    head = text[max(0, start - 80) : start]
    cut = [m.end() for m in _SENTENCE.finditer(head)]
    head = head[cut[-1] :] if cut else head
    near = list(_VALUE.finditer(head))
    if near:
        m = near[-1]
        between = head[m.end() :]
        if not _same(m.group(), answers) and not re.search(r"[=:<>≤≥\\)]|[-+*/×]\s*$", between):
            if len(re.findall(r"[^\W\d_]+", between)) <= 2 and not re.search(r"[-+*/×^]\s*$", head[: m.start()]):
                return m.group()
    return None


_NUMBER = re.compile(r"(?<![\w^_{.,\\])\d+(?:[.,]\d+)*")


def _statement_after(rest: str, sentences: int = 3) -> str:
    """The part of ``rest`` (the text after an answer) in the answer's statement: the rest of its sentence,
    then each next one while it is at most ``SHORT`` characters (a remark, not an explanation), ``sentences``
    in all."""
    stops = [m.end() for m in _SENTENCE.finditer(rest)][:sentences]
    keep = stops[0] if stops else len(rest)
    for a, b in zip(stops, stops[1:] + [len(rest)] * (len(stops) < sentences), strict=False):
        if b - a > SHORT:
            break
        keep = b
    return rest[:keep]


def later_number(text: str, start: int, end: int, answers: list[str]) -> str | None:
    """What makes the answer at ``text[start:end]`` not the last word (``answer.not_final``): a value offered
    in a short sentence anywhere after it (a long one is an explanation that uses numbers), or in its statement a number of another result,
    operands included (``2 + 2 = 4``), that is not its own, a restatement, a count, nor a computation of it."""
    rest, at = text[end:], 0
    for m in [*_SENTENCE.finditer(rest), None]:  # a short remark anywhere after it that offers a value
        stop = m.end() if m else len(rest)
        if stop - at <= SHORT:
            chunk = " " * (end + at) + rest[at:stop]
            other = other_value(chunk, start, end + at, answers, sentences=0) if at else None
            if other:
                return other
        at = stop
    rest = _statement_after(text[end:])
    own = {m.group() for a in answers for m in _NUMBER.finditer(a)}
    for m in _NUMBER.finditer(rest):
        if m.group() in own or _same(m.group(), answers) or re.match(r"(?:\s+|-)[^\W\d_]{3,}", rest[m.end() :]):
            continue
        if not _computes(rest, m.start(), answers):
            return m.group()
    return None


def _computes(rest: str, at: int, answers: list[str]) -> bool:
    """The number at ``rest[at]`` is in a sentence that states a computation ending in the answer
    (``1 + 2 = 3``, ``= \\boxed{3}``), or in one that restates the answer approximately (``\\approx 1.41``)."""
    a = max((m.end() for m in _SENTENCE.finditer(rest, 0, at)), default=0)
    m = _SENTENCE.search(rest, at)
    sentence = rest[a : m.start() if m else len(rest)]
    for eq in re.finditer(r"(?:=|\\approx|≈)\s*\$?\s*([^=\s,;$]+)", sentence):
        if _same(eq.group(1).rstrip(".)"), answers) or "approx" in eq.group() or "≈" in eq.group():
            return True
    return False


def value_inside(answer: str) -> str | None:
    """A second value inside one answer: a number in or after a ``\\text{…}`` phrase that is not a set's
    joining word (``3 \\text{ tal vez } 4``, ``3 \\text{ (or possibly 4)}``); two numbers separated only by
    spacing commands (``3 \\quad 4``)."""
    if re.search(r"[^\s{,;]\s*(?:\\(?:quad|qquad|;|enspace|hspace\{[^}]*\})\s*)+-?\d", answer):
        return "two numbers side by side"
    for m in re.finditer(r"\\(?:text|textrm|mbox|mathrm|textit|textbf)\s*\{([^{}]*)\}", answer):
        phrase = m.group(1)
        words = [w.lower() for w in re.findall(r"[^\W\d_]+", phrase)]
        if not words or not answer[: m.start()].strip():  # a phrase that opens the answer names it
            continue
        if re.search(r"\d", phrase) or (re.search(r"^\s*\$?-?\d", answer[m.end() :]) and set(words) - set(SET_WORDS)):
            return phrase.strip()
    return None


# -- multiple choice --------------------------------------------------------------------------------------------
_LETTER = re.compile(r"\(\s*([A-E])\s*\)|(?<![A-Za-z\\])([A-E]{1,5})(?![A-Za-z])")


def choice_letter(reference: str) -> str | None:
    """The letter of a one-letter reference (``B``, ``(B)``, ``\\text{(B)}``, ``$B$``), else None."""
    s = re.sub(r"\\text(?:bf)?\s*\{([^{}]*)\}", r"\1", reference).strip().strip("$").strip()
    m = re.fullmatch(r"\(?\s*([A-E])\s*\)?", s)
    return m.group(1) if m else None


def choice_letters(text: str) -> set[str]:
    """The choice letters ``text`` names: ``(B)``, ``B``, ``B, C``, ``BCD``, ``(B)(C)``."""
    s = re.sub(r"\\text(?:bf|rm)?\s*\{([^{}]*)\}", r" \1 ", text)
    out: set[str] = set()
    for m in _LETTER.finditer(s):
        out.update(m.group(1) or m.group(2))
    return out


_LABELLED = re.compile(r"^[^\S\n]*\**([^\W\d_][^:：\n]{0,30}?)\**[^\S\n]*[:：][^\S\n]*\$?([^\s$]+)", re.M)


def labelled_twice(text: str, answers: list[str]) -> str | None:
    """Another line with the same label as the answer's ("Answer: 4" then "Answer: 3") and another value."""
    lines = [(m.group(1).strip().lower(), m.group(2).rstrip(".")) for m in _LABELLED.finditer(text)]
    mine = {label for label, v in lines if _same(v, answers)}
    for label, v in lines:
        if label in mine and not _same(v, answers):
            return v
    return None
