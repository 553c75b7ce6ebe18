"""Does the reward tell a right answer from a plainly wrong one? The canaries (verifiers/canaries/) compare
each known-bad completion with a control, a plainly wrong answer: a reward that pays the control too (pays
everything, pays the format alone, pays length) pays no canary *more* than its control and passed them all.
The probes close that gap: pairs of a right and a plainly wrong completion of the same shape, graded by
the same reward.

    short   the task's format, a few characters       (a format-only reward pays both)
    long    the task's format, a long worked chain     (a length reward pays both)
    bare    the answer alone, no format                (only a reward that pays anything pays the wrong one)

A probe is **paid** (the reward cannot tell them apart) when its wrong completion gets the full reward
(1.0, or as much as its right twin where that is above 0), or, for the formatted shapes, when the right
one is not paid at least ``MARGIN`` above the wrong one. Paid probes are reported under a family that
names the reward's shape, read from which shapes it pays wrong answers on:

    <kind>.pays_everything   wrong answers paid in every shape, bare ones included
    <kind>.pays_format       wrong answers paid where formatted, not bare
    <kind>.pays_length       wrong answers paid where long, not short
    <kind>.no_margin         no wrong answer paid in full, but right ones not clearly above them

Probes that pass are reported as ``<kind>.discrimination``. ``gate`` runs the canaries and the probes:
the trainer's start gate (trainer/alarm/canary.py) and ``python -m verifiers.canaries`` both use it.

>>> report = gate(lambda items: [(1.0, "")] * len(items), "math")      # a reward that pays everything
>>> sorted({r.canary.family for r in report.paid})
['math.pays_everything']
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace

from verifiers.canaries import (
    KINDS,
    Canary,
    CanaryError,
    CanaryReport,
    CanaryResult,
    Grade,
    load_canaries,
    run_canaries,
)

MARGIN = 0.5  # a right answer is paid at least this much above a plainly wrong one of the same shape
FULL = 1.0  # the built-ins' full reward

_PAD = "Check it once more, step by step, writing every partial result down before going on. "
_MATH_PROMPT = "What is {a} times {b}? Give the product in \\boxed{{}}."
_MATH = [(6, 7, 41), (8, 9, 27), (12, 11, 121)]  # (a, b, a plainly wrong product)
_CODE_PROMPT = "Write a Python function add(a, b) that returns a + b."
_CODE_TESTS = "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(-1, 1) == 0\n\ncheck(add)\n"


@dataclass(frozen=True)
class Probe:
    kind: str
    name: str  # <shape>-<n>
    shape: str  # short | long | bare
    right: str
    wrong: str
    reference: str
    prompt: str


def _math_probes() -> list[Probe]:
    out = []
    for n, (a, b, bad) in enumerate(_MATH):
        ref, prompt = str(a * b), _MATH_PROMPT.format(a=a, b=b)
        for shape, fmt in (
            ("short", "<think>{a}*{b}</think>\\boxed{{{v}}}"),
            ("long", "<think>" + _PAD * 5 + "{a} times {b}: " + _PAD * 2 + "</think>The product is $\\boxed{{{v}}}$."),
            ("bare", "{v}"),
        ):
            right, wrong = fmt.format(a=a, b=b, v=ref), fmt.format(a=a, b=b, v=bad)
            out.append(Probe("math", f"{shape}-{n}", shape, right, wrong, ref, prompt))
    return out


def _code_probes() -> list[Probe]:
    body = {"right": "def add(a, b):\n    return a + b\n", "wrong": "def add(a, b):\n    return a - b\n"}
    long_doc = '    """' + _PAD * 6 + '"""\n'
    shapes = {
        "short": lambda code: f"```python\n{code}```",
        "long": lambda code: (
            "<think>" + _PAD * 4 + "</think>\n```python\n" + code.replace(":\n", ":\n" + long_doc, 1) + "```"
        ),
        "bare": lambda code: code,
    }
    return [
        Probe("code", f"{s}-0", s, f(body["right"]), f(body["wrong"]), _CODE_TESTS, _CODE_PROMPT)
        for s, f in shapes.items()
    ]


def load_probes(kinds: Iterable[str] | None = None) -> list[Probe]:
    """The probes of ``kinds`` (math and code have probes; format's reward pays format by design)."""
    wanted = set(KINDS if kinds is None else kinds)
    return (_math_probes() if "math" in wanted else []) + (_code_probes() if "code" in wanted else [])


@dataclass(frozen=True)
class ProbeResult(CanaryResult):
    """A probe's verdicts: ``reward`` is the wrong completion's, ``control_reward`` the right one's."""

    shape: str = "short"

    @property
    def wrong_paid_full(self) -> bool:
        full = min(FULL, self.control_reward) if self.control_reward > 0 else FULL
        return math.isnan(self.reward) or self.reward >= full - 1e-9

    @property
    def paid(self) -> bool:
        no_margin = self.shape != "bare" and not (self.control_reward - self.reward >= MARGIN - 1e-9)
        return self.wrong_paid_full or no_margin

    def versus(self) -> str:
        return f"wrong answer paid {self.reward:g}, right answer {self.control_reward:g}"


def diagnose(results: list[ProbeResult]) -> str:
    """The family name of a reward that fails probes of one kind (see the module docstring)."""
    shapes = {r.shape for r in results}
    full = {r.shape for r in results if r.wrong_paid_full}
    if full and full == shapes:
        return "pays_everything"
    if full and full == shapes - {"bare"}:
        return "pays_format"
    if full == {"long"}:
        return "pays_length"
    return "no_margin"


def run_probes(grade: Grade, probes: Iterable[Probe]) -> CanaryReport:
    """Grade each probe's right and wrong completion through ``grade`` (one call); one result per probe."""
    probes = list(probes)
    if not probes:
        return CanaryReport()
    items = [(p.wrong, p.reference, p.prompt) for p in probes] + [(p.right, p.reference, p.prompt) for p in probes]
    pairs = grade(items)
    if len(pairs) != len(items):
        raise CanaryError(f"the grade function returned {len(pairs)} results for {len(items)} items")
    out: list[ProbeResult] = []
    n = len(probes)
    for i, p in enumerate(probes):
        (wr, wo), (rr, ro) = pairs[i], pairs[n + i]
        canary = Canary(
            f"{p.kind}.discrimination",
            p.name,
            p.kind,
            p.wrong,
            p.reference,
            p.prompt,
            p.right,
            f"a plainly wrong answer ({p.shape}) against a right one of the same shape",
        )
        out.append(ProbeResult(canary, _number(wr), str(wo), _number(rr), str(ro), shape=p.shape))
    by_kind: dict[str, list[ProbeResult]] = {}
    for r in out:
        by_kind.setdefault(r.canary.kind, []).append(r)
    named = []
    for kind, rs in by_kind.items():
        family = f"{kind}.{diagnose(rs)}" if any(r.paid for r in rs) else None
        for r in rs:
            if family and r.paid:
                r = replace(r, canary=replace(r.canary, family=family, why=_why(r, family)))
            named.append(r)
    return CanaryReport(list(named))


def _why(r: ProbeResult, family: str) -> str:
    what = "paid in full" if r.wrong_paid_full else f"paid less than {MARGIN:g} below the right one"
    return f"{family.split('.', 1)[1].replace('_', ' ')}: a plainly wrong answer ({r.shape}) {what}"


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CanaryError(f"the grade function returned {value!r} as a reward: a number is expected")
    return float(value)


def gate(grade: Grade, kind: str) -> CanaryReport:
    """The canaries of ``kind`` and its probes through ``grade``: what a reward must not pay."""
    return run_canaries(grade, load_canaries(kinds={kind})) + run_probes(grade, load_probes({kind}))
