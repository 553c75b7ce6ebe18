"""The final-answer rule: where a completion's final answer stands, what counts as several answers, what a
think block means, and which words hedge an answer. Every verifier that reads a final answer (math,
arith_steps, answer_consistency, language, the adapters' routes) reads it here and nowhere else; the rule
is stated once in docs/verifiers.md ("The final-answer rule").

* **Reasoning and what is visible.** A ``<think>`` block is reasoning, never an answer. The visible text is
  what follows the last ``</think>``; where a ``<think>`` is left open (no ``<think>`` at all before a
  ``</think>`` counts as closed), nothing after it is visible, even when an earlier block was closed.
  ``reasoning`` is the text of every think block, an unclosed last one included (not only the first).
* **Where the answer stands**: every ``\\boxed{}`` / ``\\fbox{}`` and every ``<answer>…</answer>`` of the
  visible text (a box inside an answer tag is that tag's answer); with none, the verifier's fallback
  (``last_number``: the last number; ``full``: a response that is one bare expression is its own answer,
  read as a whole; any other visible text goes to the sandbox to extract from, as Math-Verify does).
* **Several answers.** Restating one answer (the same text, or the same value spelled otherwise) is one
  answer. Different boxes are graded together (each must equal the reference, or all of them together
  must: ``x = \\boxed{2}, y = \\boxed{3}`` for ``(2, 3)``). Answers through different channels (a box and an
  answer tag, or two answer tags) are never read together: each must equal the reference on its own.
  More than ``MAX_ANSWERS`` different ones is answer spraying.
* **Hedges** (``hedge_around``): a word offering another answer, a condition or a doubt, in the sentence
  around the answer, in any of the languages of ``OR_WORDS`` / ``AROUND`` / ``BEFORE``.

Everything here is plain string scanning (``str.find`` with remembered positions and linear regexes), so a
10 MB hostile completion costs one pass. Only stdlib: the sandbox runs this module too (as
``in_sandbox.answer``, a file of the image), for the hedges of ``fallback=full``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
ANSWER_OPEN, ANSWER_CLOSE = "<answer>", "</answer>"
MAX_ANSWERS = 8  # more different answers than this is answer spraying, whatever they are
FULL_TAIL = 10_000  # fallback "full" hands the sandbox this many characters from the end of the text
FALLBACKS = ("none", "last_number", "full")

# -- think blocks ------------------------------------------------------------------------------------------


def unclosed_think(text: str) -> bool:
    """True when a ``<think>`` is opened and never closed after it (the reasoning did not finish)."""
    last_open = text.rfind(THINK_OPEN)
    return last_open >= 0 and text.find(THINK_CLOSE, last_open) < 0


def strip_think(text: str) -> str:
    """The visible text: what follows the last ``</think>`` (the whole text without think tags); empty when
    a ``<think>`` is left open, wherever it stands (nothing after an unfinished reasoning is an answer).

    >>> strip_think("<think>maybe \\\\boxed{1}</think> so \\\\boxed{2}")
    ' so \\\\boxed{2}'
    >>> strip_think("<think>r</think> \\\\boxed{1} <think>still thinking \\\\boxed{2}")
    ''
    """
    if unclosed_think(text):
        return ""
    i = text.rfind(THINK_CLOSE)
    return text if i < 0 else text[i + len(THINK_CLOSE) :]


def reasoning_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of the text of every think block, in order; an unclosed last block runs to the end."""
    out: list[tuple[int, int]] = []
    i = text.find(THINK_OPEN)
    while i >= 0:
        start = i + len(THINK_OPEN)
        close = text.find(THINK_CLOSE, start)
        if close < 0:
            out.append((start, len(text)))
            return out
        out.append((start, close))
        i = text.find(THINK_OPEN, close + len(THINK_CLOSE))
    return out


def reasoning(text: str) -> str:
    """The text of every think block joined by newlines (an unclosed one included); the whole text when
    there is no ``<think>``."""
    spans = reasoning_spans(text)
    return "\n".join(text[a:b] for a, b in spans) if spans else text


# -- boxes and tags ----------------------------------------------------------------------------------------


def _match_brace(text: str, k: int) -> int:
    """Index of the ``}`` closing the ``{`` at ``k``, or -1. Jumps between braces with str.find."""
    depth, m = 0, k
    next_open, next_close = text.find("{", k), text.find("}", k)
    while next_close >= 0:
        if 0 <= next_open < next_close:
            depth, m = depth + 1, next_open
            next_open = text.find("{", m + 1)
        else:
            depth, m = depth - 1, next_close
            if depth == 0:
                return m
            next_close = text.find("}", m + 1)
    return -1


def boxed_spans(text: str) -> list[tuple[int, int, int]]:
    """(start of ``\\boxed``, its ``{``, its ``}``) of every box, in order; for a brace-less box
    (``\\boxed 5``) the space before the token and the end of the token stand for the braces."""
    out: list[tuple[int, int, int]] = []
    nxt = {tag: text.find(tag) for tag in ("\\boxed", "\\fbox")}
    i = 0
    while True:
        for tag, pos in nxt.items():  # each tag's next position is searched again only once passed
            if 0 <= pos < i:
                nxt[tag] = text.find(tag, i)
        live = [(pos, tag) for tag, pos in nxt.items() if pos >= 0]
        if not live:
            return out
        j, tag = min(live)
        k = j + len(tag)
        while k < len(text) and text[k] == " ":
            k += 1
        if k < len(text) and k > j + len(tag) and text[k] not in "{$" and not text[k].isspace():
            m = _token_end(text, k)  # ``\boxed 5`` (MATH's brace-less box): one token, up to a space or ``$``
            out.append((j, k - 1, m))
            i = m
            continue
        if k >= len(text) or text[k] != "{":
            i = k if k > j else j + 1
            continue
        m = _match_brace(text, k)
        if m < 0:
            return out  # unbalanced: not a complete answer
        out.append((j, k, m))
        i = m + 1


def boxed_all(text: str) -> list[str]:
    """Contents of every ``\\boxed{…}`` / ``\\fbox{…}`` (nested braces balanced), in order.

    >>> boxed_all(r"so \\boxed{\\frac{1}{2}} and \\boxed {3}")
    ['\\\\frac{1}{2}', '3']
    """
    return [text[k + 1 : m] for _, k, m in boxed_spans(text)]


def _token_end(text: str, k: int) -> int:
    """Where the token starting at ``k`` ends: the first whitespace or ``$`` (or the end)."""
    m = k
    while m < len(text) and text[m] != "$" and not text[m].isspace():
        m += 1
    return m


def answer_tag_spans(text: str) -> list[tuple[int, int]]:
    """(start of ``<answer>``, end of ``</answer>``) of every answer tag, in order (the innermost opening
    before each close)."""
    out: list[tuple[int, int]] = []
    i = 0
    while True:
        end = text.find(ANSWER_CLOSE, i)
        if end < 0:
            return out
        start = text.rfind(ANSWER_OPEN, i, end)
        if start >= 0:
            out.append((start, end + len(ANSWER_CLOSE)))
        i = end + len(ANSWER_CLOSE)


def answer_tag(text: str) -> str | None:
    """Content of the last ``<answer>…</answer>``."""
    spans = answer_tag_spans(text)
    if not spans:
        return None
    a, b = spans[-1]
    return text[a + len(ANSWER_OPEN) : b - len(ANSWER_CLOSE)]


# Last number of a text: sign, digits with optional thousands commas, decimals, an optional /denominator.
# No nested quantifiers, so re scans it in linear time.
_NUMBER = re.compile(r"-?[0-9]+(?:,[0-9]{3})*(?:\.[0-9]+)?(?:\s*/\s*[0-9]+)?")


def last_number(text: str) -> str | None:
    """The last number in the text (``-1,234.5``, ``3/4``), thousands commas removed.

    >>> last_number("so 12 apples, then 1,234.5 left")
    '1234.5'
    """
    last = _last_number(text)
    return None if last is None else last.group(0).replace(",", "").replace(" ", "")


def _last_number(text: str) -> re.Match | None:
    last = None
    for last in _NUMBER.finditer(text):  # noqa: B007 - we want the final match
        pass
    return last


def canon(answer: str) -> str:
    """A spelling-insensitive key, so restating one answer is not counted as a second answer."""
    s = "".join(answer.split())
    for a, b in (("\\left", ""), ("\\right", ""), ("\\dfrac", "\\frac"), ("\\tfrac", "\\frac"), ("\\!", "")):
        s = s.replace(a, b)
    return s


# -- the final answer ------------------------------------------------------------------------------------
@dataclass
class Extraction:
    answers: list[str]  # the final answer, or several different ones (the last first)
    source: str  # boxed | answer | channels (boxes and tags, or several tags) | last_number | whole | full
    sprayed: int = 0  # how many different answers there were, when more than MAX_ANSWERS
    hedge: str | None = None  # a word offering another answer or a condition in the answer's sentence
    together: bool = True  # several different boxes may equal the reference together; channels may not
    signals: list[str] = field(default_factory=list)  # verifiers/shapes/signals.py names of what was seen


def _answers(visible: str) -> tuple[list[tuple[int, int, str, str]], int]:
    """(start, end, text, channel) of every non-empty answer in the visible text, in order, and how many
    answer tags without a box inside there were."""
    boxes = [(j, m + 1, visible[k + 1 : m].strip(), "boxed") for j, k, m in boxed_spans(visible)]
    found = [b for b in boxes if b[2]]
    tags = 0
    for a, b in answer_tag_spans(visible):
        if any(a <= j < b for j, _, _, _ in boxes):
            continue  # a box inside the tag is the tag's answer
        inner = visible[a + len(ANSWER_OPEN) : b - len(ANSWER_CLOSE)].strip()
        if inner:
            found.append((a, b, inner, "answer"))
            tags += 1
    return sorted(found), tags


def extract(completion: str, fallback: str = "none") -> Extraction | None:
    """The final answer(s) of a completion after the reasoning (the rule in this module's docstring), or
    None when there is none. ``fallback``: ``none``, ``last_number`` or ``full``."""
    if fallback not in FALLBACKS:
        raise ValueError(f"fallback must be one of {', '.join(FALLBACKS)}, got {fallback!r}")
    signals = ["answer.unclosed_think"] if unclosed_think(completion) else []
    visible = strip_think(completion)
    found, tags = _answers(visible)
    if found:
        distinct: dict[str, str] = {}
        for _, _, text, _ in reversed(found):
            distinct.setdefault(canon(text), text)
        channels = {ch for _, _, _, ch in found}
        source = "channels" if len(channels) > 1 or tags > 1 else found[-1][3]
        if len(distinct) > 1:
            signals.append("answer.several")
        if len(distinct) > MAX_ANSWERS:
            return Extraction([found[-1][2]], source, sprayed=len(distinct), signals=signals)
        # the sentence around the last answer of each channel: ``\boxed{3} (or possibly 4)``, ``maybe <answer>3``
        word = None
        for ch in sorted(channels):
            a, b, _, _ = [f for f in found if f[3] == ch][-1]
            word = word or hedge_around(visible, a, b)
        if word:
            signals.append("answer.hedge")
        ext = Extraction(list(distinct.values()), source, hedge=word, together=source != "channels")
        ext.signals = signals
        return ext
    if fallback == "last_number":
        n = _last_number(visible)
        if n is None:
            return None
        number = n.group(0).replace(",", "").replace(" ", "")
        word = hedge_around(visible, n.start(), n.end())
        return Extraction([number], "last_number", hedge=word, signals=signals + (["answer.hedge"] if word else []))
    if fallback == "full" and visible.strip():
        if bare_math(visible):  # the whole response is one expression: it is the answer, read as a whole
            return Extraction([visible.strip()], "whole", signals=signals)
        return Extraction([visible[-FULL_TAIL:]], "full", signals=signals)
    return None


_ENVIRONMENT = re.compile(r"\\(?:begin|end)\s*\{[A-Za-z*]*\}|\\[A-Za-z]+")
_PROSE = re.compile(r"[^\W\d_]{3,}|(?<!\S)[^\W\d_]{2}(?!\S)")  # a word: 3+ letters, or 2 standing alone


def bare_math(text: str) -> bool:
    """True when ``text`` is one bare math expression and nothing else (``\\frac{\\sqrt{3}}{2}``,
    ``x^3 - 3x^2 + 3x - 1``, a ``bmatrix``): no math delimiters, no answer markers, no word of three letters
    or more outside command names, nor a two-letter one standing alone (``So x = 2``). Such a response is its own final answer (``fallback=full``).

    >>> bare_math("x^3 - 3x^2 + 3x - 1"), bare_math("So $x = 2$."), bare_math("The answer is 5")
    (True, False, False)
    """
    s = text.strip()
    if re.fullmatch(r"[\d\s.,+-]*", s):  # a bare number (``1000,99``): Math-Verify's number extraction reads it
        return False
    if len(s) > 2000 or any(d in s for d in ("$", "\\(", "\\[", "<", ":")) or "\n\n" in s:
        return False
    return not _PROSE.search(_ENVIRONMENT.sub(" ", s))


# -- exploit signals (verifiers/shapes/signals.py) of what a completion tried with its final answer -------------------
# Latin look-alikes from other scripts (Cyrillic а е о р с х у А В Е К М Н О Р С Т Х, Greek ο Ο Α Β Ε Ζ Η Ι Κ Μ Ν Ρ Τ Υ Χ)
_CONFUSABLE = re.compile("[аеорсхуАВЕКМНОРСТХοΟΑΒΕΖΗΙΚΜΝΡΤΥΧ]")
_INVISIBLE = re.compile("[\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]")


def signals_of(completion: str, ext: Extraction | None, prompt: str = "", reference: str = "") -> list[str]:
    """The ``answer.*`` signals of a completion whose final answer is ``ext`` (``extract``'s, or None): the
    extraction's own (several, hedge, unclosed think), an empty or punctuation-only answer, invisible or
    confusable characters, text with a number after the answer (not final), an answer other than the
    reference that is written in the prompt (restates it)."""
    out = set(ext.signals if ext else [])
    if unclosed_think(completion):
        out.add("answer.unclosed_think")
    visible = strip_think(completion)
    marks = [visible[k + 1 : m] for _, k, m in boxed_spans(visible)]
    marks += [visible[a + len(ANSWER_OPEN) : b - len(ANSWER_CLOSE)] for a, b in answer_tag_spans(visible)]
    if any(not re.search(r"[^\W_]", t.replace("\\", " ")) for t in marks):
        out.add("answer.empty")
    answers = ext.answers if ext and ext.source not in ("full", "whole") else []
    if _INVISIBLE.search(visible) or any(_CONFUSABLE.search(a) for a in answers):
        out.add("answer.invisible")
    found, _ = _answers(visible)
    if found and ext and ext.source in ("boxed", "answer", "channels"):
        rest = visible[found[-1][1] :]
        if re.search(r"\d", rest) or len(rest.strip()) > 300:
            out.add("answer.not_final")
    if prompt and any(_in_prompt(canon(a), canon(prompt), canon(reference)) for a in answers):
        out.add("answer.restates_prompt")
    return sorted(out)


def _in_prompt(answer: str, prompt: str, reference: str) -> bool:
    if not answer or answer == reference:
        return False
    return re.search(rf"(?<![\d.]){re.escape(answer)}(?![\d.])", prompt) is not None


def extract_answer(completion: str) -> str | None:
    """The last final answer after the reasoning (a box, else an answer tag), else None."""
    e = extract(completion)
    return None if e is None else e.answers[0]


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
NOT_HEDGES = re.compile(r"\bor,? (?:equivalently|simply|in other words|written as|as a)\b|\beither (?:way|case)\b",
                         re.I)  # fmt: skip


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
_NEXT_HEDGE = re.compile(r"[\s.!?。]*\(?\s*(or|oder|ou|или|либо|或者|或|possibly|maybe|perhaps|probably|alternatively"
                         r"|otherwise|wait|vielleicht|возможно|也许|可能)(?![^\W\d_])", re.I)  # fmt: skip


def hedge_around(text: str, start: int, end: int) -> str | None:
    """A hedge in the sentence around the answer at ``text[start:end]``: an "or" (any language) or a negation
    right before it, a doubt earlier in the sentence, or an alternative or condition after it."""
    before, after = sentence_around(text, start, end)
    m = _OR_BEFORE.search(before)
    if m:
        return m.group().strip(" $,(\\")
    nxt = _NEXT_HEDGE.match(text, end + len(after), end + len(after) + 80)
    return hedge(before, BEFORE) or hedge(after, AROUND) or (nxt.group(1) if nxt else None)
