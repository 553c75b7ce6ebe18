"""Process supervision: per-step rewards with the character span of the completion each step covers,
their validation, and ``arith_steps``, the built-in step verifier of the default arithmetic task.

Step shape (``Verdict.steps``, proto ``StepReward``): ``Step(reward, start, end)`` covers
``completion[start:end]``. A list of steps is valid when every span lies inside the completion
(``0 <= start < end <= len(completion)``), the spans are in order and do not overlap
(``start_i >= end_{i-1}``), and every reward is a finite number. ``check_steps`` enforces exactly that
and raises ``BadSteps`` naming the first offending step.

``arith_steps`` checks every step written in the ``<think>`` blocks (all of them, an unclosed last one
included; the whole completion if there is none), with integers and a regex only (nothing is evaluated). A step is one segment between commas,
semicolons or line breaks, in one of two forms:

- an equation ``a op b … = c`` (ops ``+ - *``, ``*`` binding tighter): right iff the left side's value is c;
- the task's own rewrite (``trainer/pipelines/task.py``: ``3-2+8+8=?`` is solved as ``1+8+8, 9+8, 17``): a bare chain
  that must be the previous chain (the prompt's expression for the first) with its first operation done:
  first number = prev[0] op prev[1], the rest unchanged. With no expression in the prompt the first
  rewrite is right iff its value equals the integer reference. Each step is checked against the step
  written before it, so one slip costs that step alone (``1+8+8, 9+9, 18``: the second step is wrong,
  the third is a right rewrite of what was written).

Each step's reward is 1 if right, 0 if wrong; segments that are neither form (words) are not steps.
The overall reward is the final answer's correctness alone (the final answer as the final-answer rule
reads it, ``in_sandbox/answer.py``: two different answers, a hedge or an unclosed think block earn 0;
compared with the integer reference), the same signal as the task's outcome reward, so the
steps add process supervision without changing what the outcome reward means.

>>> v = ArithSteps().grade("<think>1+8+8, 9+8, 17</think><answer>17</answer>", "17", "3-2+8+8=?")
>>> v.reward, [(s.reward, s.start, s.end) for s in v.steps]
(1.0, [(1.0, 7, 12), (1.0, 14, 17), (1.0, 19, 21)])
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from in_sandbox.answer import extract, reasoning_spans
from in_sandbox.answer_signals import signals_of
from verifiers.shapes.base import Builtin, Context, ServiceError, Step, Verdict
from verifiers.shapes.outcome import Outcome
from verifiers.shapes.request import Request

MAX_STEPS = 4096
_INT = r"-?\d{1,30}"
_CHAIN = rf"{_INT}(?:\s*[-+*×]\s*\d{{1,30}})*"
_EQUATION = re.compile(rf"({_CHAIN}\s*[-+*×]\s*\d{{1,30}})\s*=\s*({_INT})(?!\d)")
_BARE = re.compile(rf"\s*({_CHAIN})\s*")
_SEGMENT = re.compile(r"[^,;\n]+")
_TOKEN = re.compile(r"\d+|[-+*×]")


class BadSteps(ServiceError):
    status = "INVALID_ARGUMENT"


def check_steps(raw: Iterable, completion: str, where: str = "steps") -> list[Step]:
    """Validate steps given as ``Step``s, dicts ``{"reward", "start", "end"}`` or ``(reward, start, end)``
    sequences; returns them as ``Step``s or raises BadSteps saying which one is wrong and why."""
    if isinstance(raw, str | bytes | dict) or not isinstance(raw, Iterable):
        raise BadSteps(f"{where} must be a list of steps, got {type(raw).__name__}")
    out: list[Step] = []
    prev_end = 0
    for i, s in enumerate(raw):
        if i >= MAX_STEPS:
            raise BadSteps(f"{where}: more than {MAX_STEPS} steps")
        if isinstance(s, Step):
            r, a, b = s.reward, s.start, s.end
        elif isinstance(s, dict):
            if set(s) != {"reward", "start", "end"}:
                raise BadSteps(f"{where}[{i}] must have exactly the keys reward, start, end; got {sorted(s)}")
            r, a, b = s["reward"], s["start"], s["end"]
        elif isinstance(s, list | tuple) and len(s) == 3:
            r, a, b = s
        else:
            raise BadSteps(
                f"{where}[{i}] is {str(s)[:60]!r}: give {{'reward', 'start', 'end'}} or (reward, start, end)"
            )
        if isinstance(r, bool) or not isinstance(r, int | float) or not math.isfinite(r):
            raise BadSteps(f"{where}[{i}].reward is {r!r}: it must be a finite number")
        for label, x in (("start", a), ("end", b)):
            if isinstance(x, bool) or not isinstance(x, int):
                raise BadSteps(f"{where}[{i}].{label} is {x!r}: it must be an integer character offset")
        if not 0 <= a < b <= len(completion):
            raise BadSteps(
                f"{where}[{i}] spans [{a}, {b}): a span must satisfy 0 <= start < end <= "
                f"{len(completion)} (the completion's length in characters)"
            )
        if a < prev_end:
            raise BadSteps(
                f"{where}[{i}] starts at {a}, before the previous step ends ({prev_end}): steps must be "
                "in order and must not overlap"
            )
        prev_end = b
        out.append(Step(float(r), a, b))
    return out


def _tokens(chain: str) -> list[str]:
    """``"-3 + 4*2"`` → ``["-3", "+", "4", "*", "2"]`` (only the first number may carry a sign)."""
    s = "".join(chain.split())
    toks = _TOKEN.findall(s.lstrip("-"))
    if s.startswith("-"):
        toks[0] = "-" + toks[0]
    return toks


def chain_value(tokens: list[str]) -> int:
    """Value of an integer chain with ``*`` before ``+``/``-``; tokens alternate number, op, number."""
    total, term, sign = 0, int(tokens[0]), 1
    for op, n in zip(tokens[1::2], tokens[2::2], strict=True):
        if op in "*×":
            term *= int(n)
        else:
            total += sign * term
            term, sign = int(n), (1 if op == "+" else -1)
    return total + sign * term


def _rewrite_ok(prev: list[str], cur: list[str]) -> bool:
    """``cur`` is ``prev`` with its first operation done (the task's step), nothing else changed."""
    if len(prev) < 3 or len(cur) != len(prev) - 2 or prev[1] not in "+-":
        return False
    first = int(prev[0]) + int(prev[2]) if prev[1] == "+" else int(prev[0]) - int(prev[2])
    return int(cur[0]) == first and cur[1:] == prev[3:]


def _as_int(text: str | None) -> int | None:
    t = (text or "").strip()
    return int(t) if re.fullmatch(r"-?\d{1,30}", t) else None


@dataclass
class ArithSteps(Builtin):
    name: str = "arith_steps"
    description: str = (
        "default arithmetic task with process supervision: 1/0 per written step (its "
        "arithmetic checked exactly), reward = the final answer's correctness"
    )

    def verify(self, req: Request, ctx: Context) -> Verdict:
        return self.grade(req.completion, req.reference, req.prompt)

    def grade(self, completion: str, reference: str, prompt: str = "") -> Verdict:
        steps = self.steps(completion, prompt, _as_int(reference))
        right = sum(s.reward for s in steps)
        ref = _as_int(reference)
        ext = extract(completion)  # the final-answer rule (in_sandbox/answer.py)
        counted = f"{right:g}/{len(steps)} steps right"
        if ref is None:
            v = Verdict.of(Outcome.BAD_REFERENCE, f"reference {reference[:40]!r} is not an integer; {counted}")
        elif ext is None:
            v = Verdict.of(Outcome.NO_ANSWER, f"no <answer> or \\boxed{{}} after the reasoning; {counted}")
        elif ext.sprayed or len(ext.answers) > 1:
            v = Verdict.of(Outcome.INCORRECT, f"several different final answers; {counted}")
        elif ext.hedge:
            v = Verdict.of(Outcome.INCORRECT, f"the answer's sentence hedges ({ext.hedge!r}); {counted}")
        else:
            answer = ext.answers[0]
            ok = _as_int(answer) == ref
            v = Verdict.of(
                Outcome.CORRECT if ok else Outcome.INCORRECT,
                f"answer {answer.strip()[:40]!r} {'=' if ok else '!='} {ref}; {counted}",
            )
        v.steps = steps
        return v.signal(*signals_of(completion, ext, prompt, reference))

    def steps(self, completion: str, prompt: str, reference: int | None) -> list[Step]:
        head = _BARE.match(prompt.split("=", 1)[0]) if prompt else None
        prev = _tokens(head.group(1)) if head and head.end() == len(prompt.split("=", 1)[0]) else None
        out: list[Step] = []
        for lo, hi in reasoning_spans(completion) or [(0, len(completion))]:
            prev = self._block(completion[lo:hi], lo, prev, reference, out)
            if len(out) >= MAX_STEPS:
                break
        return out[:MAX_STEPS]

    @staticmethod
    def _block(text: str, lo: int, prev: list[str] | None, reference: int | None, out: list[Step]) -> list[str] | None:
        """Append the steps of one think block (starting at ``lo``) to ``out``; returns the last chain."""
        for seg in _SEGMENT.finditer(text):
            eqs = list(_EQUATION.finditer(seg.group()))
            if eqs:
                for e in eqs:
                    ok = chain_value(_tokens(e.group(1))) == int(e.group(2))
                    out.append(Step(1.0 if ok else 0.0, lo + seg.start() + e.start(), lo + seg.start() + e.end()))
                continue
            b = _BARE.fullmatch(seg.group())
            if b is None:
                continue
            cur = _tokens(b.group(1))
            if prev is not None:
                ok = _rewrite_ok(prev, cur)
            else:
                ok = reference is not None and chain_value(cur) == reference
            out.append(Step(1.0 if ok else 0.0, lo + seg.start() + b.start(1), lo + seg.start() + b.end(1)))
            prev = cur
            if len(out) >= MAX_STEPS:
                break
        return prev
