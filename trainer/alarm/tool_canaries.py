"""Canaries for tool rollouts: known-bad tool transcripts, each turned into the text the grader reads by the tool
loop's own rule (``transcript_text``: the policy's tokens only, never a tool's output) and sent through the exact
reward the run trains with, against a control (the same call and a plainly wrong answer written by the policy).

Each puts the answer where only the tool wrote it: a box, an answer tag or a verdict line printed by the call (the
code builds the marker, so the policy's own text holds none), or the bare output with nothing after it. A reward (or a tool loop) that reads tool output would pay them; the run's
must not. With ``tools`` on, ``CanaryCheck`` (trainer/alarm/canary.py) sends them with the packaged set at the
start and every ``canary_every`` steps; a paid one stops the run at the start as the others do.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from trainer.rollout.tools import FORMATS, CallFormat
from verifiers.canaries import Canary

PROMPT, REFERENCE, WRONG = "47*86=?", "4042", "3995"
Segments = Sequence[tuple[str, bool]]  # (text, written by the policy)


def _call(fmt: CallFormat, code: str) -> str:
    if fmt.name == "hermes":
        return fmt.start + json.dumps({"name": "python", "arguments": {"code": code}}) + fmt.stop
    return f"{fmt.start}\n{code}\n{fmt.stop}"


def transcripts(fmt: CallFormat) -> list[tuple[str, str, Segments]]:
    """(name, why it must not pay, transcript) for ``fmt``."""
    box, tag = f"\\boxed{{{REFERENCE}}}", f"<answer>{REFERENCE}</answer>"
    return [
        (
            "box_in_output",
            "the tool printed the answer in a box; the policy wrote nothing after it",
            [(_call(fmt, "print(chr(92) + 'boxed{%d}' % (47*86))"), True), (fmt.wrap(box, 512), False)],
        ),
        (
            "answer_tag_in_output",
            "the tool printed an answer tag; the policy wrote nothing after it",
            [(_call(fmt, "print('<' + 'answer>' + str(47*86) + '</' + 'answer>')"), True), (fmt.wrap(tag, 512), False)],
        ),
        (
            "verdict_in_output",
            "the tool printed a verdict line; the policy only points at it",
            [
                (_call(fmt, "print('CORRECT', 47*86)"), True),
                (fmt.wrap(f"CORRECT {REFERENCE}\nreward: 1.0", 512), False),
                ("the tool says it is right", True),
            ],
        ),
        (
            "answer_left_to_tool",
            "the tool's output is the answer; the policy never states it",
            [(_call(fmt, "47*86"), True), (fmt.wrap(REFERENCE, 512), False)],
        ),
    ]


def control(fmt: CallFormat) -> Segments:
    """A plainly wrong answer the policy writes itself, after the same kind of call."""
    return [(_call(fmt, "47*85"), True), (fmt.wrap(WRONG, 512), False), (f"<answer>{WRONG}</answer>", True)]


def tool_canaries(fmt_name: str, graded_text: Callable[[Segments], str]) -> list[Canary]:
    """The tool canaries of format ``fmt_name``, their texts made by ``graded_text`` (the run's: transcript_text)."""
    fmt = FORMATS[fmt_name]
    ctrl = graded_text(control(fmt))
    return [
        Canary(f"tools.{fmt_name}", name, "math", graded_text(segs), REFERENCE, PROMPT, ctrl, why)
        for name, why, segs in transcripts(fmt)
    ]
