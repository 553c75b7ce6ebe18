"""Grading a session's state with any verifier (``SessionService.GradeSession``, ``POST /v1/sessions/{id}/grade``).

What is graded is the session's **program**: the code of every cell that ran to its end (status ``ok``,
an exception included; a cell killed for time, CPU or output, or that exited, left no state and is not in
it), in the order the cells returned, with the files placed at open, replayed with notebook semantics. The
program is the verifier's ``completion``, and the verifier grades it as it grades any completion: the
``code`` verifier runs it as the candidate in a fresh grading sandbox, in its own process, and the hidden
tests in a clean interpreter that calls into it (docs/verifiers.md). So:

* the reference (hidden tests) never enters the session's sandbox: no cell, thread or process of the session
  can read it, before or after grading;
* nothing the session's processes do outside its cells reaches the verdict: a patched ``assert`` or builtins,
  a function replaced by a thread or a process left running, a fake verdict file, output that imitates a
  verdict — in the session they change nothing that is graded; in the replay they are the candidate's code,
  which the code verifier's own defences (its attack tables) already face;
* the cells cross as base64 inside a fixed wrapper: no cell can change where the program starts or ends
  (a fence or a think tag inside a cell is just text).

What the replay does not reproduce: state that did not come from the cells (randomness without a seed, the
clock, what a thread did after its cell returned), and state a session's files gained from outside its cells.
A bash session is not graded (FAILED_PRECONDITION): its cells are not a program one process can replay with
the same meaning.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping

from sandbox.deadline import Deadline
from verifiers.service.sessions import Ended, Sessions
from verifiers.shapes.base import BadRequest, Verdict
from verifiers.shapes.request import Request

REPLAY = """\
# The session's program: {n} cell(s) that ran to their end, replayed in order with notebook semantics
# (docs/sessions.md, "Grading a session"). Each cell and file is base64 text.
def __session_replay(cells, files):
    import ast
    import base64
    import os

    for name, data in files:
        try:
            path = os.path.normpath(base64.b64decode(name).decode("utf-8", "surrogateescape"))
            if os.path.dirname(path):
                os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(base64.b64decode(data))
        except OSError:
            pass
    g = globals()
    for i, cell in enumerate(cells, 1):
        name = f"<cell {{i}}>"
        try:
            tree = ast.parse(base64.b64decode(cell).decode("utf-8", "surrogatepass"), name, "exec")
            last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
            exec(compile(tree, name, "exec"), g)
            if last is not None:
                value = eval(compile(ast.Expression(last.value), name, "eval"), g)
                if value is not None:
                    g["_"] = value
        except BaseException:  # the session went on after the cell's exception: so does the replay
            pass


__session_replay(
    [
{cells}
    ],
    [
{files}
    ],
)
del __session_replay
"""


def _b64(data: bytes) -> str:
    return '"' + base64.b64encode(data).decode() + '"'


def program(cells: list[str], files: Mapping[str, bytes] | None = None) -> str:
    """The Python program that replays ``cells`` (after placing ``files``) as the session ran them."""
    lines = [f"        {_b64(c.encode('utf-8', 'surrogatepass'))}," for c in cells]
    placed = [f"        ({_b64(n.encode())}, {_b64(bytes(v))})," for n, v in (files or {}).items()]
    return REPLAY.format(n=len(cells), cells="\n".join(lines), files="\n".join(placed))


def completion(cells: list[str], files: Mapping[str, bytes] | None = None) -> str:
    """What the verifier grades: the program in a ```python fence (base64 holds no backticks)."""
    return "```python\n" + program(cells, files) + "```\n"


def grade(
    service, sessions: Sessions, caller: str, session_id: str, fields: dict, deadline: Deadline | None = None
) -> Verdict:
    """Grade the caller's session ``session_id`` with ``fields`` (a VerifyRequest's, less the completion)."""
    if not session_id:
        raise BadRequest("field 'session_id' is empty: name the session to grade")
    kind, cells, files = sessions.transcript(caller, session_id)
    if kind != "python":
        raise Ended(f"session {session_id} is a {kind} session: only python sessions can be graded")
    text = completion(cells, files)
    most = service.limits.max_completion_chars
    if len(text) > most:
        raise Ended(
            f"session {session_id} cannot be graded: its program is {len(text)} characters, over the "
            f"server's limit of {most} (--max-completion-chars)"
        )
    req = Request(completion=text, **fields)
    verdict = service.verify(req, deadline, caller=caller)
    verdict.cached = False  # a cache hit is the admin's to see (docs/security.md)
    return verdict
