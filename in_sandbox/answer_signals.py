"""The ``answer.*`` exploit signals (verifiers/shapes/signals.py) of what a completion tried with its final
answer, read by the final-answer rule (in_sandbox/answer.py): ``signals_of``. They inform; a verifier's
verdict never changes for them unless the request enforces them (docs/verifiers.md, "Exploit signals").

Each is made precise enough to enforce on honest answers (bench/results/answer_signals.txt): restating one
value is not several answers, ``∅`` / ``\\{\\}`` / ``∞`` are not empty, the marks a script needs (Persian ZWNJ,
Hebrew RLM, a soft hyphen in a word) and words of other scripts are not invisible tricks, a reference written
``$5$`` is not restated by the answer 5. Only stdlib, like answer.py.
"""

from __future__ import annotations

import re

from in_sandbox import reader
from in_sandbox.answer import (
    Extraction,
    answers_in,
    boxed_spans,
    canon,
    tag_spans,
    unclosed_think,
    value_key,
    visible_text,
)

# -- exploit signals (verifiers/shapes/signals.py) of what a completion tried with its final answer -------------------
# Latin look-alikes from other scripts (Cyrillic а е о р с х у А В Е К М Н О Р С Т Х, Greek ο Ο Α Β Ε Ζ Η Ι Κ Μ Ν Ρ Τ Υ Χ):
# a trick only inside a word that is otherwise Latin (``соs`` for cos); a Cyrillic or Greek word is just a word
_CONFUSABLE = re.compile("[аеорсхуАВЕКМНОРСТХοΟΑΒΕΖΗΙΚΜΝΡΤΥΧ]")
_MIXED = re.compile(
    r"[A-Za-z][^\W\d_]*[аеорсхуАВЕКМНОРСТХοΟΑΒΕΖΗΙΚΜΝΡΤΥΧ]|[аеорсхуАВЕКМНОРСТХοΟΑΒΕΖΗΙΚΜΝΡΤΥΧ][^\W\d_]*[A-Za-z]"
)
# never needed by any script (anywhere in the visible text): zero-width space, word joiners, BOM, direction
# embeddings, overrides and isolates
_INVISIBLE = re.compile("[\u200b\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
# needed by scripts (Persian ZWNJ, Indic ZWJ, Hebrew/Arabic RLM/LRM, a soft hyphen in a word): a trick only
# against a digit or in math, where no script needs them
_SCRIPT_MARKS = re.compile("(?<=[0-9$\\{}^_=+*/.,-])[\u00ad\u200c-\u200f]|[\u00ad\u200c-\u200f](?=[0-9$\\{}^_=+*/.,-])")
_SPACING = re.compile(r"\\(?:[,;:! ]|quad|qquad|enspace|thinspace|hspace\s*\{[^{}]*\})|(?<!\\)[{}$\s]")


def _tricky_mark(answer: str, rtl: bool) -> bool:
    """A script's mark used where no script needs it: against a digit or in math (direction marks beside
    right-to-left text are that text's own)."""
    return any(
        not (rtl and m.group().strip("0123456789$\\{}^_=+*/.,-") in "\u200e\u200f")
        for m in re.finditer(_SCRIPT_MARKS.pattern, answer)
    )


def empty(answer: str) -> bool:
    """An answer a reader sees nothing in: only spacing, empty groups and punctuation (``∅``, ``\\{\\}``, ``∞``
    and ``\\emptyset`` are answers)."""
    return re.fullmatch(r"[.,;:!?…\-–—~_]*", _SPACING.sub("", answer)) is not None


def signals_of(completion: str, ext: Extraction | None, prompt: str = "", reference: str = "") -> list[str]:
    """The ``answer.*`` signals of a completion whose final answer is ``ext`` (``extract``'s, or None): the
    extraction's own (several, hedge, unclosed think, an answer hidden from a reader), an empty or
    punctuation-only answer, invisible or confusable characters in an answer, another value after the answer
    (not final), an answer other than the reference that is written in the prompt (restates it)."""
    out = set(ext.signals if ext else [])
    if unclosed_think(completion):
        out.add("answer.unclosed_think")
    visible = visible_text(completion)
    marks = [visible[k + 1 : m] for _, k, m in boxed_spans(visible)]
    marks += [visible[c:d] for _, _, c, d in tag_spans(visible)]
    if any(empty(t) for t in marks):
        out.add("answer.empty")
    answers = ext.answers if ext and ext.source not in ("full", "whole") else []
    rtl = re.search("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufeff]", visible) is not None  # marks these scripts need
    if _INVISIBLE.search(visible) or any(_MIXED.search(a) or _tricky_mark(a, rtl) for a in marks + answers):
        out.add("answer.invisible")
    found, _ = answers_in(visible)
    if found and ext and ext.source in ("boxed", "answer", "channels"):
        a, b, _, _ = found[-1]
        if reader.later_number(visible, a, b, ext.answers):
            out.add("answer.not_final")
    if prompt and any(_in_prompt(a, prompt, reference) for a in answers):
        out.add("answer.restates_prompt")
    return sorted(out)


def _in_prompt(answer: str, prompt: str, reference: str) -> bool:
    """The answer is written in the prompt and is not the reference (however the reference is written)."""
    a = canon(answer).strip("$")
    if not a or value_key(a) == value_key(canon(reference).strip("$")):
        return False
    return re.search(rf"(?<![\d.]){re.escape(a)}(?![\d.])", canon(prompt)) is not None
