"""The payloads that cross the sandbox wall, declared once and read on both sides (the host imports this module as
it imports in_sandbox/answer.py; the image ships it with the rest of in_sandbox/).

The host builds a payload and sends ``dumps(payload)`` as the job's stdin; the job in the sandbox reads it back
with ``loads``. Both check it against its shape: every field named, of its type, nothing unknown. So a payload
that does not match fails where it is built (``PayloadError``, before a sandbox is used), and a job never reads a
key that the host did not write.

Shapes: ``DRIVER`` (a toolchain job: in_sandbox/code/driver.py and artifact.py, built by
verifiers/kinds/code/toolchains.py ``driver_job``).
"""

from __future__ import annotations

import json

STR_LIST = "list[str]"
STR_MAP = "dict[str, str]"


class PayloadError(ValueError):
    """A payload that does not match its shape (the message names the field and what it must be)."""


def _fits(value: object, kind: object) -> bool:
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

    def __init__(self, name: str, fields: dict[str, object], optional: tuple[str, ...] = ()) -> None:
        self.name, self.fields, self.optional = name, fields, set(optional)

    def check(self, payload: object) -> dict:
        """``payload`` itself when it matches; PayloadError naming what does not."""
        if not isinstance(payload, dict):
            raise PayloadError(f"{self.name} payload must be a JSON object, got {type(payload).__name__}")
        unknown = sorted(set(payload) - set(self.fields))
        if unknown:
            raise PayloadError(
                f"{self.name} payload: unknown field(s) {', '.join(unknown)} (known: {', '.join(self.fields)})"
            )
        for field, kind in self.fields.items():
            value = payload.get(field)
            if value is None:
                if field in self.optional:
                    continue
                raise PayloadError(f"{self.name} payload: field {field!r} is missing")
            kinds = kind if isinstance(kind, tuple) else (kind,)
            if not any(_fits(value, k) for k in kinds):
                want = " or ".join(k if isinstance(k, str) else k.__name__ for k in kinds)
                raise PayloadError(f"{self.name} payload: field {field!r} must be {want}, got {type(value).__name__}")
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
)
