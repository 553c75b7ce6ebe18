"""Hedges, in several languages: words that offer another answer, a condition or a doubt around or inside a
final answer (``hedge``, ``hedge_around``), part of the final-answer rule (in_sandbox/answer.py; the rule that
decides by values rather than words is in_sandbox/reader.py). The lists are ``OR_WORDS``, ``AROUND``,
``BEFORE``, ``INSIDE`` and ``NEGATIONS``. Only stdlib, like answer.py.
"""

from __future__ import annotations

import re

# -- hedges, in several languages ------------------------------------------------------------------------------
# "or" in other languages. Inside an answer these are hedges (English ``3 \text{ or } 4`` alone is read as the set
# {3, 4}); around an answer, every one of them is. One-letter words (Spanish "o", "u") count only before a number.
OR_WORDS = ("or", "oder", "ou", "o", "u", "oppure", "или", "либо", "lub", "albo", "veya", "hoặc", "atau", "eller",
            "或", "或者", "还是", "還是", "または", "もしくは", "あるいは", "또는", "혹은")  # fmt: skip
# a doubt, a condition or another answer offered, by language
_DOUBTS = {
    "en": ("possibly", "maybe", "perhaps", "probably", "either", "otherwise", "unless", "if", "guess", "alternatively"),
    "de": ("vielleicht", "möglicherweise", "wahrscheinlich", "entweder", "sonst", "wenn", "eventuell"),
    "fr": ("peut-être", "possiblement", "probablement", "sinon"),  # not "si": "in SI units" after an answer
    "es": ("quizás", "quizá", "posiblemente", "probablemente", "sino", "acaso"),
    "pt": ("talvez", "possivelmente", "provavelmente", "senão"),
    "it": ("forse", "probabilmente", "altrimenti"),
    "ru": ("возможно", "может", "наверное", "вероятно", "иначе", "если", "либо"),
    "zh": ("可能", "也许", "也許", "或许", "或許", "大概", "否则", "否則", "如果"),
    "ja": ("かもしれ", "たぶん", "多分", "もし"),
    "other": ("misschien", "może", "belki", "아마", "아니면"),
}
_EN_INSIDE = ("possibly", "maybe", "perhaps", "probably", "likely", "either", "otherwise", "unless", "if", "iff",
              "when", "whenever", "assuming", "provided", "not", "except", "but", "guess", "alternatively",
              "might", "unsure", "unclear")  # fmt: skip
_FOREIGN = tuple(w for lang, ws in _DOUBTS.items() if lang != "en" for w in ws)
# Inside an answer, a word that offers an alternative, a condition or a negation makes it not one answer.
INSIDE = _EN_INSIDE + _FOREIGN + tuple(w for w in OR_WORDS if len(w) > 1 and w != "or")
# Around it (the rest of the answer's sentence): fewer words, since prose follows answers; here "or" is one.
AROUND = OR_WORDS + _DOUBTS["en"] + _FOREIGN
BEFORE = ("possibly", "maybe", "perhaps", "probably", "either", "guess", "vielleicht", "wahrscheinlich",
          "möglicherweise", "peut-être", "probablement", "quizás", "quizá", "talvez", "forse", "возможно",
          "наверное", "вероятно", "может", "可能", "也许", "也許", "或许", "大概", "たぶん", "多分", "아마")  # fmt: skip
NEGATIONS = ("not", "never", "nor", "except", "isn't", "nicht", "kein", "pas", "не", "不是")

# a word: letters (any script) and inner hyphens, not a LaTeX command's name
_WORDS = re.compile(r"(?<![\\\w])[^\W\d_]+(?:-[^\W\d_]+)*")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
NOT_HEDGES = re.compile(
    r"\bor,? (?:equivalently|simply|in other words|written as|as a)\b|\beither (?:way|case)\b", re.I
)


def _word_hits(text: str, words: tuple[str, ...]) -> str | None:
    """The first word of ``text`` in ``words``: whole words, or inside a run of CJK characters (which
    are not separated by spaces); a one-letter word only right before a number or math."""
    single = {w for w in words if len(w) == 1}
    cjk = [w for w in words if _CJK.search(w)]
    for m in _WORDS.finditer(text):
        w = m.group().lower()
        if w in single:
            if re.match(r"\s*[\d$\\(-]", text[m.end() : m.end() + 8]):
                return m.group()
            continue
        if w in words:
            return m.group()
        if _CJK.search(w):
            for c in cjk:
                if c in w:
                    return c
    return None


def hedge(text: str, words: tuple[str, ...] = INSIDE, allowed: str = "") -> str | None:
    """The first hedge word of ``text`` (outside LaTeX command names) that ``allowed`` (the reference's
    own text) does not also use, else None."""
    text = NOT_HEDGES.sub(" ", text)
    ok = {w.lower() for w in _WORDS.findall(allowed)}
    return _word_hits(text, tuple(w for w in words if w not in ok))


_SENTENCE_END = re.compile(r"[.!?](?:\s|$)|[。！？]|\n")


def sentence_around(text: str, start: int, end: int) -> tuple[str, str]:
    """(before, after): the text of the sentence holding ``text[start:end]``, on each side of it (at most
    200 characters each)."""
    a = max(text.rfind(c, max(0, start - 200), start) for c in ("\n", ". ", "! ", "? ", "。", "！", "？"))
    before = text[max(a + 1, start - 200) : start]
    m = _SENTENCE_END.search(text, end, end + 200)
    return before, text[end : m.start() if m else min(len(text), end + 200)]


def _before_alternation() -> re.Pattern:
    """Right before the answer: "3 or $4$", "3 oder $4$", "不是 $5$" (a number the sentence rules out or
    offers beside another is not its answer)."""
    words = sorted({*OR_WORDS, *NEGATIONS} - {"o", "u"}, key=len, reverse=True)
    latin = "|".join(re.escape(w) for w in words if not _CJK.search(w))
    cjk = "|".join(re.escape(w) for w in words if _CJK.search(w))
    return re.compile(rf"(?:(?<![^\W\d_])(?:{latin}|[ou])|{cjk})[\s$,(\\]*$", re.I)


_OR_BEFORE = _before_alternation()
# what opens the next sentence or line and still hedges the answer before it ("\n(or possibly 4)")
_NEXT_HEDGE = re.compile(
    r"[\s.!?。]*\(?\s*(or|oder|ou|или|либо|或者|或|possibly|maybe|perhaps|probably|alternatively"
    r"|otherwise|wait|vielleicht|возможно|也许|可能)(?![^\W\d_])",
    re.I,
)


def hedge_around(text: str, start: int, end: int) -> str | None:
    """A hedge in the sentence around the answer at ``text[start:end]``: an "or" (any language) or a negation
    right before it, a doubt earlier in the sentence, or an alternative or condition after it."""
    before, after = sentence_around(text, start, end)
    m = _OR_BEFORE.search(before)
    if m:
        return m.group().strip(" $,(\\")
    nxt = _NEXT_HEDGE.match(text, end + len(after), end + len(after) + 80)
    return hedge(before, BEFORE) or hedge(after, AROUND) or (nxt.group(1) if nxt else None)
