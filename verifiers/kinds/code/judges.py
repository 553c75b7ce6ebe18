"""How a stdio case's output is judged against the expected output, and the stdio reference's shape.

Host-side judges (pure functions; the expected output never enters the program's sandbox):

* ``exact``: the same lines, byte for byte, after ``\\r\\n`` → ``\\n``, dropping trailing whitespace at
  the end of each line and trailing blank lines (what online judges call an exact match: a missing
  final newline never fails a program);
* ``tokens`` (the default): the same whitespace-separated tokens, line breaks included as whitespace;
* ``float``: the same tokens, where tokens that are both decimal numbers match when
  ``|a - b| <= abs_tol`` or ``|a - b| <= rel_tol * |b|`` (``b`` expected; defaults 1e-6 each); any
  other token must match exactly (``nan``/``inf`` too: a non-finite number never matches a finite one,
  ``nonfinite`` below).

The fourth judge, ``checker``, is a program from the reference run *in the sandbox* (a job of its
own, after the candidate's job ended) — see ``CHECKER_RUNNER`` below.

Reference shapes (``options["mode"] = "stdio"``):

* a JSON list of cases ``[{"input": "...", "output": "..."}, ...]`` (judges exact/tokens/float);
* a JSON object ``{"cases": [...same...], "checker": "<Python source>"}`` (any judge; required for
  ``checker``). The checker is a testlib-style program: it is run as
  ``checker.py <input file> <output file> <answer file>`` (the case's input, the candidate's output,
  the expected output, each a file in its working directory); exit code 0 accepts, 1 rejects, and
  anything else (an exception, a time-out) rejects the output too, unless the checker also fails when
  given the expected output as the program's: then the checker itself is broken (``BAD_REFERENCE``).
  Its stdout/stderr becomes the case's detail.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from in_sandbox.jobs import CHECKER
from verifiers.shapes.base import BadRequest

JUDGES = ("exact", "tokens", "float", "checker")
DEFAULT_TOL = 1e-6
DIFF_CHARS = 300
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
Judge = Callable[[str, str], tuple[bool, str]]  # (expected, actual) -> (ok, the first difference)


@dataclass(frozen=True)
class StdioSpec:
    cases: list[tuple[str, str]]  # (input, expected output)
    checker: str = ""  # Python source of the checker program, if any


def parse_reference(reference: str, judge: str) -> StdioSpec:
    """The cases (and checker) of a stdio reference; ``BadRequest`` with the expected shape otherwise."""
    shape = (
        'code: with mode=stdio, reference must be a JSON list of {"input": …, "output": …} cases, or '
        '{"cases": [...], "checker": "<python source>"} (required with judge=checker)'
    )
    try:
        doc = json.loads(reference)
        raw, checker = (doc.get("cases"), doc.get("checker", "")) if isinstance(doc, dict) else (doc, "")
        assert isinstance(raw, list) and raw and isinstance(checker, str)
        cases = [(str(c["input"]), str(c["output"])) for c in raw]
    except (ValueError, AssertionError, KeyError, TypeError, AttributeError):
        raise BadRequest(shape) from None
    if judge == "checker" and not checker.strip():
        raise BadRequest(shape)
    return StdioSpec(cases, checker)


def _lines(s: str) -> list[str]:
    lines = [line.rstrip() for line in s.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _first_diff(exp: list[str], got: list[str], what: str) -> str:
    for i, (e, g) in enumerate(zip(exp, got, strict=False)):
        if e != g:
            return f"{what} {i + 1}: expected {_clip(e)!r}, got {_clip(g)!r}"
    if len(exp) != len(got):
        return f"expected {len(exp)} {what}s, got {len(got)}"
    return ""


def _clip(s: str) -> str:
    return s if len(s) <= DIFF_CHARS // 3 else s[: DIFF_CHARS // 3] + "…"


def judge_exact(expected: str, actual: str) -> tuple[bool, str]:
    """Same lines, trailing whitespace and trailing blank lines aside.

    >>> judge_exact("1 2\\n", "1 2")
    (True, '')
    >>> judge_exact("1 2\\n", "1  2\\n")[0]
    False
    """
    d = _first_diff(_lines(expected), _lines(actual), "line")
    return not d, d


def judge_tokens(expected: str, actual: str) -> tuple[bool, str]:
    """Same whitespace-separated tokens.

    >>> judge_tokens("1 2\\n3", "1\\n2  3\\n\\n")
    (True, '')
    """
    d = _first_diff(expected.split(), actual.split(), "token")
    return not d, d


def _close(e: str, g: str, abs_tol: float, rel_tol: float) -> bool:
    if e == g:
        return True
    if not (_NUMBER.fullmatch(e) and _NUMBER.fullmatch(g)):
        return False
    a, b = float(g), float(e)
    if not (math.isfinite(a) and math.isfinite(b)):
        return False
    return abs(a - b) <= abs_tol or abs(a - b) <= rel_tol * abs(b)


def judge_float(expected: str, actual: str, abs_tol: float = DEFAULT_TOL, rel_tol: float = DEFAULT_TOL):
    """Tokens, numbers within tolerance.

    >>> judge_float("0.333333", "0.3333333333")
    (True, '')
    >>> judge_float("1.5", "1.6")[0]
    False
    """
    exp, got = expected.split(), actual.split()
    for i, (e, g) in enumerate(zip(exp, got, strict=False)):
        if not _close(e, g, abs_tol, rel_tol):
            return (
                False,
                f"token {i + 1}: expected {_clip(e)!r}, got {_clip(g)!r} (abs_tol={abs_tol:g}, rel_tol={rel_tol:g})",
            )
    if len(exp) != len(got):
        return False, f"expected {len(exp)} tokens, got {len(got)}"
    return True, ""


_NONFINITE = re.compile(r"(?i)^[+-]?(?:nan|inf|infinity)$")


def _is_nonfinite(token: str) -> bool:
    """A token Python's float() reads as nan or ±inf (``nan``, ``-Infinity``, an overflowing ``1e999``)."""
    if _NONFINITE.match(token):
        return True
    return bool(_NUMBER.fullmatch(token)) and not math.isfinite(float(token))


def nonfinite(expected: str, actual: str) -> bool:
    """True when ``actual`` holds a non-finite number and ``expected`` holds none: the built-in judges fail it
    (no token of ``expected`` equals it, no tolerance reaches it), a checker decides for itself, and the
    verdict carries ``code.nonfinite_output``.

    >>> nonfinite("2.0", "nan"), nonfinite("nan", "nan"), nonfinite("2.0", "1e999"), nonfinite("2", "nano")
    (True, False, True, False)
    """
    if len(actual) > 1 << 20:
        actual = actual[: 1 << 20]
    return any(map(_is_nonfinite, actual.split())) and not any(map(_is_nonfinite, expected.split()))


def host_judge(name: str, abs_tol: float = DEFAULT_TOL, rel_tol: float = DEFAULT_TOL) -> Judge | None:
    """The host-side judge ``name`` (one of ``JUDGES``, validated by ``CodeOptions.parse``), as
    function(expected, actual) -> (ok, diff); None for ``checker`` (it runs in the sandbox)."""
    if name == "float":
        return lambda e, a: judge_float(e, a, abs_tol, rel_tol)
    return {"exact": judge_exact, "tokens": judge_tokens, "checker": None}[name]


# -- the checker job (runs in the sandbox) ------------------------------------------------------------
CHECKER_RUNNER = CHECKER.entry  # in_sandbox/code/checker.py, reading in_sandbox/jobs.py CHECKER


def checker_stdin(checker: str, case_input: str, expected: str, actual: str) -> str:
    """The stdin of a checker job (its code is ``CHECKER_RUNNER``)."""
    return CHECKER.dumps({"checker": checker, "input": case_input, "output": actual, "answer": expected})
