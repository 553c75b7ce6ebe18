"""Format rewards for the R1 template: ``<think>…</think>`` then the answer. Pure functions, linear
time on any input (``str.find``/``str.count`` only, no backtracking regex), so they run in-process.

A block counts as non-empty only if it holds a **visible** character (``has_visible``): a letter, digit,
punctuation mark or symbol of any script. Whitespace, control and format characters (zero-width space,
BOM, word joiner, bidi marks, tags: Unicode Cc/Cf/Z*), combining marks with nothing else (M*),
private-use and unassigned code points, and the blank "letters" (Hangul fillers, the blank braille
pattern) show nothing to a reader, so a block made only of them is empty.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from verifiers.shapes.base import Builtin, Context, Verdict
from verifiers.shapes.outcome import Outcome
from verifiers.shapes.request import Request

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
ANSWER_OPEN, ANSWER_CLOSE = "<answer>", "</answer>"
TAGS = (THINK_OPEN, THINK_CLOSE, ANSWER_OPEN, ANSWER_CLOSE)
# Letters (category Lo/So) that render as blank space: a policy's way around a letters-only rule.
BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
# Fast path (one C-level scan): a printable ASCII character, or a word character that is not blank.
_PLAINLY_VISIBLE = re.compile("[!-~]|[^\\W" + "".join(sorted(BLANK_LETTERS)) + "]")


def _visible_char(c: str) -> bool:
    return unicodedata.category(c)[0] in "LNPS" and c not in BLANK_LETTERS


def has_visible(text: str) -> bool:
    """True if ``text`` holds at least one character a reader sees (see the module docstring). Linear:
    one regex scan with a single-character class, then at most one pass over the *distinct* characters.

    >>> has_visible("\u200b\ufeff\u2060 \u0301"), has_visible("\u200b\u221e")
    (False, True)
    """
    if _PLAINLY_VISIBLE.search(text):
        return True
    return any(_visible_char(c) for c in set(text))


def think_format(completion: str) -> tuple[bool, str]:
    """Exactly one non-empty ``<think>…</think>`` first, then a non-empty answer, optionally inside one
    ``<answer>…</answer>`` with nothing after it. Leading whitespace is allowed; non-empty means it holds
    a visible character (``has_visible``).

    >>> think_format("<think>2+2 is 4</think><answer>4</answer>")
    (True, 'ok')
    >>> think_format("4 <think>x</think>4")[0]
    False
    """
    text = completion.lstrip()
    if not text.startswith(THINK_OPEN):
        return False, "does not start with <think>"
    if completion.count(THINK_OPEN) != 1 or completion.count(THINK_CLOSE) != 1:
        return False, "needs exactly one <think> and one </think>"
    close = text.find(THINK_CLOSE)
    if not has_visible(text[len(THINK_OPEN) : close]):
        return False, "empty <think> block (no visible character)"
    rest = text[close + len(THINK_CLOSE) :].strip()
    if not has_visible(rest):
        return False, "no answer after </think> (no visible character)"
    n_open, n_close = rest.count(ANSWER_OPEN), rest.count(ANSWER_CLOSE)
    if n_open == 0 and n_close == 0:
        return True, "ok"
    if n_open != 1 or n_close != 1:
        return False, "needs at most one <answer>…</answer>"
    if not rest.startswith(ANSWER_OPEN) or not rest.endswith(ANSWER_CLOSE):
        return False, "text outside <answer>…</answer> after </think>"
    if not has_visible(rest[len(ANSWER_OPEN) : -len(ANSWER_CLOSE)]):
        return False, "empty <answer> block (no visible character)"
    return True, "ok"


def tag_count(completion: str) -> float:
    """0.25 for each of the four R1 tags that appears exactly once (a curriculum signal).

    >>> tag_count("<think>a</think><answer>b</answer>")
    1.0
    >>> tag_count("<think>a<think></think>")
    0.25
    """
    return sum(0.25 for tag in TAGS if completion.count(tag) == 1)


def format_signals(completion: str) -> list[str]:
    """The ``format.*`` exploit signals (verifiers/shapes/signals.py) of a completion; linear time (find/count).

    ``format.odd_tags``: one of the four R1 tags more than once, text before ``<think>``, or an ``<answer>``
    opened inside the think block. ``format.think_is_answer``: the think block holds only what the answer
    holds (spacing aside), so it shows no reasoning.

    >>> format_signals("<think>2+2 is 4</think><answer>4</answer>")
    []
    >>> format_signals("<think>4</think><answer>4</answer>")
    ['format.think_is_answer']
    >>> format_signals("so <think>a</think><answer>1</answer><answer>2</answer>")
    ['format.odd_tags']
    """
    found = []
    start, close = completion.find(THINK_OPEN), completion.find(THINK_CLOSE)
    answer_at = completion.find(ANSWER_OPEN)
    if (
        any(completion.count(tag) > 1 for tag in TAGS)
        or (start > 0 and completion[:start].strip())
        or (0 <= start and 0 <= answer_at < close)
    ):
        found.append("format.odd_tags")
    if 0 <= start < close:
        think = "".join(completion[start + len(THINK_OPEN) : close].split())
        rest = completion[close + len(THINK_CLOSE) :]
        a, b = rest.find(ANSWER_OPEN), rest.find(ANSWER_CLOSE)
        answer = rest[a + len(ANSWER_OPEN) : b] if 0 <= a < b else rest
        if think and think == "".join(answer.split()):
            found.append("format.think_is_answer")
    return found


@dataclass
class ThinkFormat(Builtin):
    name: str = "think_format"
    description: str = "1 if the completion is one non-empty <think>…</think> followed by an answer"
    default_timeout_s: float = 1.0

    def verify(self, req: Request, ctx: Context) -> Verdict:
        ok, why = think_format(req.completion)
        return Verdict.of(Outcome.CORRECT if ok else Outcome.INCORRECT, why).signal(*format_signals(req.completion))


@dataclass
class TagCount(Builtin):
    name: str = "tag_count"
    description: str = "0.25 for each of <think>, </think>, <answer>, </answer> present exactly once"
    default_timeout_s: float = 1.0

    def verify(self, req: Request, ctx: Context) -> Verdict:
        r = tag_count(req.completion)
        verdict = Verdict(r, Outcome.CORRECT if r == 1.0 else Outcome.INCORRECT, f"{int(r * 4)}/4 tags well-formed")
        return verdict.signal(*format_signals(req.completion))
