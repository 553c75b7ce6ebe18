"""The payloads that cross the sandbox wall, declared once and read on both sides (the host imports this module as
it imports in_sandbox/answer.py; the image ships it with the rest of in_sandbox/).

The host builds a payload and sends ``dumps(payload)`` as the job's stdin; the job in the sandbox reads it back
with ``loads``. Both check it against its shape: every field named, of its type, nothing unknown. So a payload
that does not match fails where it is built (``PayloadError``, before a sandbox is used), and a job never reads a
key that the host did not write.

Shapes, each with the job code that reads it (``entry``; ``shape_of`` finds a job's shape by it):
``DRIVER`` (a toolchain job: in_sandbox/code/driver.py and artifact.py, built by verifiers/kinds/code/toolchains.py),
``MATH`` (a batch of math items: in_sandbox/math/grader.py, built by verifiers/kinds/math/verifier.py),
``PYTHON_ASSERT`` (Python assert mode: in_sandbox/code/harness.py, built by verifiers/kinds/code/verifier.py),
``CHECKER`` (stdio mode's checker judge: in_sandbox/code/checker.py, built by verifiers/kinds/code/judges.py),
``PYTHON_VERIFIER`` (a registered python verifier: in_sandbox/python_verifier.py, built by
verifiers/kinds/python_verifier.py).
"""

from __future__ import annotations

import json

STR_LIST = "list[str]"
STR_MAP = "dict[str, str]"


class PayloadError(ValueError):
    """A payload that does not match its shape (the message names the field and what it must be)."""


class ListOf:
    """A field holding a list of payloads of one shape (each checked, the message naming ``field[i].name``)."""

    def __init__(self, shape: Shape) -> None:
        self.shape = shape
        self.__name__ = f"list[{shape.name}]"


def _fits(value: object, kind: object) -> bool:
    if isinstance(kind, ListOf):
        return isinstance(value, list)
    if kind == STR_LIST:
        return isinstance(value, list) and all(isinstance(x, str) for x in value)
    if kind == STR_MAP:
        return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


class Shape:
    """A payload's fields: name -> type (``str``, ``int``, ``float``, ``bool``, ``STR_LIST``, ``STR_MAP``, or a
    tuple of them), and which may be missing or None (``optional``)."""

    def __init__(self, name: str, fields: dict[str, object], optional: tuple[str, ...] = (), entry: str = "") -> None:
        self.name, self.fields, self.optional, self.entry = name, fields, set(optional), entry

    def check(self, payload: object, at: str = "") -> dict:
        """``payload`` itself when it matches; PayloadError naming what does not (``at``: where it is nested)."""
        if not isinstance(payload, dict):
            raise PayloadError(
                f"{self.name} payload{at and ' ' + at} must be a JSON object, got {type(payload).__name__}"
            )
        unknown = sorted(set(payload) - set(self.fields))
        if unknown:
            raise PayloadError(
                f"{self.name} payload: unknown field(s) {', '.join(at + u for u in unknown)} "
                f"(known: {', '.join(self.fields)})"
            )
        for field, kind in self.fields.items():
            value = payload.get(field)
            if value is None:
                if field in self.optional:
                    continue
                raise PayloadError(f"{self.name} payload: field {at + field!r} is missing")
            kinds = kind if isinstance(kind, tuple) else (kind,)
            if not any(_fits(value, k) for k in kinds):
                want = " or ".join(k if isinstance(k, str) else k.__name__ for k in kinds)
                raise PayloadError(
                    f"{self.name} payload: field {at + field!r} must be {want}, got {type(value).__name__}"
                )
            for k in kinds:
                if isinstance(k, ListOf):
                    for i, one in enumerate(value):
                        k.shape.check(one, f"{at}{field}[{i}].")
        return payload

    def dumps(self, payload: dict) -> str:
        """The job's stdin for ``payload`` (checked first)."""
        return json.dumps(self.check(payload))

    def loads(self, text: str | bytes) -> dict:
        """The payload a job was sent (checked)."""
        try:
            payload = json.loads(text)
        except ValueError as e:
            raise PayloadError(f"{self.name} payload is not JSON: {e}") from None
        return self.check(payload)


# A toolchain job: write the files, compile once, run every input (in_sandbox/code/driver.py); ``output_cap``: a
# build job, which also sends back what its compile wrote; ``artifact``: a run job on a cached compile
# (in_sandbox/code/artifact.py).
DRIVER = Shape(
    "toolchain driver",
    {
        "nonce": str,
        "files": STR_MAP,
        "blobs": STR_MAP,
        "compile": STR_LIST,
        "compile_timeout": float,
        "compile_as_mb": int,
        "compile_nproc": int,
        "run": STR_LIST,
        "env": STR_MAP,
        "inputs": STR_LIST,
        "case_timeout": float,
        "run_as_mb": int,
        "run_nproc": int,
        "output_budget": int,
        "stop_on_error": bool,
        "output_cap": int,
        "artifact": str,
    },
    optional=("compile", "output_cap", "artifact"),
    entry="from in_sandbox.code import driver\ndriver.main()\n",
)

# One math item: the gold, the answers read from the completion, how to compare them (in_sandbox/math/grader.py);
# ``timeout``: the item's own time from its start, ``left``: what its request had left when the job was sent.
MATH_ITEM = Shape(
    "math item",
    {
        "gold": str,
        "preds": STR_LIST,
        "mode": str,  # "answer" (the extracted answers) or "full" (the whole text, verl's fallback)
        "rel_tol": float,
        "together": bool,  # several boxes may be read together as one answer (a tuple)
        "timeout": float,
        "left": float,
    },
    optional=("rel_tol", "together", "timeout", "left"),
)
MATH = Shape("math", {"items": ListOf(MATH_ITEM)}, entry="from in_sandbox.math import grader\ngrader.main()\n")

# Python assert mode (in_sandbox/code/harness.py): the candidate's code, the tests (one script, or MBPP's list of
# asserts graded one by one), the function the tests call, trusted problem code, the verdict line's nonce.
PYTHON_ASSERT = Shape(
    "python assert",
    {"candidate": str, "tests": (str, STR_LIST), "entry_point": str, "prelude": str, "nonce": str},
    entry="from in_sandbox.code import harness\nharness.main()\n",
)

# Stdio mode's checker judge (in_sandbox/code/checker.py): the problem's checker program, and the case's input, the
# candidate's output and the expected one (the files it is given). The cases themselves need no shape: a Python
# case's job is the candidate's program itself, its stdin the case's input as given.
CHECKER = Shape(
    "stdio checker",
    {"checker": str, "input": str, "output": str, "answer": str},
    entry="from in_sandbox.code import checker\nchecker.main()\n",
)

# A registered ``python`` verifier (in_sandbox/python_verifier.py): the user's source, the function to call, its
# three arguments, the result line's nonce.
PYTHON_VERIFIER = Shape(
    "python verifier",
    {"nonce": str, "source": str, "entrypoint": str, "completion": str, "reference": str, "options": STR_MAP},
    entry="from in_sandbox import python_verifier\npython_verifier.main()\n",
)

_BY_ENTRY = {s.entry: s for s in (DRIVER, MATH, PYTHON_ASSERT, CHECKER, PYTHON_VERIFIER)}


def shape_of(code: str) -> Shape | None:
    """The shape of the payload a job running ``code`` reads (None: a job of no declared shape)."""
    return _BY_ENTRY.get(code)
