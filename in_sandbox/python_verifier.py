"""The job of a ``python`` verifier (verifiers/kinds/python_verifier.py): the user's ``verify`` source, compiled,
loaded and called once, inside the sandbox. stdin: in_sandbox/jobs.py ``PYTHON_VERIFIER``; stdout: one line, the
nonce then JSON (``reward`` and maybe ``steps``, or ``error`` and ``msg``), so nothing the user's code prints can
pass for the result (its prints go to stderr).
"""

import builtins
import json
import math
import numbers
import os
import sys
import traceback

from in_sandbox.jobs import PYTHON_VERIFIER


def main():
    q = PYTHON_VERIFIER.loads(sys.stdin.read())
    nonce = q.pop("nonce")
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def emit(**kw):
        out.write(nonce + json.dumps(kw) + "\n")
        out.flush()

    def tb(e):
        frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename == "<verifier>"]
        where = f" at line {frames[-1].lineno}" if frames else ""
        return f"{type(e).__name__}{where}: {e}"[:600]

    try:
        code = compile(q["source"], "<verifier>", "exec", dont_inherit=True)
    except SyntaxError as e:
        return emit(error="syntax", line=e.lineno, msg=e.msg, text=(e.text or "").strip()[:200])
    except (ValueError, RecursionError, MemoryError) as e:
        return emit(error="syntax", line=None, msg=f"{type(e).__name__}: {e}", text="")

    class BadReference(Exception):  # raised by a verifier: the reference cannot be graded (BAD_REFERENCE)
        pass

    ns = {"__name__": "verifier", "__builtins__": builtins, "BadReference": BadReference}
    try:
        exec(code, ns)
    except BaseException as e:
        return emit(error="load", msg=tb(e))
    fn = ns.get(q["entrypoint"])
    if not callable(fn):
        return emit(error="entrypoint", msg=f"the source defines no function {q['entrypoint']!r}")
    try:
        r = fn(q["completion"], q["reference"], q["options"])
    except BaseException as e:
        if type(e).__name__ == "BadReference":
            return emit(error="bad_reference", msg=str(e)[:600])
        return emit(error="raised", msg=tb(e))
    steps = None
    if isinstance(r, dict) and "reward" in r:
        r, steps = r["reward"], r.get("steps", [])
    elif isinstance(r, tuple) and len(r) == 2:
        r, steps = r
    if r is None:
        return emit(reward=None)
    if not isinstance(r, numbers.Real) or not math.isfinite(float(r)):
        return emit(error="type", msg=f"returned {type(r).__name__} {str(r)[:80]!r}, not a float or bool")
    if steps is None:
        return emit(reward=float(r))
    try:
        json.dumps(steps)
    except (TypeError, ValueError) as e:
        return emit(error="type", msg=f"returned steps that are not plain lists/dicts of numbers: {e}"[:300])
    emit(reward=float(r), steps=steps)
