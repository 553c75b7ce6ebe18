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
* **Hedges** (in_sandbox/hedges.py ``hedge_around``): a word offering another answer, a condition or a doubt, in
  the sentence around the answer, in any of the languages of ``OR_WORDS`` / ``AROUND`` / ``BEFORE``.
* **The statement as a reader reads it** (in_sandbox/reader.py): hidden content blanked, an operator or a
  negation against the answer, a second value offered around or inside it, several choice letters
  (``_statement``). The signals of what a completion tried are in_sandbox/answer_signals.py.

Everything here is plain string scanning (``str.find`` with remembered positions and linear regexes), so a
10 MB hostile completion costs one pass. Only stdlib: the sandbox runs this module too (as
``in_sandbox.answer``, a file of the image), for the hedges of ``fallback=full``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from in_sandbox import reader
from in_sandbox.hedges import hedge_around

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


_THINK_TAG = re.compile(re.escape(THINK_OPEN) + "|" + re.escape(THINK_CLOSE))


def strip_think(text: str) -> str:
    """The visible text: what follows the last ``</think>`` that closes a think block (the whole text without
    think tags); empty when a ``<think>`` is left open, wherever it stands (nothing after an unfinished
    reasoning is an answer). A stray ``</think>`` (no ``<think>`` since the last close) closes nothing: the text
    before it is visible too, and the tag itself is blanked.

    >>> strip_think("<think>maybe \\\\boxed{1}</think> so \\\\boxed{2}")
    ' so \\\\boxed{2}'
    >>> strip_think("<think>r</think> \\\\boxed{1} <think>still thinking \\\\boxed{2}")
    ''
    """
    if unclosed_think(text):
        return ""
    real, depth = -1, 0
    for m in _THINK_TAG.finditer(text):
        if m.group() == THINK_OPEN:
            depth += 1
        elif depth > 0 or real < 0:  # closes an open block, or the first close (a template opened the block)
            depth, real = max(0, depth - 1), m.start()
    if real < 0:
        return text
    visible = text[real + len(THINK_CLOSE) :]
    return visible.replace(THINK_CLOSE, " " * len(THINK_CLOSE)) if THINK_CLOSE in visible else visible


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


# Box commands a reader sees as a framed answer: name -> how many colour arguments come before the content
# (``\\colorbox{yellow}{…}``, ``\\fcolorbox{red}{white}{…}``); ``[…]`` options are skipped (``\\framebox[2cm][c]{…}``,
# ``\\bbox[red]{…}``).
BOX_COMMANDS = {"boxed": 0, "fbox": 0, "framebox": 0, "colorbox": 1, "fcolorbox": 2, "bbox": 0, "Boxed": 0,
                "Aboxed": 0, "doublebox": 0, "ovalbox": 0, "Ovalbox": 0, "shadowbox": 0, "cfbox": 1, "tcbox": 0,
                "boxxed": 0}  # fmt: skip
_BOX = re.compile(r"\\(" + "|".join(sorted(BOX_COMMANDS, key=len, reverse=True)) + r")(?![A-Za-z])")


def _skip_args(text: str, k: int, colours: int) -> int:
    """Past the ``[…]`` options and ``colours`` brace arguments after a box command's name, to its content."""
    while True:
        while k < len(text) and text[k] == " ":
            k += 1
        if k < len(text) and text[k] == "[":
            close = text.find("]", k)
            if close < 0:
                return k
            k = close + 1
        elif colours and k < len(text) and text[k] == "{":
            m = _match_brace(text, k)
            if m < 0:
                return k
            k, colours = m + 1, colours - 1
        else:
            return k


def boxed_spans(text: str) -> list[tuple[int, int, int]]:
    """(start of the box command, its content's ``{``, its ``}``) of every box (``BOX_COMMANDS``), in order; for
    a brace-less box (``\\boxed 5``) the space before the token and the end of the token stand for the braces."""
    out: list[tuple[int, int, int]] = []
    i = 0
    while True:
        found = _BOX.search(text, i)
        if found is None:
            return out
        j = found.start()
        k = _skip_args(text, found.end(), BOX_COMMANDS[found.group(1)])
        if k < len(text) and k > found.end() and text[k] not in "{$[" and not text[k].isspace():
            m = _token_end(text, k)  # ``\boxed 5`` (MATH's brace-less box): one token, up to a space or ``$``
            out.append((j, k - 1, m))
            i = m
            continue
        if k >= len(text) or text[k] != "{":
            i = max(k, found.end())
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


_TAG_OPEN = re.compile(r"<\s*answer\b[^<>]{0,200}>", re.I)  # any case, attributes (``<answer type="final">``)
_TAG_CLOSE = re.compile(r"<\s*/\s*answer\s*>", re.I)


def tag_spans(text: str) -> list[tuple[int, int, int, int]]:
    """(start of the opening tag, end of the closing tag, start and end of the content) of every answer tag, in
    order (the innermost opening before each close): ``<answer>``, in any case, with attributes or spaces."""
    out: list[tuple[int, int, int, int]] = []
    opens = [(m.start(), m.end()) for m in _TAG_OPEN.finditer(text)] if "<" in text else []
    o = 0
    for close in _TAG_CLOSE.finditer(text):
        last = None
        while o < len(opens) and opens[o][1] <= close.start():
            last, o = opens[o], o + 1
        if last is not None and (not out or last[0] >= out[-1][1]):
            out.append((last[0], close.end(), last[1], close.start()))
    return out


def answer_tag_spans(text: str) -> list[tuple[int, int]]:
    """(start of ``<answer>``, end of ``</answer>``) of every answer tag, in order (``tag_spans``)."""
    return [(a, b) for a, b, _, _ in tag_spans(text)]


def answer_tag(text: str) -> str | None:
    """Content of the last ``<answer>…</answer>``."""
    spans = tag_spans(text)
    return text[spans[-1][2] : spans[-1][3]] if spans else None


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


def answers_in(visible: str) -> tuple[list[tuple[int, int, str, str]], int]:
    """(start, end, text, channel) of every non-empty answer in the visible text, in order, and how many
    answer tags without a box inside there were."""
    boxes = [(j, m + 1, visible[k + 1 : m].strip(), "boxed") for j, k, m in boxed_spans(visible)]
    found = [b for b in boxes if b[2]]
    tags = 0
    for a, b, c, d in tag_spans(visible):
        if any(a <= j < b for j, _, _, _ in boxes):
            continue  # a box inside the tag is the tag's answer
        inner = visible[c:d].strip()
        if inner:
            found.append((a, b, inner, "answer"))
            tags += 1
    return sorted(found), tags


def visible_text(completion: str) -> str:
    """What a reader sees after the reasoning: ``strip_think``'s text, ``rendered`` (in_sandbox/reader.py)."""
    return reader.rendered(strip_think(completion))


def value_key(text: str) -> object:
    """One key per answer value: the exact number where it is a plain one (``0.5`` and ``\\frac{1}{2}``), else
    the spelling-insensitive text (``canon``)."""
    v = reader.value(text)
    return v if v is not None else canon(text)


def extract(completion: str, fallback: str = "none", reference: str = "") -> Extraction | None:
    """The final answer(s) of a completion after the reasoning (the rule in this module's docstring), or
    None when there is none. ``fallback``: ``none``, ``last_number`` or ``full``; ``reference``: where given, a
    one-letter reference makes several letters several answers."""
    if fallback not in FALLBACKS:
        raise ValueError(f"fallback must be one of {', '.join(FALLBACKS)}, got {fallback!r}")
    signals = ["answer.unclosed_think"] if unclosed_think(completion) else []
    written = strip_think(completion)
    visible = reader.rendered(written)
    if len(answers_in(written)[0]) > len(answers_in(visible)[0]):
        signals.append("answer.invisible")  # an answer a reader never sees (a comment, a phantom, white)
    found, tags = answers_in(visible)
    if found:
        return _marked(visible, found, tags, signals, reference)
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


def _marked(visible: str, found: list, tags: int, signals: list[str], reference: str) -> Extraction:
    """The extraction of boxed or tagged answers: several, sprayed, or one, with what its statement says."""
    distinct: dict[object, str] = {}
    for _, _, text, _ in reversed(found):
        distinct.setdefault(value_key(text), text)
    channels = {ch for _, _, _, ch in found}
    source = "channels" if len(channels) > 1 or tags > 1 else found[-1][3]
    if len(distinct) > 1 and not _components(visible, found):
        signals.append("answer.several")
    if len(distinct) > MAX_ANSWERS:
        return Extraction([found[-1][2]], source, sprayed=len(distinct), signals=signals)
    word, signal = _statement(visible, found, list(distinct.values()), reference)
    if signal:
        signals.append(signal)
    return Extraction(list(distinct.values()), source, hedge=word, together=source != "channels", signals=signals)


def _components(visible: str, found: list) -> bool:
    """Every box is a named component of one answer (``x = \\boxed{2}, y = \\boxed{3}``): distinct names."""
    names = []
    for a, _, _, ch in found:
        m = re.search(r"([A-Za-z](?:_\{?\w+\}?)?)\s*=\s*\$?\s*$", visible[max(0, a - 30) : a])
        if ch != "boxed" or m is None:
            return False
        names.append(m.group(1))
    return len(set(names)) == len(names)


def _statement(visible: str, found: list, answers: list[str], reference: str) -> tuple[str | None, str | None]:
    """(why the answer is not one answer as a reader reads its statement, the signal), else (None, None): a
    hedge word around the last answer of each channel, an operator or negated relation against a box, a
    negation near an answer, a second value in or around it, several choice letters."""
    for ch in sorted({f[3] for f in found}):
        a, b, _, _ = [f for f in found if f[3] == ch][-1]
        word = hedge_around(visible, a, b)
        if word:
            return word, "answer.hedge"
    for a, b, text, _ in found:
        op = reader.adjoined(visible, a, b)
        if op:
            return f"{op!r} stands against the answer: a reader reads another value", "answer.hedge"
        neg = reader.negation_near(visible, a, b)
        if neg:
            return f"a negation ({neg!r}) in the answer's statement", "answer.hedge"
        inside = reader.value_inside(text)
        if inside:
            return f"a second value inside the answer ({inside[:40]!r})", "answer.hedge"
    letter = reader.choice_letter(reference) if reference else None
    if letter:
        letters = set().union(*(reader.choice_letters(t) for t in answers))
        letters |= set(re.findall(r"\(\s*([A-E])\s*\)", visible[found[-1][1] :]))
        if len(letters) > 1:
            return f"several choices ({', '.join(sorted(letters))})", "answer.several"
    a, b, _, _ = found[-1]
    plain = list(visible)
    for x, y, _, _ in found[:-1]:  # the other answers are answers, not values offered beside this one
        plain[x:y] = " " * (y - x)
    other = reader.other_value("".join(plain), a, b, answers)
    if other:
        return f"a second value ({other!r}) offered in the final statement", "answer.several"
    return None, None


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


def extract_answer(completion: str) -> str | None:
    """The last final answer after the reasoning (a box, else an answer tag), else None."""
    e = extract(completion)
    return None if e is None else e.answers[0]
