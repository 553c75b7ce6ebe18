"""Format rewards for the R1 template: ``<think>…</think>`` then the answer. Pure functions, linear
time on any input (``str.find``/``str.count`` only, no backtracking regex), so they run in-process.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from verifiers.base import Context, Outcome, Request, Verdict

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
ANSWER_OPEN, ANSWER_CLOSE = "<answer>", "</answer>"
TAGS = (THINK_OPEN, THINK_CLOSE, ANSWER_OPEN, ANSWER_CLOSE)


def think_format(completion: str) -> tuple[bool, str]:
    """Exactly one non-empty ``<think>…</think>`` first, then a non-empty answer, optionally inside one
    ``<answer>…</answer>`` with nothing after it. Leading whitespace is allowed.

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
    if not text[len(THINK_OPEN) : close].strip():
        return False, "empty <think> block"
    rest = text[close + len(THINK_CLOSE) :].strip()
    if not rest:
        return False, "no answer after </think>"
    n_open, n_close = rest.count(ANSWER_OPEN), rest.count(ANSWER_CLOSE)
    if n_open == 0 and n_close == 0:
        return True, "ok"
    if n_open != 1 or n_close != 1:
        return False, "needs at most one <answer>…</answer>"
    if not rest.startswith(ANSWER_OPEN) or not rest.endswith(ANSWER_CLOSE):
        return False, "text outside <answer>…</answer> after </think>"
    if not rest[len(ANSWER_OPEN) : -len(ANSWER_CLOSE)].strip():
        return False, "empty <answer> block"
    return True, "ok"


def tag_count(completion: str) -> float:
    """0.25 for each of the four R1 tags that appears exactly once (a curriculum signal).

    >>> tag_count("<think>a</think><answer>b</answer>")
    1.0
    >>> tag_count("<think>a<think></think>")
    0.25
    """
    return sum(0.25 for tag in TAGS if completion.count(tag) == 1)


@dataclass
class ThinkFormat:
    name: str = "think_format"
    kind: str = "builtin"
    description: str = "1 if the completion is one non-empty <think>…</think> followed by an answer"
    version: int = 1
    default_timeout_s: float = 1.0
    options: ClassVar[dict[str, str]] = {}
    sandbox_entry = warmup = ""  # linear-time text checks, in the service process
    result = Verdict

    def verify(self, req: Request, ctx: Context) -> Verdict:
        ok, why = think_format(req.completion)
        return Verdict.of(Outcome.CORRECT if ok else Outcome.INCORRECT, why)


@dataclass
class TagCount:
    name: str = "tag_count"
    kind: str = "builtin"
    description: str = "0.25 for each of <think>, </think>, <answer>, </answer> present exactly once"
    version: int = 1
    default_timeout_s: float = 1.0
    options: ClassVar[dict[str, str]] = {}
    sandbox_entry = warmup = ""
    result = Verdict

    def verify(self, req: Request, ctx: Context) -> Verdict:
        r = tag_count(req.completion)
        return Verdict(r, Outcome.CORRECT if r == 1.0 else Outcome.INCORRECT, f"{int(r * 4)}/4 tags well-formed")
