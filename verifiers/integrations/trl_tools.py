"""TRL's ``environment_factory``: each rollout runs Python in a session of its own in the verifier service.

    from trl import GRPOTrainer
    from verifiers.integrations.trl_tools import python_session_env

    trainer = GRPOTrainer(model=..., args=GRPOConfig(..., max_tool_calling_iterations=4),
                          environment_factory=python_session_env(target="127.0.0.1:50051", tests_column="tests"),
                          reward_funcs=[...], train_dataset=dataset, processing_class=tokenizer_with_tool_calling)

TRL's contract (``GRPOTrainer``, trl 1.16, experimental there): ``environment_factory()`` makes an instance;
instances are pooled and reused, one per rollout of a batch; before each rollout TRL calls
``reset(**row)`` (the dataset row) and appends a returned string to the last user message; every public
method but ``reset`` and ``get_reward`` is a tool the model may call (its name, type hints and Google-style
docstring make the schema); a ``get_reward()`` method, when the class has one, makes the environment a
reward source of its own (weight 1, logged under the class's name).

What this adapter does with it (docs/integrations.md, "TRL: tools in sessions"):

* ``reset`` closes the instance's previous session (pooled instances are reused: nothing is left open
  between batches) and opens a fresh python session, placing the row's ``files_column`` (a mapping of name to
  text) and running its ``setup_column`` code as a first cell; its output is not shown to the model.
* the one tool, ``python(code)``, runs a cell in that session (variables, imports and files persist across
  the rollout's calls) and returns what the cell printed, its value and its traceback, cut to ``max_output_chars``;
  a cell stopped for time, CPU or output says so, and the session goes on from the state before it.
* with ``tests_column``, ``get_reward()`` grades the session's state with ``verifier`` (default ``code``) against
  the row's hidden tests through ``GradeSession``: the tests never enter the session, and a verdict that says
  nothing about the model (SANDBOX_ERROR, BAD_REFERENCE, or a session that is gone) is ``None``, which TRL keeps
  out of its statistics, never a fake 0.

TRL's standalone ``tools=`` list cannot hold state per rollout (a tool function is not told which rollout calls
it), so a stateful session needs ``environment_factory``; ``python_tool`` is the stateless one for ``tools=``: each
call runs in a session of its own, closed after it. Sessions left open when the process dies are closed by the
service's idle TTL.
"""

from __future__ import annotations

import atexit
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from verifiers.client import VerifierClient, VerifierError
from verifiers.integrations import UNGRADED, default_target

__all__ = ["PythonSessionEnv", "python_session_env", "python_tool", "format_cell"]

_live: weakref.WeakSet = weakref.WeakSet()


def format_cell(r: Any, max_chars: int = 4000) -> str:
    """A cell's answer (``ExecResponse``) as the text a model reads: stdout, stderr, the value, the traceback,
    and a line saying why the cell stopped when it did not end on its own; cut to ``max_chars``."""
    parts = [r.stdout, r.stderr]
    if r.HasField("value"):
        parts.append(r.value + "\n")
    if r.HasField("error"):
        parts.append(r.error)
    if r.status != "ok":
        why = r.ended or {
            "timeout": "time limit",
            "cpu": "CPU limit",
            "output_limit": "output limit",
            "exited": "the process exited",
        }.get(r.status, r.status)
        parts.append(f"[cell stopped: {why}]\n")
    text = "".join(parts)
    return text if len(text) <= max_chars else text[:max_chars] + f"\n[... {len(text) - max_chars} characters cut]"


class PythonSessionEnv:
    """One rollout's python session (see the module docstring); ``python_session_env`` makes the factory.
    ``wait_s``: how long a call keeps trying a service that cannot be reached (the client's ``wait_s``)."""

    def __init__(
        self,
        target: str | None = None,
        *,
        client_id: str = "trl",
        setup_column: str = "setup",
        files_column: str = "files",
        cell_timeout_s: float = 10.0,
        max_output_chars: int = 4000,
        limits: Mapping[str, float] | None = None,
        wait_s: float = 30.0,
    ):
        self._client = VerifierClient(target or default_target(), timeout_s=60, client_id=client_id, wait_s=wait_s)
        self._setup_column, self._files_column = setup_column, files_column
        self._cell_timeout_s, self._max_chars = cell_timeout_s, max_output_chars
        self._limits = dict(limits or {})
        self._session: str | None = None
        self._row: dict = {}
        self.calls = 0
        _live.add(self)

    def reset(self, **row: Any) -> str | None:
        """Start this rollout: a fresh session (the previous one is closed), its files placed, its setup run."""
        self._close()
        self._row, self.calls = row, 0
        files = row.get(self._files_column) or {}
        info = self._client.open_session(
            "python", files={str(k): str(v) for k, v in dict(files).items()}, **self._limits
        )
        self._session = info.id
        setup = row.get(self._setup_column)
        if setup:
            r = self._client.exec(self._session, str(setup), timeout_s=self._cell_timeout_s)
            if r.status != "ok" or r.HasField("error"):
                raise RuntimeError(f"the row's setup cell failed ({r.status}): {r.error or r.ended}")
        return None

    def python(self, code: str) -> str:
        """Run Python code in a persistent session: variables, imports, functions and files stay for later calls.

        Args:
            code: Python source to run, like a notebook cell; the value of its last expression is shown.

        Returns:
            What the code printed, the value of its last expression, and the traceback if it raised.
        """
        if self._session is None:
            return "[no session: the environment was not reset]"
        self.calls += 1
        try:
            r = self._client.exec(self._session, code, timeout_s=self._cell_timeout_s)
        except VerifierError as e:
            return f"[the session is gone: {e.message}]"
        return format_cell(r, self._max_chars)

    def _grade(self, verifier: str, tests_column: str, options: Mapping[str, str]) -> float | None:
        if self._session is None or tests_column not in self._row:
            return None
        try:
            v = self._client.grade_session(self._session, verifier, str(self._row[tests_column]), options=options)
        except VerifierError as e:
            if e.code.name in ("FAILED_PRECONDITION", "UNAVAILABLE", "RESOURCE_EXHAUSTED", "DEADLINE_EXCEEDED"):
                return None  # the session or the service failed: not the model's fault
            raise
        return None if v.outcome in UNGRADED else v.reward

    def _close(self) -> None:
        sid, self._session = self._session, None
        if sid is not None:
            try:
                self._client.close_session(sid)
            except VerifierError:
                pass  # closed, expired or ended already


def python_session_env(
    target: str | None = None,
    *,
    tests_column: str | None = None,
    verifier: str = "code",
    options: Mapping[str, str] | None = None,
    **kw: Any,
) -> Callable[[], PythonSessionEnv]:
    """The ``environment_factory`` for TRL. With ``tests_column`` the environments own a reward too
    (``get_reward``: the session graded by ``verifier`` against that column); ``kw``: ``PythonSessionEnv``'s."""
    if tests_column is None:
        return lambda: PythonSessionEnv(target, **kw)
    opts = dict(options or {})

    class GradedPythonSessionEnv(PythonSessionEnv):
        def get_reward(self) -> float | None:
            """The session's state graded against the row's hidden tests (None: not the model's fault)."""
            return self._grade(verifier, tests_column, opts)

    return lambda: GradedPythonSessionEnv(target, **kw)


def python_tool(
    target: str | None = None, *, client_id: str = "trl", cell_timeout_s: float = 10.0, max_output_chars: int = 4000
) -> Callable[[str], str]:
    """A stateless tool for TRL's ``tools=``: each call runs ``code`` in a fresh python session, closed after it."""
    client = VerifierClient(target or default_target(), timeout_s=60, client_id=client_id, wait_s=30.0)

    def python(code: str) -> str:
        """Run Python code in a fresh sandbox (nothing is kept between calls).

        Args:
            code: Python source to run; the value of its last expression is shown.

        Returns:
            What the code printed, the value of its last expression, and the traceback if it raised.
        """
        try:
            sid = client.open_session("python").id
        except VerifierError as e:
            return f"[no sandbox: {e.message}]"
        try:
            return format_cell(client.exec(sid, code, timeout_s=cell_timeout_s), max_output_chars)
        except VerifierError as e:
            return f"[the session is gone: {e.message}]"
        finally:
            try:
                client.close_session(sid)
            except VerifierError:
                pass

    return python


@atexit.register
def _close_all() -> None:
    for env in list(_live):
        env._client.wait_s = 0.0  # a service that is gone already: do not hold the exit up
        env._close()
