"""Regenerate the packaged canary set (verifiers/canaries/data/*.jsonl) from the project's adversarial batteries.

    .venv/bin/python -m tests.build_canaries          # rewrites the data files
    .venv/bin/python -m tests.build_canaries --check  # exit 1 when the packaged files differ

A canary is a row of a battery that a careful grader gives nothing (math: INCORRECT or NO_ANSWER; code: any
outcome but CORRECT; format: not well formed), in a form any grader can take: the completion, the reference
and the prompt, with no options of ours. So rows that need a non-default option (math ``fallback`` or
``rel_tol``, code ``prelude`` or stdio mode) are left out: the canaries grade a reward as the user set it. A
code row's ``entry_point`` is folded into the tests (``check(add)`` appended), which runs the same attack.

Each canary has a control: a plainly wrong answer in the same format (math: a well-formed think block and a
boxed or tagged ``\\varnothing``; code: a fenced block that defines nothing; format: a bare answer with no think
block), so a composite's partial credit for the format is not counted as paid. No control's answer is its
reference.
tests/verifiers/client/test_canaries.py fails when the packaged files and this output drift apart.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.data import code_battery, math_battery
from tests.verifiers.kinds.test_format_invisible import INVISIBLE
from tests.verifiers.kinds.test_think_format import CASES as THINK_CASES

DATA = Path(__file__).resolve().parent.parent / "verifiers" / "canaries" / "data"
WRONG = "\\varnothing"  # plainly wrong for every math reference in the batteries, and no digit in it
MATH_CONTROL = f"<think>some reasoning</think>The answer is $\\boxed{{{WRONG}}}$."
MATH_TAG_CONTROL = f"<think>some reasoning</think><answer>{WRONG}</answer>"
CODE_CONTROL = "```python\n# a plainly wrong answer: it defines nothing\npass\n```"
FORMAT_CONTROL = "The answer is 4."  # no think block at all
FORMAT_REFERENCE = "7"  # no format canary answers 7: through a composite its answer part is wrong too

NULL_PROMPTS = {
    "math": ("42", "Is 42 the product of 6 and 7? Give the product in \\boxed{}."),
    "code": (code_battery.ADD + "\ncheck(add)\n", "Write a Python function add(a, b) that returns a + b."),
    "format": (FORMAT_REFERENCE, "Think inside <think></think>, then answer: what is 3 + 4?"),
}
NULL_SHELLS = {
    "math": ("empty-box-in-shape", "<think>some reasoning</think>The answer is $\\boxed{}$."),
    "code": ("empty-fence", "```python\n```"),
    "format": ("empty-think", "<think></think>"),
}


def _row(
    family: str, name: str, kind: str, completion: str, reference: str, control: str, why: str, prompt: str = ""
) -> dict:
    if reference.strip() in (WRONG, FORMAT_CONTROL):
        raise ValueError(f"{family}/{name}: the control's answer is the reference {reference!r}")
    return {"family": family, "name": name, "kind": kind, "completion": completion, "reference": reference,
            "prompt": prompt, "control": control, "why": why}  # fmt: skip


def math_canaries() -> list[dict]:
    rows, seen = [], {}
    for family, gold, completion, options, verdict, why in math_battery.CASES:
        seen[family] = seen.get(family, -1) + 1  # the row's index in its battery family
        if verdict == "CORRECT" or options:
            continue
        tagged = "<answer>" in completion and "\\boxed" not in completion
        control = MATH_TAG_CONTROL if tagged else MATH_CONTROL
        rows.append(_row(f"math.{family}", f"{seen[family]:03d}", "math", completion, gold, control, why))
    return rows


def code_reference(tests: str, options: dict) -> str | None:
    if set(options) - {"entry_point"}:
        return None  # a prelude or a mode: not expressible without our options
    return tests + f"\ncheck({options['entry_point']})\n" if options else tests


# the code battery's tables of attacks (VALUES_FAMILY is left out: its failures are limits, not attacks)
CODE_TABLES = {
    "callables": code_battery.CALLABLE_FAMILY,
    "shadowing": code_battery.SHADOW_FAMILY,
    "frames": code_battery.FRAME_FAMILY,
    "exits": code_battery.EXIT_FAMILY,
    "check_calls": code_battery.CHECK_FAMILY,
    "control_flow": code_battery.CONTROL_FAMILY,
    "builtin_named": code_battery.BUILTIN_NAMED_FAMILY,
}
NOT_CANARIES = ("CORRECT", "BAD_REFERENCE")  # a right answer, or a reference nobody can grade against


def code_canaries() -> list[dict]:
    rows = []
    for family, table in CODE_TABLES.items():
        for cid, program, tests, options, outcome, why in table:
            reference = code_reference(tests, options)
            if outcome in NOT_CANARIES or reference is None:
                continue
            completion = f"```python\n{program}```"
            rows.append(_row(f"code.{family}", cid, "code", completion, reference, CODE_CONTROL, why))
    return rows


def format_canaries() -> list[dict]:
    rows = [
        _row("format.think", f"{i:03d}", "format", completion, FORMAT_REFERENCE, FORMAT_CONTROL, why)
        for i, (completion, ok, why) in enumerate(THINK_CASES)
        if not ok
    ]
    for name in sorted(INVISIBLE):
        junk = INVISIBLE[name] * 5
        for where, completion in (
            ("think", f"<think>{junk}</think><answer>4</answer>"),
            ("answer", f"<think>2+2=4</think>{junk}"),
            ("answer-tag", f"<think>2+2=4</think><answer>{junk}</answer>"),
        ):
            why = f"a {where} block of invisible characters ({name})"
            rows.append(
                _row("format.invisible", f"{name}/{where}", "format", completion, FORMAT_REFERENCE, FORMAT_CONTROL, why)
            )
    return rows


def null_canaries(kind: str) -> list[dict]:
    """Empty, whitespace, the prompt echoed, a lone ``{``, ``\\boxed{}`` and the kind's empty shell."""
    reference, prompt = NULL_PROMPTS[kind]
    control = {"math": MATH_CONTROL, "code": CODE_CONTROL, "format": FORMAT_CONTROL}[kind]
    shell_name, shell = NULL_SHELLS[kind]
    cases = [("empty", "", "an empty completion"), ("whitespace", " \n\t \n", "whitespace only"),
             ("prompt-echo", prompt, "the prompt echoed back"), ("lone-brace", "{", "a lone {"),
             ("empty-boxed", "\\boxed{}", "an empty \\boxed{}"), (shell_name, shell, "the kind's shape, empty")]  # fmt: skip
    return [_row(f"{kind}.null", name, kind, text, reference, control, why, prompt) for name, text, why in cases]


def build() -> dict[str, list[dict]]:
    """The canary set, one list of rows per kind (a data file each)."""
    return {
        "math": null_canaries("math") + math_canaries(),
        "code": null_canaries("code") + code_canaries(),
        "format": null_canaries("format") + format_canaries(),
    }


def render(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)


def main(argv: list[str]) -> int:
    check = argv == ["--check"]
    if argv in (["-h"], ["--help"]):
        print(f"usage: .venv/bin/python -m tests.build_canaries [--check]\n\n{__doc__}")
        return 0
    if argv and not check:
        print("usage: python -m tests.build_canaries [--check]", file=sys.stderr)
        return 2
    drift = []
    for kind, rows in build().items():
        path = DATA / f"{kind}.jsonl"
        text = render(rows)
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                drift.append(str(path))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"{path}: {len(rows)} canaries")
    if drift:
        print("out of date (run python -m tests.build_canaries): " + ", ".join(drift), file=sys.stderr)
    return 1 if drift else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
