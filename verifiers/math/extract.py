"""Answer extraction by plain string scanning: linear time on any input, nothing evaluated.

Every scan here moves forward through the text once (``str.find`` with remembered positions), so a
10 MB hostile completion costs one pass, never a quadratic re-scan.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from verifiers.math.forms import hedge_around

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
MAX_ANSWERS = 8  # more different boxed answers than this is answer spraying, whatever they are
FULL_TAIL = 10_000  # fallback "full" hands the sandbox this many characters from the end of the text

# Last number of a text: sign, digits with optional thousands commas, decimals, an optional /denominator.
# No nested quantifiers, so re scans it in linear time.
_NUMBER = re.compile(r"-?[0-9]+(?:,[0-9]{3})*(?:\.[0-9]+)?(?:\s*/\s*[0-9]+)?")


def strip_think(text: str) -> str:
    """The text after the last ``</think>``; the whole text when there is no think block; empty when
    a ``<think>`` is never closed (the reasoning did not finish, so nothing in it is an answer).

    >>> strip_think("<think>maybe \\\\boxed{1}</think> so \\\\boxed{2}")
    ' so \\\\boxed{2}'
    >>> strip_think("<think>still thinking \\\\boxed{1}")
    ''
    """
    i = text.rfind(THINK_CLOSE)
    if i >= 0:
        return text[i + len(THINK_CLOSE) :]
    return "" if THINK_OPEN in text else text


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


def boxed_all(text: str) -> list[str]:
    """Contents of every ``\\boxed{…}`` / ``\\fbox{…}`` (nested braces balanced), in order.

    >>> boxed_all(r"so \\boxed{\\frac{1}{2}} and \\boxed {3}")
    ['\\\\frac{1}{2}', '3']
    """
    return [text[k + 1 : m] for _, k, m in boxed_spans(text)]


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


def _token_end(text: str, k: int) -> int:
    """Where the token starting at ``k`` ends: the first whitespace or ``$`` (or the end)."""
    m = k
    while m < len(text) and text[m] != "$" and not text[m].isspace():
        m += 1
    return m


def answer_tag(text: str) -> str | None:
    """Content of the last ``<answer>…</answer>``."""
    end = text.rfind("</answer>")
    if end < 0:
        return None
    start = text.rfind("<answer>", 0, end)
    return None if start < 0 else text[start + len("<answer>") : end]


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


def _canon(answer: str) -> str:
    """A spelling-insensitive key, so restating one answer is not counted as a second answer."""
    s = "".join(answer.split())
    for a, b in (("\\left", ""), ("\\right", ""), ("\\dfrac", "\\frac"), ("\\tfrac", "\\frac"), ("\\!", "")):
        s = s.replace(a, b)
    return s


@dataclass
class Extraction:
    answers: list[str]  # one final answer, or several different boxed ones (graded together)
    source: str  # boxed | answer | last_number | full
    sprayed: int = 0  # how many different boxed answers there were, when more than MAX_ANSWERS
    hedge: str | None = None  # a word offering another answer or a condition in the answer's sentence


def extract(completion: str, fallback: str = "none") -> Extraction | None:
    """The final answer(s) of a completion, looked for after the reasoning:

    1. every different ``\\boxed{}`` (the last one leads; several different ones are graded together);
    2. else the last ``<answer>…</answer>`` (a ``\\boxed{}`` inside it wins);
    3. else ``fallback``: ``none``, ``last_number``, or ``full`` (the whole visible text, for the
       sandbox to extract from the way Math-Verify does).
    """
    visible = strip_think(completion)
    spans = [(j, m, visible[k + 1 : m].strip()) for j, k, m in boxed_spans(visible)]
    spans = [sp for sp in spans if sp[2]]
    if spans:
        boxed = [b for _, _, b in spans]
        distinct: dict[str, str] = {}
        for b in reversed(boxed):
            distinct.setdefault(_canon(b), b)
        if len(distinct) > MAX_ANSWERS:
            return Extraction([boxed[-1]], "boxed", sprayed=len(distinct))
        # ``\boxed{3} (or possibly 4)``, ``maybe \boxed{3}``: not one answer
        start, end, _ = spans[-1]
        return Extraction(list(distinct.values()), "boxed", hedge=hedge_around(visible, start, end + 1))
    tag = answer_tag(visible)
    if tag is not None and tag.strip():
        inner = [b.strip() for b in boxed_all(tag) if b.strip()]
        end = visible.rfind("</answer>")
        start = visible.rfind("<answer>", 0, end)
        around = hedge_around(visible, start, end + len("</answer>"))  # "<answer>3</answer> (or 4)"
        return Extraction([inner[-1] if inner else tag.strip()], "answer", hedge=around)
    if fallback == "last_number":
        n = _last_number(visible)
        if n is None:
            return None
        number = n.group(0).replace(",", "").replace(" ", "")
        return Extraction([number], "last_number", hedge=hedge_around(visible, n.start(), n.end()))
    if fallback == "full" and visible.strip():
        return Extraction([visible[-FULL_TAIL:]], "full")
    return None


def extract_answer(completion: str) -> str | None:
    """The last boxed answer after the reasoning, else the last <answer> tag, else None."""
    e = extract(completion)
    return None if e is None else e.answers[0]
