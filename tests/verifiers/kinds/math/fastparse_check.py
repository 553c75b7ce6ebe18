"""Run in a fresh interpreter by test_fastparse.py: fastparse against the ANTLR parse, string by string.

Reads ``{"strings": [[text, is_real], ...], "break": rule-or-null}`` on stdin and prints one JSON line: for each
string ``fast`` (srepr, or null where fastparse declined), ``antlr`` (srepr, or "ERROR: ...") and ``same``.
The reference is the grader's own fallback (``grader.parse_two_stage``: ANTLR, SLL then LL); the grader is
imported here only, since importing it puts our rules in place of Math-Verify's for the whole process.
``same`` compares the trees strictly: the srepr, and every node's class and arguments in their stored order
(srepr sorts an Add's or Mul's), with a FiniteSet's or And's ``_unsorted_args``. ``break`` swaps in a wrong rule
(the test that the check can fail).
"""

from __future__ import annotations

import json
import sys

import sympy


def shape(e):
    if isinstance(e, sympy.MatrixBase):
        return (type(e).__name__, shape(e.tolist()))
    if isinstance(e, sympy.Basic):
        if not e.args:
            return sympy.srepr(e)
        kept = getattr(e, "_unsorted_args", ())
        return (type(e).__name__, tuple(shape(a) for a in e.args), tuple(shape(a) for a in kept))
    if isinstance(e, list | tuple):
        return tuple(shape(a) for a in e)
    return repr(e)


def show(e) -> str:
    """srepr, which can itself fail (ordering an Add's terms may evaluate them: a ZeroDivisionError in mpmath)."""
    try:
        return sympy.srepr(e)
    except Exception as err:  # noqa: BLE001 - the trees are still compared node by node
        return f"<srepr failed: {type(err).__name__}> {type(e).__name__}"


def broken(rule: str) -> None:
    from in_sandbox.math import fastparse

    if rule == "add-order":  # a + b built as b + a: the same srepr, another tree
        flat = fastparse.Parser.expr

        def expr(self):
            x = flat(self)
            return sympy.Add(*reversed(x.args), evaluate=False) if isinstance(x, sympy.Add) else x

        fastparse.Parser.expr = expr
    elif rule == "power-right":  # 2^3^4 read as 2^(3^4)

        def power(self):
            x = self.atom()
            if self.peek() == "^":
                self.take()
                return sympy.Pow(x, power(self), evaluate=False)
            return x

        fastparse.Parser.power = power
    else:
        raise ValueError(f"unknown rule to break: {rule!r} (add-order, power-right)")


def main() -> None:
    sys.setrecursionlimit(10_000)
    from latex2sympy2_extended.latex2sympy2 import _Latex2Sympy

    from in_sandbox.math import fastparse, grader

    q = json.loads(sys.stdin.read())
    if q.get("break"):
        broken(q["break"])
    out = []
    for text, is_real in q["strings"]:
        fast = fastparse.parse(_Latex2Sympy(is_real=is_real), text)
        row = {"s": text, "fast": None if fast is None else show(fast), "antlr": None, "same": None}
        if fast is not None:
            try:
                ref = grader.parse_two_stage(_Latex2Sympy(is_real=is_real), text)
                row["antlr"] = show(ref)
                row["same"] = row["antlr"] == row["fast"] and shape(ref) == shape(fast)
            except Exception as e:  # noqa: BLE001 - ANTLR refusing what fastparse accepted is a mismatch
                row["antlr"], row["same"] = f"ERROR: {str(e)[:200]}", False
        out.append(row)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
